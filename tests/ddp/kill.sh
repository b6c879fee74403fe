# Killing one rank with SIGKILL mid-step ends the whole job, non-zero, within
# 10 seconds, leaving no process behind: no rank is left waiting in a
# collective (measured: about 2 s).
set -uo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/ddp_kill.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$TESSEL" launch -n 2 configs/ddp.yaml --set train.steps=100000 --set log.dir="$WORK/run" --set data.dir="$WORK/data" \
  --set checkpoint.resume=never --set log.progress=never --set device.threads=1 >"$WORK/log" 2>&1 &
job=$!
for _ in $(seq 1 300); do # wait (up to 60 s) until training is under way
  [ -s "$WORK/run/metrics.jsonl" ] && [ "$(wc -l <"$WORK/run/metrics.jsonl")" -ge 3 ] && break
  kill -0 $job 2>/dev/null || { cat "$WORK/log" >&2; fail "the job ended before it was killed"; }
  sleep 0.2
done
# a rank (argv[0] is the tessel program), not mpirun (whose arguments also name it)
victim=$(pgrep -f "^$TESSEL run configs/ddp.yaml.*log.dir=$WORK/run" | head -1)
[ -n "$victim" ] || fail "no rank process found"
# the job's processes: mpirun's children and theirs, by parent, never by name
tree() { local kids; kids=$(pgrep -P "$1"); for k in $kids; do echo "$k"; tree "$k"; done; }
procs=$(tree $job)
start=$(date +%s)
kill -9 "$victim"
for _ in $(seq 1 50); do kill -0 $job 2>/dev/null || break; sleep 0.2; done
if kill -0 $job 2>/dev/null; then
  kill -9 $job $procs 2>/dev/null
  fail "the job was still running 10 s after one rank was killed"
fi
wait $job
rc=$?
elapsed=$(( $(date +%s) - start ))
[ $rc -ne 0 ] || fail "the job exited 0 after a rank was killed"
orphans=
for p in $procs; do # alive, not a zombie waiting for init to reap it
  case $(ps -o stat= -p "$p" 2>/dev/null) in "" | Z*) ;; *) orphans="$orphans $p" ;; esac
done
[ -z "$orphans" ] || { kill -9 $orphans 2>/dev/null; fail "processes of the job outlived it:$orphans"; }
rm -rf "$WORK"
echo "ok: killing one rank ended the job with status $rc after ${elapsed}s, no orphans"
