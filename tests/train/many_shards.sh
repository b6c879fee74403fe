#!/usr/bin/env bash
# tests/train/many_shards.sh — a run keeps every shard open (it reads them
# with pread), so a corpus of more shards than the usual soft limit on open
# files (1024) must still train: the run raises the soft limit towards the
# hard one. Under a hard limit too low, it stops naming the shard and
# `ulimit -n`, never a crash.
#
# usage: many_shards.sh TESSEL SRC TMP
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" many_shards
"$TESSEL" data prepare core/config/parse.c -o "$WORK/one" >/dev/null 2>&1 || fail "data prepare failed"
mkdir "$WORK/many"
for i in $(seq -w 0 1099); do cp "$WORK/one/train_000000.bin" "$WORK/many/train_00$i.bin"; done
cat >"$WORK/many.yaml" <<YAML
model: {layers: 1, heads: 2, channels: 16, seq_len: 8, vocab_size: 256}
data: {train: "$WORK/many/train_*.bin", val: "$WORK/one/val_*.bin"}
train: {steps: 2, batch_size: 2, sample_tokens: 0}
device: {threads: 1}
checkpoint: {every: 0}
log: {progress: never}
YAML
[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 1400 ] || fail "the hard limit on open files ($(ulimit -Hn)) is too low for this test"
(ulimit -Sn 1024 && "$TESSEL" run "$WORK/many.yaml" --set log.dir="$WORK/run") >"$WORK/run.log" 2>&1 \
  || fail "1100 shards under a soft limit of 1024 open files: $(tail -3 "$WORK/run.log")"
status=0
(ulimit -n 1024 && "$TESSEL" run "$WORK/many.yaml" --set log.dir="$WORK/low") >"$WORK/low.log" 2>&1 || status=$?
[ $status -eq 1 ] || fail "under a hard limit of 1024 open files: exit status $status, expected 1"
grep -q "cannot open: Too many open files (a run keeps every shard open; .*raise the limit (\`ulimit -n\`))" "$WORK/low.log" \
  || fail "under a hard limit of 1024 the message does not say what to do: $(tail -2 "$WORK/low.log")"
rm -rf "$WORK"
echo "ok: 1100 shards train under a soft limit of 1024 open files"
