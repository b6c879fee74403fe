#!/usr/bin/env bash
# `tessel sample` speed of two builds, interleaved so that both see the same
# machine load:
#   bench/sample.sh A_TESSEL B_TESSEL [ROUNDS] [TOKENS]
# The model is GPT-2 124M (L12 C768 H12, 1024 positions) with a byte-level
# vocabulary, trained one step at seq_len 64 so that a checkpoint exists;
# its weights do not matter for the speed. Each round times, for A then B,
# `sample --tokens 1` (start-up: reading the checkpoint, one forward) and
# `sample --tokens TOKENS` (default 256) after the same 64-byte prompt,
# greedy, 2 threads; per token = (long − short) / (TOKENS − 1). Medians
# over the rounds; the texts of A and B are compared. A library directory
# beside a binary is put first on LD_LIBRARY_PATH, so that a copied build
# from before the program linked its runtime statically runs its own
# libtessel.so.
set -euo pipefail
A=$1; B=$2; ROUNDS=${3:-3}; TOKENS=${4:-256}
cd "$(dirname "$0")/.."
OUT=build/bench/sample
mkdir -p "$OUT"
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
run() { # BIN ARGS...
  local bin=$1; shift
  LD_LIBRARY_PATH="$(dirname "$bin")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" "$@"
}
CK=$OUT/run/checkpoints/step_00000001
if [ ! -d "$CK" ]; then
  cat >"$OUT/gpt2_124m.yaml" <<YAML
model: {layers: 12, heads: 12, channels: 768, seq_len: 64, positions: 1024, vocab_size: 256}
data: {text: [README.md], dir: $OUT/data, val_fraction: 0.0}
train: {steps: 1, batch_size: 1, sample_tokens: 0, eval_every: 0}
device: {threads: 2}
checkpoint: {every: 1, resume: never}
log: {dir: $OUT/run, progress: never}
YAML
  run "$A" run "$OUT/gpt2_124m.yaml" >"$OUT/train.log" 2>&1 # A: an older build reads only its formats
fi
PROMPT="First Citizen: Before we proceed any further, hear me speak. All:"
seconds() { # BIN TOKENS OUTFILE: wall seconds of one sample
  local t0 t1
  t0=$(date +%s.%N)
  OMP_NUM_THREADS=2 run "$1" sample "$CK" --prompt "$PROMPT" --tokens "$2" --temperature 0 >"$3"
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}
for side in A B; do : >"$OUT/short_$side"; : >"$OUT/long_$side"; done
for r in $(seq "$ROUNDS"); do
  for side in A B; do
    bin=$A; [ "$side" = B ] && bin=$B
    seconds "$bin" 1 /dev/null >>"$OUT/short_$side"
    seconds "$bin" "$TOKENS" "$OUT/text_$side" >>"$OUT/long_$side"
  done
done
cmp -s "$OUT/text_A" "$OUT/text_B" && same="the same text" || same="DIFFERENT texts"
for side in A B; do
  s=$(median <"$OUT/short_$side"); l=$(median <"$OUT/long_$side")
  awk -v side="$side" -v s="$s" -v l="$l" -v n="$TOKENS" -v r="$ROUNDS" 'BEGIN {
    printf "%s: --tokens 1 %.2f s, --tokens %d %.2f s, %.1f ms per token (median of %d)\n", side, s, n, l,
      (l - s) * 1000 / (n - 1), r }'
done
echo "A and B wrote $same"
