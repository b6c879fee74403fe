# The quickstart model learns: after 60 steps the loss is at least 1.0 nats
# below its start (ln 256 ≈ 5.55 for a fresh byte-level model). Observed drop
# is about 2 nats, so the margin covers machine and thread differences.
# And an MFU above 100% against a device.peak_tflops set too low blames that
# key (it once sent the user to `tessel bench peak`, which changes nothing).
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" learn

"$TESSEL" run configs/quickstart.yaml --set train.steps=60 --set log.dir="$WORK/run" --set data.dir="$WORK/data" \
  --set train.sample_tokens=0 --set train.eval_every=0 --set checkpoint.every=0 --set log.progress=never \
  >"$WORK/log" 2>&1 || { cat "$WORK/log" >&2; fail "quickstart run failed"; }
first=$(losses "$WORK/run/metrics.jsonl" | head -1)
last=$(losses "$WORK/run/metrics.jsonl" | tail -1)
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 5.3 && f < 5.8 && l < f - 1.0) }' \
  || fail "loss went from $first to $last"
"$TESSEL" run "$WORK/tiny.yaml" --set train.steps=2 --set device.peak_tflops=1e-9 --set log.dir="$WORK/low" \
  >"$WORK/low.log" 2>&1 || { cat "$WORK/low.log" >&2; fail "the run with a low peak failed"; }
grep -q "MFU above 100%: device.peak_tflops is below" "$WORK/low.log" || { cat "$WORK/low.log" >&2; fail "the MFU warning does not name device.peak_tflops"; }
! grep -q "tessel bench peak" "$WORK/low.log" || fail "the MFU warning sends the user to tessel bench peak"
rm -rf "$WORK"
echo "ok: loss fell from $first to $last in 60 steps"
