# N steps straight = k steps, stop, resume, N-k steps — bit for bit: the same
# loss text at every step and byte-identical final model and optimizer state.
# Resuming under a changed model section is refused at each key that differs,
# with both values and what to do (it once described both models, in words
# that left out the keys which differed), by `tessel check` too. A damaged newest checkpoint is
# refused naming the newest intact one to go on from.
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
# another seed on resume is another batch stream: said, once (it was silent)
cp -r "$WORK/resumed" "$WORK/reseeded"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/reseeded" --set train.steps=13 --set train.seed=9 \
  >"$WORK/reseeded.log" 2>&1 || fail "resuming with another seed failed: $(cat "$WORK/reseeded.log")"
[ "$(grep -c "warning: train.seed is 9, but checkpoint .*step_00000012 was trained with seed 7" "$WORK/reseeded.log")" -eq 1 ] ||
  fail "resuming with another seed is not warned about once: $(cat "$WORK/reseeded.log")"
grep -q "warning: train.seed" "$WORK/second.log" && fail "a resume with the same seed warned about it"
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/resumed" --set train.steps=20 --set model.channels=16 \
  --set model.heads=4 >"$WORK/changed.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "resuming under another model exited $rc, expected 2: $(cat "$WORK/changed.log")"
for want in "--set=model.channels=16:1:22: model.channels: is 16, but checkpoint $WORK/resumed/checkpoints/step_00000012 holds 32" \
  "--set=model.heads=4:1:19: model.heads: is 4, but checkpoint" "checkpoint.resume: never"; do
  grep -qF -- "$want" "$WORK/changed.log" || fail "no '$want' in: $(cat "$WORK/changed.log")"
done
# ffn and kv_heads follow channels and heads: not mistakes of their own
! grep -qE "model.(ffn|kv_heads)" "$WORK/changed.log" || fail "derived keys reported: $(cat "$WORK/changed.log")"
# `tessel check` says so too (it passed, and the run then refused), and
# passes where the run would not resume
set +e
"$TESSEL" check "$WORK/tiny.yaml" --quiet --set log.dir="$WORK/resumed" --set model.channels=16 --set model.heads=4 \
  >/dev/null 2>"$WORK/check.log"
rc=$?
set -e
[ $rc -eq 2 ] && grep -qF -- "--set=model.channels=16:1:22: model.channels: is 16, but checkpoint" "$WORK/check.log" ||
  fail "check of a config whose run would not resume: exit $rc, $(cat "$WORK/check.log")"
"$TESSEL" check "$WORK/tiny.yaml" --quiet --set log.dir="$WORK/resumed" --set model.channels=16 --set model.heads=4 \
  --set checkpoint.resume=never 2>"$WORK/never.log" || fail "check with resume: never failed: $(cat "$WORK/never.log")"
# a damaged newest checkpoint: the refusal names the newest intact one
printf 'X' | dd of="$WORK/resumed/checkpoints/step_00000012/model.safetensors" bs=1 seek=300 conv=notrunc status=none
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/resumed" --set train.steps=14 >"$WORK/damaged.log" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || fail "resuming from a damaged checkpoint exited $rc, expected 1: $(cat "$WORK/damaged.log")"
grep -qF "The newest intact checkpoint before it is $WORK/resumed/checkpoints/step_00000005: go on from there with \`tessel run CONFIG --resume $WORK/resumed/checkpoints/step_00000005\`" \
  "$WORK/damaged.log" || fail "the refusal does not name step 5 to go on from: $(cat "$WORK/damaged.log")"
# and `tessel check` says what the run would
set +e
"$TESSEL" check "$WORK/tiny.yaml" --quiet --set log.dir="$WORK/resumed" --set train.steps=14 >/dev/null 2>"$WORK/check_damaged.log"
rc=$?
set -e
[ $rc -eq 1 ] && grep -qF "The newest intact checkpoint before it is $WORK/resumed/checkpoints/step_00000005" \
  "$WORK/check_damaged.log" || fail "check of a run that would resume from a damaged checkpoint: exit $rc, $(cat "$WORK/check_damaged.log")"
# the same damaged weights under model.init_from: damage, exit 1 (it was
# told as a mistake in the config, exit 2)
set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/from_damaged" \
  --set model.init_from="$WORK/resumed/checkpoints/step_00000012" >"$WORK/init_damaged.log" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] && grep -qF "model.init_from: cannot start from these weights: " "$WORK/init_damaged.log" &&
  grep -qF "step_00000012 is corrupt: model.safetensors has CRC-32" "$WORK/init_damaged.log" ||
  fail "model.init_from of damaged weights: exit $rc, $(cat "$WORK/init_damaged.log")"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/resumed" --set train.steps=14 \
  --resume "$WORK/resumed/checkpoints/step_00000005" >/dev/null 2>&1 || fail "--resume with the intact checkpoint failed"
rm -rf "$WORK"
echo "ok: 12 straight steps equal 5 + resume + 7, bit for bit"
