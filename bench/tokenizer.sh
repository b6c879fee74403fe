#!/usr/bin/env bash
# Tokenizer speed on one core: training a byte-level BPE on tinyshakespeare,
# encoding throughput (bench_tokenizer, cold and warm cache, also on the text
# repeated 10 times), the wall time of `tessel data prepare --tokenizer`, and,
# when python3 has `tokenizers`, Hugging Face's encode on one thread for
# reference; then `data prepare` of 2000 files at one thread and at every
# core. Run from anywhere after `make`.
set -euo pipefail
cd "$(dirname "$0")/.."
TESSEL=${TESSEL:-build/bin/tessel}
TEXT=../shared/data/tinyshakespeare.txt
OUT=build/bench/tokenizer
rm -rf "$OUT"
mkdir -p "$OUT"
export OMP_NUM_THREADS=1
for i in $(seq 10); do cat "$TEXT"; done >"$OUT/shakespeare10.txt"
for v in 1024 8192; do
  echo "== vocabulary $v"
  /usr/bin/time -f "train: %e s wall, %U s user CPU, %M KiB peak" "$TESSEL" tokenizer train "$TEXT" --vocab $v -o "$OUT/bpe$v.json"
  build/bench/bench_tokenizer "$OUT/bpe$v.json" "$TEXT" 5
  build/bench/bench_tokenizer "$OUT/bpe$v.json" "$OUT/shakespeare10.txt" 3
  /usr/bin/time -f "data prepare: %e s wall, %U s user CPU" "$TESSEL" data prepare "$TEXT" -o "$OUT/data$v" --tokenizer "$OUT/bpe$v.json"
  if python3 -c "import tokenizers" 2>/dev/null; then
    RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false python3 - "$OUT/bpe$v.json" "$TEXT" <<'PY'
import sys, time
from tokenizers import Tokenizer
t = Tokenizer.from_file(sys.argv[1])
text = open(sys.argv[2], encoding="utf-8").read()
best = 1e30
for _ in range(3):  # CPU time of this process, as bench_tokenizer measures
    t0 = time.process_time(); n = len(t.encode(text, add_special_tokens=False).ids); best = min(best, time.process_time() - t0)
print(f"tokenizers {__import__('tokenizers').__version__} (one thread): {n} tokens, {len(text.encode()) / best / 1e6:.2f} MB/s ({best:.3f} s CPU)")
PY
  fi
done
# `data prepare` of many files, which its threads encode side by side: the
# text cut into 2000 documents and repeated 8 times (8.9 MB), at 1 thread
# and at every core, the shards compared byte for byte
mkdir -p "$OUT/many"
for r in $(seq 8); do split -n l/250 -d -a 4 --additional-suffix=.txt "$TEXT" "$OUT/many/r${r}_"; done
for threads in 1 "$(getconf _NPROCESSORS_ONLN)"; do
  OMP_NUM_THREADS=$threads /usr/bin/time -f "data prepare, 2000 files, $threads thread(s): %e s wall, %U s user CPU" \
    "$TESSEL" data prepare "$OUT/many/*.txt" -o "$OUT/many_$threads" --tokenizer "$OUT/bpe8192.json" >/dev/null
done
cmp "$OUT/many_1/train_000000.bin" "$OUT/many_$(getconf _NPROCESSORS_ONLN)/train_000000.bin" && echo "the same shards at 1 and $(getconf _NPROCESSORS_ONLN) threads"
