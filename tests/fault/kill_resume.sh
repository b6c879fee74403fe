#!/usr/bin/env bash
# tests/fault/kill_resume.sh — kill -9 at random moments while checkpointing
# every step, 20 times, then let the run go on a few steps: it must end bit
# for bit where an uninterrupted run to the same step ends (every step's
# loss, the model and optimizer files), with no temporary left, and each
# kill must take the run's helper processes with it.
#
# usage: kill_resume.sh TESSEL SRC TMP
#
# A kill lands once training is under way (the trial's log shows a step),
# 0–250 ms later: with a checkpoint after every step (about 90 ms, most of
# it writing and syncing files) most kills hit a checkpoint being written.
# Each new start resumes from the checkpoint `latest` names, clears what
# the killed run left half-written, and takes the run-directory lock the
# kill released. train.steps is far beyond what the trials reach, however
# fast the machine; both runs stop at the same step T with
# train.stop_after, so they share one learning-rate schedule.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" kill_resume
TRIALS=20
tiny_config 100000 2

losses() { # "STEP LOSS" per metrics line, whatever fields stand between
  awk 'match($0, /"step":[0-9]+/) { s = substr($0, RSTART + 7, RLENGTH - 7)
       if (match($0, /"loss":[^,}]*/)) print s, substr($0, RSTART + 7, RLENGTH - 7) }' "$1"
}

RANDOM=17 # the same kill delays every time (the moments they hit still vary)
left_behind=0
for trial in $(seq 1 $TRIALS); do
  "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/killed" >"$WORK/trial.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do # until training is under way (at most 60 s)
    grep -q '^step ' "$WORK/trial.log" && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  kill -0 $pid 2>/dev/null || { cat "$WORK/trial.log" >&2; die "trial $trial ended before it was killed"; }
  sleep "0.$(printf '%03d' $((RANDOM % 250)))"
  helpers=$(pgrep -P $pid)
  kill -9 $pid
  wait $pid 2>/dev/null
  for h in $helpers; do # MPI's helper notices its process died
    for _ in $(seq 1 50); do kill -0 "$h" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$h" 2>/dev/null && die "trial $trial: helper process $h outlived the killed run"
  done
  left_behind=$((left_behind + $(find "$WORK/killed/checkpoints" -maxdepth 1 -name '.tmp-step_*' | wc -l)))
done

# resume follows `latest`, which a save writes after renaming its step
# directory into place: a kill between the two leaves a complete newer
# directory that the next start does not take (docs/architecture.md)
last=$(find "$WORK/killed/checkpoints" -maxdepth 1 -name 'step_*' | sort | tail -1)
[ -n "$last" ] || die "no checkpoint was completed in $TRIALS trials"
[ -s "$WORK/killed/checkpoints/latest" ] && last=$(head -1 "$WORK/killed/checkpoints/latest")
K=$((10#${last##*step_}))
T=$((K + 3))
# a run that stops at train.stop_after exits 75: stopped early, resumable
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/killed" --set train.stop_after=3 >"$WORK/final.log" 2>&1
[ $? -eq 75 ] || die "the run after $TRIALS kills did not go on: $(tail -3 "$WORK/final.log")"
grep -q "resuming from .*step_0*$K" "$WORK/final.log" || die "the last run did not resume from step $K"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/straight" --set train.stop_after=$T >"$WORK/straight.log" 2>&1
[ $? -eq 75 ] || die "the uninterrupted run failed: $(tail -3 "$WORK/straight.log")"

losses "$WORK/straight/metrics.jsonl" >"$WORK/a"
losses "$WORK/killed/metrics.jsonl" >"$WORK/b"
[ "$(wc -l <"$WORK/a")" -eq $T ] || die "the uninterrupted run logged $(wc -l <"$WORK/a") steps, expected $T"
diff "$WORK/a" "$WORK/b" >&2 || die "the loss trajectories differ (each step once, same loss text)"
final=$(printf 'step_%08d' $T)
for f in model.safetensors optimizer.safetensors; do
  cmp "$WORK/straight/checkpoints/$final/$f" "$WORK/killed/checkpoints/$final/$f" ||
    die "$f after $TRIALS kills differs from the uninterrupted run's"
done
tmp=$(find "$WORK/killed" -name '.tmp-step_*' -o -name '*.tmp' -o -name '*.tmp.[0-9]*' -o -name 'step_*.old-*' | wc -l)
[ "$tmp" -eq 0 ] || die "$tmp temporaries are left after the run finished"
finish "ok: $TRIALS kills (-9) while checkpointing every step; the run resumed each time and ended bit-exact at \
step $T, $left_behind half-written checkpoint(s) cleared, 0 temporaries left"
