# The quickstart model learns: after 60 steps the loss is at least 1.0 nats
# below its start (ln 256 ≈ 5.55 for a fresh byte-level model). Observed drop
# is about 2 nats, so the margin covers machine and thread differences.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" learn

"$TESSEL" run configs/quickstart.yaml --set train.steps=60 --set log.dir="$WORK/run" --set data.dir="$WORK/data" \
  --set train.sample_tokens=0 --set train.eval_every=0 --set checkpoint.every=0 --set log.progress=never \
  >"$WORK/log" 2>&1 || { cat "$WORK/log" >&2; fail "quickstart run failed"; }
first=$(losses "$WORK/run/metrics.jsonl" | head -1)
last=$(losses "$WORK/run/metrics.jsonl" | tail -1)
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f > 5.3 && f < 5.8 && l < f - 1.0) }' \
  || fail "loss went from $first to $last"
rm -rf "$WORK"
echo "ok: loss fell from $first to $last in 60 steps"
