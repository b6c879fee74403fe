# A resume that is refused is refused before anything is written: a run on
# data.text whose checkpoint was trained with another tokenizer of the same
# size leaves data.dir as it was (it once prepared the text again with the
# new tokenizer, replacing the shards, and only then refused), with the
# exit status and message of the refusal.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" resume_refused

GPT2=tests/tokenizer/fixtures/gpt2_1024.json
sed 's/"<|endoftext|>"/"<|end_of_text|>"/' $GPT2 >"$WORK/renamed.json"
tok=(--set model.vocab_size=1024 --set log.dir="$WORK/run")
set +e
"$TESSEL" run "$WORK/tiny.yaml" "${tok[@]}" --set data.tokenizer=$GPT2 --set train.stop_after=2 >/dev/null 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || fail "the first part exited with status $rc, expected 75"
# every file of data.dir: name, size, modification time to the nanosecond
listing() { (cd "$WORK/data" && find . -printf '%p %s %T@\n' | sort); }
listing >"$WORK/before"
[ "$(wc -l <"$WORK/before")" -gt 3 ] || fail "data.dir holds no shards: $(cat "$WORK/before")"
set +e
"$TESSEL" run "$WORK/tiny.yaml" "${tok[@]}" --set data.tokenizer="$WORK/renamed.json" >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "resuming under another tokenizer exited $rc, expected 2: $(cat "$WORK/err")"
grep -qF "was trained with tokenizer" "$WORK/err" && grep -qF "resume with the one it was trained with" "$WORK/err" ||
  fail "the refusal does not say why: $(cat "$WORK/err")"
! grep -q "data: prepared" "$WORK/out" "$WORK/err" || fail "the refused run prepared data.text first: $(cat "$WORK/err")"
listing >"$WORK/after"
diff "$WORK/before" "$WORK/after" >&2 || fail "the refused run changed data.dir"
rm -rf "$WORK"
echo "ok: a refused resume leaves data.dir as it was"
