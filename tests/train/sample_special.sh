# `tessel sample --skip-special` prints nothing for the added tokens marked
# special, as decode(ids, skip_special_tokens=True) does, and without it
# prints their text. The model is made to say <|endoftext|> (id 0 of
# gpt2_1024.json) at every step: its final layer norm gives the unit vector
# of channel 0 whatever comes in (gain 0, bias e0), and the tied embedding's
# row 0 is 100 in that channel (every other row's weight there is an
# initial or barely trained one, well under 1), so greedy decoding picks id
# 0 by a margin of about 100 and no tie decides.
# The prompt's own special tokens are left out too, and its bytes that are
# not UTF-8 come out as U+FFFD.
# Usage: sample_special.sh TESSEL SRC TMP
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" sample_special
GPT2=tests/tokenizer/fixtures/gpt2_1024.json
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set data.tokenizer=$GPT2 --set model.vocab_size=1024 \
  --set train.steps=2 >"$WORK/run.log" 2>&1 || fail "training failed: $(tail -5 "$WORK/run.log")"
"$TESSEL" export "$WORK/run/checkpoints/step_00000002" -o "$WORK/hf/model.safetensors" >/dev/null || fail "export"
st=$WORK/hf/model.safetensors
set_tensor() { perl -I"$SRC/tests/train" "$SRC/tests/train/set_tensor.pl" "$st" "$@" || fail "could not set $1 in $st"; }
set_tensor transformer.ln_f.weight 0
set_tensor transformer.ln_f.bias 0
set_tensor transformer.ln_f.bias 1 0
set_tensor transformer.wte.weight 100 0
"$TESSEL" import "$WORK/hf" -o "$WORK/eot" >"$WORK/import.log" 2>&1 || fail "import: $(cat "$WORK/import.log")"

sample() { "$TESSEL" sample "$WORK/eot" --prompt "static" --tokens 3 --temperature 0 "$@" 2>"$WORK/sample.err"; }
got=$(sample --ignore-eos) || fail "sampling failed: $(cat "$WORK/sample.err")"
[ "$got" = "static<|endoftext|><|endoftext|><|endoftext|>" ] ||
  fail "the model made to say <|endoftext|> printed '$got' with --ignore-eos"
got=$(sample --ignore-eos --skip-special) || fail "sampling failed: $(cat "$WORK/sample.err")"
[ "$got" = "static" ] || fail "--skip-special printed '$got', not the prompt alone"
# the prompt is the decoder's as much as the drawn tokens are: its own
# special tokens go too (they were once printed as written), and bytes that
# are not UTF-8 come out as U+FFFD, as decode(prompt ids + drawn ids) gives
got=$("$TESSEL" sample "$WORK/eot" --prompt "<|endoftext|>static<|endoftext|>" --tokens 2 --temperature 0 \
  --ignore-eos --skip-special 2>"$WORK/sample.err") || fail "sampling failed: $(cat "$WORK/sample.err")"
[ "$got" = "static" ] || fail "--skip-special printed '$got' for a prompt with special tokens"
got=$("$TESSEL" sample "$WORK/eot" --prompt $'st\xffat' --tokens 1 --temperature 0 --skip-special 2>"$WORK/sample.err" |
  od -An -tx1 | tr -d ' \n') || fail "sampling failed: $(cat "$WORK/sample.err")"
[ "$got" = "7374efbfbd61740a" ] || fail "an invalid byte of the prompt came out as '$got', not U+FFFD"
# without --ignore-eos the first <|endoftext|> ends generation, printed or not
got=$(sample) || fail "sampling failed: $(cat "$WORK/sample.err")"
[ "$got" = "static" ] || fail "generation did not end at <|endoftext|>: '$got'"
grep -q "generation ends at the end-of-text token 0, after 0 of 3 tokens" "$WORK/sample.err" ||
  fail "the end of generation was not reported: $(cat "$WORK/sample.err")"
rm -rf "$WORK"
echo "ok: sample --skip-special prints nothing for <|endoftext|>, and without it prints its text"
