#!/usr/bin/env bash
# tests/fault/read_error.sh — a checkpoint file that is there but fails to
# read (EIO: a failing disk, a network file system) is reported as not
# readable, with "run again if it passes", not as an incomplete checkpoint
# to move away: that advice threw good checkpoints away. Once the read
# works again, the same command resumes from it.
#
# usage: read_error.sh TESSEL SRC TMP FAULT_LIB
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" read_error
LIB=$4
tiny_config 4 0
CK=$WORK/run/checkpoints
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" >"$WORK/first.log" 2>&1 || die "the first run failed"

env LD_PRELOAD="$LIB" TESSEL_FAULT_DIR="$CK/step_00000004" TESSEL_FAULT=eio-read:optimizer.safetensors \
  "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=6 >"$WORK/eio.log" 2>&1
status=$?
[ $status -eq 1 ] || fail "a read error resuming: exit status $status, expected 1: $(tail -3 "$WORK/eio.log")"
grep -q "checkpoint $CK/step_00000004 could not be read (run again if the read error passes" "$WORK/eio.log" \
  || fail "a read error resuming is not reported as one: $(cat "$WORK/eio.log")"
grep -q "Input/output error" "$WORK/eio.log" || fail "the read error's cause is not given: $(cat "$WORK/eio.log")"
grep -q "is incomplete" "$WORK/eio.log" && fail "a checkpoint that failed to read is called incomplete"

"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=6 >"$WORK/again.log" 2>&1 \
  || fail "once the read works, the run failed: $(tail -3 "$WORK/again.log")"
grep -q "resuming from $CK/step_00000004" "$WORK/again.log" || fail "the run did not resume from step 4: $(cat "$WORK/again.log")"

finish "ok: a checkpoint that fails to read is reported as unreadable, and resumes once it reads"
