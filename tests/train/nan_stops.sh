# A NaN loss stops the run at its step, before the update, with the last good
# checkpoint named: not the one whose weights gave the NaN; at the first step
# the starting weights are named instead. A NaN validation loss stops it
# too, without saving the weights that gave it. Exit status 1.
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

# at step 1 no update has been applied: the starting weights give the NaN,
# and lowering the learning rate cannot help (it once advised just that)
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/first" --set plugin.path="$PLUGIN" --set plugin.nan_at_step=1 \
  >"$WORK/first.out" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || { cat "$WORK/first.out" >&2; fail "a NaN at step 1: exit status $rc, expected 1"; }
grep -q "NaN at step 1, .* No update had been applied, so optimizer.lr and optimizer.grad_clip are not the cause: the freshly initialised model gives it" \
  "$WORK/first.out" || { cat "$WORK/first.out" >&2; fail "a NaN at step 1 of a fresh run is not put down to the start"; }
grep -q "a lower optimizer.lr" "$WORK/first.out" && fail "a NaN at step 1 advises a lower learning rate"

# weights with a NaN in them (transformers saves and loads them as they
# are): import and model.init_from name the tensor, and the NaN the first
# step gets is put down to the weights model.init_from names, or to the
# checkpoint resumed from
mkdir -p "$WORK/hf"
"$TESSEL" export "$WORK/run/checkpoints/step_00000002" -o "$WORK/hf/model.safetensors" >/dev/null 2>&1 || fail "export failed"
st="$WORK/hf/model.safetensors"
header=$(od -An -t u8 -N8 "$st" | tr -d ' ')
begin=$(head -c $((8 + header)) "$st" | tail -c "$header" |
  sed -n 's/.*"transformer.wpe.weight":{[^}]*"data_offsets":\[\([0-9]*\),.*/\1/p')
[ -n "$begin" ] || fail "no transformer.wpe.weight in the export"
printf '\000\000\300\177' | dd of="$st" bs=1 seek=$((8 + header + begin)) conv=notrunc status=none # wpe[0, 0] = NaN
"$TESSEL" import "$WORK/hf" -o "$WORK/nan_ck" >"$WORK/import.out" 2>&1 || { cat "$WORK/import.out" >&2; fail "import failed"; }
grep -q "warning: $WORK/hf: tensor 'transformer.wpe.weight' holds 1 non-finite value(s), the first at \[0, 0\]" \
  "$WORK/import.out" || { cat "$WORK/import.out" >&2; fail "import does not name the tensor holding a NaN"; }
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/init" --set model.init_from="$WORK/nan_ck" >"$WORK/init.out" 2>&1
rc=$?
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/resumed" --resume "$WORK/nan_ck" >"$WORK/resumed.out" 2>&1
set -e
[ $rc -eq 1 ] || { cat "$WORK/init.out" >&2; fail "NaN weights from model.init_from: exit status $rc, expected 1"; }
grep -q "warning: $WORK/nan_ck: tensor 'wpe.weight' holds 1 non-finite value(s)" "$WORK/init.out" ||
  { cat "$WORK/init.out" >&2; fail "model.init_from does not name the tensor holding a NaN"; }
grep -q "NaN at step 1, .* are not the cause: the weights model.init_from names ($WORK/nan_ck) give it" "$WORK/init.out" ||
  { cat "$WORK/init.out" >&2; fail "the NaN is not put down to the weights model.init_from names"; }
grep -q "NaN at step 1, .* are not the cause: the weights of the checkpoint resumed from, $WORK/nan_ck, give it" \
  "$WORK/resumed.out" || { cat "$WORK/resumed.out" >&2; fail "the NaN is not put down to the checkpoint resumed from"; }
grep -q "a lower optimizer.lr" "$WORK/init.out" "$WORK/resumed.out" && fail "NaN starting weights: a lower learning rate advised"

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
echo "ok: NaN losses, in training and in validation, stop the run and name the last good checkpoint or the start"
