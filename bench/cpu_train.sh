#!/usr/bin/env bash
# CPU training benchmark (run from the project root after `make`):
#   1. the OpenBLAS sgemm ceiling with 2 threads (tessel bench peak);
#   2. tokens/s and MFU of a training step for the "small" and "baby" models
#      (median over steps 11..40, against that ceiling);
#   3. the validation loss of "baby" trained 2000 steps on tinyshakespeare.
# Timing lives here, never in the tests. Needs ../shared/data/tinyshakespeare.txt.
set -euo pipefail
TESSEL=${TESSEL:-build/bin/tessel}
cd "$(dirname "$0")/.."

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p"; }

echo "== sgemm ceiling"
"$TESSEL" bench peak --threads 2 | tail -2

for model in small baby; do
  "$TESSEL" run "bench/configs/$model.yaml" >/dev/null 2>&1
  metrics=build/bench/$model/metrics.jsonl
  tps=$(tail -n 30 "$metrics" | field tokens_per_s | median)
  mfu=$(tail -n 30 "$metrics" | field mfu | median)
  ms=$(tail -n 30 "$metrics" | field step_time_s | median)
  printf '== %-5s %8.0f tokens/s  %6.1f ms/step  MFU %5.1f%% of the sgemm ceiling\n' "$model" "$tps" \
    "$(awk -v s="$ms" 'BEGIN {print 1000 * s}')" "$(awk -v m="$mfu" 'BEGIN {print 100 * m}')"
done

echo "== baby on tinyshakespeare, 2000 steps"
start=$(date +%s)
"$TESSEL" run bench/configs/baby_shakespeare.yaml 2>&1 | grep -E "validation loss|step 2000"
echo "   wall time $(( $(date +%s) - start )) s"
