#!/usr/bin/env bash
# A Llama next to a GPT-2 of the same parameter count on the CPU (run from
# the project root after `make`): tokens/s and MFU of a training step for
# "baby" and "small" (bench/configs/) and their Llama twins, which trade
# GPT-2's learned positions, tied head, biases, layer norms and 4·C GELU MLP
# for rotary positions, an untied head, RMS norms, grouped-query attention
# and a SwiGLU MLP sized to the same parameter count; and "small" as a
# Qwen3 (small_llama with per-head q/k norms).
#
# The machine this project runs on is shared and loaded, so the four models
# run interleaved, ROUNDS times (default 5): each run's figure is the median
# over its steps 11..STEPS (default 40), and the table shows the median of
# the rounds with their range. The Llama/GPT-2 ratio is taken within each
# round (runs next to each other see about the same load), then its median.
# THREADS (default 1) CPU threads per run. The sgemm ceiling for MFU is
# measured at the start of every round with the same threads (tessel bench
# peak, which records it for that round's runs), so each run's MFU is
# against the ceiling under the load of its own round. Needs
# ../shared/data/tinyshakespeare.txt.
set -euo pipefail
TESSEL=${TESSEL:-build/bin/tessel}
ROUNDS=${ROUNDS:-5}
STEPS=${STEPS:-40}
THREADS=${THREADS:-1}
cd "$(dirname "$0")/.."

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p"; }
models=(baby baby_llama small small_llama small_qwen3)
OUT=build/bench/llama_cpu
rm -rf "$OUT"
mkdir -p "$OUT"

for round in $(seq "$ROUNDS"); do
  "$TESSEL" bench peak --threads "$THREADS" | tail -2 | head -1 | tee -a "$OUT/peaks"
  for model in "${models[@]}"; do
    dir=$OUT/$model-$round
    "$TESSEL" run "bench/configs/$model.yaml" --set train.steps="$STEPS" --set device.threads="$THREADS" \
      --set log.dir="$dir" --set log.every=1000 >"$dir.log" 2>&1
    tail -n $((STEPS - 10)) "$dir/metrics.jsonl" | field tokens_per_s | median >>"$OUT/$model.tps"
    tail -n $((STEPS - 10)) "$dir/metrics.jsonl" | field mfu | median >>"$OUT/$model.mfu"
  done
done

printf '| model | parameters | tokens/s, median (range) | MFU |\n|---|---|---|---|\n'
for model in "${models[@]}"; do
  params=$(sed -n 's/.* = \([0-9.]*M\) parameters.*/\1/p' "$OUT/$model-1.log")
  tps=$(median <"$OUT/$model.tps")
  range=$(sort -g "$OUT/$model.tps" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f–%.0f", lo, hi}')
  mfu=$(median <"$OUT/$model.mfu")
  printf '| %s | %s | %.0f (%s) | %.1f%% |\n' "$model" "$params" "$tps" "$range" "$(awk -v m="$mfu" 'BEGIN {print 100 * m}')"
done
for pair in baby_llama:baby small_llama:small small_qwen3:small_llama; do
  a=${pair%:*} b=${pair#*:}
  paste "$OUT/$a.tps" "$OUT/$b.tps" | awk '{print $1 / $2}' >"$OUT/$a.ratio"
  printf '%s / %s tokens/s, per round: median %.2f (%s)\n' "$a" "$b" "$(median <"$OUT/$a.ratio")" \
    "$(sort -g "$OUT/$a.ratio" | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.2f–%.2f", lo, hi}')"
done
