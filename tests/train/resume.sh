# N steps straight = k steps, stop, resume, N-k steps — bit for bit: the same
# loss text at every step and byte-identical final model and optimizer state.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" resume

"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/straight" >/dev/null 2>&1 || fail "straight run failed"
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/resumed" --set train.stop_after=5 >/dev/null 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || fail "the first half exited with status $rc, expected 75 (stopped, resumable)"
[ -d "$WORK/resumed/checkpoints/step_00000005" ] || fail "no checkpoint at step 5 after stop_after"
[ -d "$WORK/resumed/checkpoints/step_00000012" ] && fail "the first half ran past stop_after"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/resumed" >"$WORK/second.log" 2>&1 || fail "resumed run failed"
grep -q "resuming from .*step_00000005" "$WORK/second.log" || fail "the second run did not resume from step 5"

losses "$WORK/straight/metrics.jsonl" >"$WORK/a"
losses "$WORK/resumed/metrics.jsonl" >"$WORK/b"
[ "$(wc -l <"$WORK/a")" -eq 12 ] || fail "straight run logged $(wc -l <"$WORK/a") steps, expected 12"
diff "$WORK/a" "$WORK/b" >&2 || fail "loss trajectories differ"
for f in model.safetensors optimizer.safetensors; do
  cmp "$WORK/straight/checkpoints/step_00000012/$f" "$WORK/resumed/checkpoints/step_00000012/$f" \
    || fail "$f differs after resuming"
done
rm -rf "$WORK"
echo "ok: 12 straight steps equal 5 + resume + 7, bit for bit"
