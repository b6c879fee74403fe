# A rank that stops taking part without dying (SIGSTOP: what a hung file
# system or a debugger does to it) leaves the other waiting in a collective.
# With train.comm_timeout = 10s (long enough for rank 0 to prepare the data
# while rank 1 waits, on a loaded machine) the waiting rank gives up: the job
# ends, non-zero, within 40 s (the timeout, then mpirun's teardown of a
# stopped process), the message comes from the rank that waited and names
# what it waited for and the key, and no process is left behind.
. "$(dirname "$0")/job.sh" "$1" "$2" "$3" ddp_stall --set train.comm_timeout=10s
pick_rank
kill -STOP "$victim"
job_ended 40
no_orphans
other=$((1 - victim_rank))
grep -q "^\[rank $other\] error: .* on group '[a-z+]*' has waited [0-9]* s for the other ranks (train.comm_timeout)" \
  "$WORK/log" || { cat "$WORK/log" >&2; fail "rank $other did not say what it waited for"; }
# MPI_Abort continues the stopped rank (SIGCONT, then SIGTERM); if it lives
# to time out in its next exchange, it must say that it was the one stopped
# (it once blamed "the other ranks" too)
if grep "^\[rank $victim_rank\] error: .*has waited" "$WORK/log" | grep -qv "this rank was itself stopped"; then
  cat "$WORK/log" >&2; fail "the stopped rank $victim_rank blamed the others for its wait"
fi
rm -rf "$WORK"
echo "ok: a stopped rank ended the job with status $rc after ${elapsed}s, reported by rank $other"
