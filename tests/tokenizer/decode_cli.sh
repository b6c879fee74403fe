# `tessel tokenizer decode --skip-special` through the CLI: the ids of added
# tokens marked special are left out before the decoder, as tokenizers'
# decode(ids, skip_special_tokens=True) leaves them out (so a SentencePiece
# decoder's Strip drops the space of the first id left in), in text and in
# --bytes; other ids are written as without it. Only decode takes it.
# (That the text is tokenizers' own is checked on random ids against its
# fixtures in test_tokenizer_json.c.)
# Usage: decode_cli.sh TESSEL SRC TMP
set -eu
TESSEL=$1
SRC=$2
WORK=$3/decode_cli.$$
cd "$SRC"
rm -rf "$WORK"
mkdir -p "$WORK"
GPT2=tests/tokenizer/fixtures/gpt2_1024.json
SP=tests/tokenizer/fixtures/sp_1000.json
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# decodes TOKENIZER IDS WANT [OPTION...]: decode's output is exactly WANT
decodes() {
  local tok=$1 ids=$2 want=$3
  shift 3
  got=$(printf '%s' "$ids" | "$TESSEL" tokenizer decode "$tok" "$@") || fail "decode $* of '$ids' failed"
  [ "$got" = "$want" ] || fail "decode $* of '$ids' with $tok: '$got', expected '$want'"
}

# GPT-2's kind: <|endoftext|> (id 0) is special, and left out between the two bytes of é
ids=$(printf 'a<|endoftext|>b' | "$TESSEL" tokenizer encode $GPT2)
decodes $GPT2 "$ids" 'a<|endoftext|>b'
decodes $GPT2 "$ids" 'ab' --skip-special
decodes $GPT2 "$ids" 'ab' --skip-special --bytes
e=$(printf '\xc3\xa9' | "$TESSEL" tokenizer encode --ordinary $GPT2)
[ "$(echo $e | wc -w)" = 2 ] || fail "é is not two byte tokens in $GPT2: $e"
decodes $GPT2 "${e% *} 0 ${e#* }" 'é' --skip-special
decodes $GPT2 "${e% *} 0 ${e#* }" $'\xef\xbf\xbd<|endoftext|>\xef\xbf\xbd'

# SentencePiece's kind: <s> (id 1) is special; Strip drops the space of the first token written
hello=$(printf 'Hello' | "$TESSEL" tokenizer encode $SP)
decodes $SP "1 $hello" '<s> Hello'
decodes $SP "1 $hello" 'Hello' --skip-special
decodes $SP "1 $hello" '<s> Hello' --bytes
decodes $SP "1 $hello" 'Hello' --skip-special --bytes

# only decode takes it
set +e
"$TESSEL" tokenizer encode --skip-special $GPT2 </dev/null >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -qF "bad option for encode" "$WORK/err" || fail "encode --skip-special: exit $rc: $(cat "$WORK/err")"
rm -rf "$WORK"
echo "ok: decode --skip-special leaves out special tokens, in text and in bytes"
