# SIGTERM to one rank of a two-rank run mid-training: both ranks finish the
# same step, one checkpoint is written at it, and both exit with status 75
# (stopped, resumable); running again resumes there and ends with every
# step's loss bit-equal to a run that was never stopped. The learning rate
# is kept constant so that the run can be cut short at any step S and then
# compared with a straight run of S + 10 steps. Then Ctrl-C and SIGTERM to
# `tessel launch` end its job with 75 and a checkpoint.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" sigterm_rank
MPI=(mpirun -n 2 --bind-to none)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
[ "$(nproc)" -lt 2 ] && MPI+=(--oversubscribe)
common=(--set plugin.name=ddp --set optimizer.decay=constant --set train.eval_every=0 --set log.every=1000
        --set checkpoint.every=0)
# each rank records its own exit status (mpirun reports only one)
cat >"$WORK/rank.sh" <<SH
"$TESSEL" run "$WORK/tiny.yaml" ${common[*]} --set log.dir="\$1" --set train.steps="\$2"
echo \$? >"\$1.status.\$OMPI_COMM_WORLD_RANK"
SH

"${MPI[@]}" bash "$WORK/rank.sh" "$WORK/stopped" 1000000 >"$WORK/stopped.log" 2>&1 &
job=$!
for _ in $(seq 1 300); do # until training is under way (at most 30 s)
  [ -f "$WORK/stopped/metrics.jsonl" ] && [ "$(wc -l <"$WORK/stopped/metrics.jsonl")" -ge 5 ] && break
  sleep 0.1
done
victim=$(pgrep -f "^$TESSEL run $WORK/tiny.yaml.*log.dir=$WORK/stopped" | tail -1)
[ -n "$victim" ] || { cat "$WORK/stopped.log" >&2; fail "no rank process found (did the run end already?)"; }
kill -TERM "$victim"
wait $job
for r in 0 1; do
  st=$(cat "$WORK/stopped.status.$r" 2>/dev/null)
  [ "$st" = 75 ] || { cat "$WORK/stopped.log" >&2; fail "rank $r exited with status '$st', expected 75"; }
done
step=$(stop_step "$WORK/stopped.log" SIGTERM)
[ -n "$step" ] || { cat "$WORK/stopped.log" >&2; fail "no 'stopped at step N by SIGTERM' line"; }
[ "$(ls "$WORK/stopped/checkpoints" | grep -v '^latest$')" = "$(printf 'step_%08d' "$step")" ] \
  || fail "checkpoints: $(ls "$WORK/stopped/checkpoints"), expected only step $step"
[ "$(wc -l <"$WORK/stopped/metrics.jsonl")" -eq "$step" ] || fail "metrics do not end at step $step"

total=$((step + 10))
"${MPI[@]}" bash "$WORK/rank.sh" "$WORK/stopped" $total >"$WORK/resumed.log" 2>&1
[ "$(cat "$WORK/stopped.status.0")" = 0 ] && [ "$(cat "$WORK/stopped.status.1")" = 0 ] \
  || { cat "$WORK/resumed.log" >&2; fail "the resumed run failed"; }
grep -q "resuming from .*$(printf 'step_%08d' "$step")" "$WORK/resumed.log" || fail "did not resume from step $step"
"${MPI[@]}" bash "$WORK/rank.sh" "$WORK/straight" $total >"$WORK/straight.log" 2>&1
[ "$(cat "$WORK/straight.status.0")" = 0 ] || { cat "$WORK/straight.log" >&2; fail "the straight run failed"; }
losses "$WORK/straight/metrics.jsonl" >"$WORK/a"
losses "$WORK/stopped/metrics.jsonl" >"$WORK/b"
[ "$(wc -l <"$WORK/a")" -eq $total ] || fail "the straight run logged $(wc -l <"$WORK/a") steps, not $total"
cmp -s "$WORK/a" "$WORK/b" || fail "the resumed losses differ from the run that never stopped"

# Ctrl-C (SIGINT) and SIGTERM to `tessel launch`: it turns them into the
# SIGUSR1 mpirun forwards to every rank (SIGINT or SIGTERM to mpirun itself
# kills the ranks a second later, and mpirun exited 1 though the ranks had
# stopped with 75), so the job ends with 75 and a checkpoint
# launch_and_signal NAME [SIG]: `tessel launch -n 2` into $WORK/NAME, sent SIG
# once it has taken 5 steps; its pid in $job
launch_and_signal() {
  "$TESSEL" launch -n 2 "$WORK/tiny.yaml" ${common[*]} --set log.dir="$WORK/$1" --set train.steps=1000000 \
    >"$WORK/$1.log" 2>&1 &
  job=$!
  for _ in $(seq 1 300); do
    [ -f "$WORK/$1/metrics.jsonl" ] && [ "$(wc -l <"$WORK/$1/metrics.jsonl")" -ge 5 ] && break
    sleep 0.1
  done
  if [ -n "${2:-}" ]; then kill -"$2" $job; fi
}
for sig in INT TERM; do
  launch_and_signal "launch$sig" $sig
  set +e
  wait $job
  rc=$?
  set -e
  at=$(stop_step "$WORK/launch$sig.log" SIGUSR1)
  stopped_with_checkpoint $rc "$at" "$WORK/launch$sig" ||
    { cat "$WORK/launch$sig.log" >&2; fail "SIG$sig to tessel launch: status $rc, stop step '$at'"; }
  # mpirun's SIGTERM to the rank still finishing, once the first has exited
  # 75, is no second stop signal: the stop and its checkpoint are done
  ! grep -q "aborting without a checkpoint" "$WORK/launch$sig.log" ||
    { cat "$WORK/launch$sig.log" >&2; fail "SIG$sig to tessel launch: a rank said it aborted after the stop"; }
  # the last line says what 75 means, after mpirun's "non-zero status" banner
  tail -n 1 "$WORK/launch$sig.log" | grep -q "^launch: the run stopped early with a checkpoint (exit status 75, not a failure)" ||
    { cat "$WORK/launch$sig.log" >&2; fail "SIG$sig to tessel launch: the last line does not say the stop was clean"; }
done
# a second Ctrl-C once every rank has stopped with its checkpoint finds
# nothing to abort: mpirun, tearing the job down, used to be interrupted
# there (exit 1, or Open MPI 4.1 crashing in PMIx_Finalize) though the stop
# was clean
launch_and_signal twice INT
for _ in $(seq 1 300); do
  [ -z "$(pgrep -f "^$TESSEL run $WORK/tiny.yaml.*log.dir=$WORK/twice" || true)" ] && break
  sleep 0.1
done
kill -INT $job 2>/dev/null || true # launch may be gone already: then there was nothing to interrupt
set +e
wait $job
rc=$?
set -e
stopped_with_checkpoint $rc "$(stop_step "$WORK/twice.log" SIGUSR1)" "$WORK/twice" ||
  { cat "$WORK/twice.log" >&2; fail "a second Ctrl-C after the ranks stopped: status $rc"; }
# a job whose step never ends (a rank stuck: SIGSTOP stands for a hung file
# system or a collective its peer never joins) cannot stop with a
# checkpoint, so a second SIGTERM to launch (a scheduler's, after its grace
# time) must end it; it was passed on as another SIGUSR1 and changed nothing
launch_and_signal stuck
rank=$(pgrep -f "^$TESSEL run $WORK/tiny.yaml.*log.dir=$WORK/stuck" | tail -1)
[ -n "$rank" ] || fail "stuck: no rank process found"
kill -STOP "$rank"
kill -TERM $job
sleep 1
kill -TERM $job
for _ in $(seq 1 300); do kill -0 $job 2>/dev/null || break; sleep 0.1; done
if kill -0 $job 2>/dev/null; then
  kill -KILL $job $(pgrep -f -- "log.dir=$WORK/stuck") 2>/dev/null
  fail "stuck: two SIGTERMs to tessel launch did not end a job with a stopped rank within 30 s"
fi
wait $job 2>/dev/null || true
left=$(pgrep -f -- "log.dir=$WORK/stuck" || true)
[ -z "$left" ] || { kill -KILL $left; fail "stuck: the job's processes outlived tessel launch"; }
# launch killed outright (SIGKILL: nothing to pass on) or by a closed
# terminal (SIGHUP): mpirun is told to stop by the kernel, or by launch,
# and the ranks stop with a checkpoint (they trained on alone, holding the
# directory's lock)
for sig in KILL HUP; do
  launch_and_signal "orphan$sig" $sig
  wait $job 2>/dev/null || true
  for _ in $(seq 1 300); do
    [ -z "$(pgrep -f -- "log.dir=$WORK/orphan$sig" || true)" ] && break
    sleep 0.1
  done
  left=$(pgrep -f -- "log.dir=$WORK/orphan$sig" || true)
  [ -z "$left" ] || { kill -KILL $left; fail "SIG$sig to tessel launch left its job running"; }
  ls "$WORK/orphan$sig/checkpoints" | grep -q "^step_" || fail "SIG$sig to tessel launch: the job stopped without a checkpoint"
done
rm -rf "$WORK"
echo "ok: SIGTERM to one rank stopped both at step $step (status 75 each, one checkpoint); resumed to $total bit-equal;" \
  "SIGINT and SIGTERM to tessel launch end with 75 and a checkpoint, a second SIGINT after it too;" \
  "SIGKILL and SIGHUP to it stop the job too"
