# Going back: a run resumed from an older checkpoint (--resume, as after a
# loss spike) or started over in the same directory (resume: never) writes
# below the checkpoints of the part it abandoned. Those must not win the
# next resume (they once did: the retried run came back "already done"
# from the old step 12, and its stop told the user to run a command that
# went back to its start again), and pruning must not remove the new run's
# checkpoints for them (keep counted the old, higher steps first).
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" branch
ck=$WORK/run/checkpoints
go() { "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set checkpoint.every=2 --set checkpoint.keep=2 "$@"; }

go >"$WORK/first.log" 2>&1 || { cat "$WORK/first.log" >&2; fail "the first run failed"; }
[ "$(cat "$ck/latest")" = step_00000012 ] || fail "latest names '$(cat "$ck/latest")', expected step_00000012"

# back to step 10 with another learning rate (copied back: keep 2 left 10 and 12)
set +e
go --resume "$ck/step_00000010" --set optimizer.lr=1e-3 --set train.stop_after=1 >"$WORK/retry.log" 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || { cat "$WORK/retry.log" >&2; fail "the retry exited $rc, expected 75"; }
grep -q "stopped at step 11 by train.stop_after: resume with --resume $ck/step_00000011 " "$WORK/retry.log" ||
  { cat "$WORK/retry.log" >&2; fail "the stop does not name the checkpoint to resume from"; }
[ "$(cat "$ck/latest")" = step_00000011 ] || fail "latest names '$(cat "$ck/latest")' after the retry's step 11"
[ -d "$ck/step_00000010" ] && [ -d "$ck/step_00000012" ] ||
  fail "pruning removed a checkpoint (kept: $(ls "$ck" | tr '\n' ' '))"

go --set optimizer.lr=1e-3 >"$WORK/again.log" 2>&1 || { cat "$WORK/again.log" >&2; fail "the retry's resume failed"; }
grep -q "resuming from .*step_00000011 (step 11)" "$WORK/again.log" ||
  { cat "$WORK/again.log" >&2; fail "the next run did not resume the retry at step 11"; }
grep -q "^  lr: 1e-3$" "$ck/step_00000012/config.yaml" || fail "step 12 is still the abandoned run's"

# resume: never in the same directory: the new run's own steps are kept
set +e
go --set checkpoint.resume=never --set train.stop_after=4 >"$WORK/never.log" 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || { cat "$WORK/never.log" >&2; fail "the fresh run exited $rc, expected 75"; }
[ -d "$ck/step_00000002" ] && [ -d "$ck/step_00000004" ] ||
  fail "the fresh run's own checkpoints were pruned (kept: $(ls "$ck" | tr '\n' ' '))"
grep -q "resume with --resume $ck/step_00000004 " "$WORK/never.log" || fail "resume: never's stop says to rerun the same command"
# latest naming a step that was moved away (as the message about a damaged
# checkpoint advises): the run goes on from the newest step before it, not
# from the abandoned run's higher steps 10 to 12
mv "$ck/step_00000004" "$WORK/step_00000004"
"$TESSEL" sample "$ck" --tokens 1 >"$WORK/moved.out" 2>"$WORK/moved.err" || { cat "$WORK/moved.err" >&2; fail "sample failed"; }
grep -q "$ck/latest names step_00000004, which is not in $ck (moved or removed); going by step_00000002, the newest" \
  "$WORK/moved.err" || { cat "$WORK/moved.err" >&2; fail "a latest naming a moved step did not go back to step 2"; }
mv "$WORK/step_00000004" "$ck/step_00000004"
# latest as an editor on Windows saves it (CRLF) still names the step, its
# first line; it was ignored, and the run went back to the abandoned run's
# step 12
printf '  step_00000004 \r\nstep_00000002\n' >"$ck/latest" # the first line, spaces around it
go >"$WORK/after.log" 2>&1 || { cat "$WORK/after.log" >&2; fail "resuming the fresh run failed"; }
grep -q "resuming from .*step_00000004 (step 4)" "$WORK/after.log" || { cat "$WORK/after.log" >&2; fail "did not resume the fresh run at step 4"; }
# a latest that names no checkpoint is said, not silently passed over
echo step_00000099 >"$ck/latest"
"$TESSEL" sample "$ck" --tokens 1 >"$WORK/sample.out" 2>"$WORK/sample.err" || { cat "$WORK/sample.err" >&2; fail "sample failed"; }
grep -q "$ck/latest names step_00000099, which is not in $ck (moved or removed); going by step_00000012" \
  "$WORK/sample.err" ||
  { cat "$WORK/sample.err" >&2; fail "a latest naming no checkpoint went unmentioned"; }

# keep counts the run's own steps only: gone back to step 2 of a run that
# saved 2, 4, 6, 8, and saving every 3 with keep 2, the new run keeps its 3
# and 6 (it pruned its own 3 and kept the abandoned 4) and leaves 4 and 8
# alone, listed in checkpoint.dir/abandoned; with its 6 moved away, the
# next resume goes back to its 3, not to the abandoned 4
kd=$WORK/keep/checkpoints
k() { "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/keep" --set train.steps=8 "$@"; }
k --set checkpoint.every=2 --set checkpoint.keep=0 >"$WORK/keep1.log" 2>&1 || { cat "$WORK/keep1.log" >&2; fail "the first run failed"; }
set +e
k --set checkpoint.every=3 --set checkpoint.keep=2 --set train.stop_after=4 --set optimizer.lr=1e-3 \
  --resume "$kd/step_00000002" >"$WORK/keep2.log" 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || { cat "$WORK/keep2.log" >&2; fail "the branch exited $rc, expected 75"; }
[ "$(ls "$kd" | grep '^step_' | tr '\n' ' ')" = "step_00000003 step_00000004 step_00000006 step_00000008 " ] ||
  fail "the branch kept $(ls "$kd" | tr '\n' ' '), expected its own 3 and 6 and the abandoned 4 and 8"
[ "$(cat "$kd/abandoned")" = "$(printf 'step_00000004\nstep_00000008')" ] || fail "abandoned lists: $(cat "$kd/abandoned")"
mv "$kd/step_00000006" "$WORK/keep6"
set +e
k --set checkpoint.every=3 --set checkpoint.keep=2 --set optimizer.lr=1e-3 --set train.stop_after=1 >"$WORK/keep3.log" 2>&1
set -e
grep -q "resuming from .*step_00000003 (step 3)" "$WORK/keep3.log" ||
  { cat "$WORK/keep3.log" >&2; fail "with its 6 moved away, the run did not go back to its own step 3"; }
rm -rf "$WORK"
echo "ok: a run that went back resumes where it stopped, keeps its checkpoints and names how to go on"
