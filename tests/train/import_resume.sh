#!/usr/bin/env bash
# `tessel export` then `tessel import`, and runs that start from the result.
#
# (1) A Llama (grouped-query attention) and a GPT-2 trained a few steps,
#     exported to a Hugging Face directory and imported back: the imported
#     checkpoint's model.safetensors is byte-for-byte the original's (same
#     names, shapes, order, fp32 values).
# (2) The re-imported checkpoint trains on exactly as the original weights
#     do: runs started with model.init_from: the original step_3, with
#     model.init_from: the re-imported directory, and with --resume of the
#     re-imported directory (step 0: the import writes no optimizer moments,
#     and the resume starts them at zero) print the same losses, character
#     for character, and start below a fresh run's first loss; the resume
#     under gemini (the moments zeroed through the strategy's own storage)
#     gives them within the equivalence tolerance (1e-5, tests/equiv/equiv.sh).
# (3) import refuses an existing destination and a directory that is no
#     Hugging Face model, leaving nothing behind.
# (4) a Hugging Face model's bos and eos ids survive import then export
#     without a tokenizer.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" import_resume

llama=(--set model.arch=llama --set model.heads=4 --set model.kv_heads=2 --set checkpoint.every=3)
export_import() { # CKPT NAME: export CKPT to $WORK/NAME-hf, import it as $WORK/NAME
  mkdir -p "$WORK/$2-hf"
  "$TESSEL" export "$1" -o "$WORK/$2-hf/model.safetensors" >/dev/null || fail "$2: export failed"
  "$TESSEL" import "$WORK/$2-hf" -o "$WORK/$2" >/dev/null || fail "$2: import failed"
  cmp -s "$1/model.safetensors" "$WORK/$2/model.safetensors" \
    || fail "$2: the imported model.safetensors differs from the exported checkpoint's"
}

"$TESSEL" run "$WORK/tiny.yaml" "${llama[@]}" --set train.steps=6 --set log.dir="$WORK/llama" >/dev/null 2>&1 \
  || fail "training the Llama failed"
"$TESSEL" run "$WORK/tiny.yaml" --set train.steps=3 --set log.dir="$WORK/gpt2" >/dev/null 2>&1 \
  || fail "training the GPT-2 failed"
A="$WORK/llama/checkpoints/step_00000003"
export_import "$A" llama-back
export_import "$WORK/gpt2/checkpoints/step_00000003" gpt2-back
grep -q '"num_key_value_heads":[[:space:]]*2' "$WORK/llama-back-hf/config.json" || fail "config.json lacks the kv heads"
# -o with a trailing slash, as shell completion writes it (its temporary
# once made the directory itself, and the rename onto it failed)
"$TESSEL" import "$WORK/gpt2-back-hf" -o "$WORK/slash/" >/dev/null || fail "import -o DIR/ failed"
cmp -s "$WORK/gpt2-back/model.safetensors" "$WORK/slash/model.safetensors" || fail "import -o DIR/ wrote another model"
[ ! -e "$WORK/llama-back/optimizer.safetensors" ] && ! grep -q optimizer "$WORK/llama-back/trainer.json" ||
  fail "the import wrote optimizer moments, which are zeros at step 0"
echo "ok: export then import gives back model.safetensors byte for byte (Llama and GPT-2), without moments"

# (2) three ways to start from the step-3 weights, 4 steps each
go() { # NAME ARGS...: a fresh 4-step run; its losses in $WORK/NAME.losses
  local name=$1
  shift
  "$TESSEL" run "$WORK/tiny.yaml" "${llama[@]}" --set train.steps=4 --set checkpoint.resume=never \
    --set log.dir="$WORK/$name" "$@" >"$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log" >&2; fail "$name failed"; }
  losses "$WORK/$name/metrics.jsonl" >"$WORK/$name.losses"
  [ "$(wc -l <"$WORK/$name.losses")" -eq 4 ] || fail "$name: expected 4 losses"
}
go original --set model.init_from="$A"
go reimported --set model.init_from="$WORK/llama-back"
go resumed --set checkpoint.resume=auto --resume "$WORK/llama-back"
# the import is of step 0, never trained: its seed (0) is no seed to go on from
! grep -q "warning: train\.\(seed\|batch_size\)" "$WORK/resumed.log" ||
  fail "resuming the import warned of a seed or batch: $(cat "$WORK/resumed.log")"
go resumed_gemini --set checkpoint.resume=auto --resume "$WORK/llama-back" --set plugin.name=gemini \
  --set plugin.placement=static
go fresh
grep -q "starting from the weights in $WORK/llama-back" "$WORK/reimported.log" || fail "the run does not say where it starts from"
cmp -s "$WORK/original.losses" "$WORK/reimported.losses" || { paste "$WORK/original.losses" "$WORK/reimported.losses" >&2
  fail "starting from the re-imported weights trains differently"; }
cmp -s "$WORK/original.losses" "$WORK/resumed.losses" || { paste "$WORK/original.losses" "$WORK/resumed.losses" >&2
  fail "resuming the imported checkpoint trains differently"; }
paste "$WORK/original.losses" "$WORK/resumed_gemini.losses" |
  awk '{ d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > 1e-5) bad = 1 } END { exit bad }' ||
  { paste "$WORK/original.losses" "$WORK/resumed_gemini.losses" >&2; fail "resuming the import under gemini trains differently"; }
awk -v a="$(head -1 "$WORK/original.losses")" -v b="$(head -1 "$WORK/fresh.losses")" 'BEGIN { exit !(a < b - 0.1) }' \
  || fail "the first loss from trained weights ($(head -1 "$WORK/original.losses")) is not below a fresh start's ($(head -1 "$WORK/fresh.losses"))"
echo "ok: init_from the original, init_from the re-imported and --resume of it train identically: $(tr '\n' ' ' <"$WORK/original.losses")"

# (4) a Hugging Face model's beginning- and end-of-text ids come back in its
# export though it has no tokenizer to keep (they were exported as null),
# a list of end ids as the list; ids its vocabulary lacks are said not kept
hf_ids() { # HF_DIR NAME: import HF_DIR as $WORK/NAME, export it to $WORK/NAME-hf
  "$TESSEL" import "$1" -o "$WORK/$2" >"$WORK/$2.log" 2>&1 || fail "$2: import failed: $(cat "$WORK/$2.log")"
  mkdir -p "$WORK/$2-hf"
  "$TESSEL" export "$WORK/$2" -o "$WORK/$2-hf/model.safetensors" >/dev/null || fail "$2: export failed"
}
hf_ids tests/fixtures/llama_tiny llama-ids
flat() { tr -d ' \t\n' <"$1"; }
flat "$WORK/llama-ids-hf/config.json" | grep -qE '"bos_token_id":1[,}]' &&
  flat "$WORK/llama-ids-hf/config.json" | grep -qE '"eos_token_id":2[,}]' ||
  fail "the export lacks the imported model's bos 1 and eos 2: $(cat "$WORK/llama-ids-hf/config.json")"
mkdir -p "$WORK/llama-list"
cp tests/fixtures/llama_tiny/model.safetensors "$WORK/llama-list/"
sed 's/"eos_token_id": 2,/"eos_token_id": [2, 5],/' tests/fixtures/llama_tiny/config.json >"$WORK/llama-list/config.json"
hf_ids "$WORK/llama-list" llama-list-ids
flat "$WORK/llama-list-ids-hf/config.json" | grep -qF '"eos_token_id":[2,5]' ||
  fail "the export lacks the imported model's eos list [2, 5]: $(cat "$WORK/llama-list-ids-hf/config.json")"
hf_ids tests/fixtures/gpt2_tiny gpt2-ids
grep -qF "bos_token_id 50256 is not an id of the model's 96 tokens" "$WORK/gpt2-ids.log" ||
  fail "an id outside the vocabulary is dropped without a word: $(cat "$WORK/gpt2-ids.log")"
# and in the export of a run trained from the import, resumed from it or
# started from its weights: every checkpoint of the run keeps them
mkdir -p "$WORK/trained-ids"
cp "$WORK/llama-back-hf/model.safetensors" "$WORK/trained-ids/"
sed 's/"bos_token_id":[^,]*,/"bos_token_id": 3,/; s/"eos_token_id":[^,}]*/"eos_token_id": [4, 5]/' \
  "$WORK/llama-back-hf/config.json" >"$WORK/trained-ids/config.json"
"$TESSEL" import "$WORK/trained-ids" -o "$WORK/trained-ids-ckpt" >/dev/null 2>&1 || fail "importing trained-ids failed"
for how in "--resume $WORK/trained-ids-ckpt" "--set model.init_from=$WORK/trained-ids-ckpt"; do
  rm -rf "$WORK/tuned" "$WORK/tuned-hf"
  # shellcheck disable=SC2086 # $how is an option and its value
  "$TESSEL" run "$WORK/tiny.yaml" "${llama[@]}" --set train.steps=2 --set log.dir="$WORK/tuned" $how \
    >"$WORK/tuned.log" 2>&1 || fail "training from the import ($how) failed: $(cat "$WORK/tuned.log")"
  mkdir -p "$WORK/tuned-hf"
  "$TESSEL" export "$WORK/tuned/checkpoints/step_00000002" -o "$WORK/tuned-hf/model.safetensors" >/dev/null ||
    fail "exporting the run trained from the import ($how) failed"
  flat "$WORK/tuned-hf/config.json" | grep -qE '"bos_token_id":3[,}]' &&
    flat "$WORK/tuned-hf/config.json" | grep -qF '"eos_token_id":[4,5]' ||
    fail "a run trained from the import ($how) lost its bos 3 and eos [4, 5]: $(cat "$WORK/tuned-hf/config.json")"
done
echo "ok: an imported model's token ids come back in its export, and in that of a run trained from it"

# (3) refusals
set +e
"$TESSEL" import "$WORK/llama-back-hf" -o "$WORK/llama-back" >/dev/null 2>"$WORK/err"
rc=$?
"$TESSEL" import "$A" -o "$WORK/nothing" >/dev/null 2>"$WORK/err2"
rc2=$?
set -e
[ $rc -eq 1 ] && grep -q "already exists" "$WORK/err" || fail "importing over a checkpoint: exit $rc, $(cat "$WORK/err")"
[ $rc2 -eq 1 ] && grep -q "already a tessel checkpoint" "$WORK/err2" || fail "importing a checkpoint: exit $rc2, $(cat "$WORK/err2")"
[ -e "$WORK/nothing" ] && fail "a failed import left its destination behind"
ls "$WORK" | grep -q '\.tmp-' && fail "a failed import left a temporary directory"
rm -rf "$WORK"
echo "ok: import refuses an existing destination and a tessel checkpoint"
