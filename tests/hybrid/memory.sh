#!/usr/bin/env bash
# Model-state bytes per rank from the memory ledger (rank 0's
# memory.device.params / grads / optim in metrics.jsonl) against the
# single-process figures: about 1/(tp·pp) of them for parameters, gradients
# and AdamW moments, and the moments a further 1/dp with ZeRO. The expected
# figures are exact; the ratios are printed and kept near their ideal.
#
#   memory.sh TESSEL SRC TMP
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/hybrid_memory.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
common=(--set train.steps=2 --set checkpoint.every=0 --set checkpoint.resume=never --set log.progress=never
        --set data.dir="$WORK/data" --set device.threads=1)

# value NAME KEY: rank 0's memory.device.KEY at the last step
value() { tail -n 1 "$WORK/$1/metrics.jsonl" | grep -o '"device":{[^}]*}' | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"; }
# expect NAME KEY BYTES WHAT
expect() {
  local got
  got=$(value "$1" "$2")
  [ "$got" = "$3" ] || fail "$1: $2 is $got bytes, expected $4 = $3"
}
# near NAME KEY BYTES IDEAL: BYTES / (the single-process figure) within 15% of IDEAL
near() {
  awk -v a="$3" -v b="$(value ref "$2")" -v ideal="$4" -v what="$1 $2" 'BEGIN {
    r = a / b; printf "ok: %s = %d bytes = %.4f of one process (ideal %.4f)\n", what, a, r, ideal
    exit !(r > 0.85 * ideal && r < 1.15 * ideal) }' || fail "$1: $2 is not near $4 of one process"
}

# tests/hybrid/tiny.yaml. One process holds Ψ = V·C + T·C + L·(12C² + 13C) + 2C
# elements: fp32 parameters 4Ψ, gradients 4Ψ, AdamW moments 8Ψ bytes.
L=4; C=64; T=32; V=256
psi=$((V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C))
"$TESSEL" run tests/hybrid/tiny.yaml --set plugin=null --set log.dir="$WORK/ref" "${common[@]}" >"$WORK/ref.log" 2>&1 \
  || { cat "$WORK/ref.log" >&2; fail "the single-process run failed"; }
expect ref params $((4 * psi)) "4Ψ with Ψ=$psi"
expect ref grads $((4 * psi)) "4Ψ"
expect ref optim $((8 * psi)) "8Ψ"

# Rank 0 under tp 2 × pp 2 is tp rank 0 of the first stage: half of wte
# (V/2·C), all of wpe (T·C), and L/2 blocks of 6C² + 9.5C each (the halves of
# c_attn, c_fc and the c_proj weights and of the column biases; replicated
# layer norms and c_proj biases): Ψ₀ elements, a little over Ψ/4 because of
# what tensor parallelism replicates.
psi0=$((V / 2 * C + T * C + L / 2 * (6 * C * C + 19 * C / 2)))
for run in "tp2_pp2 4 tests/hybrid/tp2_pp2.yaml" "zero1 8 tests/hybrid/tp2_pp2_dp2.yaml" \
           "zero2 8 tests/hybrid/all_sp_zero2.yaml"; do
  set -- $run
  "$TESSEL" launch -n "$2" "$3" --set log.dir="$WORK/$1" "${common[@]}" >"$WORK/$1.log" 2>&1 \
    || { cat "$WORK/$1.log" >&2; fail "$1: the $2-rank run failed"; }
  expect "$1" params $((4 * psi0)) "4Ψ₀ with Ψ₀=$psi0"
  expect "$1" grads $((4 * psi0)) "4Ψ₀ (ZeRO-2 reduces in place)"
  near "$1" params $((4 * psi0)) 0.25
  near "$1" grads $((4 * psi0)) 0.25
done
expect tp2_pp2 optim $((8 * psi0)) "8Ψ₀"
near tp2_pp2 optim $((8 * psi0)) 0.25
# ZeRO over dp 2 keeps the moments of half of the Ψ₀ local elements
for z in zero1 zero2; do
  expect $z optim $((8 * psi0 / 2)) "8·Ψ₀/2"
  near $z optim $((8 * psi0 / 2)) 0.125
done
rm -rf "$WORK"
