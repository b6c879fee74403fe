# tests/equiv/metrics.sh — sourced by a strategy's traffic and memory tests.
# The caller sets TESSEL, WORK, the array `common` of run arguments and a
# `fail` function.
#
#   payload_check NAME RANKS CONFIG EXPECTED [RUN ARGS]...
#
# Runs CONFIG on RANKS ranks, then compares the
# payload bytes every communicator counted on rank 0 at steps 1 and 2 with
# the file EXPECTED: one "GROUP BYTES" line per group, sorted, plus any
# "# ..." lines, which are printed as notes. The core's own group is left
# out. The last step is not checked: it also runs the final validation.
payload_counted() { # METRICS STEP
  sed -n "$2p" "$1" | grep -o '"comm":{.*}' | grep -o '"[a-z+]*":{"calls":[0-9]*,"payload_bytes":[0-9]*' |
    sed 's/"\([a-z+]*\)":{"calls":[0-9]*,"payload_bytes":\([0-9]*\)/\1 \2/' | grep -v '^core ' | sort
}

payload_check() {
  local name=$1 ranks=$2 config=$3 expected=$4
  shift 4
  "$TESSEL" launch -n "$ranks" "$config" --set log.dir="$WORK/$name" "${common[@]}" "$@" >"$WORK/$name.log" 2>&1 ||
    { cat "$WORK/$name.log" >&2; fail "$name: the $ranks-rank run failed"; }
  grep -v '^#' "$expected" >"$WORK/$name.want"
  for step in 1 2; do
    payload_counted "$WORK/$name/metrics.jsonl" $step >"$WORK/$name.got"
    if ! diff "$WORK/$name.want" "$WORK/$name.got" >"$WORK/$name.diff"; then
      cat "$WORK/$name.diff" >&2
      fail "$name: step $step payload differs from the expected volume (< expected, > counted)"
    fi
  done
  echo "ok: $name: $(tr '\n' ' ' <"$WORK/$name.want")"
  grep '^#' "$expected" || true
}

#   params_check CONFIG RANKS PARTS WANT_ONE WANT_RANK MAX_RATIO [RUN ARGS]...
#
# Runs CONFIG for one step as one process without a strategy and on RANKS
# ranks, and checks memory.device.params: WANT_ONE bytes in one process,
# WANT_RANK on rank 0, and a share of at most MAX_RATIO × 1/PARTS.
params_of() { head -1 "$1" | grep -o '"device":{[^}]*}' | sed -n 's/.*"params":\([0-9]*\).*/\1/p'; }

params_check() {
  local config=$1 ranks=$2 parts=$3 want_one=$4 want_rank=$5 max=$6
  shift 6
  "$TESSEL" run "$config" --set plugin=null --set log.dir="$WORK/one" "${common[@]}" "$@" >"$WORK/one.log" 2>&1 ||
    { cat "$WORK/one.log" >&2; fail "the single-process run failed"; }
  "$TESSEL" launch -n "$ranks" "$config" --set log.dir="$WORK/many" "${common[@]}" "$@" >"$WORK/many.log" 2>&1 ||
    { cat "$WORK/many.log" >&2; fail "the $ranks-rank run failed"; }
  local one rank
  one=$(params_of "$WORK/one/metrics.jsonl")
  rank=$(params_of "$WORK/many/metrics.jsonl")
  [ "$one" -eq "$want_one" ] || fail "one process keeps $one parameter bytes, expected $want_one"
  [ "$rank" -eq "$want_rank" ] || fail "rank 0 of $ranks keeps $rank parameter bytes, expected $want_rank"
  awk -v a="$rank" -v b="$one" -v p="$parts" -v max="$max" 'BEGIN { r = a / b * p
    printf "ok: rank 0 keeps %d of %d parameter bytes: %.4f × 1/%d\n", a, b, r, p; exit !(r >= 1 && r <= max) }' ||
    fail "rank 0's share is not within $max × 1/$parts"
}
