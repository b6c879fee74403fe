# Killing one rank with SIGKILL mid-step ends the whole job, non-zero, within
# 10 seconds, leaving no process behind: no rank is left waiting in a
# collective (measured: about 2 s).
. "$(dirname "$0")/job.sh" "$1" "$2" "$3" ddp_kill
pick_rank
kill -9 "$victim"
job_ended 10
no_orphans
rm -rf "$WORK"
echo "ok: killing one rank ended the job with status $rc after ${elapsed}s, no orphans"
