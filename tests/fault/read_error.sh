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

# fails_with NAME DIR FAULT TEXT ARGS...: a run under FAULT that exits 1
# saying TEXT (a grep pattern); its output in $WORK/NAME.log
fails_with() {
  local name=$1 dir=$2 fault=$3 text=$4
  shift 4
  under_fault "$dir" "$fault" "$WORK/$name.log" "$@"
  local status=$?
  [ $status -eq 1 ] || fail "$name: exit status $status, expected 1: $(tail -3 "$WORK/$name.log")"
  grep -q -- "$text" "$WORK/$name.log" || fail "$name: no '$text': $(cat "$WORK/$name.log")"
}

fails_with eio "$CK/step_00000004" eio-read:optimizer.safetensors \
  "checkpoint $CK/step_00000004 could not be read (run again if the read error passes" \
  --set log.dir="$WORK/run" --set train.steps=6
grep -q "Input/output error" "$WORK/eio.log" || fail "the read error's cause is not given: $(cat "$WORK/eio.log")"
grep -q "is incomplete" "$WORK/eio.log" && fail "a checkpoint that failed to read is called incomplete"

"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=6 >"$WORK/again.log" 2>&1 \
  || fail "once the read works, the run failed: $(tail -3 "$WORK/again.log")"
grep -q "resuming from $CK/step_00000004" "$WORK/again.log" || fail "the run did not resume from step 4: $(cat "$WORK/again.log")"

# the directory's fsync after step 6 was renamed into place fails: the
# message says the checkpoint is there (it once called it unwritten and
# named the one before as the last), and the next run resumes from it
fails_with fsync "$CK" eio-fsync-dir \
  "checkpoint step_00000007 is in place in $CK, but the file system failed after it was: .*Input/output error" \
  --set log.dir="$WORK/run" --set train.steps=7
grep -q "cannot write checkpoint" "$WORK/fsync.log" && fail "a checkpoint in place is called unwritten"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=8 >"$WORK/after.log" 2>&1 \
  || fail "the run after the failed fsync failed: $(tail -3 "$WORK/after.log")"
# the failure came before `latest` named step 7: the run goes on from step 6
grep -q "resuming from $CK/step_00000006" "$WORK/after.log" || fail "did not resume from step 6: $(cat "$WORK/after.log")"

# a checkpoint this user may not read is neither a passing fault nor damage:
# the message says so (it said "if it stays, the checkpoint is damaged").
# As root, read it as nobody: root reads whatever the permissions say.
as_user=()
[ "$(id -u)" -eq 0 ] && as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod -R a+rX "$WORK"
if "${as_user[@]}" test -x "$TESSEL" -a -r "$CK/step_00000006/trainer.json"; then
  chmod 000 "$CK/step_00000006/model.safetensors"
  "${as_user[@]}" "$TESSEL" sample "$CK/step_00000006" --tokens 2 >"$WORK/perm.log" 2>&1
  status=$?
  chmod 644 "$CK/step_00000006/model.safetensors"
  [ $status -eq 1 ] && grep -q "could not be read: this user may not read it" "$WORK/perm.log" &&
    ! grep -q "damaged" "$WORK/perm.log" || fail "unreadable checkpoint: exit status $status: $(cat "$WORK/perm.log")"
else # a build directory an unprivileged user cannot reach: this one case cannot be set up
  echo "not checked here: an unreadable checkpoint (user 65534 cannot reach $TESSEL or $WORK)"
fi

# summary.json cannot be made durable after training finished: the error
# says the training and its last checkpoint are done (it said only the cause)
fails_with sum "$WORK/sum" eio-fsync-dir \
  "The training itself is done and its last checkpoint, $WORK/sum/checkpoints/step_00000002, is written" \
  --set log.dir="$WORK/sum" --set train.steps=2

finish "ok: a checkpoint that fails to read is reported as unreadable and resumes once it reads; one in place when the file system failed is named as such"
