#!/usr/bin/env bash
# tp3d's parameter memory: on a 2×2×2 cube rank 0 keeps exactly its pieces —
# wte and the four weight matrices of every block in q³ pieces, biases,
# layer norms and wpe in q — within 6% of 1/q³ of what one process keeps
# (metrics: memory.device.params). The model is the tiny one at 128
# channels, where the q-way tensors weigh what they do in real models (at
# 64 channels wpe alone puts rank 0 at 1.10 × 1/q³).
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/tp3d_params.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$SRC/tests/equiv/metrics.sh"
common=(--set train.steps=1 --set checkpoint.resume=never --set log.progress=never --set data.dir="$WORK/data"
        --set device.threads=1 --set model.channels=128)
# L=2, C=128, T=32, V=256; q=2; fp32 master weights
read -r one rank < <(awk 'BEGIN { L = 2; C = 128; T = 32; V = 256; q = 2; q3 = q*q*q
  print 4 * (V*C + T*C + L*(12*C*C + 13*C) + 2*C), 4 * (V*C/q3 + T*C/q + L*(12*C*C/q3 + 13*C/q) + 2*C/q) }')
params_check tests/tp3d/tiny.yaml 8 8 "$one" "$rank" 1.06
rm -rf "$WORK"
