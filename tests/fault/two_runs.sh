#!/usr/bin/env bash
# tests/fault/two_runs.sh — a second run of the same config while the first
# is training: the second is refused at once (status 1) with the first's
# host and PID, and the first finishes untouched — every step logged once,
# its checkpoints whole — and then releases the directory.
#
# usage: two_runs.sh TESSEL SRC TMP
set -u
TESSEL=$1
SRC=$2
WORK=$3/two_runs.$$
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$SRC" || exit 1

first=
fail() {
  echo "FAIL: $*" >&2
  [ -n "$first" ] && kill -9 "$first" 2>/dev/null
  exit 1
}

cat >"$WORK/tiny.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}
data: {text: ["core/config/*.c"], dir: $WORK/data}
train: {steps: 40, batch_size: 4, seed: 7, sample_tokens: 0}
device: {threads: 1}
checkpoint: {every: 1, keep: 2}
log: {dir: $WORK/run, every: 1, progress: never}
YAML

"$TESSEL" run "$WORK/tiny.yaml" >"$WORK/first.log" 2>&1 &
first=$!
for _ in $(seq 1 600); do # until the first is training (at most 60 s)
  grep -q '^step ' "$WORK/first.log" && break
  kill -0 $first 2>/dev/null || fail "the first run ended early: $(tail -3 "$WORK/first.log")"
  sleep 0.1
done
"$TESSEL" run "$WORK/tiny.yaml" >"$WORK/second.log" 2>&1
status=$?
[ $status -eq 1 ] || fail "the second run ended with status $status, expected 1: $(cat "$WORK/second.log")"
grep -qF "log.dir $WORK/run is in use by another tessel run (host $(hostname), PID $first)" "$WORK/second.log" ||
  fail "the refusal does not name the first run's host and PID: $(cat "$WORK/second.log")"
kill -0 $first 2>/dev/null || fail "the first run died beside the second"

wait $first
status=$?
first=
[ $status -eq 0 ] || fail "the first run failed (status $status): $(tail -3 "$WORK/first.log")"
steps=$(sed -n 's/.*"step":\([0-9]*\),.*/\1/p' "$WORK/run/metrics.jsonl" | tr '\n' ' ')
[ "$steps" = "$(seq -s ' ' 1 40) " ] || fail "the first run's metrics are not steps 1..40 once each: $steps"
"$TESSEL" sample "$WORK/run/checkpoints/step_00000040" --tokens 4 >/dev/null 2>"$WORK/sample.log" ||
  fail "the first run's last checkpoint is not whole: $(cat "$WORK/sample.log")"
# and the directory is free again: a third run resumes and finds the work done
"$TESSEL" run "$WORK/tiny.yaml" >"$WORK/third.log" 2>&1 || fail "the directory stayed locked: $(cat "$WORK/third.log")"
rm -rf "$WORK"
echo "ok: the second run was refused with the first's host and PID; the first finished intact"
