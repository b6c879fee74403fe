#!/usr/bin/env bash
# tests/fault/save_crash.sh — a crash at the two moments of a save where
# the checkpoint directory holds no whole copy of a step under its name:
#
#   - a step saved again (a run resumed from an older step): the old
#     step_N is moved aside, then the new one renamed into place; killed
#     between the two, the next start puts the old one back (it deleted
#     both once);
#   - pruning (checkpoint.keep): killed while an old step's files go, the
#     next start finds no step_N with files missing (one was left, looking
#     whole to a listing, until the next prune).
#
# After each, every step_* directory must load (`tessel sample`) and no
# temporary is left. The kills come from FAULT_LIB (LD_PRELOAD), right
# after the rename or removal named, so they land where they must.
#
# usage: save_crash.sh TESSEL SRC TMP FAULT_LIB
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" save_crash
LIB=$4
tiny_config 8 0
CK=$WORK/run/checkpoints

# crashed NAME FAULT ARGS...: a run that the fault must kill
crashed() {
  local name=$1 fault=$2
  shift 2
  under_fault "$CK" "$fault" "$WORK/$name.log" --set log.dir="$WORK/run" "$@"
  local status=$?
  [ $status -eq 137 ] || die "$name: exit status $status, expected the fault's SIGKILL (137): $(tail -3 "$WORK/$name.log")"
}

# every checkpoint loads, nothing half-done is left
all_whole() {
  for d in "$CK"/step_*; do
    "$TESSEL" sample "$d" --tokens 2 >/dev/null 2>"$WORK/sample.err" || fail "$1: $d does not load: $(cat "$WORK/sample.err")"
  done
  leftovers=$(ls -A "$CK" | grep -v '^step_[0-9]*$' | grep -v '^\.tessel-lock$' | grep -v '^latest$' || true)
  [ -z "$leftovers" ] || fail "$1: left in $CK: $leftovers"
}

"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" >"$WORK/first.log" 2>&1 || die "the first run failed"

# step 6 saved again after resuming from step 4, killed between the renames
crashed resave kill-after-rename:step_00000006.old- --resume "$CK/step_00000004"
[ -e "$CK/step_00000006" ] && die "the fault did not land between the renames"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" >"$WORK/after_resave.log" 2>&1 || fail "the run after the crash failed"
grep -q "restored $CK/step_00000006" "$WORK/after_resave.log" || fail "step 6 was not restored: $(cat "$WORK/after_resave.log")"
[ -d "$CK/step_00000006" ] || fail "step_00000006 is gone"
all_whole resave

# keep 2 at step 10 prunes steps 1-8; killed after the first file of step 1 is removed
crashed prune kill-after-remove:step_00000001 --set train.steps=10 --set checkpoint.keep=2
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=11 >"$WORK/after_prune.log" 2>&1 \
  || fail "the run after the crash in a prune failed"
all_whole prune

finish "ok: a crash between a resave's renames keeps the step, a crash in a prune leaves no partial step"
