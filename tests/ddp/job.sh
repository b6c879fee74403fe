# tests/ddp/job.sh — a two-rank ddp job to do something to, for kill.sh,
# stall.sh and stall_end.sh. Usage from a test:
#   . "$(dirname "$0")/job.sh" TESSEL SRC TMP NAME [--set KEY=VALUE...]
# starts the job in the background (pid $job, output $WORK/log) and returns
# once training is under way; then pick_rank sets $victim (a rank's pid) and
# $victim_rank, and job_ended / no_orphans judge how the job ended.
set -uo pipefail
TESSEL=$1; SRC=$2; TMP=$3; NAME=$4
shift 4
WORK=$TMP/$NAME.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }

"$TESSEL" launch -n 2 configs/ddp.yaml --set train.steps=100000 --set log.dir="$WORK/run" --set data.dir="$WORK/data" \
  --set checkpoint.resume=never --set log.progress=never --set device.threads=1 "$@" >"$WORK/log" 2>&1 &
job=$!
for _ in $(seq 1 300); do # wait (up to 60 s) until training is under way
  [ -s "$WORK/run/metrics.jsonl" ] && [ "$(wc -l <"$WORK/run/metrics.jsonl")" -ge 3 ] && break
  kill -0 $job 2>/dev/null || { cat "$WORK/log" >&2; fail "the job ended before anything was done to it"; }
  sleep 0.2
done

# the job's processes: mpirun's children and theirs, by parent, never by name
tree() { local kids; kids=$(pgrep -P "$1"); for k in $kids; do echo "$k"; tree "$k"; done; }
procs=$(tree $job)

# a rank (argv[0] is the tessel program), not mpirun (whose arguments also name it)
pick_rank() {
  victim=$(pgrep -f "^$TESSEL run configs/ddp.yaml.*log.dir=$WORK/run" | head -1)
  [ -n "$victim" ] || fail "no rank process found"
  victim_rank=$(tr '\0' '\n' <"/proc/$victim/environ" | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
}

# job_ended SECONDS: the job ends within SECONDS, non-zero; sets $rc, $elapsed
job_ended() {
  local start; start=$(date +%s)
  for _ in $(seq 1 $(($1 * 5))); do kill -0 $job 2>/dev/null || break; sleep 0.2; done
  if kill -0 $job 2>/dev/null; then
    kill -9 $job $procs 2>/dev/null
    cat "$WORK/log" >&2
    fail "the job was still running $1 s later"
  fi
  wait $job
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  [ $rc -ne 0 ] || fail "the job exited 0"
}

no_orphans() {
  local orphans=
  for p in $procs; do # alive, not a zombie waiting for init to reap it
    case $(ps -o stat= -p "$p" 2>/dev/null) in "" | Z*) ;; *) orphans="$orphans $p" ;; esac
  done
  [ -z "$orphans" ] || { kill -9 $orphans 2>/dev/null; fail "processes of the job outlived it:$orphans"; }
}
