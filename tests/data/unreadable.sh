# An input file that cannot be read (chmod 000, prepared as a user other
# than root, whom permissions do not stop) fails `tessel data prepare`
# before anything is written: a new output directory is not left behind
# (it was, empty, with the parents made for it), an already prepared one
# keeps every file byte for byte (its shards were replaced by the readable
# inputs' before the failure), and the message names the file and why. A
# read that fails halfway removes what it wrote to a directory it made.
set -u
TESSEL=$1
WORK=$3/data_unreadable.$$
fail() { echo "FAIL: $*" >&2; [ -f "$WORK/log" ] && cat "$WORK/log" >&2; exit 1; }
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$2" || exit 1
as_user=()
if [ "$(id -u)" -eq 0 ]; then
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  chmod 777 "$WORK"
fi
prepare() { "${as_user[@]}" "$TESSEL" data prepare "$@" --shard-tokens 100 >"$WORK/log" 2>&1; }
for i in $(seq 1 100); do echo "line $i of a readable file"; done >"$WORK/a.txt"
for i in $(seq 1 100); do echo "line $i of another corpus"; done >"$WORK/c.txt"
cp "$WORK/a.txt" "$WORK/b.txt"
chmod 000 "$WORK/b.txt"

prepare "$WORK/a.txt" "$WORK/b.txt" -o "$WORK/new/out"
rc=$?
[ $rc -eq 1 ] || fail "exit status $rc, not 1"
[ ! -e "$WORK/new" ] || fail "a failed preparation left $(find "$WORK/new" | tr '\n' ' ')behind"
grep -q "$WORK/b.txt: cannot read: Permission denied" "$WORK/log" || fail "the message does not name the file and why"

prepare "$WORK/c.txt" -o "$WORK/done" || fail "preparing the readable file failed"
before=$(cd "$WORK/done" && ls -A | xargs md5sum)
prepare "$WORK/a.txt" "$WORK/b.txt" -o "$WORK/done"
[ $? -eq 1 ] || fail "preparing over a prepared directory did not fail"
after=$(cd "$WORK/done" && ls -A | xargs md5sum)
[ "$before" = "$after" ] || fail "a failed preparation changed the prepared directory"
chmod 644 "$WORK/b.txt"

# a read that fails halfway (EIO from the fault library, after the first
# file's shards were written) leaves nothing behind in a directory it made
env LD_PRELOAD="$4" TESSEL_FAULT_DIR="$WORK" TESSEL_FAULT=eio-read:b.txt \
  "$TESSEL" data prepare "$WORK/a.txt" "$WORK/b.txt" -o "$WORK/new2/out" --shard-tokens 100 >"$WORK/log" 2>&1
[ $? -eq 1 ] || fail "a failing read did not fail the preparation"
grep -q "b.txt" "$WORK/log" || fail "the message does not name the file that failed to read"
[ ! -e "$WORK/new2" ] || fail "a preparation that failed halfway left $(find "$WORK/new2" | head -3 | tr '\n' ' ')behind"
# the same through a trailing / or a .. component: the directories made
# are all removed, and one that was there before, though empty, stays
mkdir "$WORK/keep"
for out in "$WORK/slash/out/" "$WORK/dots/x/../y" "$WORK/gone/../keep/out"; do
  env LD_PRELOAD="$4" TESSEL_FAULT_DIR="$WORK" TESSEL_FAULT=eio-read:b.txt \
    "$TESSEL" data prepare "$WORK/a.txt" "$WORK/b.txt" -o "$out" --shard-tokens 100 >"$WORK/log" 2>&1
  [ $? -eq 1 ] || fail "-o $out: a failing read did not fail the preparation"
done
for made in slash dots gone keep/out; do
  [ ! -e "$WORK/$made" ] || fail "a failed preparation left $(find "$WORK/$made" | tr '\n' ' ')behind"
done
[ -d "$WORK/keep" ] || fail "a failed preparation removed $WORK/keep, which was there before it"
# the preparation `tessel run` does for data.text: a data.dir it made is
# not left behind with its lock file when preparing fails (it was)
chmod 000 "$WORK/b.txt"
cat >"$WORK/run.yaml" <<YAML
model: {layers: 1, heads: 2, channels: 16, seq_len: 8}
data: {text: ["$WORK/a.txt", "$WORK/b.txt"], dir: $WORK/run/data}
train: {steps: 1, batch_size: 2, sample_tokens: 0}
log: {dir: $WORK/run/log, progress: never}
YAML
"${as_user[@]}" "$TESSEL" run "$WORK/run.yaml" >"$WORK/log" 2>&1
rc=$?
[ $rc -ne 0 ] || fail "a run whose data.text cannot be read succeeded"
grep -q "$WORK/b.txt: cannot read: Permission denied" "$WORK/log" || fail "the run's message does not name the file"
[ ! -e "$WORK/run/data" ] || fail "a run whose preparation failed left $(find "$WORK/run/data" | tr '\n' ' ')behind"
rm -rf "$WORK"
echo "ok: an unreadable input was refused before anything was written, named with its reason"
