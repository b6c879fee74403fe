#!/usr/bin/env bash
# The GPU training equivalence test for one strategy:
#
#   train_equiv.sh TESSEL SRC TMP PROBE PLUGIN
#
# Trains the strategy's config (configs/PLUGIN.yaml; configs/quickstart.yaml
# for "none"; for "llama_wide", configs/llama.yaml's model with q/k/v
# biases, heads twice channels / heads wide and Llama 3's rotary scaling,
# without a strategy; for "qwen3", that model with Qwen3's per-head q/k norms
# instead of the biases) for 20 steps twice on the same model, data and seed: once as
# one CPU process without a strategy (fp32 throughout: the reference, shared
# by the strategies whose configurations resolve alike), once
# with device.kind: cuda under the strategy, on as many ranks as this
# machine's GPUs allow (one GPU per rank, at least one; the strategy's
# options are fitted to that many ranks). Passes when every step's loss is
# finite and |cpu - cuda| / |cpu| <= 2e-2. Exits 77 (skipped) without a GPU,
# and when the strategy declines the GPU: `tessel run` exits 3 (its setup
# says the combination is unsupported), or exits 2 because the strategy
# declares TESSEL_CAP_FP32_ACTIVATIONS and the backend computes in bf16,
# as gemini does; so the test runs by itself once the strategy supports it. The CUDA run
# goes first, so a declined strategy costs no CPU reference run.
#
# Why 2e-2. The CUDA run keeps weights and activations in bf16 (8
# significant bits: each rounding errs by up to 2^-9 = 2e-3 relative) and
# accumulates in fp32; those roundings are unbiased and the loss averages
# them over every token of the batch (16 x 64 here), so the step-1 losses
# differ by about 1e-3. Twenty AdamW steps at the warm-up's small learning
# rates (<= 8e-4) carry that forward without amplifying it much; the gap
# stays at a few 1e-3. A broken kernel, a lost or doubled gradient, or a
# collective that reads a buffer before it is written moves the loss by
# 1e-1 or more within a few steps, or makes it NaN.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3; PROBE=$4; PLUGIN=$5
TOL=2e-2

if ! probe=$("$PROBE" 2>/dev/null); then
  echo "skipped: no CUDA device on this machine"
  exit 77
fi
gpus=${probe%% *}
echo "GPUs: $probe"

config=configs/$PLUGIN.yaml
ranks=1
opts=()
model=() # model options, for both runs
case $PLUGIN in
  none) config=configs/quickstart.yaml ;;
  llama_wide)
    config=configs/llama.yaml
    model=(--set model.qkv_bias=true --set model.head_dim=64
           --set "model.rope_scaling={type: llama3, factor: 4, original_positions: 16}") ;;
  qwen3)
    config=configs/llama.yaml
    model=(--set model.qk_norm=true --set model.head_dim=64) ;;
  ddp | gemini)
    # the data-parallel degree must divide the batch of 16
    for n in 4 2 1; do
      if [ "$gpus" -ge "$n" ]; then ranks=$n; break; fi
    done ;;
  hybrid)
    # tp x pp x dp, 2 sequences per micro-batch, 16 / dp per data rank
    if [ "$gpus" -ge 8 ]; then ranks=8
    elif [ "$gpus" -ge 4 ]; then ranks=4; opts=(plugin.tp=2 plugin.pp=2 plugin.num_microbatches=8)
    elif [ "$gpus" -ge 2 ]; then ranks=2; opts=(plugin.tp=2 plugin.pp=1 plugin.num_microbatches=8)
    else opts=(plugin.tp=1 plugin.pp=1 plugin.num_microbatches=8 plugin.sequence_parallel=false)
    fi ;;
  tp2d) if [ "$gpus" -ge 4 ]; then ranks=4; else opts=(plugin.tp=1); fi ;;
  tp3d) if [ "$gpus" -ge 8 ]; then ranks=8; else opts=(plugin.tp=1); fi ;;
  *) echo "unknown strategy $PLUGIN" >&2; exit 2 ;;
esac

WORK=$TMP/gpu_train_$PLUGIN.$$
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$SRC"
common=(--set train.steps=20 --set train.sample_tokens=0 --set train.eval_every=0 --set checkpoint.resume=never
        --set checkpoint.every=0 --set log.progress=never --set data.dir="$TMP/gpu_train_data" "${model[@]}")
sets=()
for o in "${opts[@]}"; do sets+=(--set "$o"); done
losses() { sed -n 's/.*"loss":\([^,]*\),.*/\1/p' "$1"; }

if [ "$ranks" -eq 1 ]; then
  run=("$TESSEL" run)
else
  run=("$TESSEL" launch -n "$ranks")
fi
set +e
timeout 90 "${run[@]}" "$config" --set device.kind=cuda --set log.dir="$WORK/cuda" "${common[@]}" "${sets[@]}" \
  >"$WORK/cuda.log" 2>&1
rc=$?
set -e
# declined: by its setup (exit 3), or refused for a capability the backend lacks
if [ $rc -eq 3 ] || { [ $rc -eq 2 ] && grep -q "needs fp32 activations" "$WORK/cuda.log"; }; then
  echo "skipped: $PLUGIN declines this GPU: $(grep -m1 "error\|needs" "$WORK/cuda.log")"
  rm -rf "$WORK"
  exit 77
fi
if [ $rc -ne 0 ]; then
  cat "$WORK/cuda.log" >&2
  echo "FAIL: the CUDA run ($PLUGIN, $ranks rank(s)) failed$([ $rc -eq 124 ] && echo ": no end within 90 s")" >&2
  exit 1
fi

# The CPU reference: one process, no strategy, the whole batch in one
# micro-batch (the same sums as accumulating micro-batches), on every core.
# The strategies' configs train the same model on the same data, seed and
# batch, so their references are one run: it is kept under the hash of its
# resolved configuration (`tessel check`) and reused.
ref=("$config" --set plugin=null --set device.kind=cpu --set device.threads=0 --set train.micro_batch_size=0
     "${common[@]}")
key=$("$TESSEL" check "${ref[@]}" --set log.dir=reference 2>/dev/null | grep -v "^ok: " | cksum | cut -d' ' -f1)
REF=$TMP/gpu_train_reference/$key
if [ ! -s "$REF/metrics.jsonl" ]; then
  rm -rf "$REF.part"
  if ! "$TESSEL" run "${ref[@]}" --set log.dir="$REF.part" >"$WORK/cpu.log" 2>&1; then
    cat "$WORK/cpu.log" >&2
    echo "FAIL: the CPU reference run failed" >&2
    exit 1
  fi
  rm -rf "$REF"
  mv "$REF.part" "$REF"
fi
grep -m1 "backend" "$WORK/cuda.log" || true
losses "$REF/metrics.jsonl" >"$WORK/a"
losses "$WORK/cuda/metrics.jsonl" >"$WORK/b"
n=$(wc -l <"$WORK/a")
[ "$n" -eq 20 ] && [ "$(wc -l <"$WORK/b")" -eq 20 ] || { echo "FAIL: expected 20 steps, got $n and $(wc -l <"$WORK/b")" >&2; exit 1; }
if paste "$WORK/a" "$WORK/b" | awk -v tol="$TOL" -v what="$PLUGIN on $ranks GPU rank(s)" '
     { if ($2 !~ /^-?[0-9]/) bad = 1
       d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > worst) { worst = d; at = NR } }
     END { printf "%s: largest relative loss difference to the CPU %.3g at step %d (tolerance %g)\n", what, worst, at, tol
           exit !(worst <= tol && !bad) }'; then
  rm -rf "$WORK"
else
  paste "$WORK/a" "$WORK/b" >&2
  echo "FAIL: the CUDA run diverges from the CPU; files kept in $WORK" >&2
  exit 1
fi
