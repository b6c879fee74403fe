# model.positions: the context a model is made for, kept apart from the
# seq_len a run trains at.
#
# (1) A GPT-2 of 32 positions (tests/fixtures/gpt2_tiny, made by
#     transformers) fine-tuned at seq_len 16 keeps all 32 rows of wpe: with
#     lr 0 nothing changes, so its export, run at seq_len 32, gives the very
#     losses the fixture itself gives. (Its checkpoints once kept 16 rows
#     and its export said n_positions 16: the rest of the pretrained table
#     was lost without a word.) The export declares 32 positions.
# (2) A Llama whose config.json says max_position_embeddings 131072 (Llama
#     3's) imports as seq_len 131072; `tessel sample` runs over the context
#     it reaches, not the whole seq_len (one token once took about two
#     minutes and 900 MB on this tiny model). The timeout is a hang guard
#     far above the fraction of a second it takes.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" positions
GPT2=tests/fixtures/gpt2_tiny
cat > "$WORK/ft.yaml" <<YAML
model: {layers: 2, heads: 4, channels: 64, vocab_size: 96, seq_len: 16, init_from: $SRC/$GPT2}
data: {text: ["core/config/*.c"], dir: $WORK/data, val_fraction: 0}
train: {steps: 2, batch_size: 2, seed: 5, sample_tokens: 0}
optimizer: {lr: 0, min_lr: 0}
device: {threads: 1}
log: {progress: never}
YAML
# byte-level text of ids below the fixture's 96: upper case, bytes 32-95
mkdir -p "$WORK/ascii"
LC_ALL=C tr 'a-z' 'A-Z' <core/config/parse.c | LC_ALL=C tr -cd '\n -_' >"$WORK/ascii/a.txt"
sed -i "s|\"core/config/\*.c\"|\"$WORK/ascii/a.txt\"|" "$WORK/ft.yaml"

"$TESSEL" run "$WORK/ft.yaml" --set log.dir="$WORK/ft" >"$WORK/ft.log" 2>&1 || { cat "$WORK/ft.log" >&2; fail "fine-tuning failed"; }
CK="$WORK/ft/checkpoints/step_00000002"
grep -q '"positions":[[:space:]]*32' "$CK/trainer.json" || fail "the checkpoint does not record 32 positions"
mkdir -p "$WORK/hf"
"$TESSEL" export "$CK" -o "$WORK/hf/model.safetensors" >/dev/null || fail "export failed"
grep -q '"n_positions":[[:space:]]*32' "$WORK/hf/config.json" || fail "the export does not declare 32 positions"

full() { # NAME WEIGHTS: 2 steps at seq_len 32 from WEIGHTS; losses in $WORK/NAME.losses
  "$TESSEL" run "$WORK/ft.yaml" --set model.seq_len=32 --set model.init_from="$2" --set log.dir="$WORK/$1" \
    >"$WORK/$1.log" 2>&1 || { cat "$WORK/$1.log" >&2; fail "$1: the run at seq_len 32 failed"; }
  losses "$WORK/$1/metrics.jsonl" >"$WORK/$1.losses"
}
full fixture "$SRC/$GPT2"
full exported "$WORK/hf"
[ -s "$WORK/fixture.losses" ] && cmp -s "$WORK/fixture.losses" "$WORK/exported.losses" ||
  fail "the exported model differs from the fixture at positions 16-31: $(tr '\n' ' ' <"$WORK/fixture.losses") vs $(tr '\n' ' ' <"$WORK/exported.losses")"
# init_from takes a checkpoint.dir or its latest file for the checkpoint
# latest names, as sample and export do (it refused both as "neither a
# checkpoint nor a Hugging Face directory")
full step "$CK"
for how in dir latest; do
  from="$WORK/ft/checkpoints"
  [ $how = latest ] && from="$from/latest"
  full "$how" "$from"
  cmp -s "$WORK/step.losses" "$WORK/$how.losses" || fail "init_from the checkpoint.dir ($how) differs from init_from $CK"
done
# sampling sees the context the model is made for, 32 tokens, not the 16 it
# was fine-tuned at (as transformers' generate does): the fine-tuned
# checkpoint (seq_len 16) samples what the fixture imported as it is
# (seq_len 32) samples, past token 16 too
"$TESSEL" import "$SRC/$GPT2" -o "$WORK/fixture-ck" >/dev/null || fail "import of the fixture failed"
"$TESSEL" sample "$CK" --prompt "HELLO WORLD, THIS IS A TEST OF" --tokens 28 --temperature 0 >"$WORK/tuned.txt" || fail "sampling $CK failed"
"$TESSEL" sample "$WORK/fixture-ck" --prompt "HELLO WORLD, THIS IS A TEST OF" --tokens 28 --temperature 0 >"$WORK/fixture.txt" ||
  fail "sampling the imported fixture failed"
cmp -s "$WORK/tuned.txt" "$WORK/fixture.txt" ||
  fail "the checkpoint fine-tuned at seq_len 16 samples otherwise than the model: $(cat -v "$WORK/tuned.txt") vs $(cat -v "$WORK/fixture.txt")"
# resuming it from a config without init_from (positions then default to
# seq_len, 16) is refused at model.positions, not at the seq_len that agrees
sed "s|, init_from: [^}]*}|}|" "$WORK/ft.yaml" >"$WORK/noinit.yaml"
set +e
"$TESSEL" run "$WORK/noinit.yaml" --set log.dir="$WORK/ft" --set train.steps=3 >/dev/null 2>"$WORK/noinit.err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "model.positions: is 16, but checkpoint .* holds a model made for 32 positions" "$WORK/noinit.err" ||
  fail "resuming without init_from: exit $rc, $(cat "$WORK/noinit.err")"
# a GPT-2 cannot be made for more positions than its weights have
set +e
"$TESSEL" check "$WORK/ft.yaml" --quiet --set model.positions=64 >/dev/null 2>"$WORK/err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "model.positions: is 64, but the weights .* have position embeddings (wpe) for 32 tokens only" \
  "$WORK/err" || fail "positions past the weights' rows: exit $rc, $(cat "$WORK/err")"

# (2) sampling an imported Llama of 131072 positions
mkdir -p "$WORK/long"
cp tests/fixtures/llama_tiny/model.safetensors "$WORK/long/"
sed 's/"max_position_embeddings": 64/"max_position_embeddings": 131072/' tests/fixtures/llama_tiny/config.json \
  >"$WORK/long/config.json"
"$TESSEL" import "$WORK/long" -o "$WORK/long-ck" >/dev/null || fail "import of the long Llama failed"
timeout 120 "$TESSEL" sample "$WORK/long-ck" --prompt "AB" --tokens 4 --temperature 0 >"$WORK/long.txt" ||
  fail "sampling the Llama of 131072 positions failed or hung (exit $?)"
[ "$(wc -c <"$WORK/long.txt")" -ge 4 ] || fail "sampling wrote $(wc -c <"$WORK/long.txt") bytes"
rm -rf "$WORK"
echo "ok: fine-tuning at a shorter context keeps the position table; sampling runs over the context it reaches"
