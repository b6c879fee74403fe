# Promises of tessel/tessel.h that a program sees only from outside the
# library (tests/api/api_contract.c): a bad argument on one rank fails
# tessel_run_open on every rank instead of leaving the others waiting; the
# program's OpenMP and OpenBLAS thread counts, and the error handler of
# the MPI it started itself, are its own again once its runs are closed;
# the library catches no stop signal (tessel.h: Signals); a step that
# failed before it was taken is not built on.
set -euo pipefail
CONTRACT=$1; SRC=$2; TMP=$3; BUILD=$4
WORK=$TMP/api_contract.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$WORK/run.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16}
data: {text: ["$SRC/core/config/*.c"], dir: $WORK/data}
train: {steps: 4, batch_size: 4, sample_tokens: 0, eval_every: 0}
device: {threads: 1}
log: {progress: never, level: warn}
YAML
MPI=(mpirun -n 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)

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
"$CONTRACT" signals "$WORK/run.yaml" log.dir="$WORK/signals" plugin.name=ddp >"$WORK/signals.out" 2>&1 ||
  { cat "$WORK/signals.out" >&2; fail "the stop signals' handlers"; }
echo "ok: SIGTERM, SIGINT, SIGHUP, SIGUSR1 and SIGPIPE keep the program's handlers while a run is open and after"
# a step that failed inside the strategy: the optimizer updates parameter
# after parameter, so the step tried again updated some of them twice, and
# a save wrote the half-made step as a checkpoint
"$CONTRACT" after-failure "$WORK/run.yaml" log.dir="$WORK/after-failure" \
  plugin.path="$BUILD/test-plugins/good-stepfail0/libtessel-testgood.so" >"$WORK/after-failure.out" 2>&1 ||
  { cat "$WORK/after-failure.out" >&2; fail "a failed step was built on"; }
grep -q "^failed: .*testgood: its gradients are lost on rank 0" "$WORK/after-failure.out" &&
  [ "$(grep -c "^refused: .* is refused: step 1 failed before it was taken, .*its gradients are lost" \
    "$WORK/after-failure.out")" -eq 3 ] || { cat "$WORK/after-failure.out" >&2; fail "after a failed step: the messages"; }
echo "ok: after a step failed before it was taken, steps, evaluations and saves are refused, naming it"
rm -rf "$WORK"
