# The public C API (tessel/tessel.h), through a program that uses nothing
# else: its losses equal `tessel run`'s for the same config bit for bit
# (given the OpenBLAS kernels `tessel run` chose), on
# one rank and on two under mpirun with ddp; it validates, saves, reopens
# and resumes at the saved step; it writes no more of a sized struct than
# the caller's .size; a config mistake comes back as a status with the
# FILE:LINE:COL message. The same program builds against an installed
# tessel with pkg-config's flags alone. A second program (api_contract.c)
# checks what a program sees only from outside the library: a bad argument
# on one rank fails tessel_run_open on every rank; the program's OpenMP and
# OpenBLAS thread counts, and the error handler of the MPI it started, are
# its own again once its runs are closed; the library catches no stop
# signal; a step that failed before it was taken is not built on; a
# checkpoint that cannot be written fails on every rank and ends nothing; a
# run stepped from a thread other than the one that opened it trains alike;
# runs of 1 and 2 threads open at once train each as it does alone.
set -euo pipefail
TESSEL=$1; DEMO=$2; SRC=$3; TMP=$4; BUILD=$5; CONTRACT=$6
WORK=$TMP/api.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$WORK/run.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16}
data: {text: ["$SRC/core/config/*.c"], dir: $WORK/data}
train: {steps: 8, batch_size: 4, sample_tokens: 0, eval_every: 0}
device: {threads: 1}
checkpoint: {resume: auto}
log: {progress: never}
YAML
MPI=(mpirun -n 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
check() { # NAME RANKS [--set ...]: 5 steps through the API against 5 through `tessel run`
  local name=$1 ranks=$2
  shift 2
  local sets=(log.dir="$WORK/$name-api" "$@")
  local cli=()
  for s in "$@"; do cli+=(--set "$s"); done
  local launch=()
  [ "$ranks" -gt 1 ] && launch=("${MPI[@]}")
  "${launch[@]}" "$TESSEL" run "$WORK/run.yaml" --set log.dir="$WORK/$name-cli" --set train.stop_after=5 "${cli[@]}" \
    >"$WORK/$name-cli.log" 2>&1 || [ $? -eq 75 ] || { cat "$WORK/$name-cli.log" >&2; fail "$name: tessel run failed"; }
  # bit for bit needs the same GEMM kernels: the program gets the OpenBLAS
  # kernels `tessel run` chose, as its first line names them
  local core
  core=$(sed -n 's/.*backend cpu: .*OpenBLAS [^ ]* (\([A-Za-z0-9]*\).*/\1/p' "$WORK/$name-cli.log" | head -1)
  [ -n "$core" ] || fail "$name: tessel run does not name its OpenBLAS kernels"
  OPENBLAS_CORETYPE=$core "${launch[@]}" "$DEMO" "$WORK/run.yaml" 5 "${sets[@]}" >"$WORK/$name.out" 2>"$WORK/$name.err" ||
    { cat "$WORK/$name.err" >&2; fail "$name: the API program failed"; }
  awk 'match($0, /"step":[0-9]+/) { s = substr($0, RSTART + 7, RLENGTH - 7)
       if (match($0, /"loss":[^,}]*/)) print s, substr($0, RSTART + 7, RLENGTH - 7) }' \
    "$WORK/$name-cli/metrics.jsonl" >"$WORK/$name.cli"
  sed -n 's/^step \([0-9]*\) loss \(.*\)/\1 \2/p' "$WORK/$name.out" | sort -u >"$WORK/$name.api"
  [ "$(wc -l <"$WORK/$name.api")" -eq 5 ] || fail "$name: the API program took $(wc -l <"$WORK/$name.api") steps, not 5"
  paste -d' ' "$WORK/$name.api" "$WORK/$name.cli" | awk '$1 != $3 || $2 != $4 { bad++ } END { exit bad > 0 }' ||
    { paste "$WORK/$name.api" "$WORK/$name.cli" >&2; fail "$name: the API's losses differ from tessel run's"; }
  grep -q "^val [0-9]" "$WORK/$name.out" || fail "$name: no validation loss"
  grep -q "^saved .*step_00000005$" "$WORK/$name.out" || fail "$name: no checkpoint of step 5"
  grep -q "^resumed at 5$" "$WORK/$name.out" || fail "$name: the second open did not resume at step 5"
  echo "ok: $name: 5 steps through the API equal tessel run's bit for bit; saved, reopened, resumed at 5"
}
check one 1
check ddp2 2 plugin.name=ddp

# a config mistake is a status and a positioned message, not an exit
if "$DEMO" "$WORK/run.yaml" 0 model.layers=0 log.dir="$WORK/bad" >"$WORK/bad.out" 2>"$WORK/bad.err"; then
  fail "a run with model.layers=0 opened"
fi
grep -q "tessel_run_open failed: .*model.layers.*" "$WORK/bad.err" || { cat "$WORK/bad.err" >&2; fail "no positioned message"; }
# the program prints the message; the library printing it too showed it twice
[ "$(grep -c "model.layers" "$WORK/bad.err")" -eq 1 ] || { cat "$WORK/bad.err" >&2; fail "the message is printed twice"; }
echo "ok: a config mistake comes back from tessel_run_open with its message, printed once by the program"

# the library's messages are the program's too: advice only a command-line
# user can follow (--set, --resume, "the same command") is not in them
no_cli_advice() { # NAME FILE: FILE has none of the command line's wording
  ! grep -E -- "--set [a-z]|--resume|tessel run|same command" "$2" >&2 || fail "$1: the API's message advises the command line"
}
if "$DEMO" "$WORK/run.yaml" 0 model.layers log.dir="$WORK/noeq" >"$WORK/noeq.out" 2>"$WORK/noeq.err"; then
  fail "a run with the override 'model.layers' opened"
fi
grep -q "tessel_run_open failed: --set=model.layers:1:7: expected KEY.PATH=VALUE, e.g. model.layers=6$" "$WORK/noeq.err" ||
  { cat "$WORK/noeq.err" >&2; fail "an override without '=': the message"; }
no_cli_advice "an override without '='" "$WORK/noeq.err"
# a NaN loss names the last good checkpoint and how a program resumes from
# it; done as it says, the run goes on from there (not from step 2's
# checkpoint, whose weights gave the NaN)
NANLOSS=$BUILD/test-plugins/nanloss/libtessel-nanloss.so
if "$DEMO" "$WORK/run.yaml" 4 log.dir="$WORK/nan" checkpoint.every=1 plugin.path="$NANLOSS" plugin.nan_at_step=3 \
  >"$WORK/nan.out" 2>"$WORK/nan.err"; then
  fail "a run whose loss became NaN at step 3 went on"
fi
grep -qF "tessel_run_step failed: the loss became NaN at step 3, so the run stopped before applying that step. The \
newest checkpoint, $WORK/nan/checkpoints/step_00000002, holds those weights. The last good checkpoint is \
$WORK/nan/checkpoints/step_00000001; resume from it (write its name, step_00000001, into the file latest beside it, \
and open the run again under checkpoint.resume: auto) with a lower optimizer.lr" "$WORK/nan.err" ||
  { cat "$WORK/nan.err" >&2; fail "a NaN loss through the API: the message"; }
no_cli_advice "a NaN loss" "$WORK/nan.err"
echo step_00000001 >"$WORK/nan/checkpoints/latest"
"$DEMO" "$WORK/run.yaml" 2 log.dir="$WORK/nan" checkpoint.every=1 >"$WORK/nan2.out" 2>"$WORK/nan2.err" ||
  { cat "$WORK/nan2.err" >&2; fail "the run resumed as the NaN message says failed"; }
[ "$(grep -m1 "^step " "$WORK/nan2.out" | cut -d' ' -f2)" = 2 ] ||
  { cat "$WORK/nan2.out" >&2; fail "the run did not resume from step_00000001 as the NaN message says"; }
# a damaged newest checkpoint: the open names the intact one before it and
# how a program goes on from there; done as it says, the run does
"$DEMO" "$WORK/run.yaml" 2 log.dir="$WORK/damaged" checkpoint.every=1 >/dev/null 2>&1 || fail "the run to damage failed"
printf 'X' | dd of="$WORK/damaged/checkpoints/step_00000002/model.safetensors" bs=1 seek=300 conv=notrunc status=none
if "$DEMO" "$WORK/run.yaml" 0 log.dir="$WORK/damaged" >/dev/null 2>"$WORK/damaged.err"; then
  fail "a run opened on a damaged checkpoint"
fi
grep -qF "The newest intact checkpoint before it is $WORK/damaged/checkpoints/step_00000001: move the damaged one \
away, and the run started again goes on from there" "$WORK/damaged.err" ||
  { cat "$WORK/damaged.err" >&2; fail "a damaged checkpoint through the API: the message"; }
no_cli_advice "a damaged checkpoint" "$WORK/damaged.err"
mv "$WORK/damaged/checkpoints/step_00000002" "$WORK/damaged-step2"
"$DEMO" "$WORK/run.yaml" 2 log.dir="$WORK/damaged" >"$WORK/damaged2.out" 2>"$WORK/damaged2.err" ||
  { cat "$WORK/damaged2.err" >&2; fail "the run went on as the damaged checkpoint's message says: it failed"; }
[ "$(grep -m1 "^step " "$WORK/damaged2.out" | cut -d' ' -f2)" = 2 ] ||
  { cat "$WORK/damaged2.out" >&2; fail "the run did not go on from step_00000001 as the damaged checkpoint's message says"; }
echo "ok: the API's messages for an override without '=', for a NaN loss and for a damaged checkpoint advise nothing only the command line can do; their advice works"

# a step past train.steps is refused (the header's loop once trained on to
# "step 100/6" at the schedule's last learning rate)
if "$DEMO" "$WORK/run.yaml" 9 log.dir="$WORK/past" >"$WORK/past.out" 2>"$WORK/past.err"; then
  fail "a ninth step of an 8-step run was taken"
fi
grep -q "tessel_run_step failed: the run has taken its train.steps = 8 steps" "$WORK/past.err" ||
  { cat "$WORK/past.err" >&2; fail "a step past train.steps is not refused with its reason"; }
[ "$(grep -c "^step " "$WORK/past.out")" -eq 8 ] || fail "the run did not take its 8 steps before refusing"
echo "ok: a step past train.steps is refused"

# two ranks, and only rank 1's --set is wrong: rank 0 gets a failure too,
# and its tessel_last_error names the rank that failed (it was empty)
set +e
"${MPI[0]}" -n 1 "${MPI[@]:3}" "$DEMO" "$WORK/run.yaml" 0 log.dir="$WORK/bad2" plugin.name=ddp : \
  -n 1 "$DEMO" "$WORK/run.yaml" 0 log.dir="$WORK/bad2" plugin.name=ddp model.layers=0 >"$WORK/bad2.out" 2>"$WORK/bad2.err"
set -e
grep -q "tessel_run_open failed: rank 1 failed (config error); see its message" "$WORK/bad2.err" &&
  grep -q "tessel_run_open failed: .*model.layers: must be" "$WORK/bad2.err" ||
  { cat "$WORK/bad2.err" >&2; fail "a failure of rank 1 alone is not reported on both ranks"; }
echo "ok: a config mistake on one rank fails the open on both, and rank 0 names rank 1"

# a step that fails on rank 1 alone: rank 0 waits in the gradients' sum for
# ever unless the job ends (the library returned on rank 1 and rank 0 hung)
set +e
timeout 60 "${MPI[@]}" "$DEMO" "$WORK/run.yaml" 3 log.dir="$WORK/stepfail" \
  plugin.path="$BUILD/test-plugins/good-stepfail/libtessel-testgood.so" >"$WORK/stepfail.out" 2>"$WORK/stepfail.err"
rc=$?
set -e
[ $rc -ne 124 ] || { cat "$WORK/stepfail.err" >&2; fail "a step failing on one rank left the job waiting"; }
[ $rc -ne 0 ] || fail "a step failing on one rank ended the job with status 0"
grep -q "testgood: its gradients are lost on rank 1" "$WORK/stepfail.err" ||
  { cat "$WORK/stepfail.err" >&2; fail "the failing rank's message is not shown"; }
echo "ok: a step failing on one rank ends the job with its message (exit $rc)"

# train.stop_after through the API: the step that stops says why
# (stopped_by), its checkpoint is written, and a step after it is refused
# (the library once went on, and past train.stop_after_time wrote a
# checkpoint after every step)
"$DEMO" "$WORK/run.yaml" 8 log.dir="$WORK/stop" train.stop_after=3 >"$WORK/stop.out" 2>"$WORK/stop.err" ||
  { cat "$WORK/stop.err" >&2; fail "the run with train.stop_after=3 failed"; }
[ "$(grep -c "^step " "$WORK/stop.out")" -eq 3 ] && grep -q "^stopped by train.stop_after$" "$WORK/stop.out" &&
  grep -q "^refused after the stop: the run stopped at step 3 by train.stop_after" "$WORK/stop.out" &&
  grep -q "^saved .*step_00000003$" "$WORK/stop.out" && grep -q "^resumed at 3$" "$WORK/stop.out" ||
  { cat "$WORK/stop.out" "$WORK/stop.err" >&2; fail "train.stop_after through the API"; }
[ "$(ls "$WORK/stop/checkpoints" | grep -c '^step_')" -eq 1 ] || fail "train.stop_after: more than one checkpoint"
echo "ok: the API reports train.stop_after's stop, with one checkpoint, and refuses the step after it"

# one rank's bad argument (an evaluation into NULL on rank 1 only, as
# `rank == 0 ? &v : NULL` does) fails the call on both ranks; rank 0 once
# waited in the evaluation's collective until the job was aborted
set +e
API_DEMO_NULL_EVAL_RANK=1 timeout 60 "${MPI[@]}" -x API_DEMO_NULL_EVAL_RANK "$DEMO" "$WORK/run.yaml" 2   log.dir="$WORK/nulleval" plugin.name=ddp train.comm_timeout=20s >"$WORK/nulleval.out" 2>"$WORK/nulleval.err"
rc=$?
set -e
[ $rc -eq 0 ] && [ "$(grep -c "^evaluate refused: " "$WORK/nulleval.out")" -eq 2 ] &&
  grep -q "^evaluate refused: rank 1 failed" "$WORK/nulleval.out" &&
  grep -q "^evaluate refused: tessel_run_evaluate: val_loss is NULL" "$WORK/nulleval.out" ||
  { cat "$WORK/nulleval.out" "$WORK/nulleval.err" >&2; fail "a bad argument on one rank (exit $rc)"; }
echo "ok: a bad argument on one rank fails the call on both, and the run goes on"

# a rank stuck after its last run (stopped before it exits) leaves the
# other rank in the exit's MPI_Finalize, which has no deadline: the library's
# exit handler meets the other ranks within train.comm_timeout first, names
# the rank that never came and ends the job (it hung for ever)
set +e
API_DEMO_STOP_RANK=0 timeout 60 "${MPI[@]}" -x API_DEMO_STOP_RANK "$DEMO" "$WORK/run.yaml" 2 log.dir="$WORK/stuck" \
  plugin.name=ddp train.comm_timeout=5s >"$WORK/stuck.out" 2>"$WORK/stuck.err"
rc=$?
pkill -9 -f "log.dir=$WORK/stuck" 2>/dev/null # a stopped rank a hung job left behind
set -e
[ $rc -ne 124 ] || { cat "$WORK/stuck.err" >&2; fail "a rank stuck at exit left the other waiting in MPI_Finalize"; }
grep -q "the end of the run on group 'world' has waited [0-9]* s (train.comm_timeout) for rank 0, which never arrived" \
  "$WORK/stuck.err" || { cat "$WORK/stuck.out" "$WORK/stuck.err" >&2; fail "the waiting rank did not name rank 0 (exit $rc)"; }
echo "ok: a rank stuck at exit ends the job within train.comm_timeout, named by the rank that waited (exit $rc)"

# a NULL config on one rank: that rank returned at once and the other waited
# in MPI_Init for ever
for bad in 0 1; do
  set +e
  API_CONTRACT_BAD_RANK=$bad timeout 60 "${MPI[@]}" -x API_CONTRACT_BAD_RANK "$CONTRACT" open-args "$WORK/run.yaml" \
    log.dir="$WORK/open-args" plugin.name=ddp train.comm_timeout=20s >"$WORK/open-args.out" 2>"$WORK/open-args.err"
  rc=$?
  set -e
  [ $rc -eq 0 ] && [ "$(grep -c "^open refused: " "$WORK/open-args.out")" -eq 2 ] &&
    grep -q "^open refused: rank $bad failed (config error); see its message" "$WORK/open-args.out" &&
    grep -q "^open refused: tessel_run_open: a config path" "$WORK/open-args.out" ||
    { cat "$WORK/open-args.out" "$WORK/open-args.err" >&2; fail "a NULL config on rank $bad (exit $rc)"; }
done
echo "ok: a bad argument to tessel_run_open on one rank fails the open on both, naming that rank"

# the runs set OpenMP and OpenBLAS to their threads and left them so after
# the close: the program went on with 1 thread where it had asked for 3
OMP_NUM_THREADS=3 OPENBLAS_NUM_THREADS=2 "$CONTRACT" threads "$WORK/run.yaml" log.dir="$WORK/threads1" \
  log.dir="$WORK/threads2" >"$WORK/threads.out" 2>&1 || { cat "$WORK/threads.out" >&2; fail "thread counts after close"; }
grep -q "^program: OpenMP 3 threads, OpenBLAS 2$" "$WORK/threads.out" || { cat "$WORK/threads.out" >&2; fail "threads: the program's own counts"; }
echo "ok: the program's OpenMP and OpenBLAS thread counts (3, 2) are its own again after its last run closed"

# a program that started MPI itself found MPI_COMM_WORLD's error handler
# MPI_ERRORS_RETURN after its run closed: its own MPI errors no longer ended it
for ranks in 1 2; do
  launch=()
  [ $ranks -gt 1 ] && launch=("${MPI[@]}")
  "${launch[@]}" "$CONTRACT" mpi-owned "$WORK/run.yaml" log.dir="$WORK/mpi-owned$ranks" plugin.name=ddp \
    >"$WORK/mpi-owned.out" 2>&1 || { cat "$WORK/mpi-owned.out" >&2; fail "the program's MPI error handler ($ranks ranks)"; }
done
echo "ok: the program's own MPI_COMM_WORLD error handler is back after its run closed (1 and 2 ranks)"

# the library catches no stop signal (tessel.h: Signals)
"$CONTRACT" signals "$WORK/run.yaml" log.dir="$WORK/signals" plugin.name=ddp >"$WORK/signals.out" 2>&1 ||
  { cat "$WORK/signals.out" >&2; fail "the stop signals' handlers"; }
echo "ok: SIGTERM, SIGINT, SIGHUP, SIGUSR1 and SIGPIPE keep the program's handlers while a run is open and after"

# a step that failed inside the strategy may have changed part of the model
# (the optimizer updates parameter after parameter): the program could try
# it again, evaluate the half-made step and save it as a checkpoint
"$CONTRACT" after-failure "$WORK/run.yaml" log.dir="$WORK/after-failure" \
  plugin.path="$BUILD/test-plugins/good-stepfail0/libtessel-testgood.so" >"$WORK/after-failure.out" 2>&1 ||
  { cat "$WORK/after-failure.out" >&2; fail "a failed step was built on"; }
grep -q "^failed: .*testgood: its gradients are lost on rank 0" "$WORK/after-failure.out" &&
  [ "$(grep -c "^refused: .* is refused: step 1 failed before it was taken, .*its gradients are lost" \
    "$WORK/after-failure.out")" -eq 3 ] || { cat "$WORK/after-failure.out" >&2; fail "after a failed step: the messages"; }
echo "ok: after a step failed before it was taken, steps, evaluations and saves are refused, naming it"

# a checkpoint rank 0 cannot write: every rank learns it, yet the library
# ended the job (MPI_Abort) and the program with it, for a full disk
for ranks in 1 2; do
  launch=()
  [ $ranks -gt 1 ] && launch=("${MPI[@]}" -x API_CONTRACT_BLOCK)
  set +e
  API_CONTRACT_BLOCK=$WORK/unwritable$ranks/checkpoints timeout 60 "${launch[@]}" "$CONTRACT" unwritable "$WORK/run.yaml" \
    log.dir="$WORK/unwritable$ranks" plugin.name=ddp >"$WORK/unwritable.out" 2>"$WORK/unwritable.err"
  rc=$?
  set -e
  [ $rc -eq 0 ] && [ "$(grep -c "^save failed: " "$WORK/unwritable.out")" -eq "$ranks" ] &&
    grep -q "^save failed: cannot write checkpoint step_00000001 in $WORK/unwritable$ranks/checkpoints" \
      "$WORK/unwritable.out" && grep -q "the run started again resumes from the last checkpoint\.$" "$WORK/unwritable.out" &&
    no_cli_advice "an unwritable checkpoint" "$WORK/unwritable.out" ||
    { cat "$WORK/unwritable.out" "$WORK/unwritable.err" >&2; fail "an unwritable checkpoint on $ranks rank(s) (exit $rc)"; }
done
echo "ok: a checkpoint that cannot be written fails the save on every rank, and the run goes on (1 and 2 ranks)"

# OpenMP's thread count is a thread's own: a run stepped from a thread the
# CPU backend never set ran its kernels with that thread's 3 threads, not
# device.threads' 1, and its losses differed in their last bits
OMP_NUM_THREADS=3 "$CONTRACT" other-thread "$WORK/run.yaml" log.dir="$WORK/thread1" model.channels=128 model.seq_len=64 \
  log.dir="$WORK/thread2" >"$WORK/other-thread.out" 2>&1 || { cat "$WORK/other-thread.out" >&2; fail "a run stepped from another thread"; }
echo "ok: a run stepped from another thread than the one that opened it trains bit for bit alike"

# two runs open at once with device.threads 1 and 2, stepped in turn, the
# first closed while the second goes on: each must train as it does alone
# in its own process (a count shared between them shows in the gradient
# norm's last bits, summed per thread, and from there in the losses), and
# the program's own counts (3, and OpenBLAS's) must be back after the last
# close. An OpenMP build of OpenBLAS sets OpenMP's count with its own: the
# CPU backend set its own count after OpenBLAS's 1 and so ran 1 thread, and
# gave the program OpenBLAS's count back as OpenMP's; that build is tried
# too where it is installed beside the default one.
interleaved() { # TAG [env...]: the interleaved runs against each run alone
  local tag=$1 sizes=(model.channels=128 model.seq_len=64)
  shift
  rm -rf "$WORK/$tag"-*
  env "$@" OMP_NUM_THREADS=3 "$CONTRACT" interleaved "$WORK/run.yaml" "${sizes[@]}" log.dir="$WORK/$tag-a" \
    log.dir="$WORK/$tag-b" >"$WORK/$tag.out" 2>&1 || { cat "$WORK/$tag.out" >&2; fail "$tag: the interleaved runs"; }
  for t in 1 2; do
    env "$@" OMP_NUM_THREADS=3 "$CONTRACT" alone "$WORK/run.yaml" "${sizes[@]}" device.threads=$t \
      log.dir="$WORK/$tag-run$t" >"$WORK/$tag-alone$t.out" 2>&1 || { cat "$WORK/$tag-alone$t.out" >&2; fail "$tag: a run alone"; }
    sed -n 's/^loss //p' "$WORK/$tag-alone$t.out" >"$WORK/$tag-alone$t"
  done
  # the check means something only where the thread count changes the figures
  cmp -s "$WORK/$tag-alone1" "$WORK/$tag-alone2" &&
    fail "$tag: 1 and 2 threads gave the same figures to the last bit: this check cannot see a shared count"
  sed -n 's/^A //p' "$WORK/$tag.out" >"$WORK/$tag-A"
  sed -n 's/^B //p' "$WORK/$tag.out" >"$WORK/$tag-B"
  [ "$(wc -l <"$WORK/$tag-A")" -eq 3 ] && [ "$(wc -l <"$WORK/$tag-B")" -eq 8 ] || { cat "$WORK/$tag.out" >&2; fail "$tag: steps"; }
  head -3 "$WORK/$tag-alone1" | diff - "$WORK/$tag-A" >&2 || fail "$tag: run A (1 thread) beside run B trained otherwise than alone"
  diff "$WORK/$tag-alone2" "$WORK/$tag-B" >&2 || fail "$tag: run B (2 threads) beside run A trained otherwise than alone"
  echo "ok: $tag: runs of 1 and 2 threads open at once, closed in the order opened, each train bit for bit as alone, and give the program its counts back"
}
interleaved threads-mixed
OPENMP_BLAS=/usr/lib/x86_64-linux-gnu/openblas-openmp
if [ -e "$OPENMP_BLAS/libopenblas.so.0" ]; then
  interleaved threads-mixed-openmp-blas LD_LIBRARY_PATH="$OPENMP_BLAS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  echo "note: the OpenMP build of OpenBLAS ($OPENMP_BLAS) is not installed: the interleaved runs were tried with the default one only"
fi

PREFIX=$WORK/prefix
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null || fail "cmake --install failed"
PC=$(dirname "$(find "$PREFIX" -name tessel.pc | head -1)")
cc -o "$WORK/installed_demo" "$SRC/tests/api/api_demo.c" $(PKG_CONFIG_PATH=$PC pkg-config --cflags --libs tessel) ||
  fail "api_demo.c does not build against the installed tessel with pkg-config's flags"
"$WORK/installed_demo" "$WORK/run.yaml" 2 log.dir="$WORK/installed" >"$WORK/installed.out" 2>&1 ||
  { cat "$WORK/installed.out" >&2; fail "the program built against the installed tessel failed"; }
grep -q "^resumed at 2$" "$WORK/installed.out" || fail "the installed build did not train and resume"
echo "ok: the program builds against the installed tessel (pkg-config tessel) and trains"
rm -rf "$WORK"
