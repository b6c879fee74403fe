#!/usr/bin/env bash
# Checkpoints under the whole mesh (tests/hybrid/all_sp_zero2.yaml: tp 2 with
# sequence parallelism × pp 2 × dp 2 with ZeRO-2, whose AdamW moments are
# sliced over dp and gathered back into logical tensors for the checkpoint):
#   (a) stopped after 10 of 20 steps and resumed, the run is bitwise the one
#       that never stopped;
#   (b) its step-10 checkpoint resumed by one process with no strategy goes
#       on within the equivalence tolerance (1e-5 relative; see equiv.sh),
#       and so does the validation loss at step 20 (the pipeline's
#       forward-only schedule against the plain forward).
#
#   resume.sh TESSEL SRC TMP
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/hybrid_resume.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
CONFIG=tests/hybrid/all_sp_zero2.yaml
common=(--set train.steps=20 --set checkpoint.every=0 --set log.progress=never --set data.dir="$WORK/data"
        --set device.threads=1)
losses() { sed -n 's/.*"loss":\([^,]*\),.*/\1/p' "$1"; }
launch() { # NAME STATUS ARGS...: the run must exit with STATUS (75: stopped early, resumable)
  local name=$1 want=$2 rc=0; shift 2
  "$TESSEL" launch -n 8 "$CONFIG" "${common[@]}" "$@" >>"$WORK/$name.log" 2>&1 || rc=$?
  [ $rc -eq "$want" ] || { cat "$WORK/$name.log" >&2; fail "$name: the 8-rank run exited with $rc, not $want"; }
}

launch straight 0 --set log.dir="$WORK/straight" --set checkpoint.resume=never
launch stopped 75 --set log.dir="$WORK/stopped" --set train.stop_after=10
launch stopped 0 --set log.dir="$WORK/stopped"
grep -q "resuming from .*step_00000010" "$WORK/stopped.log" || fail "the second run did not resume from step 10"
losses "$WORK/straight/metrics.jsonl" >"$WORK/a"
losses "$WORK/stopped/metrics.jsonl" >"$WORK/b"
[ "$(wc -l <"$WORK/a")" -eq 20 ] || fail "the straight run logged $(wc -l <"$WORK/a") steps, not 20"
cmp -s "$WORK/a" "$WORK/b" || { paste "$WORK/a" "$WORK/b" >&2; fail "the resumed run differs from the straight one"; }
echo "ok: stopped at step 10 and resumed, all 20 losses are bitwise those of the run that never stopped"

"$TESSEL" run "$CONFIG" "${common[@]}" --set plugin=null --set log.dir="$WORK/single" \
  --resume "$WORK/stopped/checkpoints/step_00000010" >"$WORK/single.log" 2>&1 \
  || { cat "$WORK/single.log" >&2; fail "one process could not resume the 8-rank checkpoint"; }
val() { sed -n 's/.*"val_loss":\([^,]*\),.*/\1/p' "$1"; }
awk -v a="$(val "$WORK/straight/metrics.jsonl")" -v b="$(val "$WORK/single/metrics.jsonl")" -v tol=1e-5 'BEGIN {
  d = (a - b) / a; if (d < 0) d = -d
  printf "ok: validation loss at step 20: %s on 8 ranks, %s in one process (relative difference %.3g)\n", a, b, d
  exit !(a != "" && d <= tol) }' || fail "the validation losses differ"
losses "$WORK/single/metrics.jsonl" >"$WORK/c"
[ "$(wc -l <"$WORK/c")" -eq 10 ] || fail "the single-process run logged $(wc -l <"$WORK/c") steps, not 10"
sed -n '11,20p' "$WORK/a" | paste "$WORK/c" - | awk -v tol=1e-5 '
  { d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > worst) worst = d }
  END { printf "ok: one process resuming the 8-rank checkpoint: largest relative loss difference %.3g over steps 11..20 (tolerance %g)\n", worst, tol
        exit !(worst <= tol) }' || fail "one process diverges from the 8-rank run after resuming its checkpoint"
rm -rf "$WORK"
