# Shared by the training tests: `tessel`, a scratch directory, a tiny config
# and helpers. Usage from a test: . "$(dirname "$0")/common.sh" TESSEL SRC TMP NAME
set -eu
TESSEL=$1
SRC=$2
WORK=$3/$4.$$
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$SRC"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# A tiny model on the project's own config sources (text present everywhere).
cat > "$WORK/tiny.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}
data: {text: ["core/config/*.c"], dir: $WORK/data, val_fraction: 0.1}
train: {steps: 12, batch_size: 4, seed: 7, eval_every: 6, eval_batches: 2, sample_tokens: 0}
optimizer: {lr: 3.0e-3, warmup_steps: 3, weight_decay: 0.1, grad_clip: 1.0}
device: {threads: 1}
checkpoint: {keep: 0}
log: {every: 1, progress: never}
YAML

# The "loss" values of a metrics file, one per line, as written.
losses() { sed -n 's/.*"loss":\([^,]*\),.*/\1/p' "$1"; }
# stop_step LOG CAUSE: the step a run's "stopped at step N by CAUSE" line names
stop_step() { sed -n "s/.*stopped at step \([0-9]*\) by $2.*/\1/p" "$1"; }
# stopped_with_checkpoint STATUS STEP RUNDIR: exit status 75 (stopped,
# resumable) and the checkpoint of the step it stopped at
stopped_with_checkpoint() { [ "$1" -eq 75 ] && [ -n "$2" ] && [ -d "$3/checkpoints/$(printf 'step_%08d' "$2")" ]; }
