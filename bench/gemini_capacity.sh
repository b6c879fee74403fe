#!/usr/bin/env bash
# How large a GPT trains under a fixed device.memory_limit (64 MiB), at
# fixed T=64 and B=1 (bench/configs/capacity.yaml): with no strategy; with
# gemini static, everything on the device; with gemini static offload
# (optimizer state and parameters on the host), without and with full
# activation recomputation; with gemini placement auto at its defaults
# (recomputing activations that do not fit, taking the steady_ratio
# headroom only when nothing else fits), and with auto_recompute: false
# (the headroom alone). A model "trains" when it
# runs two steps. For each channel count the largest number of layers is
# found by bisection (fitting is monotone in the layers); the largest
# parameter count over the channel counts is each mode's capacity. Then the
# step time of each mode on the largest 256-channel model all of them fit.
# MODES, CHANNELS and MAX_LAYERS (space-separated lists and the bisection's
# upper end, default 256) narrow a run: with full recomputation the largest
# models have hundreds of layers, and each probe of them takes minutes.
# Run from the project root after `make`. Timing lives here, never in tests.
set -euo pipefail
TESSEL=${TESSEL:-build/bin/tessel}
cd "$(dirname "$0")/.."
OUT=build/bench/capacity
mkdir -p "$OUT"
CONFIG=bench/configs/capacity.yaml
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
params() { awk -v L="$1" -v C="$2" 'BEGIN { printf "%d", 256 * C + 64 * C + L * (12 * C * C + 13 * C) + 2 * C }'; }

read -r -a MODES <<<"${MODES:-none static static_offload static_offload_full auto auto_no_recompute}"
read -r -a CHANNELS <<<"${CHANNELS:-128 256 384 512 640 768}"
MAX_LAYERS=${MAX_LAYERS:-256}
declare -A MODE=(
  [none]="--set plugin=null"
  [static]="--set plugin.name=gemini"
  [static_offload]="--set plugin.name=gemini --set plugin.offload_optim_frac=1 --set plugin.offload_param_frac=1"
  [static_offload_full]="--set plugin.name=gemini --set plugin.offload_optim_frac=1 --set plugin.offload_param_frac=1
                         --set train.recompute=full"
  [auto]="--set plugin.name=gemini --set plugin.placement=auto"
  [auto_no_recompute]="--set plugin.name=gemini --set plugin.placement=auto --set plugin.auto_recompute=false"
)

trains() { # MODE L C
  # shellcheck disable=SC2086
  "$TESSEL" run "$CONFIG" ${MODE[$1]} --set model.layers="$2" --set model.channels="$3" --set model.heads=$(($3 / 64)) \
    --set log.dir="$OUT/probe" >"$OUT/probe.log" 2>&1
}

best_layers() { # MODE C: the most layers that train (0 if none), by bisection over 1..MAX_LAYERS
  local lo=0 hi=$((MAX_LAYERS + 1)) mid
  while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    if trains "$1" "$mid" "$2"; then lo=$mid; else hi=$mid; fi
  done
  echo $lo
}

printf '%-20s %8s %7s %12s\n' mode channels layers parameters
declare -A BEST BEST_AT AT256
for mode in "${MODES[@]}"; do
  BEST[$mode]=0
  for C in "${CHANNELS[@]}"; do
    L=$(best_layers "$mode" "$C")
    [ "$C" -ne 256 ] || AT256[$mode]=$L
    [ "$L" -gt 0 ] || continue
    n=$(params "$L" "$C")
    printf '%-20s %8d %7d %12d\n' "$mode" "$C" "$L" "$n"
    if [ "$n" -gt "${BEST[$mode]}" ]; then BEST[$mode]=$n; BEST_AT[$mode]="L=$L C=$C"; fi
  done
done
echo
for mode in "${MODES[@]}"; do
  ratio= # against no strategy, when it ran
  [ "${BEST[none]:-0}" -eq 0 ] || ratio=$(awk -v a="${BEST[$mode]}" -v b="${BEST[none]}" 'BEGIN { printf ", %.1f× no strategy", a / b }')
  printf '%-20s largest %12d parameters (%s)%s\n' "$mode" "${BEST[$mode]}" "${BEST_AT[$mode]:-none}" "$ratio"
done

# step time: median of steps 6..25 over three alternating rounds
C=256
L=$(for mode in "${MODES[@]}"; do echo "${AT256[$mode]:-0}"; done | sort -n | head -1)
[ "$L" -gt 0 ] || { echo "no step times: not every mode trains at C=$C in this run"; exit 0; }
echo
echo "step time at L=$L C=$C ($(params "$L" "$C") parameters), B=1 T=64, 64 MiB device:"
for round in 1 2 3; do
  for mode in "${MODES[@]}"; do
    # shellcheck disable=SC2086
    "$TESSEL" run "$CONFIG" ${MODE[$mode]} --set model.layers="$L" --set model.channels="$C" \
      --set model.heads=$((C / 64)) --set train.steps=25 --set log.dir="$OUT/time_${mode}_$round" >/dev/null 2>&1 ||
      echo "$mode did not train (round $round)"
  done
done
for mode in "${MODES[@]}"; do
  ms=$(for r in 1 2 3; do tail -n 20 "$OUT/time_${mode}_$r/metrics.jsonl"; done |
    sed -n 's/.*"step_time_s":\([^,]*\).*/\1/p' | median | awk '{ print 1000 * $1 }')
  printf '%-20s %8.2f ms/step\n' "$mode" "$ms"
done
