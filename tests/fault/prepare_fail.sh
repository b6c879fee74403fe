#!/usr/bin/env bash
# tests/fault/prepare_fail.sh — `tessel data prepare` into a directory that
# already holds shards, failing halfway: a read error on the third input
# file (EIO), and a disk that fills up after two of the new shards. Each
# must exit 1 naming what failed and leave the earlier shards, their
# tokens.json and a run's stamp byte for byte as they were, with no staged
# file left behind; the same preparation without the fault then replaces
# them (and leaves no old shard numbered past the new ones).
#
# usage: prepare_fail.sh TESSEL SRC TMP FAULT_LIB
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" prepare_fail
LIB=$4
OUT=$WORK/out
mkdir -p "$WORK/old" "$WORK/new"
# the old corpus: 12 shards of 2000 tokens; the new one: three files, 6 shards
for i in 1 2 3; do head -c 8000 "core/config/parse.c" >"$WORK/old/$i.txt"; done
for i in 1 2 3; do head -c 4000 "core/config/load.c" >"$WORK/new/$i.txt"; done
"$TESSEL" data prepare "$WORK/old/*.txt" -o "$OUT" --shard-tokens 2000 >/dev/null || die "the first preparation failed"
echo "stamp of a run" >"$OUT/.prepared"
snapshot() { (cd "$OUT" && find . -type f ! -name .tessel-data-lock -print0 | sort -z | xargs -0 sha256sum); }
snapshot >"$WORK/before"
[ "$(ls "$OUT"/train_*.bin | wc -l)" -ge 10 ] || die "the old corpus made too few shards: $(ls "$OUT")"

# expect_intact NAME FAULT TEXT [ARG...]: the preparation of the new corpus
# (with ARGs) under FAULT exits 1 saying TEXT and leaves $OUT as it was
expect_intact() {
  case_name=$1
  local fault=$2 text=$3
  shift 3
  env LD_PRELOAD="$LIB" TESSEL_FAULT_DIR="$WORK" TESSEL_FAULT="$fault" \
    "$TESSEL" data prepare "$WORK/new/*.txt" -o "$OUT" --shard-tokens 2000 "$@" >"$WORK/$case_name.log" 2>&1
  local status=$?
  [ $status -eq 1 ] || fail "exit status $status, expected 1: $(cat "$WORK/$case_name.log")"
  grep -q -- "$text" "$WORK/$case_name.log" || fail "no '$text' in: $(cat "$WORK/$case_name.log")"
  snapshot | diff "$WORK/before" - >"$WORK/$case_name.diff" || fail "the old shards changed: $(cat "$WORK/$case_name.diff")"
  ls -a "$OUT" | grep -q '\.part$' && fail "staged shards left behind: $(ls -a "$OUT")"
  case_name=
}
expect_intact eio "eio-read:new/3.txt" "new/3.txt"
expect_intact full "enospc:9000" "No space left on device"
# through a tokenizer, whose threads encode files side by side (each
# preparation also parses the tokenizer itself, open: the fault names the
# input file); the failing file is named whichever thread met it
TOK=--tokenizer=$PWD/tests/tokenizer/fixtures/gpt2_1024.json
OMP_NUM_THREADS=2 expect_intact eio_tokens "eio-open:new/2.txt" "new/2.txt: cannot open: Input/output error" "$TOK"

"$TESSEL" data prepare "$WORK/new/*.txt" -o "$OUT" --shard-tokens 2000 >"$WORK/ok.log" 2>&1 ||
  die "the preparation without a fault failed: $(cat "$WORK/ok.log")"
ls "$OUT"/train_*.bin >"$WORK/train_list"
[ "$(wc -l <"$WORK/train_list")" -eq 6 ] || fail "expected 6 training shards, not $(cat "$WORK/train_list")"
[ "$(ls "$OUT"/val_*.bin | wc -l)" -eq 1 ] || fail "expected 1 validation shard (the old corpus had 2): $(ls "$OUT")"
[ -e "$OUT/.prepared" ] && fail "the run's stamp of the old shards was kept over the new ones"
[ -e "$OUT/tokens.json" ] || fail "no tokens.json after the preparation"

# Two preparations into one directory: the first stopped (SIGSTOP) halfway
# through renaming its shards into place holds the directory, and the
# second is refused before it touches anything (it once wrote beside the
# first and removed its staged shards); continued, the first completes.
env LD_PRELOAD="$LIB" TESSEL_FAULT_DIR="$WORK" TESSEL_FAULT="stop-after-rename:out/train_000000.bin" \
  "$TESSEL" data prepare "$WORK/old/*.txt" -o "$OUT" --shard-tokens 2000 >"$WORK/held.log" 2>&1 &
held=$!
for _ in $(seq 1 300); do [ "$(ps -o stat= -p $held 2>/dev/null | cut -c1)" = T ] && break; sleep 0.1; done
[ "$(ps -o stat= -p $held | cut -c1)" = T ] || die "the first preparation did not stop at its first shard's rename"
ls -a "$OUT" >"$WORK/held_files"
"$TESSEL" data prepare "$WORK/new/*.txt" -o "$OUT" --shard-tokens 2000 >"$WORK/second.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -q "$OUT is in use: another tessel data prepare writes there" "$WORK/second.log" ||
  fail "a second preparation beside the first: exit $status, $(cat "$WORK/second.log")"
ls -a "$OUT" | diff "$WORK/held_files" - >/dev/null || fail "the refused preparation changed the directory: $(ls -a "$OUT")"
kill -CONT $held
wait $held || fail "the first preparation, continued, failed: $(cat "$WORK/held.log")"
[ "$(ls "$OUT"/train_*.bin | wc -l)" -ge 10 ] || fail "the first preparation's shards are not all there: $(ls "$OUT")"
finish "a preparation that fails halfway leaves the earlier shards as they were; a second one beside it is refused"
