#!/usr/bin/env bash
# tests/fault/read_error.sh — I/O errors (EIO: a failing disk, a network
# file system) around checkpoints are reported as what they are:
#   - a checkpoint file that is there but fails to read is not readable
#     ("run again if it passes"), not an incomplete checkpoint to move away
#     (that advice threw good checkpoints away); once it reads, the same
#     command resumes from it;
#   - a save whose directory fsync fails after the step was renamed into
#     place says the step is there; the next run resumes from the step
#     `latest` names;
#   - a summary that cannot be written after the training says the
#     training and its last checkpoint are done.
#
# usage: read_error.sh TESSEL SRC TMP FAULT_LIB
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" read_error
LIB=$4
tiny_config 4 0
CK=$WORK/run/checkpoints
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" >"$WORK/first.log" 2>&1 || die "the first run failed"

under_fault "$CK/step_00000004" eio-read:optimizer.safetensors "$WORK/eio.log" --set log.dir="$WORK/run" \
  --set train.steps=6
status=$?
[ $status -eq 1 ] || fail "a read error resuming: exit status $status, expected 1: $(tail -3 "$WORK/eio.log")"
grep -q "checkpoint $CK/step_00000004 could not be read (run again if the read error passes" "$WORK/eio.log" \
  || fail "a read error resuming is not reported as one: $(cat "$WORK/eio.log")"
grep -q "Input/output error" "$WORK/eio.log" || fail "the read error's cause is not given: $(cat "$WORK/eio.log")"
grep -q "is incomplete" "$WORK/eio.log" && fail "a checkpoint that failed to read is called incomplete"

"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=6 >"$WORK/again.log" 2>&1 \
  || fail "once the read works, the run failed: $(tail -3 "$WORK/again.log")"
grep -q "resuming from $CK/step_00000004" "$WORK/again.log" || fail "the run did not resume from step 4: $(cat "$WORK/again.log")"

# the directory's fsync after step 6 was renamed into place fails: the
# message says the checkpoint is there (it once called it unwritten and
# named the one before as the last), and the next run resumes from it
under_fault "$CK" eio-fsync-dir "$WORK/fsync.log" --set log.dir="$WORK/run" --set train.steps=7
status=$?
[ $status -eq 1 ] || fail "a failed fsync: exit status $status, expected 1: $(tail -3 "$WORK/fsync.log")"
grep -q "checkpoint step_00000007 is in place in $CK, but the file system failed after it was: .*Input/output error" \
  "$WORK/fsync.log" || fail "a failed fsync after the rename is not reported as such: $(cat "$WORK/fsync.log")"
grep -q "cannot write checkpoint" "$WORK/fsync.log" && fail "a checkpoint in place is called unwritten"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=8 >"$WORK/after.log" 2>&1 \
  || fail "the run after the failed fsync failed: $(tail -3 "$WORK/after.log")"
# the failure came before `latest` named step 7: the run goes on from step 6
grep -q "resuming from $CK/step_00000006" "$WORK/after.log" || fail "did not resume from step 6: $(cat "$WORK/after.log")"

# summary.json cannot be made durable after training finished: the error
# says the training and its last checkpoint are done (it said only the cause)
under_fault "$WORK/sum" eio-fsync-dir "$WORK/sum.log" --set log.dir="$WORK/sum" --set train.steps=2
status=$?
[ $status -eq 1 ] || fail "a failed summary: exit status $status, expected 1"
grep -q "The training itself is done and its last checkpoint, $WORK/sum/checkpoints/step_00000002, is written" \
  "$WORK/sum.log" || fail "a failed summary does not say the training is done: $(tail -3 "$WORK/sum.log")"

finish "ok: a checkpoint that fails to read is reported as unreadable and resumes once it reads; one in place when the file system failed is named as such"
