# Stopping a run early, one process: SIGINT stops after the step in progress
# with a checkpoint and exit status 75, and the run resumes to the end;
# SIGHUP and SIGPIPE (a gone terminal, a gone reader) stop the same way; a
# second SIGINT within the same step aborts at once (killed by SIGINT, no
# checkpoint); SIGTERM during start-up stops after the first step, and one
# during a validation ends it at the next batch;
# train.stop_after_time stops before the limit, status 75.
# Steps are made long (the sleepy test strategy sleeps 300 ms in each) so
# the signals surely land inside one.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" stop
PLUGIN=$4
slow=(--set plugin.path="$PLUGIN" --set plugin.sleep_ms=300 --set train.steps=40 --set log.every=1)
wait_steps() { # DIR N: until DIR/metrics.jsonl has N lines (at most 30 s)
  for _ in $(seq 1 300); do
    [ -f "$1/metrics.jsonl" ] && [ "$(wc -l <"$1/metrics.jsonl")" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "no $2 steps in $1 after 30 s"
}

# stopped_by NAME SIG: a slow run signalled with SIG after 2 steps must stop
# with exit status 75, say so, and leave that step's checkpoint; sets step
stopped_by() {
  set +e
  "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/$1" "${slow[@]}" >"$WORK/$1.log" 2>&1 &
  local pid=$! rc
  wait_steps "$WORK/$1" 2
  kill -"$2" $pid
  wait $pid
  rc=$?
  set -e
  step=$(stop_step "$WORK/$1.log" "SIG$2")
  stopped_with_checkpoint $rc "$step" "$WORK/$1" ||
    { cat "$WORK/$1.log" >&2; fail "SIG$2: exit status $rc, expected 75 with a checkpoint and a stop line"; }
}
stopped_by int INT
[ "$(wc -l <"$WORK/int/metrics.jsonl")" -eq "$step" ] || fail "SIGINT: metrics go past step $step"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/int" --set train.steps=40 >"$WORK/int2.log" 2>&1 \
  || { cat "$WORK/int2.log" >&2; fail "the run stopped by SIGINT did not resume"; }
grep -q "resuming from .*$(printf 'step_%08d' "$step")" "$WORK/int2.log" || fail "did not resume from step $step"

# SIGHUP (a closed terminal or ssh session) stops as SIGINT does; it once
# killed the run at once (exit 129), losing every step since the last
# checkpoint
stopped_by hup HUP

# the log's reader going away (`tessel run | head`) raises SIGPIPE at the
# next log line: the run stops after that step with a checkpoint and exit
# status 75 (it was killed by SIGPIPE, 141); its own later lines, which
# raise SIGPIPE again, change nothing
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/pipe" "${slow[@]}" 2>&1 | head -c 1 >/dev/null
rc=${PIPESTATUS[0]}
set -e
steps=$(wc -l <"$WORK/pipe/metrics.jsonl")
[ $rc -eq 75 ] && [ "$steps" -lt 40 ] && [ -d "$WORK/pipe/checkpoints/$(printf 'step_%08d' "$steps")" ] ||
  fail "SIGPIPE: exit status $rc after $steps steps, expected 75 with a checkpoint at the last step"

# a signal while the run starts up (here: a strategy's setup that takes
# 3 s, after the run directory exists) stops it after its first step, as any
# other; the process was once killed by it (exit 143, no message)
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/early" "${slow[@]}" --set plugin.sleep_ms=0 \
  --set plugin.setup_sleep_ms=3000 >"$WORK/early.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do [ -d "$WORK/early" ] && break; sleep 0.1; done
kill -TERM $pid
wait $pid
rc=$?
set -e
[ $rc -eq 75 ] && grep -q "stopped at step 1 by SIGTERM" "$WORK/early.log" ||
  { cat "$WORK/early.log" >&2; fail "SIGTERM during start-up: exit status $rc, expected 75 after step 1"; }

# abort NAME FIRST SECOND: a slow run signalled twice mid-step; sets rc
abort() {
  set +e
  "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/$1" "${slow[@]}" --set plugin.sleep_ms=2000 >"$WORK/$1.log" 2>&1 &
  local pid=$!
  wait_steps "$WORK/$1" 1
  kill -"$2" $pid
  sleep 0.3
  kill -"$3" $pid
  wait $pid
  rc=$?
  set -e
}
abort abort INT INT
[ $rc -eq 130 ] || { cat "$WORK/abort.log" >&2; fail "second SIGINT: exit status $rc, expected 130 (killed by SIGINT)"; }
grep -q "second stop signal, aborting" "$WORK/abort.log" || fail "second SIGINT: not announced"
[ -z "$(ls "$WORK/abort/checkpoints" 2>/dev/null)" ] || fail "second SIGINT: a checkpoint was written"
# SIGUSR1 then SIGTERM (a requeue notice, then the end of the grace time, or
# launch's second Ctrl-C as mpirun passes it on) aborts by SIGTERM: a run
# stuck where the flag is never read once waited for it for ever
abort abort2 USR1 TERM
[ $rc -eq 143 ] || { cat "$WORK/abort2.log" >&2; fail "SIGUSR1 then SIGTERM: exit status $rc, expected 143 (SIGTERM)"; }

# SIGTERM during a validation (40 batches of 300 ms after step 2) ends it
# at the next batch, not its last, and the run stops with step 2's
# checkpoint; the validation's loss is not reported. A signal once waited
# for every batch (minutes at eval_batches 2^20).
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/eval" "${slow[@]}" --set train.eval_every=2 \
  --set train.eval_batches=40 >"$WORK/eval.log" 2>&1 &
pid=$!
wait_steps "$WORK/eval" 1
sleep 1.5
sent=$(date +%s%N)
kill -TERM $pid
wait $pid
rc=$?
took_ms=$((($(date +%s%N) - sent) / 1000000))
set -e
stopped_with_checkpoint $rc "$(stop_step "$WORK/eval.log" SIGTERM)" "$WORK/eval" && grep -q "stopped at step 2 by" "$WORK/eval.log" ||
  { cat "$WORK/eval.log" >&2; fail "SIGTERM in a validation: exit status $rc, expected 75 at step 2 with a checkpoint"; }
grep -q "validation after step 2 stopped by SIGTERM after [0-9]* of 40 batches" "$WORK/eval.log" ||
  { cat "$WORK/eval.log" >&2; fail "SIGTERM in a validation: not said"; }
grep -q '"val_loss"' "$WORK/eval/metrics.jsonl" && fail "SIGTERM in a validation: a partial validation loss was logged"
# the rest of the validation would take about 10 s
[ "$took_ms" -lt 6000 ] || fail "SIGTERM in a validation: the run took $took_ms ms to stop"

set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/time" "${slow[@]}" --set train.stop_after_time=2s \
  >"$WORK/time.log" 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || { cat "$WORK/time.log" >&2; fail "stop_after_time: exit status $rc, expected 75"; }
grep -q "by train.stop_after_time" "$WORK/time.log" || fail "stop_after_time: no stop line"
steps=$(wc -l <"$WORK/time/metrics.jsonl")
# 300 ms steps within 2 s, start-up included: fewer than 7, and some
[ "$steps" -ge 1 ] && [ "$steps" -lt 7 ] || fail "stop_after_time: $steps steps in 2 s of 300 ms steps"
ls "$WORK/time/checkpoints" | grep -q "$(printf 'step_%08d' "$steps")" || fail "stop_after_time: no checkpoint"
# a validation due at the next step counts: 300 ms steps validating every
# 4th step over 5 batches (1.5 s, the sleep is in every forward), limit
# 4.5 s: steps 1-7 end near 3.9 s, and step 8 with its validation would end
# near 5.7 s, so the run stops at step 7 at the latest (it once took step 8
# and its validation, 1.2 s past the limit)
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/val" "${slow[@]}" --set train.stop_after_time=4.5s \
  --set train.eval_every=4 --set train.eval_batches=5 >"$WORK/val.log" 2>&1
rc=$?
set -e
at=$(stop_step "$WORK/val.log" train.stop_after_time)
[ $rc -eq 75 ] && [ -n "$at" ] && [ "$at" -le 7 ] ||
  { cat "$WORK/val.log" >&2; fail "stop_after_time with a validation due: status $rc, stopped at step '$at', expected 7 or before"; }
grep -q "stop_after_time.*not a duration" <("$TESSEL" check "$WORK/tiny.yaml" --set train.stop_after_time=3x 2>&1) \
  || fail "a malformed duration is not a config error"
rm -rf "$WORK"
echo "ok: SIGINT stops at step $step with a checkpoint (75) and resumes; a second SIGINT aborts; stop_after_time stops after $steps steps, and at step $at before a validation would pass it"
