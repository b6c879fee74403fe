#!/usr/bin/env bash
# Activation placements change memory, never results, under any strategy.
#
#   modes.sh TESSEL SRC TMP NAME RANKS CONFIG [--set KEY=VALUE]...
#
# Trains CONFIG for 4 steps (RANKS ranks through `tessel launch`; 1 with no
# strategy through `tessel run`) once per activation placement: everything
# kept (the reference); selective recompute; full recompute; the first 2
# blocks in full; everything kept but offloaded to the host; selective with
# the kept part offloaded; the first 2 blocks in full and the rest offloaded
# (MODES, a space-separated subset that starts with none, selective, full,
# may name fewer).
# Every run must match the reference bit for bit:
#   - every step's loss and gradient norm, as the metrics print them (%.17g:
#     the same text is the same double);
#   - the checkpoint after step 4: model.safetensors and
#     optimizer.safetensors byte for byte. AdamW's moments take in every
#     gradient element, so equal moments after 4 steps mean the gradients
#     were equal at every step, element by element.
# Recomputation reruns the same kernels on the same inputs (and, under a
# strategy, the same collectives in the same order), offload copies bytes:
# there is nothing to tolerate. It also checks that recomputation lowers
# the device peak (selective below none, full below selective), that
# offload puts activations on the host tier, and that recomputing the first
# 2 blocks in full and offloading takes no more of the device than the
# better of the two alone.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3; NAME=$4; RANKS=$5; CONFIG=$6
shift 6
WORK=$TMP/$NAME.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }

common=(--set train.steps=4 --set train.sample_tokens=0 --set train.eval_every=0 --set checkpoint.resume=never
        --set checkpoint.every=4 --set log.every=1 --set log.progress=never --set data.dir="$WORK/data"
        --set device.threads=1 "$@")
read -r -a MODES <<<"${MODES:-none selective full first2 offload selective_offload first2_offload}"
declare -A SET=(
  [none]="--set train.recompute=none"
  [selective]="--set train.recompute=selective"
  [full]="--set train.recompute=full"
  [first2]="--set train.recompute=2"
  [offload]="--set train.offload_activations=true"
  [selective_offload]="--set train.recompute=selective --set train.offload_activations=true"
  [first2_offload]="--set train.recompute=2 --set train.offload_activations=true"
)
field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p" "$2"; }
device_peak() { grep -o '"device":{"peak":[0-9]*' "$1" | sed 's/.*://' | sort -n | tail -1; }
host_peak() { grep -o '"host":{"peak":[0-9]*' "$1" | sed 's/.*://' | sort -n | tail -1; }

for mode in "${MODES[@]}"; do
  dir=$WORK/$mode
  # shellcheck disable=SC2086
  if [ "$RANKS" -eq 1 ]; then
    "$TESSEL" run "$CONFIG" --set log.dir="$dir" "${common[@]}" ${SET[$mode]} >"$dir.log" 2>&1 || {
      cat "$dir.log" >&2; fail "$mode: the run failed"; }
  else
    timeout 600 "$TESSEL" launch -n "$RANKS" "$CONFIG" --set log.dir="$dir" "${common[@]}" ${SET[$mode]} \
      >"$dir.log" 2>&1 || { cat "$dir.log" >&2; fail "$mode: the $RANKS-rank run failed"; }
  fi
  [ "$(field loss "$dir/metrics.jsonl" | wc -l)" -eq 4 ] || fail "$mode: expected 4 steps"
done

ref=$WORK/none
ckpt=checkpoints/step_00000004
for mode in "${MODES[@]:1}"; do
  dir=$WORK/$mode
  for f in loss grad_norm; do
    diff <(field "$f" "$ref/metrics.jsonl") <(field "$f" "$dir/metrics.jsonl") >&2 ||
      fail "$mode: the ${f//_/ } differs from keeping everything"
  done
  for f in model.safetensors optimizer.safetensors; do
    cmp "$ref/$ckpt/$f" "$dir/$ckpt/$f" || fail "$mode: $f after 4 steps differs from keeping everything"
  done
  echo "ok $mode: losses, gradient norms and the step-4 checkpoint equal keeping everything, bit for bit"
done

none=$(device_peak "$ref/metrics.jsonl")
sel=$(device_peak "$WORK/selective/metrics.jsonl")
full=$(device_peak "$WORK/full/metrics.jsonl")
[ "$sel" -lt "$none" ] || fail "selective recompute peaks at $sel B on the device, not below keeping everything ($none B)"
[ "$full" -lt "$sel" ] || fail "full recompute peaks at $full B on the device, not below selective ($sel B)"
echo "ok device peaks: none $none B, selective $sel B, full $full B"
if [ -d "$WORK/selective_offload" ]; then
  host=$(host_peak "$WORK/selective_offload/metrics.jsonl")
  [ "${host:-0}" -gt 0 ] || fail "offload put nothing on the host tier"
  echo "ok selective offload: ${host} B on the host"
fi
if [ -d "$WORK/first2_offload" ]; then
  both=$(device_peak "$WORK/first2_offload/metrics.jsonl")
  for alone in first2 offload; do
    [ -d "$WORK/$alone" ] || continue
    one=$(device_peak "$WORK/$alone/metrics.jsonl")
    [ "$both" -le "$one" ] || fail "the first 2 blocks in full with offload peak at $both B on the device, above $alone alone ($one B)"
  done
  echo "ok first 2 blocks in full with offload: device peak $both B, no more than either alone"
fi
rm -rf "$WORK"
