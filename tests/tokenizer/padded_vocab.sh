# A vocabulary padded past its tokenizer: model.vocab_size larger than the
# tokenizer's, as llm.c pads GPT-2's 50257 tokens to 50304 rows and Qwen2
# has 151936 rows for 151665 tokens. It trains on the tokenizer's shards,
# keeps the tokenizer through its checkpoints, export and import, and its
# extra rows are never sampled: made the largest logits by far (rows of
# ±100 times real rows, so one of each pair wins at every position), they
# must leave greedy text as it was. A model smaller than its tokenizer is
# still refused. Uses the fixture tokenizer gpt2_1024.json (made by Hugging
# Face tokenizers, see make_fixtures.py) on the project's own sources.
# Usage: padded_vocab.sh TESSEL SRC TMP
. "$(dirname "$0")/../train/common.sh" "$1" "$2" "$3" padded_vocab
GPT2=tests/tokenizer/fixtures/gpt2_1024.json
# common.sh's tiny model, its text prepared with the tokenizer
run() { # run NAME [--set ...]
  local name=$1
  shift
  "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/$name" --set data.tokenizer=$GPT2 --set train.steps=4 \
    --set train.sample_tokens=8 "$@"
}

run pad --set model.vocab_size=1088 >"$WORK/pad.log" 2>&1 || fail "a padded vocabulary did not train: $(tail -5 "$WORK/pad.log")"
grep -q "pads the tokenizer's vocabulary by 64 rows" "$WORK/pad.log" || fail "the run does not say it pads: $(cat "$WORK/pad.log")"
CK="$WORK/pad/checkpoints/step_00000004"
cmp -s "$CK/tokenizer.json" $GPT2 || fail "the padded checkpoint does not hold its tokenizer"
a=$("$TESSEL" sample "$CK" --prompt "static" --tokens 24 --temperature 0) || fail "sampling the padded model failed"

"$TESSEL" export "$CK" -o "$WORK/hf/model.safetensors" >/dev/null || fail "export"
cmp -s "$WORK/hf/tokenizer.json" $GPT2 || fail "the export does not hold the tokenizer"
grep -Eq '"vocab_size":[[:space:]]*1088' "$WORK/hf/config.json" || fail "config.json lacks vocab_size 1088: $(cat "$WORK/hf/config.json")"
# rows 1024 + 2j and 1025 + 2j of the tied embedding become +100 and -100
# times row j (j < 32); the file keeps its size and layout
perl -I"$SRC/tests/train" -MSafetensors -e '
  my ($f, $start, $shape) = Safetensors::open_f32($ARGV[0], "transformer.wte.weight");
  my ($rows, $cols) = @$shape;
  $rows == 1088 or die "$rows rows, not 1088";
  seek($f, $start, 0);
  read($f, my $data, $rows * $cols * 4) == $rows * $cols * 4 or die "short tensor";
  my @x = unpack("f<*", $data);
  for my $j (0 .. 31) {
    for my $pair ([100, 1024 + 2 * $j], [-100, 1025 + 2 * $j]) {
      my ($sign, $r) = @$pair;
      @x[$r * $cols .. ($r + 1) * $cols - 1] = map { $sign * $_ } @x[$j * $cols .. ($j + 1) * $cols - 1];
    }
  }
  seek($f, $start, 0);
  print $f pack("f<*", @x);
  close($f) or die "$ARGV[0]: $!";
' "$WORK/hf/model.safetensors" || fail "could not rewrite the padded rows"
"$TESSEL" import "$WORK/hf" -o "$WORK/imported" >"$WORK/import.log" 2>&1 || fail "import: $(cat "$WORK/import.log")"
grep -q "gets no tokenizer" "$WORK/import.log" && fail "the import dropped the tokenizer: $(cat "$WORK/import.log")"
cmp -s "$WORK/imported/tokenizer.json" $GPT2 || fail "the imported checkpoint does not hold the tokenizer"
b=$("$TESSEL" sample "$WORK/imported" --prompt "static" --tokens 24 --temperature 0) || fail "sampling the import failed"
[ "$a" = "$b" ] || fail "padded rows changed greedy text: '$a' against '$b'"
"$TESSEL" sample "$WORK/imported" --prompt "static" --tokens 200 --temperature 1 --seed 5 >/dev/null ||
  fail "sampling the import at temperature 1 failed"

# smaller than the tokenizer: refused, saying what to set
set +e
run small --set model.vocab_size=1000 >"$WORK/small.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "model.vocab_size 1000 under a 1024-token tokenizer exited $rc: $(cat "$WORK/small.log")"
grep -q "model.vocab_size: 1000, but .* has 1024 tokens; set model.vocab_size: 1024 (or more" "$WORK/small.log" ||
  fail "the refusal does not say what to set: $(cat "$WORK/small.log")"
rm -rf "$WORK"
echo "padded vocabulary: trains, keeps its tokenizer through export and import, never samples its padding"
