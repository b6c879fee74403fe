# A NaN loss stops the run at its step, before the update, with the last good
# checkpoint named; exit status 1.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" nan
PLUGIN=$4

set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set checkpoint.every=2 \
  --set plugin.path="$PLUGIN" --set plugin.nan_at_step=5 >"$WORK/out" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || { cat "$WORK/out" >&2; fail "exit status $rc, expected 1"; }
grep -q "NaN at step 5" "$WORK/out" || { cat "$WORK/out" >&2; fail "the error does not name step 5"; }
grep -q "step_00000004" "$WORK/out" || { cat "$WORK/out" >&2; fail "the error does not name the last good checkpoint"; }
[ -d "$WORK/run/checkpoints/step_00000005" ] && fail "a checkpoint was written after the NaN"
[ "$(losses "$WORK/run/metrics.jsonl" | wc -l)" -eq 4 ] || fail "metrics should stop at step 4"
rm -rf "$WORK"
echo "ok: NaN at step 5 stopped the run and named step_00000004"
