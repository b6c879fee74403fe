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
# summary.json's tokens/s is the throughput of its median step time. Of an
# even count of measured steps (13 steps leave 12) that median averages two
# steps, and a median of tokens/s taken on its own did not match it (85,832
# tok/s once sat beside 387 ms/step).
"$TESSEL" run "$WORK/tiny.yaml" --set train.steps=13 --set log.dir="$WORK/even" >"$WORK/even.log" 2>&1 ||
  { cat "$WORK/even.log" >&2; fail "the 13-step run failed"; }
summary=$(tr -d ' \t\n' <"$WORK/even/summary.json")
tps=$(echo "$summary" | grep -o '"tokens_per_s":[0-9.e+-]*' | cut -d: -f2)
step=$(echo "$summary" | grep -o '"step_time_s":[0-9.e+-]*' | cut -d: -f2)
tokens=$(sed -n '1s/.*"tokens":\([0-9]*\).*/\1/p' "$WORK/even/metrics.jsonl")
awk -v t="$tps" -v s="$step" -v n="$tokens" 'BEGIN { d = t * s / n - 1; exit !(d < 1e-9 && d > -1e-9) }' ||
  fail "summary.json: $tps tokens/s at $step s/step is not $tokens tokens per step"
"$TESSEL" run "$WORK/tiny.yaml" --set train.steps=2 --set device.peak_tflops=1e-9 --set log.dir="$WORK/low" \
  >"$WORK/low.log" 2>&1 || { cat "$WORK/low.log" >&2; fail "the run with a low peak failed"; }
grep -q "MFU above 100%: device.peak_tflops is below" "$WORK/low.log" || { cat "$WORK/low.log" >&2; fail "the MFU warning does not name device.peak_tflops"; }
! grep -q "tessel bench peak" "$WORK/low.log" || fail "the MFU warning sends the user to tessel bench peak"
rm -rf "$WORK"
echo "ok: loss fell from $first to $last in 60 steps"
