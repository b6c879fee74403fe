# A NaN loss stops the run at its step, before the update, with the last good
# checkpoint named: not the one whose weights gave the NaN. A NaN validation
# loss stops it too, without saving the weights that gave it. Exit status 1.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" nan
PLUGIN=$4

set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set checkpoint.every=2 \
  --set plugin.path="$PLUGIN" --set plugin.nan_at_step=5 >"$WORK/out" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || { cat "$WORK/out" >&2; fail "exit status $rc, expected 1"; }
grep -q "NaN at step 5" "$WORK/out" || { cat "$WORK/out" >&2; fail "the error does not name step 5"; }
# step 4's weights gave the NaN: its checkpoint cannot help, whatever the lr;
# step 2's gave a finite loss at step 3
grep -q "The newest checkpoint, $WORK/run/checkpoints/step_00000004, holds those weights. The last good checkpoint is $WORK/run/checkpoints/step_00000002;" \
  "$WORK/out" || { cat "$WORK/out" >&2; fail "the error does not tell the checkpoint of the bad weights from the last good one"; }
[ -d "$WORK/run/checkpoints/step_00000005" ] && fail "a checkpoint was written after the NaN"
[ "$(losses "$WORK/run/metrics.jsonl" | wc -l)" -eq 4 ] || fail "metrics should stop at step 4"

# resumed from the bad weights, the run has seen none good: the one before
# them, beside them, is named (it said none was left; then it looked in the
# new run's own directory, not the one --resume named)
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/other" --set checkpoint.every=2 --set plugin.path="$PLUGIN" \
  --set plugin.nan_at_step=1 --resume "$WORK/run/checkpoints/step_00000004" >"$WORK/again.out" 2>&1
set -e
grep -q "holds those weights. The newest checkpoint before it is $WORK/run/checkpoints/step_00000002;" "$WORK/again.out" ||
  { cat "$WORK/again.out" >&2; fail "after a resume the older checkpoint on disk is not named"; }

# a checkpoint two steps back is good as it is
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/three" --set checkpoint.every=3 \
  --set plugin.path="$PLUGIN" --set plugin.nan_at_step=5 >"$WORK/three.out" 2>&1
set -e
grep -q "so the run stopped before applying that step. The last good checkpoint is $WORK/three/checkpoints/step_00000003;" \
  "$WORK/three.out" || { cat "$WORK/three.out" >&2; fail "step_00000003 is not named the last good checkpoint"; }

# a NaN validation loss stops the run too: NaN once meant "not evaluated",
# and the run went on, reporting an older validation loss as its last
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/val" --set checkpoint.every=2 --set train.eval_every=2 \
  --set plugin.path="$PLUGIN" --set plugin.nan_at_step=1000 --set plugin.nan_val_after=4 >"$WORK/val.out" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || { cat "$WORK/val.out" >&2; fail "a NaN validation loss: exit status $rc, expected 1"; }
grep -q "the validation loss became NaN after step 4: .* The last good checkpoint is $WORK/val/checkpoints/step_00000002;" \
  "$WORK/val.out" || { cat "$WORK/val.out" >&2; fail "the NaN validation loss is not reported with the last good checkpoint"; }
[ -d "$WORK/val/checkpoints/step_00000004" ] && fail "the weights that gave a NaN validation loss were saved"
[ "$(losses "$WORK/val/metrics.jsonl" | wc -l)" -eq 3 ] || fail "metrics should stop at step 3"
rm -rf "$WORK"
echo "ok: NaN losses, in training and in validation, stop the run and name the last good checkpoint"
