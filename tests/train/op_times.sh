# TESSEL_OP_TIMES=1: the end of a run lists each op's time per step after
# the first, and nothing else changes.
#  - every block op is charged once per layer per timed step, forward and
#    backward (2 layers x 3 steps = 6 calls), and an evaluation forward is
#    not charged (evaluations run at steps 2 and 4 here);
#  - with train.recompute: full, the reruns before each block's backward
#    are their own rows;
#  - the rows and "outside the ops" add up to the step: their printed
#    shares (0.1% each, so rounding is 0.05% per row at most, 30 rows at
#    most) sum to 100% within 1.5%;
#  - the losses are those of an untimed run, bit for bit (the timer only
#    waits for the stream), and an untimed run prints no op times.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" op_times

run() { # NAME [--set ...]: 4 steps of the tiny model, evaluated every 2
  local name=$1
  shift
  "$TESSEL" run "$WORK/tiny.yaml" --set train.steps=4 --set train.eval_every=2 --set log.dir="$WORK/$name" "$@" \
    >"$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log" >&2; fail "the $name run failed"; }
}
run plain
TESSEL_OP_TIMES=1 run timed
TESSEL_OP_TIMES=1 run full --set train.recompute=full

! grep -q "op times" "$WORK/plain.log" || fail "a run without TESSEL_OP_TIMES printed op times"
grep -q "op times (TESSEL_OP_TIMES=1.*over the 3 step(s) after the first" "$WORK/timed.log" ||
  { cat "$WORK/timed.log" >&2; fail "no op times header for 3 timed steps"; }
row() { grep -E "%  $1 +$2 +$3 call\(s\)" "$WORK/$4.log"; }
for phase in forward backward; do
  row "block attention attention" $phase 6 timed >/dev/null || { cat "$WORK/timed.log" >&2; fail "attention $phase: not 6 calls"; }
  row "block linear qkv" $phase 6 timed >/dev/null || fail "qkv $phase: not 6 calls"
done
row "head head \(of ln_f\)" forward 3 timed >/dev/null || fail "the head is not charged once per timed step"
row "block attention attention" recompute 6 full >/dev/null || { cat "$WORK/full.log" >&2; fail "no recompute rows under recompute: full"; }
! grep -q " recompute " <(sed -n '/op times/,/outside the ops/p' "$WORK/timed.log") || fail "recompute rows without recompute"

total=$(sed -n '/op times/,/outside the ops/p' "$WORK/timed.log" | sed -n 's/^.* ms *\([0-9.]*\)%  .*/\1/p' |
        awk '{ s += $1 } END { print s }')
awk -v t="$total" 'BEGIN { exit !(t > 98.5 && t < 101.5) }' || fail "the op shares and the rest add up to $total%"

[ "$(losses "$WORK/plain/metrics.jsonl")" = "$(losses "$WORK/timed/metrics.jsonl")" ] ||
  fail "timing the ops changed the losses"
rm -rf "$WORK"
echo "ok: op times add up to $total% of the step, and timing changes no loss"
