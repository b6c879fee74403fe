# gemini's NVMe tier keeps one file open per allocation, two per chunk
# whose AdamW moments are on NVMe: with a small plugin.chunk_size that is
# more than a low soft limit on open files. The core raises the soft limit
# towards the hard one, as the data loader does for its shards, and the run
# trains; when the hard limit itself is too low, setup fails naming the
# files the tier holds, the limits, and what to do, not just "Too many open
# files" and a path. A plugin.nvme_dir that does not exist is made, with a
# warning.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/gemini_nvme_files.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
# 1 KiB chunks make tests/gemini/nvme.yaml's model at 16 layers 131 chunks:
# 262 NVMe files, more than the data loader's raise (its shards and 256)
# leaves room for
common=(--set train.sample_tokens=0 --set train.steps=2 --set train.eval_every=0 --set plugin.chunk_size=1024
        --set model.layers=16 --set plugin.nvme_dir="$WORK/swap" --set data.dir="$WORK/data")
(ulimit -S -n 64 && "$TESSEL" run tests/gemini/nvme.yaml --set log.dir="$WORK/soft" "${common[@]}") \
  >"$WORK/soft.log" 2>&1 || { cat "$WORK/soft.log" >&2; fail "a soft limit of 64 open files stopped the run"; }
grep -q "131 with moments on NVMe, 262 files kept open there" "$WORK/soft.log" ||
  fail "the placement line does not count the NVMe files: $(grep placement "$WORK/soft.log")"
grep -q '^step *2' "$WORK/soft.log" || grep -q '"step":2' "$WORK/soft/metrics.jsonl" ||
  fail "the run under a soft limit of 64 did not train 2 steps"
# plugin.nvme_dir did not exist: made, and said (a drive not mounted there
# would put the tier on another disk without a word); the next run finds it
grep -q "nvme tier: $WORK/swap did not exist and was created" "$WORK/soft.log" ||
  fail "the NVMe directory was created without a warning"
if (ulimit -n 64 && "$TESSEL" run tests/gemini/nvme.yaml --set log.dir="$WORK/hard" "${common[@]}") \
  >"$WORK/hard.log" 2>&1; then
  fail "262 NVMe files fitted under a hard limit of 64 open files"
fi
grep -q "did not exist and was created" "$WORK/hard.log" && fail "an NVMe directory that exists was warned about"
for want in "failed in setup" "Too many open files" "one file open per allocation" \
  "this process's limit allows: 64 (hard limit 64)" "NVMe files so far" "Raise \`ulimit -n\`" \
  "a larger plugin.chunk_size"; do
  grep -qF -- "$want" "$WORK/hard.log" || fail "no '$want' in: $(cat "$WORK/hard.log")"
done
rm -rf "$WORK"
echo "ok: 262 NVMe files open under a soft limit of 64; under a hard one of 64 setup says why and what to do"
