# A strategy's private slot survives checkpoints (tests/plugins/feedback.c):
# its run stopped after 4 steps and resumed goes on bit for bit, on 2 ranks
# and resumed on 4; private.safetensors holds the slot under each
# parameter's name; the same strategy keeping the state outside the slot
# drifts after a resume (the control); and a strategy that does not declare
# the slot (ddp) resumes the checkpoint, ignoring it.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3; PLUGINS=$4
WORK=$TMP/private_slot.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$WORK/run.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16}
data: {text: ["$SRC/core/config/*.c"], dir: $WORK/data}
train: {steps: 8, batch_size: 8, sample_tokens: 0}
optimizer: {lr: 3.0e-3, warmup_steps: 2}
device: {threads: 1}
checkpoint: {resume: auto}
log: {progress: never}
YAML
run() { # NAME RANKS PLUGIN [--set ...]: exit status 0, or 75 with stop_after
  local name=$1 ranks=$2 lib=$3 rc
  shift 3
  set +e
  "$TESSEL" launch -n "$ranks" "$WORK/run.yaml" --set log.dir="$WORK/$name" --set plugin.path="$lib" "$@" \
    >>"$WORK/$name.log" 2>&1
  rc=$?
  set -e
  [ $rc -eq 0 ] || [ $rc -eq 75 ] || { cat "$WORK/$name.log" >&2; fail "the $name run failed ($rc)"; }
}
losses() { awk 'match($0, /"step":[0-9]+/) { s = substr($0, RSTART + 7, RLENGTH - 7)
                 if (match($0, /"loss":[^,}]*/)) print s, substr($0, RSTART + 7, RLENGTH - 7) }' "$1"; }
FB=$PLUGINS/feedback/libtessel-feedback.so
MEM=$PLUGINS/feedbackmem/libtessel-feedbackmem.so

run whole 2 "$FB"
run stopped 2 "$FB" --set train.stop_after=4
grep -q '"h.0.attn.c_attn.weight.residual"' "$WORK/stopped/checkpoints/step_00000004/private.safetensors" ||
  fail "private.safetensors has no h.0.attn.c_attn.weight.residual"
cp -r "$WORK/stopped" "$WORK/wider"
run stopped 2 "$FB"
diff <(losses "$WORK/whole/metrics.jsonl") <(losses "$WORK/stopped/metrics.jsonl") >&2 ||
  fail "the residual did not survive the checkpoint: the resumed run differs"
echo "ok: stopped at step 4 and resumed, the strategy's private slot carries on bit for bit"

# on 4 ranks: the slot is one logical tensor per parameter, so any world size reads it
run wider 4 "$FB"
[ "$(losses "$WORK/wider/metrics.jsonl" | wc -l)" -eq 8 ] || fail "resumed on 4 ranks, the run did not reach step 8"
echo "ok: the 2-rank checkpoint resumes on 4 ranks"

# the control: state the checkpoint never sees is lost on resume
run mem_whole 2 "$MEM"
run mem_stopped 2 "$MEM" --set train.stop_after=4
run mem_stopped 2 "$MEM"
if diff -q <(losses "$WORK/mem_whole/metrics.jsonl") <(losses "$WORK/mem_stopped/metrics.jsonl") >/dev/null; then
  fail "the control resumed bit for bit without its residual: the test cannot tell a lost slot"
fi
echo "ok: without a private slot the residual is lost on resume (the control differs)"

# a strategy that does not declare the slot resumes the checkpoint without it
cp -r "$WORK/stopped/checkpoints" "$WORK/ddp-checkpoints"
"$TESSEL" launch -n 2 "$WORK/run.yaml" --set log.dir="$WORK/ddp" --set checkpoint.dir="$WORK/ddp-checkpoints" \
  --set plugin.name=ddp --set train.steps=10 >"$WORK/ddp.log" 2>&1 || { cat "$WORK/ddp.log" >&2; fail "ddp did not resume it"; }
grep -q "resuming from .*step_00000008" "$WORK/ddp.log" || fail "ddp did not resume from the feedback checkpoint"
echo "ok: ddp resumes the checkpoint and ignores the slot it does not declare"
rm -rf "$WORK"
