#!/usr/bin/env bash
# The step-time cost of recomputing and offloading activations, interleaved
# so that every mode sees the same machine load:
#   bench/recompute_time.sh [ROUNDS]
# GPT-2 shaped model L=4, C=256, H=4 at T=256, B=4, V=256 (bench/configs/
# small.yaml at T=256), one thread (no team to wait for on a loaded
# machine), 20 steps per run; each round runs every mode once, and a mode's
# figure is the median over rounds of its median step time (steps 6..20).
# Timing lives here, never in the tests.
set -euo pipefail
TESSEL=${TESSEL:-build/bin/tessel}
ROUNDS=${1:-5}
cd "$(dirname "$0")/.."
OUT=build/bench/recompute_time
mkdir -p "$OUT"
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p"; }
MODES=(none selective full offload selective_offload)
# shellcheck source=bench/activation_modes.sh
source bench/activation_modes.sh
for mode in "${MODES[@]}"; do : >"$OUT/$mode"; done
for _ in $(seq "$ROUNDS"); do
  for mode in "${MODES[@]}"; do
    # shellcheck disable=SC2086
    "$TESSEL" run bench/configs/small.yaml --set model.seq_len=256 --set train.steps=20 --set device.threads=1 \
      --set log.dir="$OUT/run" --set log.every=100 --set train.eval_batches=1 ${SET[$mode]} >/dev/null 2>&1
    tail -n 15 "$OUT/run/metrics.jsonl" | field step_time_s | median >>"$OUT/$mode"
  done
done
base=$(median <"$OUT/none")
for mode in "${MODES[@]}"; do
  ms=$(median <"$OUT/$mode")
  printf '%-18s %8.1f ms/step  %+6.1f%%\n' "$mode" "$(awk -v s="$ms" 'BEGIN {print 1000 * s}')" \
    "$(awk -v s="$ms" -v b="$base" 'BEGIN {print 100 * (s - b) / b}')"
done
