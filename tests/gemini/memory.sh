# gemini trains, under device.memory_limit, a model that the run without a
# strategy cannot fit: tests/gemini/memory.yaml's limit is below what the
# plain run needs (it stops with the ledger's error), while gemini with
# static offload and with placement auto trains it with the same losses as
# the plain run without a limit (tolerance 1e-5, as tests/equiv/equiv.sh
# argues), every step's device peak in the ledger staying under the limit —
# under limit × steady_ratio for auto. A limit below even gemini's minimum
# stops before step 1 with the bytes needed and the bytes available (for
# auto, the whole device, whose headroom it would take) and suggests full
# recomputation only to a run without it.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/gemini_memory.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
CONFIG=tests/gemini/memory.yaml
LIMIT=$((4 << 20)) # memory.yaml's device.memory_limit
common=(--set train.steps=20 --set train.sample_tokens=0 --set train.eval_every=0 --set checkpoint.resume=never
        --set log.progress=never --set data.dir="$WORK/data" --set device.threads=1)
offload=(--set plugin.offload_optim_frac=1 --set plugin.offload_param_frac=1)
losses() { sed -n 's/.*"loss":\([^,]*\),.*/\1/p' "$1"; }
peaks() { grep -o '"device":{"peak":[0-9]*' "$1" | sed 's/.*://'; }

"$TESSEL" run "$CONFIG" --set plugin=null --set device.memory_limit=0 --set log.dir="$WORK/ref" "${common[@]}" \
  >"$WORK/ref.log" 2>&1 || { cat "$WORK/ref.log" >&2; fail "the plain run without a limit failed"; }
ref_peak=$(peaks "$WORK/ref/metrics.jsonl" | sort -n | tail -1)
[ "$ref_peak" -gt "$LIMIT" ] || fail "the plain run peaks at $ref_peak B, not above the $LIMIT B limit"
if "$TESSEL" run "$CONFIG" --set plugin=null --set log.dir="$WORK/plain" "${common[@]}" >"$WORK/plain.log" 2>&1; then
  fail "the plain run fitted under the limit"
fi
grep -q "the device tier cannot hold" "$WORK/plain.log" || { cat "$WORK/plain.log" >&2; fail "the plain run failed otherwise"; }
losses "$WORK/ref/metrics.jsonl" >"$WORK/ref.losses"

run() { # NAME RANKS CEILING ARGS...: train under the limit, compare, check every step's peak
  local name=$1 n=$2 ceiling=$3; shift 3
  "$TESSEL" launch -n "$n" "$CONFIG" --set log.dir="$WORK/$name" "${common[@]}" "$@" >"$WORK/$name.log" 2>&1 \
    || { cat "$WORK/$name.log" >&2; fail "$name: gemini failed under the limit"; }
  losses "$WORK/$name/metrics.jsonl" >"$WORK/$name.losses"
  [ "$(wc -l <"$WORK/$name.losses")" -eq 20 ] || fail "$name: expected 20 steps"
  paste "$WORK/ref.losses" "$WORK/$name.losses" | awk -v name="$name" '
    { d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > worst) worst = d }
    END { if (worst > 1e-5) { printf "FAIL: %s: loss differs by %.3g from the plain run\n", name, worst; exit 1 } }' >&2
  local top
  top=$(peaks "$WORK/$name/metrics.jsonl" | sort -n | tail -1)
  [ "$top" -le "$ceiling" ] || fail "$name: device peak $top B above $ceiling B"
  echo "ok $name: 20 steps under the limit, device peak $top B (ceiling $ceiling B, plain run $ref_peak B)"
}

run static_offload 1 "$LIMIT" "${offload[@]}"
run static_offload_2 2 "$LIMIT" "${offload[@]}"
ratio_limit=$(awk -v l="$LIMIT" 'BEGIN { printf "%d", l * 0.8 }')
run auto 1 "$ratio_limit" --set plugin.placement=auto --set plugin.prefetch=1
run auto_2 2 "$ratio_limit" --set plugin.placement=auto --set plugin.prefetch=1
grep -q "auto placement after the warm-up" "$WORK/auto.log" || fail "auto: no placement after the warm-up"

if "$TESSEL" run "$CONFIG" --set device.memory_limit=2MiB --set log.dir="$WORK/tiny" "${common[@]}" "${offload[@]}" \
   >"$WORK/tiny.log" 2>&1; then
  fail "gemini trained in 2 MiB, below its minimum"
fi
grep -q "cannot train on this device even with every chunk offloaded: a step needs at least .* and 2.00 MiB is available" \
  "$WORK/tiny.log" || { cat "$WORK/tiny.log" >&2; fail "no minimum-bytes message for a 2 MiB device"; }
[ ! -s "$WORK/tiny/metrics.jsonl" ] || fail "a step ran before the minimum-bytes error"
grep -q "or recompute activations (train.recompute: full)" "$WORK/tiny.log" || fail "2 MiB: recomputation not suggested"
# under auto the whole device is what it has (it takes the headroom), not
# limit × steady_ratio; and full recompute is not suggested to a run that has it
if "$TESSEL" run "$CONFIG" --set device.memory_limit=1MiB --set log.dir="$WORK/tiny_auto" "${common[@]}" \
   --set plugin.placement=auto --set train.recompute=full >"$WORK/tiny_auto.log" 2>&1; then
  fail "gemini auto trained in 1 MiB, below its minimum"
fi
grep -q "even with every chunk offloaded and every unit.s activations recomputed in full: a step needs at least .* and \
1.00 MiB is available" "$WORK/tiny_auto.log" ||
  { cat "$WORK/tiny_auto.log" >&2; fail "auto: the message does not give the whole 1 MiB device as available"; }
grep -q "train.recompute: full" "$WORK/tiny_auto.log" && fail "full recompute suggested to a run that recomputes everything"
rm -rf "$WORK"
