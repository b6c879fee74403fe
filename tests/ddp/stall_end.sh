# A rank stuck at the end of a run (stopped right after rank 0 wrote
# summary.json, its last file, by the fault library) leaves the other rank
# waiting for it in MPI_Finalize, which has no deadline of its own. Within
# train.comm_timeout = 10s the waiting rank gives up instead: the job ends,
# non-zero, within 40 s, the message comes from rank 1 and names rank 0 as
# the rank that never arrived, and no process is left behind.
export LD_PRELOAD=$4 TESSEL_FAULT=stop-after-rename:summary.json TESSEL_FAULT_DIR=$3/ddp_stall_end.$$/run
. "$(dirname "$0")/job.sh" "$1" "$2" "$3" ddp_stall_end --set train.comm_timeout=10s --set train.steps=4
job_ended 40
no_orphans
[ -s "$WORK/run/summary.json" ] || { cat "$WORK/log" >&2; fail "the run did not reach its end"; }
grep -q "^\[rank 1\] error: the end of the run on group 'world' has waited [0-9]* s (train.comm_timeout) for rank 0, which never arrived" \
  "$WORK/log" || { cat "$WORK/log" >&2; fail "rank 1 did not name rank 0 as the rank it waited for at the end"; }
rm -rf "$WORK"
echo "ok: a rank stopped at the end ended the job with status $rc after ${elapsed}s, named by the rank that waited"
