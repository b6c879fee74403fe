# data.text as it is prepared into data.dir:
#  - a file listed twice (by name and through a glob) is prepared once (its
#    tokens were doubled);
#  - an edit that keeps the size and the modification time (cp -p, touch
#    -r, or within one second) is seen and the text prepared again (the
#    stamp hashed whole-second mtimes and sizes only, and the run trained on
#    the old shards);
#  - a run directory whose name has glob characters (a config exp[1].yaml)
#    trains on the shards it prepared (runs/exp[1]/data/train_*.bin once
#    matched runs/exp1's, or nothing);
#  - a validation part too short for a sequence is said in terms of
#    data.val_fraction (it was an error about a data.val never written, exit
#    1 or 2 by the case), and data the run never uses (shards shorter than a
#    sequence, validation windows that repeat) is warned about;
#  - two runs in one data.dir: while one trains, another of the same text
#    runs beside it, and one of other text is refused, as is `tessel data
#    prepare` into it (a run once re-prepared the directory under the
#    first, and one trained on the other's text).
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" data_text
mkdir -p "$WORK/txt"
head -c 20000 "$SRC/README.md" >"$WORK/txt/a.txt"
cat > "$WORK/dup.yaml" <<YAML
model: {layers: 1, heads: 2, channels: 16, seq_len: 16}
data: {text: ["$WORK/txt/a.txt", "$WORK/txt/*.txt"], val_fraction: 0}
train: {steps: 1, batch_size: 2, sample_tokens: 0}
device: {threads: 1}
log: {progress: never}
YAML
tokens() { sed -n 's/.*data: prepared \([0-9]*\) file(s) into .*: \([0-9]*\) training.*/\1 \2/p' "$1"; }

"$TESSEL" run "$WORK/dup.yaml" --set log.dir="$WORK/dup" >"$WORK/dup.log" 2>&1 || { cat "$WORK/dup.log" >&2; fail "run failed"; }
[ "$(tokens "$WORK/dup.log")" = "1 $(wc -c <"$WORK/txt/a.txt")" ] ||
  { cat "$WORK/dup.log" >&2; fail "a.txt, listed twice, was not prepared once"; }

# the same size, the same mtime, other bytes
touch -r "$WORK/txt/a.txt" "$WORK/stamp"
printf 'ZZZZZZZZZZ' | dd of="$WORK/txt/a.txt" conv=notrunc status=none
touch -r "$WORK/stamp" "$WORK/txt/a.txt"
"$TESSEL" run "$WORK/dup.yaml" --set log.dir="$WORK/dup" --set train.steps=2 >"$WORK/edit.log" 2>&1 ||
  { cat "$WORK/edit.log" >&2; fail "the run after the edit failed"; }
grep -q "data: prepared" "$WORK/edit.log" || { cat "$WORK/edit.log" >&2; fail "the edited text was not prepared again"; }
[ "$(od -An -tu2 -j1024 -N20 "$WORK/dup/data/train_000000.bin" | tr -s ' \n' ' ')" = " 90 90 90 90 90 90 90 90 90 90 " ] ||
  fail "the shard does not hold the edited text (ten 'Z', token 90)"

# data.dir inside data.text's glob: its shards and records are no text, so
# the corpus stays the same from run to run (it took the last run's shards
# in, and grew every run); `tessel data prepare` alike
mkdir -p "$WORK/corpus"
cp "$WORK/txt/a.txt" "$WORK/corpus/a.txt"
for i in 1 2; do
  "$TESSEL" run "$WORK/dup.yaml" --set log.dir="$WORK/self$i" --set "data.text=[\"$WORK/corpus/*\"]" \
    --set data.dir="$WORK/corpus" --set checkpoint.resume=never >"$WORK/self$i.log" 2>&1 ||
    { cat "$WORK/self$i.log" >&2; fail "run $i over its own data.dir failed"; }
done
[ "$(tokens "$WORK/self1.log")" = "1 $(wc -c <"$WORK/corpus/a.txt")" ] ||
  { cat "$WORK/self1.log" >&2; fail "data.dir's own files were taken for text"; }
grep -q "data: prepared" "$WORK/self2.log" && { cat "$WORK/self2.log" >&2; fail "the second run prepared again"; }
"$TESSEL" data prepare "$WORK/corpus/*" -o "$WORK/corpus" >"$WORK/self3.log" 2>&1 ||
  { cat "$WORK/self3.log" >&2; fail "data prepare over its own output failed"; }
grep -q "1 file" "$WORK/self3.log" || { cat "$WORK/self3.log" >&2; fail "data prepare took its own output for text"; }

# shards removed by hand are prepared again (the stamp was trusted, and the
# run failed on the missing files); `tessel data prepare` of other text into
# the directory voids the stamp, so the run prepares its own text again
# (it trained on the other text, silently)
rm -f "$WORK/corpus"/train_*.bin
"$TESSEL" run "$WORK/dup.yaml" --set log.dir="$WORK/self4" --set "data.text=[\"$WORK/corpus/*\"]" \
  --set data.dir="$WORK/corpus" --set checkpoint.resume=never >"$WORK/self4.log" 2>&1 &&
  grep -q "data: prepared" "$WORK/self4.log" || { cat "$WORK/self4.log" >&2; fail "removed shards were not prepared again"; }
mkdir -p "$WORK/other"
head -c 5000 "$SRC/docs/config.md" >"$WORK/other/b.txt"
"$TESSEL" data prepare "$WORK/other/b.txt" -o "$WORK/corpus" >/dev/null 2>&1 || fail "data prepare of other text failed"
"$TESSEL" run "$WORK/dup.yaml" --set log.dir="$WORK/self5" --set "data.text=[\"$WORK/corpus/*\"]" \
  --set data.dir="$WORK/corpus" --set checkpoint.resume=never >"$WORK/self5.log" 2>&1 &&
  [ "$(tokens "$WORK/self5.log")" = "1 $(wc -c <"$WORK/corpus/a.txt")" ] ||
  { cat "$WORK/self5.log" >&2; fail "after data prepare of other text, the run did not prepare its own again"; }

# glob characters in the run directory's name
mkdir -p "$WORK/glob/exp1/data"
cp "$WORK/dup/data/train_000000.bin" "$WORK/glob/exp1/data/train_000000.bin" # a decoy a bare pattern would match
printf 'ab%.0s' $(seq 1 5000) >"$WORK/txt/b.txt"
sed "s|\"$WORK/txt/a.txt\", \"$WORK/txt/\*.txt\"|\"$WORK/txt/b.txt\"|" "$WORK/dup.yaml" >"$WORK/b.yaml"
"$TESSEL" run "$WORK/b.yaml" --set log.dir="$WORK/glob/exp[1]" >"$WORK/glob.log" 2>&1 ||
  { cat "$WORK/glob.log" >&2; fail "the run in exp[1] failed"; }
[ "$(tokens "$WORK/glob.log")" = "1 10000" ] || { cat "$WORK/glob.log" >&2; fail "b.txt was not prepared in exp[1]"; }
losses "$WORK/glob/exp[1]/metrics.jsonl" >"$WORK/l1"
"$TESSEL" run "$WORK/b.yaml" --set log.dir="$WORK/plain" >/dev/null 2>&1 || fail "the run in plain failed"
losses "$WORK/plain/metrics.jsonl" >"$WORK/l2"
cmp -s "$WORK/l1" "$WORK/l2" || fail "the run in exp[1] did not train on its own shards (losses differ from the same run elsewhere)"

# 100 bytes with val_fraction 0.1 leave 10 validation tokens; 40 with 0.02, none
head -c 100 "$WORK/txt/a.txt" >"$WORK/txt/short.txt"
for vf in 0.1 0.02; do
  [ $vf = 0.02 ] && head -c 40 "$WORK/txt/a.txt" >"$WORK/txt/short.txt"
  set +e
  "$TESSEL" run "$WORK/dup.yaml" --set "data.text=[\"$WORK/txt/short.txt\"]" --set data.val_fraction=$vf \
    --set log.dir="$WORK/short$vf" >"$WORK/short.log" 2>&1
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q "^--set=data.val_fraction=$vf:1:25: data.val_fraction: $vf leaves the validation part of data.text too short for one sequence of seq_len+1 = 17 tokens" "$WORK/short.log" ||
    { cat "$WORK/short.log" >&2; fail "val_fraction $vf on a short text: exit $rc"; }
done
# a validation part long enough but with a token past the vocabulary is said
# as that, not as a val_fraction too small
{ yes 'the quick brown fox' | head -c 900; printf '\303\251%.0s' $(seq 1 40); } >"$WORK/txt/accents.txt"
set +e
"$TESSEL" run "$WORK/dup.yaml" --set "data.text=[\"$WORK/txt/accents.txt\"]" --set data.val_fraction=0.1 \
  --set model.vocab_size=128 --set log.dir="$WORK/accents" >"$WORK/accents.log" 2>&1
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "data.text: .*val_000000.bin: token 195 at offset [0-9]* is >= model.vocab_size = 128" "$WORK/accents.log" &&
  ! grep -q "raise data.val_fraction" "$WORK/accents.log" ||
  { cat "$WORK/accents.log" >&2; fail "a token past the vocabulary in the validation part: exit $rc"; }

# a validation shard removed by hand is prepared again, as a training shard
# is (it was blamed on data.val_fraction, exit 2)
for n in 1 2; do
  [ $n -eq 2 ] && rm -f "$WORK/valgone/data/"val_*.bin
  "$TESSEL" run "$WORK/dup.yaml" --set "data.text=[\"$SRC/docs/config.md\"]" --set data.val_fraction=0.1 \
    --set log.dir="$WORK/valgone" --set data.dir="$WORK/valgone/data" --set checkpoint.resume=never \
    >"$WORK/valgone$n.log" 2>&1 && grep -q "data: prepared" "$WORK/valgone$n.log" ||
    { cat "$WORK/valgone$n.log" >&2; fail "run $n over a data.dir without its validation shard"; }
done

# a shard shorter than a sequence beside a long one; 12 validation windows
# against eval_batches 4 × batch 2
mkdir -p "$WORK/mixed"
"$TESSEL" data prepare "$WORK/txt/b.txt" -o "$WORK/mixed" --val-fraction 0.02 >/dev/null
printf 'tiny' >"$WORK/txt/tiny.txt"
"$TESSEL" data prepare "$WORK/txt/tiny.txt" -o "$WORK/tiny" --val-fraction 0 >/dev/null
cp "$WORK/tiny/train_000000.bin" "$WORK/mixed/train_000001.bin"
sed "s|^data: .*|data: {train: \"$WORK/mixed/train_*.bin\", val: \"$WORK/mixed/val_*.bin\"}|" "$WORK/dup.yaml" >"$WORK/mixed.yaml"
"$TESSEL" run "$WORK/mixed.yaml" --set train.eval_batches=8 --set log.dir="$WORK/mixedrun" >"$WORK/mixed.log" 2>&1 ||
  { cat "$WORK/mixed.log" >&2; fail "the run on mixed shards failed"; }
grep -q "warning: data.train: 1 of 2 shard(s) (4 tokens) are shorter than seq_len+1 = 17 tokens and are never trained on" "$WORK/mixed.log" ||
  { cat "$WORK/mixed.log" >&2; fail "no warning for the short shard"; }
grep -q "warning: data.val holds 12 sequence(s) of seq_len+1 tokens, but train.eval_batches × train.batch_size = 16" "$WORK/mixed.log" ||
  { cat "$WORK/mixed.log" >&2; fail "no warning for repeated validation windows"; }

cat > "$WORK/shared.yaml" <<YAML
model: {layers: 1, heads: 2, channels: 16, seq_len: 16}
data: {text: ["$WORK/txt/b.txt"], dir: $WORK/shared, val_fraction: 0}
train: {steps: 100000000, batch_size: 2, sample_tokens: 0}
device: {threads: 1}
checkpoint: {every: 0}
log: {progress: never, every: 1000000}
YAML
"$TESSEL" run "$WORK/shared.yaml" --set log.dir="$WORK/first" >"$WORK/first.log" 2>&1 &
first=$!
for _ in $(seq 1 300); do [ -f "$WORK/first/metrics.jsonl" ] && break; sleep 0.1; done
"$TESSEL" run "$WORK/shared.yaml" --set log.dir="$WORK/same" --set train.steps=2 >"$WORK/same.log" 2>&1 ||
  { kill $first; cat "$WORK/same.log" >&2; fail "a run of the same text beside the first failed"; }
set +e
"$TESSEL" run "$WORK/shared.yaml" --set log.dir="$WORK/other" --set train.steps=2 --set "data.text=[\"$WORK/txt/a.txt\"]" \
  >"$WORK/other.log" 2>&1
rc=$?
# `tessel data prepare` into it is refused too (it replaced the shards under the run)
"$TESSEL" data prepare "$WORK/txt/a.txt" -o "$WORK/shared" >"$WORK/prep.log" 2>&1
prc=$?
kill -TERM $first
wait $first
set -e
[ $rc -eq 2 ] && grep -q "data.dir $WORK/shared holds shards another running tessel run prepared from other sources" "$WORK/other.log" ||
  { cat "$WORK/other.log" >&2; fail "a run of other text in the first's data.dir: exit $rc"; }
[ $prc -eq 1 ] && grep -q "$WORK/shared is in use: another tessel data prepare writes there, or a running tessel run reads the shards it prepared there" "$WORK/prep.log" ||
  { cat "$WORK/prep.log" >&2; fail "data prepare into a running run's data.dir: exit $prc"; }
"$TESSEL" run "$WORK/shared.yaml" --set log.dir="$WORK/other" --set train.steps=2 --set "data.text=[\"$WORK/txt/a.txt\"]" \
  >"$WORK/other2.log" 2>&1 || { cat "$WORK/other2.log" >&2; fail "the other text did not prepare once the first run ended"; }
rm -rf "$WORK"
echo "ok: a file listed twice is prepared once; an edit keeping size and mtime is prepared again; exp[1] trains on its shards;" \
  "a short validation part names data.val_fraction; unused shards and repeated windows are warned about;" \
  "a running run's data.dir is shared by its text and refused to another"
