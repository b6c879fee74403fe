#!/usr/bin/env bash
# tp3d's traffic: the payload bytes every communicator counts on rank 0 in a
# training step equal, byte for byte, the 3D volumes of docs/tp3d.md, on a
# 2×2×2 cube with 2 micro-batches and on the cube × dp 2 (16 ranks, 2
# micro-batches). Steps 1 and 2 are checked (the last step also runs the
# final validation pass).
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/tp3d_traffic.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$SRC/tests/equiv/metrics.sh"
common=(--set train.steps=3 --set checkpoint.resume=never --set log.progress=never --set data.dir="$WORK/data"
        --set device.threads=1)

# expected L C T V b q dp n: "group bytes" per step (fp32) for L blocks, C
# channels, T tokens a sequence, vocabulary V, b sequences per micro-batch of
# a data rank, a q×q×q cube, dp replicas, n micro-batches. r is a rank's rows.
expected() {
  awk -v L="$1" -v C="$2" -v T="$3" -v V="$4" -v b="$5" -v q="$6" -v dp="$7" -v n="$8" 'BEGIN {
    r = b / (q * q) * T
    # per block per micro-batch, 4 bytes an element. A linear [K -> N] moves
    # r·K (x all-gathered, dx reduce-scattered) on its input axis, r·N (y
    # reduce-scattered, dy all-gathered) on its output axis, K·N/q² (W
    # all-gathered, dW reduce-scattered) on k. c_attn [C->3C] and c_fc
    # [C->4C] go i -> j, attn.c_proj [C->C] and mlp.c_proj [4C->C] j -> i;
    # the two layer norms all-reduce 2r doubles forward and backward along j.
    blk_k = 4 * 2 * 12 * C * C / (q * q)
    blk_i = 4 * 2 * r * (C + C + C + C)
    blk_j = 4 * 2 * r * (3 * C + 4 * C + C + 4 * C) + 4 * 16 * r
    # per micro-batch outside the blocks: embedding (wte gathered and its
    # gradient reduce-scattered along k, V·C/q² each; r·C along i each way),
    # head (the same product with wte: r·C twice on i, V·C/q² twice on k,
    # r·V twice on j; cross-entropy max 4r and sums 16r bytes on i), ln_f
    # statistics (2 × 16r bytes on j).
    k = n * (L * blk_k + 4 * 4 * V * C / (q * q))
    i = n * (L * blk_i + 4 * 4 * r * C + 20 * r)
    j = n * (L * blk_j + 4 * 2 * r * V + 32 * r)
    # per step: gradients of replicated parameters. Layer norms, wpe and the
    # biases of attn.c_proj and mlp.c_proj along k and i; c_attn and c_fc
    # biases along k and j; weights and wte (one piece per rank) along dp.
    ki = 4 * (L * 6 * C / q + T * C / q + 2 * C / q)
    kj = 4 * (L * 7 * C / q)
    w = 4 * (L * 12 * C * C / (q * q * q) + V * C / (q * q * q))
    pre = dp > 1 ? "dp+" : ""
    out["k"] = k; out["i"] = i; out["j"] = j; out[pre "k+i"] = ki; out[pre "k+j"] = kj
    if (dp > 1) out["dp"] = w
    printf "# per block per micro-batch: k %d, i %d, j %d bytes (r = %d rows)\n", blk_k, blk_i, blk_j, r
    for (g in out) printf "%s %d\n", g, out[g]
  }' | sort
}

check() { # NAME RANKS CONFIG MODEL... [RUN ARGS]...
  expected "${@:4:8}" >"$WORK/$1.expected"
  payload_check "$1" "$2" "$3" "$WORK/$1.expected" "${@:12}"
}

#     name  ranks config               L C  T  V   b q dp n
check cube  8  tests/tp3d/tiny.yaml    2 64 32 256 4 2 1  2 --set train.micro_batch_size=4
check dp2   16 tests/tp3d/dp2.yaml     2 64 32 256 4 2 2  2
rm -rf "$WORK"
