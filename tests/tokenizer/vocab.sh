# The run's vocabulary through the CLI: mismatches between model.vocab_size,
# data.tokenizer and the tokenizer shards were made with are refused before
# any step, with both values named; a run on tokenizer-made shards stores the
# tokenizer in its checkpoints (covered by their checksums) and samples with
# it; a model of more than 256 tokens without a tokenizer is refused, not
# printed as bytes. Uses the fixture tokenizers (made by Hugging Face
# tokenizers, see make_fixtures.py) on the project's own sources.
# Usage: vocab.sh TESSEL SRC TMP
set -eu
TESSEL=$1
SRC=$2
WORK=$3/vocab.$$
cd "$SRC"
rm -rf "$WORK"
mkdir -p "$WORK"
GPT2=tests/tokenizer/fixtures/gpt2_1024.json
LLAMA=tests/tokenizer/fixtures/llama3_512.json
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# expect_refused RC NEEDLE... -- COMMAND...: exit RC, every NEEDLE in stderr, no step taken
expect_refused() {
  local rc=$1 needles=()
  shift
  while [ "$1" != "--" ]; do needles+=("$1"); shift; done
  shift
  set +e
  "$@" >"$WORK/out" 2>"$WORK/err"
  local got=$?
  set -e
  [ $got -eq "$rc" ] || fail "$* exited $got, expected $rc: $(cat "$WORK/err")"
  for n in "${needles[@]}"; do grep -qF -- "$n" "$WORK/err" || fail "$*: no '$n' in: $(cat "$WORK/err")"; done
  ! grep -q "^step" "$WORK/out" "$WORK/err" || fail "$* took a step before refusing"
}
hash_of() { "$TESSEL" tokenizer info "$1" | sed -n 's/^hash //p'; }

cat > "$WORK/base.yaml" <<YAML
model: {layers: 1, heads: 2, channels: 32, seq_len: 16, vocab_size: 1024}
train: {steps: 2, batch_size: 4, seed: 3, sample_tokens: 0}
device: {threads: 1}
checkpoint: {keep: 0}
log: {every: 1, progress: never}
YAML
"$TESSEL" data prepare "core/config/*.c" -o "$WORK/gpt2" --tokenizer $GPT2 >/dev/null || fail "prepare with a tokenizer"
"$TESSEL" data prepare "core/config/*.c" -o "$WORK/bytes" >/dev/null || fail "byte-level prepare"
run() { # run NAME DATA_DIR [--set ...]
  local name=$1 dir=$2
  shift 2
  "$TESSEL" run "$WORK/base.yaml" --set log.dir="$WORK/$name" --set "data.train=$dir/train_*.bin" \
    --set "data.val=$dir/val_*.bin" "$@"
}

# `tessel check` finds what the run would refuse, from the files already there
check() { # check DATA_DIR [--set ...]
  local dir=$1
  shift
  "$TESSEL" check "$WORK/base.yaml" --quiet --set "data.train=$dir/train_*.bin" --set "data.val=$dir/val_*.bin" "$@"
}
expect_refused 2 "model.vocab_size: 512" "$WORK/gpt2 were made with" -- check "$WORK/gpt2" --set model.vocab_size=512
expect_refused 2 "data.tokenizer" "$(hash_of $LLAMA)" -- check "$WORK/gpt2" --set model.vocab_size=512 --set data.tokenizer=$LLAMA
# a disagreement between the shards is said at the key that names them
expect_refused 2 "--set=data.val=$WORK/bytes/val_*.bin:1:16: data.val: the shards in $WORK/bytes are byte-level" -- \
  check "$WORK/gpt2" --set "data.val=$WORK/bytes/val_*.bin"
expect_refused 2 "data.train: data '$WORK/bytes/train_*.bin'" "is >= model.vocab_size = 100" -- check "$WORK/bytes" --set model.vocab_size=100
expect_refused 2 "train.sample_tokens: 5" "no tokenizer" -- check "$WORK/bytes" --set train.sample_tokens=5
check "$WORK/gpt2" || fail "check refused shards that agree with the model"

# model.vocab_size against data.tokenizer, before any text is prepared
cat > "$WORK/text.yaml" <<YAML
base: base.yaml
data: {text: ["core/config/*.c"], dir: $WORK/text, tokenizer: $SRC/$GPT2}
YAML
expect_refused 2 "model.vocab_size: 256" "has 1024 tokens" -- run text "$WORK/gpt2" --set model.vocab_size=256 --set data.tokenizer=$GPT2
expect_refused 2 "model.vocab_size: 256" "$GPT2 has 1024 tokens" -- "$TESSEL" run "$WORK/text.yaml" --set model.vocab_size=256 --set log.dir="$WORK/t"
# (the first run's log.dir is $WORK/text too: the run directory exists, its shards must not)
ls "$WORK"/text/train_*.bin >/dev/null 2>&1 && fail "the text was prepared before the vocabulary was checked"
# against the vocabulary recorded with the shards
expect_refused 2 "model.vocab_size: 512" "$WORK/gpt2 were made with" "has 1024 tokens" -- run v512 "$WORK/gpt2" --set model.vocab_size=512
# data.tokenizer against the tokenizer of the shards: both hashes named
expect_refused 2 "data.tokenizer" "$(hash_of $GPT2)" "$(hash_of $LLAMA)" -- run other "$WORK/gpt2" --set model.vocab_size=512 --set data.tokenizer=$LLAMA
expect_refused 2 "are byte-level (vocabulary 256)" "$GPT2" -- run bytes_tok "$WORK/bytes" --set data.tokenizer=$GPT2
# byte-level training shards beside tokenizer-made validation shards, in
# either order of checking (the byte-level ones, met first, once trained
# under the tokenizer adopted from the others)
expect_refused 2 "$WORK/bytes are byte-level (vocabulary 256)" "$WORK/gpt2/tokenizer.json" -- \
  run mixed "$WORK/bytes" --set "data.val=$WORK/gpt2/val_*.bin"
expect_refused 2 "$WORK/bytes are byte-level (vocabulary 256)" "$WORK/gpt2/tokenizer.json" -- \
  run mixed2 "$WORK/gpt2" --set "data.val=$WORK/bytes/val_*.bin"
# byte-level data in a larger vocabulary trains, but cannot be turned into text
expect_refused 2 "train.sample_tokens: 5" "no tokenizer" -- run bytes_sample "$WORK/bytes" --set train.sample_tokens=5
run bytes1024 "$WORK/bytes" >/dev/null 2>&1 || fail "byte-level data under vocab_size 1024 did not train"
run b256 "$WORK/bytes" --set model.vocab_size=256 >/dev/null 2>&1 || fail "byte-level data under vocab_size 256 did not train"
expect_refused 2 "vocabulary of 1024 tokens and no tokenizer" -- "$TESSEL" sample "$WORK/bytes1024/checkpoints/step_00000002" --tokens 3
# resuming that byte-level run on tokenizer-made shards (it once went on
# silently, and its next checkpoint carried the tokenizer)
expect_refused 2 "was trained on shards that name no tokenizer" "made with the tokenizer $WORK/gpt2/tokenizer.json" -- \
  run bytes1024 "$WORK/gpt2" --set train.steps=3

# A run on tokenizer-made shards adopts their tokenizer: checkpoint, sample, resume.
run ok "$WORK/gpt2" >/dev/null 2>&1 || fail "a run on tokenizer-made shards failed"
CK="$WORK/ok/checkpoints/step_00000002"
cmp -s "$CK/tokenizer.json" $GPT2 || fail "the checkpoint does not hold the shards' tokenizer"
grep -q '"tokenizer.json"' "$CK/trainer.json" || fail "trainer.json does not cover tokenizer.json"
grep -q "\"hash\":[[:space:]]*\"$(hash_of $GPT2)\"" "$CK/trainer.json" || fail "trainer.json lacks the tokenizer's hash"
a=$("$TESSEL" sample "$CK" --prompt "static<|endoftext|>" --tokens 12 --temperature 0)
b=$("$TESSEL" sample "$CK" --prompt "static<|endoftext|>" --tokens 12 --temperature 0)
[ "$a" = "$b" ] || fail "greedy sampling with a tokenizer is not deterministic"
# another tokenizer than the checkpoint's: used, as asked, with a warning
# (a smaller one fits the model's vocabulary as padding would)
"$TESSEL" sample "$CK" --tokenizer $LLAMA --tokens 3 >"$WORK/out" 2>"$WORK/err" || fail "sample --tokenizer: $(cat "$WORK/err")"
grep -qF "was trained with tokenizer $(hash_of $GPT2)" "$WORK/err" || fail "no warning of another tokenizer: $(cat "$WORK/err")"
grep -qF "sampling with $LLAMA ($(hash_of $LLAMA)) instead" "$WORK/err" || fail "the warning does not name it: $(cat "$WORK/err")"
expect_refused 2 "$LLAMA has 512 tokens" "vocabulary is 256" -- "$TESSEL" sample "$WORK/b256/checkpoints/step_00000002" --tokenizer $LLAMA
# a refusal writes nothing to standard output (the prompt came first once)
[ ! -s "$WORK/out" ] || fail "sample wrote $(wc -c <"$WORK/out") byte(s) to standard output before refusing"
# resuming under another tokenizer of the same size is refused, naming both
sed 's/"<|endoftext|>"/"<|end_of_text|>"/' $GPT2 >"$WORK/renamed.json"
"$TESSEL" data prepare "core/config/*.c" -o "$WORK/renamed" --tokenizer "$WORK/renamed.json" >/dev/null || fail "prepare renamed"
expect_refused 2 "was trained with tokenizer $(hash_of $GPT2)" "$(hash_of "$WORK/renamed.json")" \
  ":1:7: data: checkpoint" "resume with the one it was trained with" -- \
  "$TESSEL" run "$WORK/base.yaml" --set log.dir="$WORK/ok" --set "data.train=$WORK/renamed/train_*.bin" \
  --set train.steps=4
# a damaged stored tokenizer is caught by the checkpoint's checksums
printf ' ' >>"$CK/tokenizer.json"
expect_refused 1 "tokenizer.json is" -- "$TESSEL" sample "$CK" --tokens 3
# decode names an id past int64 as written (it once named LLONG_MAX), and a
# word that is not an id
expect_refused 2 "id 99999999999999999999 is outside the vocabulary of $GPT2 (1024 tokens)" -- \
  bash -c "echo 99999999999999999999 | '$TESSEL' tokenizer decode $GPT2"
expect_refused 2 "standard input: expected whole-number ids, got 'x3'" -- \
  bash -c "echo 1 x3 | '$TESSEL' tokenizer decode $GPT2"
# a NUL inside a word is shown, not taken for the end of the message ('1')
expect_refused 2 "standard input: expected whole-number ids, got '1?2'" -- \
  bash -c "printf '1\\0002' | '$TESSEL' tokenizer decode $GPT2"
rm -rf "$WORK"
echo "ok: vocabulary mismatches refused before training; checkpoints carry the tokenizer"
