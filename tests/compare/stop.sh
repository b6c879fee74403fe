# A stop signal to `tessel compare` (kill, a scheduler's time limit) stops
# its running trial and waits for it: no trial outlives the command (one
# went on training to its last step, into the next comparison's folder),
# no further trial starts, and compare exits 128 + the signal. Killed by a
# signal it cannot catch, its trial is stopped by the kernel. No report
# is left in the folder: not this one's, nor an earlier comparison's.
#   stop.sh TESSEL SRC TMP
set -uo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/compare_stop.$$
rm -rf "$WORK"; mkdir -p "$WORK/cmp"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
echo "an earlier comparison's report" >"$WORK/cmp/report.md"

"$TESSEL" compare configs/quickstart.yaml configs/quickstart.yaml --steps 100000 --repeat 2 --out "$WORK/cmp" \
  --set model.layers=1 --set device.threads=1 --set data.dir="$WORK/data" >"$WORK/out" 2>&1 &
pid=$!
for _ in $(seq 300); do # the first trial is training (up to 30 s)
  [ -n "$(find "$WORK/cmp" -name metrics.jsonl -size +0 2>/dev/null)" ] && break
  sleep 0.1
done
[ -n "$(find "$WORK/cmp" -name metrics.jsonl -size +0 2>/dev/null)" ] || { cat "$WORK/out" >&2; fail "no trial started training"; }
kill -TERM "$pid"
wait "$pid"
rc=$?
[ "$rc" -eq 143 ] || { cat "$WORK/out" >&2; fail "compare exited $rc after SIGTERM, expected 143"; }
grep -q "compare: stopped by signal 15, with nothing it started left running" "$WORK/out" || { cat "$WORK/out" >&2; fail "the stop is not said"; }
left=$(pgrep -f -- "log.dir=$WORK/cmp" || true)
[ -z "$left" ] || { ps -o pid,cmd -p $left >&2; kill -KILL $left; fail "trials outlived compare"; }
[ ! -e "$WORK/cmp/report.md" ] || fail "a stopped compare left an earlier comparison's report standing"
trials=$(find "$WORK/cmp" -name metrics.jsonl | wc -l)
[ "$trials" -eq 1 ] || fail "$trials trials ran, expected only the one that was stopped"
# compare killed outright (SIGKILL, which it cannot pass on): its trial is
# told to stop by the kernel, and does within a step (it once trained on
# alone to its last step)
rm -rf "$WORK/cmp"
"$TESSEL" compare configs/quickstart.yaml configs/quickstart.yaml --steps 100000 --repeat 2 --out "$WORK/cmp" \
  --set model.layers=1 --set device.threads=1 --set data.dir="$WORK/data" >"$WORK/out2" 2>&1 &
pid=$!
for _ in $(seq 300); do
  [ -n "$(find "$WORK/cmp" -name metrics.jsonl -size +0 2>/dev/null)" ] && break
  sleep 0.1
done
kill -KILL "$pid"
wait "$pid" 2>/dev/null
for _ in $(seq 300); do # up to 30 s for its step and checkpoint
  [ -z "$(pgrep -f -- "log.dir=$WORK/cmp" || true)" ] && break
  sleep 0.1
done
left=$(pgrep -f -- "log.dir=$WORK/cmp" || true)
[ -z "$left" ] || { kill -KILL $left; fail "a trial outlived compare killed by SIGKILL"; }
rm -rf "$WORK"
echo "ok: a stopped compare stops its running trial, starts no other and exits 143; killed, its trial stops too"
