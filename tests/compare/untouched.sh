# tessel compare never reads or writes the directories a configuration
# names: a config with an explicit checkpoint.dir that already holds a
# checkpoint (from which a plain `tessel run` would resume) and an explicit
# log.dir is compared; afterwards both are byte-for-byte and
# timestamp-for-timestamp as they were, and the trials started from step 0
# in their own directories under --out.
#   untouched.sh TESSEL SRC TMP
set -uo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/compare_untouched.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$WORK/mine.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}
data: {text: ["core/config/*.c"], dir: $WORK/mydata, val_fraction: 0.1}
train: {steps: 6, batch_size: 4, seed: 7, eval_every: 3, eval_batches: 2, sample_tokens: 0}
device: {threads: 1}
checkpoint: {dir: $WORK/mine/checkpoints, every: 2, keep: 1}
log: {dir: $WORK/mine/log, progress: never, tensorboard: $WORK/mine/tb}
YAML
"$TESSEL" run "$WORK/mine.yaml" >"$WORK/first.log" 2>&1 || { cat "$WORK/first.log" >&2; fail "the user's own run failed"; }
snapshot() { (cd "$WORK" && find mine mydata -printf '%p %s %T@ %m\n' | sort && find mine mydata -type f -exec sha256sum {} + | sort); }
snapshot >"$WORK/before"

"$TESSEL" compare "$WORK/mine.yaml" "$WORK/mine.yaml" --steps 4 --repeat 1 --out "$WORK/cmp" >"$WORK/cmp.log" 2>&1 \
  || { cat "$WORK/cmp.log" >&2; fail "the comparison failed"; }
snapshot >"$WORK/after"
diff "$WORK/before" "$WORK/after" >&2 || fail "compare changed the config's own directories"
for t in 1-mine@1/trial-1 "2-mine@1#2/trial-1"; do
  [ "$(sed -n 's/^{"step":\([0-9]*\),.*/\1/p' "$WORK/cmp/$t/metrics.jsonl" | head -1)" = 1 ] \
    || fail "$t did not start at step 1 (it resumed from somewhere)"
  [ -d "$WORK/cmp/$t/checkpoints" ] || fail "$t has no checkpoints of its own"
  ls "$WORK/cmp/$t/tensorboard/"events.out.tfevents.* >/dev/null 2>&1 || fail "$t has no TensorBoard file of its own"
done
grep -q "never read or written" <("$TESSEL" compare --help) || fail "compare --help does not say so"
rm -rf "$WORK"
echo "ok: the config's checkpoint, log, TensorBoard and data directories are untouched; trials ran in --out"
