# Every rank must read the same tokens: each draws its part of one global
# batch from them by index. Ranks whose data.train (the same path, resolved
# in another working directory, as on machines without a shared
# filesystem) holds other shards, or the same counts with other contents,
# are refused before training: exit 1, the rank, its host and what it holds
# beside rank 0's. They once trained on, exit 0, on other data (under tp,
# two halves of one layer on different tokens). Identical copies train.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" data_agree
MPI=(timeout 120 mpirun --bind-to none --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)

# shards NAME TEXT: data.train for rank directories, prepared from TEXT
shards() {
  mkdir -p "$WORK/$1"
  "$TESSEL" data prepare "$2" -o "$WORK/$1/shards" --val-fraction 0 >/dev/null
}
head -c 20000 core/model/exec.c >"$WORK/a.txt"
sed '1s/./#/' "$WORK/a.txt" >"$WORK/b.txt" # one byte other: the same counts
head -c 12000 core/model/exec.c >"$WORK/c.txt"
shards r0 "$WORK/a.txt"
shards same_counts "$WORK/b.txt"
shards fewer "$WORK/c.txt"
cp -r "$WORK/r0" "$WORK/copy"
cmp -s "$WORK/r0/shards/train_000000.bin" "$WORK/same_counts/shards/train_000000.bin" &&
  fail "the two texts made the same shard"

cat >"$WORK/shards.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}
data: {train: "shards/train_*.bin"}
train: {steps: 2, batch_size: 4, seed: 7, sample_tokens: 0}
device: {threads: 1}
checkpoint: {keep: 0}
log: {every: 1, progress: never}
YAML

# launch NAME: rank 0 in r0, rank 1 in NAME, one ddp run
launch() {
  set +e
  "${MPI[@]}" -n 1 -wdir "$WORK/r0" "$TESSEL" run "$WORK/shards.yaml" --set plugin.name=ddp --set log.dir="$WORK/run_$1" \
    : -n 1 -wdir "$WORK/$1" "$TESSEL" run "$WORK/shards.yaml" --set plugin.name=ddp --set log.dir="$WORK/run_$1" \
    >"$WORK/$1.log" 2>&1
  rc=$?
  set -e
}

launch same_counts
[ $rc -eq 1 ] || { cat "$WORK/same_counts.log" >&2; fail "other contents: exit status $rc, expected 1"; }
grep -qF "data.train on rank 1, host $(hostname), holds other tokens than rank 0's on host $(hostname): the same 1 shard(s) of 20000 tokens, with other contents" \
  "$WORK/same_counts.log" || { cat "$WORK/same_counts.log" >&2; fail "other contents: the message"; }
[ -e "$WORK/run_same_counts/metrics.jsonl" ] && fail "other contents: the run wrote metrics"

launch fewer
[ $rc -eq 1 ] || { cat "$WORK/fewer.log" >&2; fail "other shards: exit status $rc, expected 1"; }
grep -qF "1 shard(s) of 12000 tokens here, 1 of 20000 there" "$WORK/fewer.log" ||
  { cat "$WORK/fewer.log" >&2; fail "other shards: the message"; }

launch copy
[ $rc -eq 0 ] || { cat "$WORK/copy.log" >&2; fail "identical copies were refused (status $rc)"; }
[ "$(losses "$WORK/run_copy/metrics.jsonl" | wc -l)" -eq 2 ] || fail "identical copies did not train 2 steps"
rm -rf "$WORK"
echo "ok: ranks reading other tokens at the same path are refused, naming the rank and both counts; copies train"
