#!/usr/bin/env bash
# tests/fault/two_runs.sh — a second run of the same config while the first
# is training: the second is refused at once (status 1) with the first's
# host and PID, and so is a third of a directory of its own that names the
# first's metrics file as its log.metrics; the first finishes untouched — every step logged once,
# its checkpoints whole — and then releases the directory. The first run's
# steps are made long (the sleepy test strategy, 50 ms a step: the same
# arithmetic as no strategy) so that it is still training when the second
# starts, however fast the machine.
#
# usage: two_runs.sh TESSEL SRC TMP SLEEPY_PLUGIN
SLEEPY=$4
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" two_runs
first=
trap '[ -z "$first" ] || kill -9 "$first" 2>/dev/null; true' EXIT # a failure must not leave the first run behind
tiny_config 40 2 "plugin: {path: $SLEEPY, sleep_ms: 50}"

"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" >"$WORK/first.log" 2>&1 &
first=$!
for _ in $(seq 1 600); do # until the first is training (at most 60 s)
  grep -q '^step ' "$WORK/first.log" && break
  kill -0 $first 2>/dev/null || die "the first run ended early: $(tail -3 "$WORK/first.log")"
  sleep 0.1
done
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" >"$WORK/second.log" 2>&1
status=$?
[ $status -eq 1 ] || die "the second run ended with status $status, expected 1: $(cat "$WORK/second.log")"
grep -qF "log.dir $WORK/run is in use by another tessel run (host $(hostname), PID $first)" "$WORK/second.log" ||
  die "the refusal does not name the first run's host and PID: $(cat "$WORK/second.log")"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/other" --set log.metrics="$WORK/run/metrics.jsonl" \
  >"$WORK/shared.log" 2>&1
status=$?
[ $status -eq 1 ] || die "a run sharing the first's log.metrics ended with status $status, expected 1: $(cat "$WORK/shared.log")"
grep -qF "log.metrics: $WORK/run/metrics.jsonl is being written by another tessel run" "$WORK/shared.log" ||
  die "the refusal does not name the shared metrics file: $(cat "$WORK/shared.log")"
kill -0 $first 2>/dev/null || die "the first run died beside the second"

wait $first
status=$?
first=
[ $status -eq 0 ] || die "the first run failed (status $status): $(tail -3 "$WORK/first.log")"
steps=$(sed -n 's/.*"step":\([0-9]*\),.*/\1/p' "$WORK/run/metrics.jsonl" | tr '\n' ' ')
[ "$steps" = "$(seq -s ' ' 1 40) " ] || die "the first run's metrics are not steps 1..40 once each: $steps"
"$TESSEL" sample "$WORK/run/checkpoints/step_00000040" --tokens 4 >/dev/null 2>"$WORK/sample.log" ||
  die "the first run's last checkpoint is not whole: $(cat "$WORK/sample.log")"
# and the directory is free again: a third run resumes and finds the work done
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" >"$WORK/third.log" 2>&1 || die "the directory stayed locked: $(cat "$WORK/third.log")"
finish "ok: the second run was refused with the first's host and PID; the first finished intact"
