# TensorBoard's own reader on a run's event files: every step's scalars are
# there with the metrics file's values (as float32), and a run stopped at
# step 5 and resumed shows each step once. Skipped (77) when the tensorboard
# Python package is not installed.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" tensorboard
python3 -c "import tensorboard" 2>/dev/null || { echo "skip: the tensorboard Python package is not installed"; exit 77; }
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set log.tensorboard="$WORK/tb" --set train.stop_after=5 \
  >"$WORK/log" 2>&1
[ $? -eq 75 ] || { cat "$WORK/log" >&2; fail "the first part did not stop at step 5"; }
set -e
sleep 1 # event files are named by the second they were created in
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set log.tensorboard="$WORK/tb" >>"$WORK/log" 2>&1 \
  || { cat "$WORK/log" >&2; fail "the resumed run failed"; }
[ "$(ls "$WORK/tb" | wc -l)" -eq 2 ] || fail "expected two event files, one per invocation"
python3 - "$WORK/tb" "$WORK/run/metrics.jsonl" <<'PY' || fail "TensorBoard reads other values than the metrics file"
import json, struct, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
metrics = [json.loads(l) for l in open(sys.argv[2])]
f32 = lambda x: struct.unpack("f", struct.pack("f", x))[0]
loss = {e.step: e.value for e in acc.Scalars("train/loss")}
assert sorted(loss) == [m["step"] for m in metrics], (sorted(loss), len(metrics))
assert all(loss[m["step"]] == f32(m["loss"]) for m in metrics)
val = {e.step: e.value for e in acc.Scalars("val/loss")}
assert val == {m["step"]: f32(m["val_loss"]) for m in metrics if "val_loss" in m}, val
assert len(acc.Scalars("perf/tokens_per_s")) == len(metrics)
print("ok: TensorBoard reads %d steps of loss, validation loss and throughput" % len(metrics))
PY
rm -rf "$WORK"
