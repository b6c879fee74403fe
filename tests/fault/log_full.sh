#!/usr/bin/env bash
# tests/fault/log_full.sh — the run's log on a full disk, and outputs named
# where a device or a FIFO is.
#
# usage: log_full.sh TESSEL SRC TMP LIB (LIB: the fault library, inject.c)
#
# - log.metrics on /dev/full (every write fails with ENOSPC): the run stops
#   at the next step with a checkpoint and exits 1, saying where it stopped
#   and that the same command goes on; it does (the run once ended at once,
#   losing every step since the last checkpoint, with only "write failed").
# - log.metrics: /dev/null throws the metrics away, and stays a device (a
#   resumed run's metrics are cut back by writing a file aside and renaming
#   it over log.metrics: as root that put a file where /dev/null was, and
#   summary.json went to /dev); summary.json goes to log.dir.
# - a resumed run whose metrics lack lines of steps its checkpoint holds
#   (trained while the disk was full) says which, and goes on after them.
# - log.tensorboard on a read-only disk: a fresh run fails before its first
#   step and leaves no log.dir (the empty metrics file it had opened kept
#   the directory it made).
# - log.tensorboard whose folder can be made but not its event file: the
#   fresh run fails and leaves neither the folder (nor its parents) nor
#   log.dir behind (the empty folder stayed).
# - tokenizer train -o FIFO is refused, and the FIFO stays (the same rename
#   replaced it).
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" log_full
LIB=$4
tiny_config 6 0
case_name=metrics_full
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/full" --set log.metrics=/dev/full --set checkpoint.every=0 \
  >"$WORK/full.out" 2>"$WORK/full.err"
status=$?
[ $status -eq 1 ] || fail "exit status $status, expected 1: $(cat "$WORK/full.err")"
grep -qF "log.metrics: /dev/full: write failed: No space left on device" "$WORK/full.err" ||
  fail "the message does not name log.metrics: $(cat "$WORK/full.err")"
grep -qF "The run stopped at step 2 with checkpoint $WORK/full/checkpoints/step_00000002" "$WORK/full.err" ||
  fail "the message does not say where it stopped: $(cat "$WORK/full.err")"
[ -c /dev/full ] || fail "/dev/full is no longer a device"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/full" --set checkpoint.every=0 >"$WORK/again.log" 2>&1 ||
  fail "the same command with room did not go on: $(cat "$WORK/again.log")"
grep -q "resuming from .*step_00000002" "$WORK/again.log" || fail "the second run did not resume from step 2"

case_name=metrics_gap
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/gap" --set train.stop_after=3 >"$WORK/gap1.log" 2>&1
[ $? -eq 75 ] || fail "the first run did not stop at step 3: $(tail -2 "$WORK/gap1.log")"
sed -i '$d' "$WORK/gap/metrics.jsonl" # step 3's line was never written
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/gap" >"$WORK/gap2.log" 2>&1 || fail "the resumed run failed"
grep -qF "metrics.jsonl has no lines for steps 3 to 3, which the checkpoint holds" "$WORK/gap2.log" ||
  fail "the gap in the metrics is not reported: $(cat "$WORK/gap2.log")"
[ "$(sed -n 's/.*"step":\([0-9]*\),.*/\1/p' "$WORK/gap/metrics.jsonl" | tr '\n' ' ')" = "1 2 4 5 6 " ] ||
  fail "metrics steps: $(sed -n 's/.*"step":\([0-9]*\),.*/\1/p' "$WORK/gap/metrics.jsonl" | tr '\n' ' ')"

case_name=metrics_null
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/null" --set log.metrics=/dev/null --set train.steps=2 \
  >"$WORK/null.log" 2>&1 || fail "a run with log.metrics /dev/null failed: $(cat "$WORK/null.log")"
[ -c /dev/null ] || fail "/dev/null is no longer a device"
[ -f "$WORK/null/summary.json" ] || fail "summary.json is not in log.dir"

case_name=tensorboard_read_only
mkdir "$WORK/ro"
under_fault "$WORK/ro" erofs:0 "$WORK/ro.log" --set log.dir="$WORK/fresh/run" --set log.tensorboard="$WORK/ro/tb"
status=$?
[ $status -eq 1 ] || fail "exit status $status, expected 1: $(cat "$WORK/ro.log")"
grep -qF "log.tensorboard: $WORK/ro" "$WORK/ro.log" || fail "the message does not name log.tensorboard: $(cat "$WORK/ro.log")"
[ -e "$WORK/fresh" ] && fail "a run that never trained left $(find "$WORK/fresh")"

case_name=tensorboard_no_file
under_fault "$WORK" deny-open:events.out.tfevents "$WORK/tb.log" --set log.dir="$WORK/fresh2/run" \
  --set log.tensorboard="$WORK/fresh2/tb/new"
status=$?
[ $status -eq 1 ] || fail "exit status $status, expected 1: $(cat "$WORK/tb.log")"
grep -qF "log.tensorboard: cannot create $WORK/fresh2/tb/new/events.out.tfevents" "$WORK/tb.log" ||
  fail "the message does not name the event file: $(cat "$WORK/tb.log")"
[ -e "$WORK/fresh2" ] && fail "a run that never trained left $(find "$WORK/fresh2" | tr '\n' ' ')"

case_name=fifo_output
mkfifo "$WORK/fifo"
timeout 60 "$TESSEL" tokenizer train core/config/parse.c --vocab 260 -o "$WORK/fifo" >/dev/null 2>"$WORK/fifo.err"
status=$?
[ $status -ne 0 ] && [ $status -lt 124 ] || fail "training a tokenizer into a FIFO: exit $status"
grep -qF "$WORK/fifo: is a FIFO, not a file" "$WORK/fifo.err" || fail "unclear refusal: $(cat "$WORK/fifo.err")"
[ -p "$WORK/fifo" ] || fail "the FIFO was replaced"
finish "ok: a full log disk stops the run with a checkpoint; devices and FIFOs named as outputs stay what they are"
