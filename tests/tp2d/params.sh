#!/usr/bin/env bash
# tp2d's parameter memory: on a 2×2 grid rank 0 keeps exactly its blocks —
# wte and the four weight matrices of every block split q×q, biases, layer
# norms and wpe split q ways — within 5% of 1/q² of what one process keeps
# (metrics: memory.device.params).
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/tp2d_params.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$SRC/tests/equiv/metrics.sh"
common=(--set train.steps=1 --set checkpoint.resume=never --set log.progress=never --set data.dir="$WORK/data"
        --set device.threads=1)
# tests/tp2d/tiny.yaml: L=2, C=64, T=32, V=256; q=2; fp32 master weights
read -r one rank < <(awk 'BEGIN { L = 2; C = 64; T = 32; V = 256; q = 2
  print 4 * (V*C + T*C + L*(12*C*C + 13*C) + 2*C), 4 * (V*C/(q*q) + T*C/q + L*(12*C*C/(q*q) + 13*C/q) + 2*C/q) }')
params_check tests/tp2d/tiny.yaml 4 4 "$one" "$rank" 1.05
rm -rf "$WORK"
