# Resuming under settings that change what a step is or what it draws
# from. The tokens of metrics.jsonl count on from the checkpoint's (they
# were step × the new batch, as if every earlier step had had it), and
# checkpoints record them. Another train.batch_size, data.text,
# data.val_fraction, data.train or data.val is warned about once each,
# naming both values, as another train.seed is, and so are shards at the
# same path that hold other tokens than the checkpoint's run read; so is another optimizer
# (β, ε, weight decay, clipping) or learning rate at the next step (a
# changed schedule, or train.steps over which it decays); a resume that
# changes none of them (another micro_batch_size included) warns of nothing.
# `tessel check` gives the same warnings before the run.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" resume_changed

# the "tokens" of step N's metrics line
tokens_at() { sed -n "s/^{\"step\":$2,.*\"tokens\":\([0-9]*\),.*/\1/p" "$1"; }

set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.stop_after=5 >/dev/null 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || fail "the first part exited with status $rc, expected 75"
cp -r "$WORK/run" "$WORK/same"
# tessel check says what the resume would warn of (it said nothing)
"$TESSEL" check "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.batch_size=8 >/dev/null 2>"$WORK/check.log" ||
  fail "tessel check of the resume failed: $(cat "$WORK/check.log")"
[ "$(grep -c "warning: train.batch_size is 8, but checkpoint .*step_00000005 was trained with 4 sequences per step" \
  "$WORK/check.log")" -eq 1 ] || fail "tessel check does not warn of another batch size once: $(cat "$WORK/check.log")"
# 5 steps of 4 sequences of 16 tokens, then 3 of 8
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=8 --set train.batch_size=8 \
  >"$WORK/bigger.log" 2>&1 || fail "resuming with another batch size failed: $(cat "$WORK/bigger.log")"
[ "$(tokens_at "$WORK/run/metrics.jsonl" 5)" = 320 ] || fail "step 5 logged $(tokens_at "$WORK/run/metrics.jsonl" 5) tokens, expected 320"
[ "$(tokens_at "$WORK/run/metrics.jsonl" 6)" = 448 ] || fail "step 6 logged $(tokens_at "$WORK/run/metrics.jsonl" 6) tokens, expected 320 + 128"
[ "$(tokens_at "$WORK/run/metrics.jsonl" 8)" = 704 ] || fail "step 8 logged $(tokens_at "$WORK/run/metrics.jsonl" 8) tokens, expected 320 + 3 × 128"
grep -qE '"tokens":[[:space:]]*704,' "$WORK/run/checkpoints/step_00000008/trainer.json" ||
  fail "the step-8 checkpoint does not record 704 tokens: $(cat "$WORK/run/checkpoints/step_00000008/trainer.json")"
[ "$(grep -c "warning: train.batch_size is 8, but checkpoint .*step_00000005 was trained with 4 sequences per step" \
  "$WORK/bigger.log")" -eq 1 ] || fail "another batch size is not warned about once: $(cat "$WORK/bigger.log")"
grep -q "count on from the 320 trained so far" "$WORK/bigger.log" || fail "the warning does not say the tokens so far"
# and on from there again, under the batch it was saved with: no warning
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.steps=9 --set train.batch_size=8 \
  >"$WORK/again.log" 2>&1 || fail "resuming again failed: $(cat "$WORK/again.log")"
[ "$(tokens_at "$WORK/run/metrics.jsonl" 9)" = 832 ] || fail "step 9 logged $(tokens_at "$WORK/run/metrics.jsonl" 9) tokens, expected 832"
! grep -q "warning: train.batch_size" "$WORK/again.log" || fail "a resume with the saved batch size warned about it"

# the data: each changed key named once, with both values
cp -r "$WORK/same" "$WORK/other"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/other" --set train.steps=6 --set 'data.text=["core/data/*.c"]' \
  --set data.val_fraction=0.2 >"$WORK/data.log" 2>&1 || fail "resuming on other data failed: $(cat "$WORK/data.log")"
for want in 'warning: data.text is ["core/data/*.c"], but checkpoint '"$WORK"'/other/checkpoints/step_00000005 was trained with data.text ["core/config/*.c"]' \
  'warning: data.val_fraction is 0.2, but checkpoint '"$WORK"'/other/checkpoints/step_00000005 was trained with data.val_fraction 0.1'; do
  [ "$(grep -cF -- "$want" "$WORK/data.log")" -eq 1 ] || fail "not warned once: '$want' in: $(cat "$WORK/data.log")"
done
# shards given as data.train, then others
mkdir -p "$WORK/shards"
cp "$WORK/data/train_000000.bin" "$WORK/shards/a.bin"
cp "$WORK/data/train_000000.bin" "$WORK/shards/b.bin.other"
cat >"$WORK/shards.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}
data: {train: "$WORK/shards/*.bin"}
train: {steps: 3, batch_size: 4, seed: 7, sample_tokens: 0}
device: {threads: 1}
checkpoint: {keep: 0}
log: {dir: $WORK/sh, every: 1, progress: never}
YAML
set +e
"$TESSEL" run "$WORK/shards.yaml" --set train.stop_after=2 >/dev/null 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || fail "the run on shards exited with status $rc, expected 75"
cp -r "$WORK/sh" "$WORK/sh_inplace"
"$TESSEL" run "$WORK/shards.yaml" --set "data.train=$WORK/shards/*.bin.other" >"$WORK/train.log" 2>&1 ||
  fail "resuming on other shards failed: $(cat "$WORK/train.log")"
[ "$(grep -cF "warning: data.train is \"$WORK/shards/*.bin.other\", but checkpoint $WORK/sh/checkpoints/step_00000002 was trained with data.train \"$WORK/shards/*.bin\"" \
  "$WORK/train.log")" -eq 1 ] || fail "other shards are not warned about once: $(cat "$WORK/train.log")"
# the same path, other tokens in its file (rewritten since the checkpoint)
cp "$WORK/data/val_000000.bin" "$WORK/shards/a.bin"
"$TESSEL" run "$WORK/shards.yaml" --set log.dir="$WORK/sh_inplace" >"$WORK/inplace.log" 2>&1 ||
  fail "resuming on rewritten shards failed: $(cat "$WORK/inplace.log")"
[ "$(grep -cF "warning: data.train holds other tokens than checkpoint $WORK/sh_inplace/checkpoints/step_00000002 was trained on (its files changed since)" \
  "$WORK/inplace.log")" -eq 1 ] || fail "rewritten shards are not warned about once: $(cat "$WORK/inplace.log")"

# the optimizer: another β2, and a cosine schedule stretched over 14 steps
cp -r "$WORK/same" "$WORK/optim"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/optim" --set train.steps=14 --set optimizer.beta2=0.99 \
  >"$WORK/optim.log" 2>&1 || fail "resuming with another optimizer failed: $(cat "$WORK/optim.log")"
[ "$(grep -c "warning: checkpoint .*optim/checkpoints/step_00000005 was trained with another optimizer or schedule: \
optimizer.beta2 0.99 (was 0.95), train.steps 14 (was 12): step 6's learning rate is [0-9.e-]*, where the run's own \
schedule gives" \
  "$WORK/optim.log")" -eq 1 ] || fail "another optimizer is not warned about once: $(cat "$WORK/optim.log")"
lr6=$(sed -n 's/^{"step":6,.*"lr":\([^,]*\),.*/\1/p' "$WORK/optim/metrics.jsonl")
grep -q "step 6's learning rate is $(printf '%.6g' "$lr6")," "$WORK/optim.log" ||
  fail "the warning does not name step 6's learning rate $lr6: $(cat "$WORK/optim.log")"

# only the warm-up: it is named
cp -r "$WORK/same" "$WORK/warm"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/warm" --set optimizer.warmup_steps=8 >"$WORK/warm.log" 2>&1 ||
  fail "resuming with another warm-up failed: $(cat "$WORK/warm.log")"
[ "$(grep -c "another optimizer or schedule: optimizer.warmup_steps 8 (was 3): step 6's" "$WORK/warm.log")" -eq 1 ] ||
  fail "another warm-up is not named once: $(cat "$WORK/warm.log")"

# nothing that changes the batches: nothing said (gradient accumulation
# splits the same batch_size sequences)
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/same" --set train.micro_batch_size=2 >"$WORK/same.log" 2>&1 ||
  fail "a resume with accumulation failed: $(cat "$WORK/same.log")"
! grep -q "warning: \(train\.\|data\.\|checkpoint .* another optimizer\)" "$WORK/same.log" ||
  fail "an unchanged resume warned: $(cat "$WORK/same.log")"
[ "$(tokens_at "$WORK/same/metrics.jsonl" 12)" = 768 ] || fail "step 12 logged $(tokens_at "$WORK/same/metrics.jsonl" 12) tokens, expected 768"
rm -rf "$WORK"
echo "ok: tokens count on from the checkpoint under another batch size; changed batch, data and optimizer warned" \
  "about once each"
