#!/usr/bin/env bash
# Activation memory of GPT-2 124M on the CPU backend (bench/configs/gpt2_124m.yaml
# with device.kind: cpu, vocabulary 50 257 padded to 50 304):
#   1. at T=1024, B=1: the device tier's peak (the ledger's, from the
#      metrics) and its part that is not model state (activations, their
#      gradients and scratch), with train.recompute none / selective / full,
#      with the kept activations offloaded to the host, and with full
#      recompute under gemini with every chunk offloaded (model state on
#      the host too); step time as the median of steps 2..STEPS (default 2:
#      step 1 includes first-touch page faults);
#   2. the largest T (a multiple of 64) that trains a step under
#      device.memory_limit: 2GiB, by bisection, with recompute none,
#      selective and full (every device allocation happens by the end of
#      step 1: activations at setup, the kernels' scratch in step 1).
# Run from the project root after `make`. Timing lives here, never in tests.
set -euo pipefail
TESSEL=${TESSEL:-build/bin/tessel}
STEPS=${STEPS:-2}
cd "$(dirname "$0")/.."
OUT=build/bench/activation_memory
mkdir -p "$OUT"
CONFIG=bench/configs/gpt2_124m.yaml
common=(--set device.kind=cpu --set model.vocab_size=50257 --set train.batch_size=1 --set checkpoint.every=0
        --set data.dir="$OUT/data")
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p"; }
mib() { awk -v b="$1" 'BEGIN { printf "%.0f", b / 1048576 }'; }

MODES=(none selective full offload selective_offload gemini_full)
# shellcheck source=bench/activation_modes.sh
source bench/activation_modes.sh
printf '%-18s %12s %16s %10s %12s\n' mode "device peak" "of it non-model" "host peak" "ms/step"
for mode in "${MODES[@]}"; do
  dir=$OUT/t1024_$mode
  # shellcheck disable=SC2086
  "$TESSEL" run "$CONFIG" "${common[@]}" --set train.steps="$STEPS" --set log.dir="$dir" ${SET[$mode]} \
    >"$dir.log" 2>&1 || { echo "$mode failed: $(tail -1 "$dir.log")"; continue; }
  m=$dir/metrics.jsonl
  peak=$(grep -o '"device":{"peak":[0-9]*' "$m" | sed 's/.*://' | sort -n | tail -1)
  model=$(grep -o '"device":{[^}]*}' "$m" | tail -1 | field model)
  host=$(grep -o '"host":{"peak":[0-9]*' "$m" | sed 's/.*://' | sort -n | tail -1 || true)
  ms=$(tail -n +2 "$m" | field step_time_s | median)
  printf '%-18s %8s MiB %12s MiB %6s MiB %12.0f\n' "$mode" "$(mib "$peak")" "$(mib $((peak - model)))" \
    "$(mib "${host:-0}")" "$(awk -v s="$ms" 'BEGIN {print 1000 * s}')"
  rm -rf "$dir/checkpoints" # a run always saves at its end: 1.4 GiB each
done

trains() { # MODE T
  # shellcheck disable=SC2086
  "$TESSEL" run "$CONFIG" "${common[@]}" --set train.steps=1 --set model.seq_len="$2" --set device.memory_limit=2GiB \
    --set log.dir="$OUT/probe" ${SET[$1]} >"$OUT/probe.log" 2>&1
  local ok=$?
  rm -rf "$OUT/probe/checkpoints"
  return $ok
}
echo
echo "largest T under a 2 GiB device (multiples of 64, bisection over 64..4096):"
for mode in none selective full; do
  lo=0 hi=65
  while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    if trains "$mode" $((64 * mid)); then lo=$mid; else hi=$mid; fi
  done
  printf '  %-10s T = %d\n' "$mode" $((64 * lo))
done
