#!/usr/bin/env bash
# Results written to standard output that cannot be written: on /dev/full
# (every write fails with ENOSPC) each command exits 1 with "error: standard
# output: write failed: No space left on device", and `check` does not say
# "ok" (they all exited 0, leaving an empty or short file behind a success).
# A reader that closes the pipe (`| head`) is not an error to report: the
# program ends quietly, by SIGPIPE or, with SIGPIPE ignored, with exit 1.
#
#   stdout_full.sh TESSEL SRC TMP
set -u
TESSEL=$1; SRC=$2
WORK=$3/cli_stdout_full.$$
rm -rf "$WORK"; mkdir -p "$WORK"
[ -c /dev/full ] || { echo "skip: no /dev/full"; exit 77; }
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
TOK=$SRC/tests/tokenizer/fixtures/gpt2_spaces_300.json

# full ARGS...: tessel ARGS >/dev/full exits 1 saying why
full() {
  local before=$failures rc
  "$TESSEL" "$@" >/dev/full 2>"$WORK/err"
  rc=$?
  [ $rc -eq 1 ] || fail "tessel $* >/dev/full: exit $rc, expected 1: $(cat "$WORK/err")"
  grep -qx "error: standard output: write failed: No space left on device" "$WORK/err" ||
    fail "tessel $* >/dev/full: no write error: $(cat "$WORK/err")"
  ! grep -q "^ok:" "$WORK/err" || fail "tessel $* >/dev/full: says ok: $(cat "$WORK/err")"
  [ $failures -eq $before ] && echo "ok: tessel $* >/dev/full -> exit 1"
}

for i in $(seq 400); do echo "the quick brown fox jumps over the lazy dog $i"; done >"$WORK/text.txt"
printf 'model: {layers: 1, heads: 2, channels: 16, seq_len: 8, vocab_size: 256}\ndata: {text: [%s]}\ntrain: {steps: 1, batch_size: 2}\ncheckpoint: {resume: never}\n' \
  "$WORK/text.txt" >"$WORK/cfg.yaml"
"$TESSEL" check "$WORK/cfg.yaml" >/dev/null 2>"$WORK/err" || fail "check of the test config failed: $(cat "$WORK/err")"
"$TESSEL" tokenizer encode "$TOK" "$WORK/text.txt" >"$WORK/ids.txt" 2>"$WORK/err" || fail "encode failed: $(cat "$WORK/err")"

full check "$WORK/cfg.yaml"
full plan "$WORK/cfg.yaml" --world 1
full tokenizer encode "$TOK" "$WORK/text.txt"
full tokenizer decode "$TOK" "$WORK/ids.txt"
full tokenizer info "$TOK"
full help
full help run
full version

# a closed pipe: a megabyte of ids into `head -c 1`, which stops reading
for i in $(seq 25); do cat "$WORK/text.txt"; done >"$WORK/big.txt"
for ignore in no yes; do
  ( [ $ignore = yes ] && trap '' PIPE
    "$TESSEL" tokenizer encode "$TOK" "$WORK/big.txt" 2>"$WORK/pipe.err" | head -c 1 >/dev/null
    echo "${PIPESTATUS[0]}" >"$WORK/pipe.rc" )
  rc=$(cat "$WORK/pipe.rc") before=$failures
  [ -s "$WORK/pipe.err" ] && fail "a closed pipe (SIGPIPE ignored: $ignore) printed: $(cat "$WORK/pipe.err")"
  [ "$rc" -ne 0 ] || fail "a closed pipe (SIGPIPE ignored: $ignore): exit 0"
  [ $failures -eq $before ] && echo "ok: a closed pipe (SIGPIPE ignored: $ignore) -> exit $rc, quietly"
done

[ $failures -eq 0 ] || { echo "$failures failure(s)" >&2; exit 1; }
rm -rf "$WORK"
