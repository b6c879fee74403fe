#!/usr/bin/env bash
# tp3d's traffic: the payload bytes every communicator counts on rank 0 in a
# training step equal, byte for byte, the 3D volumes of docs/tp3d.md, on a
# 2×2×2 cube with 2 micro-batches and on the cube × dp 2 (16 ranks, 2
# micro-batches), and for a Llama with grouped-query attention on the cube. Steps 1 and 2 are checked (the last step also runs the
# final validation pass).
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/tp3d_traffic.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$SRC/tests/equiv/metrics.sh"
common=(--set train.steps=3 --set checkpoint.resume=never --set log.progress=never --set data.dir="$WORK/data"
        --set device.threads=1)

# expected ARCH L C T V b q dp n [Ckv F]: "group bytes" per step (fp32) for a
# GPT-2 or a Llama of L blocks, C channels, T tokens a sequence, vocabulary
# V (a Llama: Ckv = kv_heads · head size key/value channels, F = ffn), b
# sequences per micro-batch of a data rank, a q×q×q cube, dp replicas, n
# micro-batches. r is a rank's rows.
expected() {
  awk -v A="$1" -v L="$2" -v C="$3" -v T="$4" -v V="$5" -v b="$6" -v q="$7" -v dp="$8" -v n="$9" \
      -v Ckv="${10:-0}" -v F="${11:-0}" 'BEGIN {
    r = b / (q * q) * T
    llama = A == "llama"
    # per block per micro-batch, 4 bytes an element. A linear [K -> N] moves
    # r·K (x all-gathered, dx reduce-scattered) on its input axis, r·N (y
    # reduce-scattered, dy all-gathered) on its output axis, K·N/q² (W
    # all-gathered, dW reduce-scattered) on k. Column-parallel linears go
    # i -> j: GPT-2 c_attn [C->3C] and c_fc [C->4C]; Llama q [C->C], k and v
    # [C->Ckv], gate and up [C->F]. Row-parallel ones go j -> i: attn.c_proj
    # and o [C->C], mlp.c_proj and down [F->C]. The two norms all-reduce
    # their statistics along j, forward and backward: 2 doubles a row for a
    # layer norm, 1 for an RMS norm.
    stats = llama ? 1 : 2
    sumKN = llama ? 2 * C * C + 2 * C * Ckv + 3 * C * F : 12 * C * C
    on_i = llama ? 7 * C : 4 * C
    on_j = llama ? 2 * C + 2 * Ckv + 3 * F : 12 * C
    blk_k = 4 * 2 * sumKN / (q * q)
    blk_i = 4 * 2 * r * on_i
    blk_j = 4 * 2 * r * on_j + 2 * 2 * 8 * stats * r
    # per micro-batch outside the blocks: embedding (its table gathered and
    # its gradient reduce-scattered along k, V·C/q² each; r·C along i each
    # way), head (the same product with wte or the Llama lm_head: r·C twice
    # on i, V·C/q² twice on k, r·V twice on j; cross-entropy max 4r and sums
    # 16r bytes on i), the final norm statistics (2 × 8·stats·r bytes on j).
    k = n * (L * blk_k + 4 * 4 * V * C / (q * q))
    i = n * (L * blk_i + 4 * 4 * r * C + 20 * r)
    j = n * (L * blk_j + 4 * 2 * r * V + 2 * 8 * stats * r)
    # per step: gradients of replicated parameters. Norms, wpe and the
    # biases of attn.c_proj and mlp.c_proj along k and i; c_attn and c_fc
    # biases along k and j (a Llama has none); weights, the embedding and
    # the Llama lm_head (one piece per rank) along dp.
    ki = llama ? 4 * (L * 2 * C / q + C / q) : 4 * (L * 6 * C / q + T * C / q + 2 * C / q)
    kj = llama ? 0 : 4 * (L * 7 * C / q)
    w = 4 * (L * sumKN / (q * q * q) + (llama ? 2 : 1) * V * C / (q * q * q))
    pre = dp > 1 ? "dp+" : ""
    out["k"] = k; out["i"] = i; out["j"] = j; out[pre "k+i"] = ki
    if (kj) out[pre "k+j"] = kj
    if (dp > 1) out["dp"] = w
    printf "# %s per block per micro-batch: k %d, i %d, j %d bytes (r = %d rows)\n", A, blk_k, blk_i, blk_j, r
    for (g in out) printf "%s %d\n", g, out[g]
  }' | sort
}

check() { # NAME RANKS CONFIG MODEL(11) [RUN ARGS]...
  expected "${@:4:11}" >"$WORK/$1.expected"
  payload_check "$1" "$2" "$3" "$WORK/$1.expected" "${@:15}"
}

#     name        ranks config              arch  L C  T  V   b q dp n Ckv F
check cube        8  tests/tp3d/tiny.yaml   gpt2  2 64 32 256 4 2 1  2 0   0 --set train.micro_batch_size=4
check dp2         16 tests/tp3d/dp2.yaml    gpt2  2 64 32 256 4 2 2  2 0   0
# tests/tp3d/llama.yaml: 4 query heads on 2 key/value heads of 16 channels, ffn 192
check llama_cube  8  tests/tp3d/llama.yaml  llama 2 64 32 256 4 2 1  2 32  192 --set train.micro_batch_size=4
rm -rf "$WORK"
