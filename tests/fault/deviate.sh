# Ranks that took different paths through their collectives (a strategy
# that leaves one out on one rank: testmisfit's skip_sum, rank 1 skips the
# last gradient's all-reduce in step 2) wait in different collectives until
# train.comm_timeout. Each waiting rank once said "a rank has stopped taking
# part ... the ranks that do not report this are the ones to look at",
# though every rank reported it, and the end of a run named a rank waiting
# in a collective as one that "never arrived: it is stuck or stopped". Now
# a rank past its timeout asks the others where they are:
#   - at 3 ranks most agree: both ranks 1 and 2 name rank 1 (rank 1 as
#     "this rank"), with the counts on their group;
#   - at 2 ranks no count is most ranks': rank 0 names both counts, where
#     rank 1 waits, and says the counts cannot tell which rank deviated;
#   - at 6 ranks with two groups named 'dp' (below), counts are compared
#     within a communicator, not across the ones of one name;
#   - at the end of a run (where_end.c) the rank that waited names where
#     the other waits instead of calling it stuck.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" fault_deviate
PLUGINS=$4; WHERE_END=$5; MPIEXEC=$6
cat >"$WORK/run.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16}
data: {text: ["$PWD/core/config/*.c"], dir: $WORK/data}
train: {steps: 3, batch_size: 12, sample_tokens: 0, comm_timeout: 5s}
device: {threads: 1}
log: {progress: never, dir: $WORK/run}
plugin: {path: $PLUGINS/misfit/libtessel-testmisfit.so}
YAML
# the data prepared first: rank 0 preparing it would keep the others waiting past the timeout
"$TESSEL" run "$WORK/run.yaml" --set train.steps=1 --set log.dir="$WORK/prepare" >"$WORK/prepare.log" 2>&1 ||
  { cat "$WORK/prepare.log" >&2; die "preparing the data failed"; }
skip() { # skip RANKS [MODE]: the job, ended by a timeout
  rm -rf "$WORK/run"
  MISFIT=${2:-skip_sum} timeout 120 "$TESSEL" launch -n "$1" "$WORK/run.yaml" >"$WORK/log$1" 2>&1
  local rc=$?
  [ $rc -eq 1 ] || { cat "$WORK/log$1" >&2; fail "$1 ranks: exit status $rc, not 1"; }
  grep -q "a rank has stopped taking part" "$WORK/log$1" && fail "$1 ranks: a rank blamed the others at large"
}
skip 3
case_name="3 ranks"
grep -q "^\[rank [02]\] error: all-reduce on group 'dp' has waited [0-9]* s for the other ranks (train.comm_timeout). Most \
ranks posted \([0-9]*\) collectives on group 'dp'; these posted another number: rank 1 ([0-9]*; it waits in all-reduce \
on group 'core')\..*: look at them" "$WORK/log3" || fail "neither rank 0 nor rank 2 named rank 1"
# rank 1, waiting on 'core', finds itself the odd one there (if it timed out before the job ended)
if grep -q "^\[rank 1\] error" "$WORK/log3"; then
  grep -q "^\[rank 1\] error: all-reduce on group 'core' .*Most ranks posted [0-9]* collectives on group 'core'; \
these posted another number: this rank" "$WORK/log3" || fail "rank 1 did not find itself the one that differs"
fi
[ $failures -eq 0 ] || cat "$WORK/log3" >&2
skip 2
case_name="2 ranks"
grep -q "^\[rank [01]\] error: all-reduce on group '[a-z]*' has waited [0-9]* s for the other ranks \
(train.comm_timeout). The ranks disagree on how many collectives they posted on group '[a-z]*', and no number is most \
ranks': this rank [0-9]*, rank [01] ([0-9]*; it waits in all-reduce on group '[a-z]*').*which of them did, the counts \
cannot tell" "$WORK/log2" || { cat "$WORK/log2" >&2; fail "the waiting rank did not say where the other waits"; }
# skip_halves at 6 ranks: two communicators named 'dp', of ranks 0 2 4 and
# 1 3 5, that post different numbers of collectives (1 3 5 one more barrier
# a step); rank 2 leaves out its last sums in step 2, so ranks 0 4 wait for
# it on their 'dp', rank 3 on 'half' (a second late, so that it is not the
# first past the timeout), and ranks 1 5 for rank 3 on their 'dp'. A waiter
# on a 'dp' compares the counts of its own communicator: it names its rank
# that differs, and none of the other 'dp' (counted by name alone, the two
# made a tie that named every rank).
skip 6 skip_halves
case_name="6 ranks, two groups 'dp'"
own_group() { # own_group WAITERS MEMBERS ODD: a waiter on a 'dp' among WAITERS names rank ODD alone
  local waiter="^\[rank [$1]\] error: [a-z-]* on group 'dp' has waited [0-9]* s for the other ranks"
  grep "$waiter" "$WORK/log6" | grep -v "Most ranks posted [0-9]* collectives on group 'dp' (the one of ranks \
$2); these posted another number: rank $3 ([0-9]*; it waits in [a-z-]* on group '[a-z]*')\. The ranks that differ" &&
    fail "a rank of $2 did not name rank $3 alone (above)"
  grep -q "$waiter" "$WORK/log6"
}
reported=0
own_group 04 "0, 2, 4" 2 && reported=1
own_group 15 "1, 3, 5" 3 && reported=1
[ $reported -eq 1 ] || fail "no rank waiting on a group 'dp' reported"
[ $failures -eq 0 ] || cat "$WORK/log6" >&2
case_name="end of run"
flags=""
[ "$(id -u)" -eq 0 ] && flags="--allow-run-as-root"
timeout 120 "$MPIEXEC" $flags --oversubscribe -n 2 "$WHERE_END" >"$WORK/end.log" 2>&1
grep -q "^\[rank 1\] error: the end of the run on group 'world' has waited [0-9]* s (train.comm_timeout) for rank 0, \
which has not arrived: it waits in barrier on group 'world', having posted \([0-9]*\) collectives there, where this \
rank posted [0-9]*\. The two took different paths" "$WORK/end.log" ||
  { cat "$WORK/end.log" >&2; fail "the end of the run did not say where rank 0 waits"; }
grep -q "never arrived" "$WORK/end.log" && fail "rank 0, waiting in a barrier, was called stuck"
finish "ok: a rank past train.comm_timeout says where the others wait and which posted another number of collectives"
