# Threads follow the CPUs a process may use: under `taskset -c 0` a run
# reports and uses one thread; unrestricted, one per CPU it may use; under
# `mpirun -n 2 --bind-to core` each rank runs one thread (summary.json lists
# every rank's threads); OMP_NUM_THREADS, when set, is the count. Needs two CPUs for the contrast: skipped (77) on one.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" threads
cpus=$(taskset -pc $$ | sed 's/.*: //' | awk -F, '{ n = 0; for (i = 1; i <= NF; i++) { split($i, r, "-"); n += (r[2] == "" ? 1 : r[2] - r[1] + 1) } print n }')
if [ "$cpus" -lt 2 ]; then echo "skip: this process may use $cpus CPU(s); the test needs 2"; exit 77; fi
sed -i '/^device:/d' "$WORK/tiny.yaml" # no device.threads: the count is tessel's to choose

taskset -c 0 "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/one" >"$WORK/one.log" 2>&1 \
  || { cat "$WORK/one.log" >&2; fail "the run under taskset failed"; }
grep -q "backend cpu: 1 thread," "$WORK/one.log" || { cat "$WORK/one.log" >&2; fail "taskset -c 0: the backend does not run 1 thread"; }
grep -q "cpu: 1 thread(s) per rank; rank 0 may use 1 core(s) (CPUs 0 " "$WORK/one.log" \
  || { cat "$WORK/one.log" >&2; fail "taskset -c 0: the run does not report 1 thread on CPU 0"; }

env -u OMP_NUM_THREADS "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/all" >"$WORK/all.log" 2>&1 ||
  fail "the unrestricted run failed"
grep -q "backend cpu: $cpus threads," "$WORK/all.log" || { cat "$WORK/all.log" >&2; fail "unrestricted: not $cpus threads"; }
# the restart that picks OpenBLAS's kernels keeps the process's name (it
# ran as "exe", which pgrep, pkill and top could not find)
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/named" --set train.steps=100000 >/dev/null 2>&1 &
pid=$!
for _ in $(seq 1 100); do [ -f "$WORK/named/metrics.jsonl" ] && break; sleep 0.1; done
name=$(cat /proc/$pid/comm 2>/dev/null || echo gone)
kill -TERM $pid
wait $pid || true
[ "$name" = "$(basename "$TESSEL")" ] || fail "a running tessel is named '$name'"
# OMP_NUM_THREADS is taken as OpenMP programs take it (it was overridden)
OMP_NUM_THREADS=1 "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/omp" >"$WORK/omp.log" 2>&1 || fail "the OMP_NUM_THREADS=1 run failed"
grep -q "cpu: 1 thread(s) per rank; .*; threads from OMP_NUM_THREADS" "$WORK/omp.log" ||
  { cat "$WORK/omp.log" >&2; fail "OMP_NUM_THREADS=1 did not give one thread"; }

MPI=(mpirun -n 2 --bind-to core)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
"${MPI[@]}" "$TESSEL" run "$WORK/tiny.yaml" --set plugin.name=ddp --set log.dir="$WORK/bound" >"$WORK/bound.log" 2>&1 \
  || { cat "$WORK/bound.log" >&2; fail "the bound two-rank run failed"; }
threads=$(tr -d ' \t\n' <"$WORK/bound/summary.json" | grep -o '"threads":[0-9]*' | cut -d: -f2 | tr '\n' ' ')
[ "$threads" = "1 1 " ] || { cat "$WORK/bound/summary.json" >&2; fail "mpirun --bind-to core: threads per rank '$threads', expected '1 1'"; }
grep -q '"oversubscribed":false' <(tr -d ' \t\n' <"$WORK/bound/summary.json") || fail "bound ranks called oversubscribed"
# tessel launch binds each rank to its own CPUs and says so
"$TESSEL" launch -n 2 "$WORK/tiny.yaml" --set plugin.name=ddp --set log.dir="$WORK/launched" >"$WORK/launch.log" 2>&1 \
  || { cat "$WORK/launch.log" >&2; fail "tessel launch -n 2 failed"; }
grep -q "^launch: 2 rank(s), each bound to $((cpus / 2)) of the $cpus CPU(s)" "$WORK/launch.log" \
  || { cat "$WORK/launch.log" >&2; fail "launch does not say how it bound the ranks"; }
threads=$(tr -d ' \t\n' <"$WORK/launched/summary.json" | grep -o '"threads":[0-9]*' | cut -d: -f2 | tr '\n' ' ')
[ "$threads" = "$((cpus / 2)) $((cpus / 2)) " ] || fail "tessel launch -n 2: threads per rank '$threads'"
# under taskset the ranks stay on the CPUs it gave (mpirun bound them to CPU 0)
last=$((cpus - 1))
taskset -c $last "$TESSEL" launch -n 1 "$WORK/tiny.yaml" --set log.dir="$WORK/masked" >"$WORK/masked.log" 2>&1 ||
  { cat "$WORK/masked.log" >&2; fail "tessel launch under taskset failed"; }
grep -q "rank 0 may use 1 core(s) (CPUs $last on" "$WORK/masked.log" ||
  { cat "$WORK/masked.log" >&2; fail "tessel launch under taskset -c $last ran its rank elsewhere"; }

# a rank that cannot see the shards names itself and its host
if "${MPI[@]}" "$TESSEL" run "$WORK/tiny.yaml" --set plugin.name=ddp --set log.dir="$WORK/noshards" \
     --set "data.text=[]" --set data.train="$WORK/nowhere/train_*.bin" >"$WORK/noshards.log" 2>&1; then
  fail "a run without shards succeeded"
fi
grep -q "data.train: no files match .* on rank [01], host $(hostname)" "$WORK/noshards.log" \
  || { cat "$WORK/noshards.log" >&2; fail "the missing-shards error does not name the rank and host"; }
rm -rf "$WORK"
echo "ok: taskset -c 0 gives 1 thread, unrestricted $cpus, mpirun --bind-to core 1 per rank, launch binds and says so"
