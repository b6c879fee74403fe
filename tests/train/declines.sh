# A strategy whose setup declines the backend (TESSEL_E_UNSUPPORTED, as
# gemini declines 16-bit compute) ends the run with exit status 3 and its
# reason, on one rank and under mpirun; one that accepts it trains.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" declines
PLUGIN=$4
MPIEXEC=${5:-}

set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=2 --set plugin.path="$PLUGIN" \
  --set plugin.needs=bf16 >"$WORK/out" 2>&1
rc=$?
set -e
[ $rc -eq 3 ] || { cat "$WORK/out" >&2; fail "exit status $rc on the fp32 CPU backend, expected 3"; }
grep -q "strategy .declines. failed in setup: declines: this strategy computes in bf16 only" "$WORK/out" ||
  { cat "$WORK/out" >&2; fail "the strategy's reason is not in the error"; }
[ -s "$WORK/run/metrics.jsonl" ] && fail "a declined run wrote metrics"

"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/ok" --set train.steps=2 --set plugin.path="$PLUGIN" \
  --set plugin.needs=f32 >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; fail "the strategy that accepts fp32 did not train"; }

if [ -n "$MPIEXEC" ]; then
  flags=""
  [ "$(id -u)" -eq 0 ] && flags="--allow-run-as-root"
  set +e
  "$MPIEXEC" $flags --oversubscribe -n 2 "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/mpi" --set train.steps=2 \
    --set plugin.path="$PLUGIN" >"$WORK/out" 2>&1
  rc=$?
  set -e
  [ $rc -eq 3 ] || { cat "$WORK/out" >&2; fail "exit status $rc under mpirun -n 2, expected 3"; }
fi
rm -rf "$WORK"
echo "ok: a declined backend exits with status 3 and the strategy's reason"
