# examples/zero-offload end to end, against an installed tessel only: it is
# at most 300 lines; it builds with find_package(Tessel) and with make +
# pkg-config; it passes plugin-check; at 2 and 4 ranks its trajectory is
# ddp's bit for bit (sums run in rank order, and AdamW is elementwise, so
# sharding the update changes no bit); its moments are on the host tier in
# the metrics; its checkpoints equal ddp's byte for byte, and a stop and
# resume, and resumes across strategies and rank counts (zero-offload@2 →
# ddp@4, ddp@4 → zero-offload@2), continue exactly.
set -euo pipefail
BUILD=$1; SRC=$2; TMP=$3
WORK=$TMP/zero_offload.$$
rm -rf "$WORK"; mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
PREFIX=$WORK/prefix
EXAMPLE=$SRC/examples/zero-offload

lines=$(cat "$EXAMPLE/zero_offload.c" "$EXAMPLE/CMakeLists.txt" "$EXAMPLE/Makefile" | wc -l)
[ "$lines" -le 300 ] || fail "the example is $lines lines, more than 300"

cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null || fail "cmake --install failed"
TESSEL=$PREFIX/bin/tessel
export TESSEL_PLUGIN_PATH=

cp -r "$EXAMPLE" "$WORK/src"
cmake -S "$WORK/src" -B "$WORK/cmake-build" -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/cmake.log" 2>&1 &&
  cmake --build "$WORK/cmake-build" >>"$WORK/cmake.log" 2>&1 &&
  cmake --install "$WORK/cmake-build" >>"$WORK/cmake.log" 2>&1 || { cat "$WORK/cmake.log" >&2; fail "the CMake build failed"; }
[ -f "$PREFIX/lib/tessel/plugins/libtessel-zero-offload.so" ] || fail "the CMake build did not install the plugin"
( cd "$WORK/src" && PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig" make >"$WORK/make.log" 2>&1 ) ||
  { cat "$WORK/make.log" >&2; fail "the pkg-config build failed"; }
LIB=$WORK/src/libtessel-zero-offload.so
"$TESSEL" plugin-check "$LIB" --set plugin.chunk_size=4KiB >"$WORK/check.log" 2>&1 ||
  { cat "$WORK/check.log" >&2; fail "plugin-check rejects the pkg-config build"; }

# 4 KiB chunks: many reduce-scatters and a tail; 2 micro-batches a rank at 2 ranks
cat >"$WORK/run.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16}
data: {text: ["$SRC/core/config/*.c"], dir: $WORK/data}
train: {steps: 8, batch_size: 8, micro_batch_size: 2, sample_tokens: 0, eval_every: 4}
optimizer: {lr: 3.0e-3, warmup_steps: 2, grad_clip: 0.5}
device: {threads: 1}
checkpoint: {every: 4, resume: auto}
log: {progress: never}
YAML
ZO=(--set plugin.name=zero-offload --set plugin.chunk_size=4KiB)
DDP=(--set plugin.name=ddp)
run() { # NAME RANKS, then --set arguments
  local name=$1 ranks=$2; shift 2
  "$TESSEL" launch -n "$ranks" "$WORK/run.yaml" --set log.dir="$WORK/$name" --set checkpoint.dir="$WORK/$name/ckpt" \
    "$@" >>"$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log" >&2; fail "the $name run failed"; }
}
# The per-step numbers that must agree exactly: loss, validation loss, lr.
# The gradient norm is a sum of squares in double precision that sharded
# gradients add up in another order (owned pieces, then over ranks), so it
# is held to 1e-12 relative; what the step does with it (clip / norm in
# fp32) changes no bit, which the equal losses and checkpoints show.
trajectory() {
  awk '{ out = ""
         for (i = split("step loss val_loss lr", key, " "); i >= 1; i--)
           if (match($0, "\"" key[i] "\":[^,}]*")) out = substr($0, RSTART, RLENGTH) " " out
         print out }' "$1"
}
norms() { sed -n 's/.*"grad_norm":\([^,]*\),.*/\1/p' "$1"; }
same() { # A B STEPS WHAT: runs A and B logged the same STEPS steps, bit for bit
  diff <(trajectory "$WORK/$1/metrics.jsonl") <(trajectory "$WORK/$2/metrics.jsonl") >"$WORK/diff" ||
    { cat "$WORK/diff" >&2; fail "$4"; }
  [ "$(trajectory "$WORK/$1/metrics.jsonl" | wc -l)" -eq "$3" ] || fail "$1 did not log $3 steps"
  paste <(norms "$WORK/$1/metrics.jsonl") <(norms "$WORK/$2/metrics.jsonl") | awk -v what="$4" '
    { d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > w) w = d }
    END { printf "ok: %s (gradient norms within %.2g relative)\n", what, w; exit !(NR > 0 && w <= 1e-12) }' ||
    fail "$4: the gradient norms differ by more than 1e-12 relative"
}
same_checkpoint() { # A B STEP WHAT: their checkpoints at STEP hold the same bytes
  for f in model.safetensors optimizer.safetensors; do
    cmp -s "$WORK/$1/ckpt/step_0000000$3/$f" "$WORK/$2/ckpt/step_0000000$3/$f" || fail "$4: $f differs"
  done
  echo "ok: $4"
}

for n in 2 4; do
  run ddp$n $n "${DDP[@]}"
  run zo$n $n "${ZO[@]}"
  same ddp$n zo$n 8 "zero-offload matches ddp bit for bit on $n ranks"
  same_checkpoint ddp$n zo$n 8 "zero-offload's checkpoint on $n ranks equals ddp's byte for byte"
done

mem() { head -1 "$WORK/zo2/metrics.jsonl" | grep -o "\"$1\":{[^}]*}" | sed -n "s/.*\"optim\":\([0-9]*\).*/\1/p"; }
host=$(mem host); device=$(mem device)
[ -n "$host" ] && [ "$host" -gt 0 ] || fail "no optimizer bytes on the host tier: memory.host.optim is '${host}'"
[ "$device" -eq 0 ] || fail "optimizer state on the device: memory.device.optim is $device"
echo "ok: the moments are on the host: memory.host.optim $host bytes, memory.device.optim 0"

# stop after 4 steps (exit 75), run the same command again: it resumes and ends as if never stopped
set +e
"$TESSEL" launch -n 2 "$WORK/run.yaml" --set log.dir="$WORK/stop2" --set checkpoint.dir="$WORK/stop2/ckpt" "${ZO[@]}" \
  --set train.stop_after=4 >"$WORK/stop2.log" 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || { cat "$WORK/stop2.log" >&2; fail "the run with stop_after 4 ended with status $rc, expected 75"; }
run stop2 2 "${ZO[@]}" --set train.stop_after=4
same zo2 stop2 8 "zero-offload@2 stopped at step 4 and resumed continues bit for bit"

# Across strategies and rank counts. Runs at different rank counts sum in
# different orders, so they are compared by what they make of the same
# checkpoint: resuming another strategy's checkpoint, zero-offload must go
# on exactly as ddp does from it — the same losses, norms and written
# state — and ddp exactly as zero-offload.
resume() { # NAME FROM RANKS, then --set arguments: resume FROM's step-4 checkpoint to step 8
  local name=$1 from=$2 ranks=$3; shift 3
  mkdir -p "$WORK/$name/ckpt"
  cp -r "$WORK/$from/ckpt/step_00000004" "$WORK/$name/ckpt/"
  run "$name" "$ranks" "$@"
}
resume ddp4_zo2 ddp4 2 "${ZO[@]}"
resume ddp4_ddp2 ddp4 2 "${DDP[@]}"
same ddp4_zo2 ddp4_ddp2 4 "zero-offload@2 resumes ddp@4's checkpoint exactly as ddp@2 does"
same_checkpoint ddp4_zo2 ddp4_ddp2 8 "and writes the same state at step 8"
resume zo2_ddp4 zo2 4 "${DDP[@]}"
resume zo2_zo4 zo2 4 "${ZO[@]}"
same zo2_ddp4 zo2_zo4 4 "ddp@4 resumes zero-offload@2's checkpoint exactly as zero-offload@4 does"
same_checkpoint zo2_ddp4 zo2_zo4 8 "and writes the same state at step 8"
rm -rf "$WORK"
