# The OpenBLAS kernels a run gets, and the sgemm ceiling kept for them:
#   - without OPENBLAS_CORETYPE, a CPU with AVX2 and FMA never runs
#     OpenBLAS's Prescott fallback (SSE3 kernels, 4–5× slower sgemm where
#     OpenBLAS does not know the CPU model), under `tessel run` and under
#     mpirun, every rank;
#   - OpenBLAS starts no thread pool of its own (it would only compete with
#     the OpenMP team), in one process and on every rank, unless the user
#     set OPENBLAS_NUM_THREADS, which is kept and the description says what
#     to set instead;
#   - a coretype the user set is kept;
#   - a recorded ceiling measured with other kernels is not used for MFU:
#     the run measures again and records its own kernels with the rate.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" blas_kernels
export XDG_CACHE_HOME=$WORK/cache
core() { sed -n 's/.*backend cpu: .*OpenBLAS [^ ]* (\([A-Za-z0-9]*\).*/\1/p' "$1" | head -1; }
# the environment of a user who set none of the variables OpenBLAS reads
# (ctest sets OMP_NUM_THREADS=1, which alone keeps OpenBLAS to one thread)
FRESH=(env -u OPENBLAS_CORETYPE -u OPENBLAS_NUM_THREADS -u OMP_NUM_THREADS)
pool_hint() { grep 'backend cpu: ' "$1" | grep -c 'set OPENBLAS_NUM_THREADS=1' || true; }

"${FRESH[@]}" "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/auto" >"$WORK/auto.log" 2>&1 \
  || { cat "$WORK/auto.log" >&2; fail "the run failed"; }
auto=$(core "$WORK/auto.log")
[ -n "$auto" ] || { cat "$WORK/auto.log" >&2; fail "the run does not name its OpenBLAS kernels"; }
if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo; then
  [ "$auto" != Prescott ] || fail "a CPU with AVX2 and FMA runs OpenBLAS's Prescott kernels"
fi
[ "$(pool_hint "$WORK/auto.log")" = 0 ] || fail "OpenBLAS started its own thread pool under tessel run"

MPI=(mpirun -n 2 --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
"${FRESH[@]}" "${MPI[@]}" "$TESSEL" run "$WORK/tiny.yaml" --set plugin.name=ddp \
  --set log.dir="$WORK/ranks" >"$WORK/ranks.log" 2>&1 || { cat "$WORK/ranks.log" >&2; fail "the two-rank run failed"; }
[ "$(core "$WORK/ranks.log")" = "$auto" ] || fail "two ranks run $(core "$WORK/ranks.log"), one process $auto"
[ "$(pool_hint "$WORK/ranks.log")" = 0 ] || fail "OpenBLAS started its own thread pool on a rank"

# the user's thread count is kept; with more than one core that is a pool,
# and the run says so
OPENBLAS_NUM_THREADS=2 "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/pool" >"$WORK/pool.log" 2>&1 \
  || fail "the run with OPENBLAS_NUM_THREADS=2 failed"
if [ "$(nproc)" -gt 1 ]; then
  [ "$(pool_hint "$WORK/pool.log")" = 1 ] || { grep 'backend cpu' "$WORK/pool.log" >&2; fail "OPENBLAS_NUM_THREADS=2: no advice to set 1"; }
fi

OPENBLAS_CORETYPE=Haswell "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/user" >"$WORK/user.log" 2>&1 \
  || fail "the run with OPENBLAS_CORETYPE=Haswell failed"
[ "$(core "$WORK/user.log")" = Haswell ] || fail "OPENBLAS_CORETYPE=Haswell became $(core "$WORK/user.log")"

# a record from other kernels with an absurd rate: MFU against it would be
# thousands of percent
record=$WORK/cache/tessel/peak-$(hostname).json
printf '{"backend":"cpu","threads":1,"blas":"NotTheseKernels","gflops":0.001}\n' >"$record"
"${FRESH[@]}" "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/stale" >"$WORK/stale.log" 2>&1 \
  || fail "the run with a stale ceiling failed"
grep -q "\"blas\":[[:space:]]*\"$auto\"" "$record" || { cat "$record" >&2; fail "the ceiling was not measured again for $auto"; }
mfu=$(sed -n 's/.*"mfu":\([0-9.e+-]*\).*/\1/p' "$WORK/stale/metrics.jsonl" | tail -1)
awk -v m="$mfu" 'BEGIN { exit !(m > 0 && m < 1.5) }' || fail "MFU $mfu against the stale ceiling"
# under a ulimit -v with room for OpenBLAS's buffers the run trains (they
# are taken at start; tests/fault/address_space.sh has the limits without)
(ulimit -v 8000000 && "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/ulimit" --set train.steps=1) \
  >"$WORK/ulimit.log" 2>&1 || fail "the run under ulimit -v 8000000 failed: $(tail -2 "$WORK/ulimit.log")"
rm -rf "$WORK"
echo "ok: OpenBLAS kernels $auto and no OpenBLAS thread pool (one process and every rank), a user's coretype and thread count kept, a stale ceiling measured again"
