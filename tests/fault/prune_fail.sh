#!/usr/bin/env bash
# tests/fault/prune_fail.sh — an old checkpoint that checkpoint.keep cannot
# remove is a warning, not a failed save: the new checkpoint is written and
# named in `latest` by then, so the run goes on (it once stopped, called the
# new checkpoint unwritten, and named the half-removed old one "intact").
#
#   - the rename that starts the removal is refused (a directory the run
#     may not change): the old step stays whole, the run finishes;
#   - one of its files cannot be removed: what is left is a temporary,
#     never a step_N missing files, and the next start sweeps it away.
#
# usage: prune_fail.sh TESSEL SRC TMP FAULT_LIB
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" prune_fail
LIB=$4
tiny_config 6 2
CK=$WORK/run/checkpoints

# faulty NAME FAULT ARGS...: a run under FAULT that must still finish
faulty() {
  local name=$1 fault=$2
  shift 2
  under_fault "$CK" "$fault" "$WORK/$name.log" --set log.dir="$WORK/run" "$@" \
    || fail "$name: exit status $?, expected 0: $(tail -3 "$WORK/$name.log")"
  grep -q "warning: checkpoint.keep: .*step_00000001" "$WORK/$name.log" \
    || fail "$name: no warning names step_00000001: $(cat "$WORK/$name.log")"
  [ "$(cat "$CK/latest")" = "step_00000006" ] || fail "$name: latest is '$(cat "$CK/latest")', expected step_00000006"
  [ "$(wc -l <"$WORK/run/metrics.jsonl")" -eq 6 ] || fail "$name: $(wc -l <"$WORK/run/metrics.jsonl") metrics lines, expected 6"
}

# keep 2: step 1 goes when step 3 is saved; its rename is refused each time
faulty rename deny-rename:/step_00000001
[ -d "$CK/step_00000001" ] || fail "rename: step_00000001 is gone"
for s in 2 3 4; do [ -e "$CK/step_0000000$s" ] && fail "rename: step_0000000$s was not pruned"; done
"$TESSEL" sample "$CK/step_00000001" --tokens 2 >/dev/null 2>"$WORK/sample.err" \
  || fail "rename: the step that stayed does not load: $(cat "$WORK/sample.err")"

# a fresh run whose removal of step 1's files is refused
rm -rf "$WORK/run"
faulty remove deny-remove:/.tmp-step_00000001-
[ -e "$CK/step_00000001" ] && fail "remove: step_00000001 is still named as a step"
ls -A "$CK" | grep -q '^\.tmp-step_00000001-' || fail "remove: the partly removed step left no temporary: $(ls -A "$CK")"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=7 >"$WORK/next.log" 2>&1 \
  || fail "the next run failed: $(tail -3 "$WORK/next.log")"
ls -A "$CK" | grep -q '^\.tmp-step_' && fail "the next start left the temporary: $(ls -A "$CK")"

finish "ok: an old checkpoint that cannot be removed is a warning; the run and its new checkpoints go on"
