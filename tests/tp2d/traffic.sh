#!/usr/bin/env bash
# tp2d's traffic: the payload bytes every communicator counts on rank 0 in a
# training step equal, byte for byte, the SUMMA volumes of docs/tp2d.md, for
# a 2×2 grid with 2 micro-batches, 2.5D (depth 2) and 2×2 × dp 2 with 2
# micro-batches, and for a Llama with grouped-query attention on the grid
# and the grid × dp 2. Steps 1 and 2 are checked (the last step also runs
# the final validation pass).
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/tp2d_traffic.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$SRC/tests/equiv/metrics.sh"
common=(--set train.steps=3 --set checkpoint.resume=never --set log.progress=never --set data.dir="$WORK/data"
        --set device.threads=1)

# expected ARCH L C T V b q d dp n [KV F]: "group bytes" per step (fp32, 4
# bytes an element) for a GPT-2 or a Llama of L blocks, C channels, T tokens
# a sequence, vocabulary V (a Llama: KV·C/H key/value channels, F = ffn),
# b sequences per micro-batch of a data rank, a q×q grid, depth d, dp
# replicas, n micro-batches. Every rank counts the same; m is its rows.
expected() {
  awk -v A="$1" -v L="$2" -v C="$3" -v T="$4" -v V="$5" -v b="$6" -v q="$7" -v d="$8" -v dp="$9" -v n="${10}" \
      -v Ckv="${11:-0}" -v F="${12:-0}" 'BEGIN {
    m = b / (d * q) * T
    # The linears of a block, [K -> N]. GPT-2: c_attn [C->3C], c_proj [C->C], c_fc
    # [C->4C], mlp.c_proj [4C->C], so ΣK = 7C and ΣK·N = 12C²; two layer
    # norms of 2 statistics a row. Llama: q [C->C], k and v [C->Ckv], o
    # [C->C], gate and up [C->F], down [F->C], so ΣK = 6C + F and ΣK·N =
    # 2C² + 2C·Ckv + 3C·F; two RMS norms of 1 statistic a row.
    llama = A == "llama"
    sumK = llama ? 6 * C + F : 7 * C
    sumKN = llama ? 2 * C * C + 2 * C * Ckv + 3 * C * F : 12 * C * C
    stats = llama ? 1 : 2
    # per block per micro-batch: along grid rows ("col") the activation side
    # of the SUMMA linears, 3·m·K elements each, and the all-reduces of the norm
    # statistics (forward and backward, doubles); along grid columns
    # ("row") the weight side, 3·K·N/q elements each.
    blk_col = 4 * 3 * m * sumK + 2 * 2 * 8 * stats * m
    blk_row = 4 * 3 * sumKN / q
    # per micro-batch outside the blocks: embedding reduce-scatter and
    # all-gather (m·C each, "row"); head: 3 SUMMA forms with its weight
    # (wte, or the Llama lm_head; 3·m·V on "col", 3·V·C/q on "row"),
    # cross-entropy max (4m bytes) and sums (16m), the statistics of the
    # final norm (2 × 8·stats·m).
    col = n * (L * blk_col + 4 * 3 * m * V + 20 * m + 2 * 8 * stats * m)
    row = n * (L * blk_row + 4 * 2 * m * C + 4 * 3 * V * C / q)
    # per step: gradients summed over replicas. Biases, norms and wpe are
    # replicated over rows (and depth, dp), weights, the embedding and the
    # Llama lm_head over depth, dp. GPT-2 per block: 13C of biases and
    # layer norms, then wpe T·C and ln_f 2C; Llama: 2C, then model.norm C.
    rep = llama ? 4 * (L * 2 * C / q + C / q) : 4 * (L * 13 * C / q + T * C / q + 2 * C / q)
    wts = 4 * (L * sumKN / (q * q) + (llama ? 2 : 1) * V * C / (q * q))
    repg = (dp > 1 ? "dp+" : "") (d > 1 ? "depth+" : "") "row"
    wtsg = dp > 1 && d > 1 ? "dp+depth" : dp > 1 ? "dp" : d > 1 ? "depth" : ""
    out["col"] += col; out["row"] += row; out[repg] += rep
    if (wtsg != "") out[wtsg] += wts
    printf "# %s per block per micro-batch: col %d bytes, row %d bytes (m = %d rows)\n", A, blk_col, blk_row, m
    for (g in out) printf "%s %d\n", g, out[g]
  }' | sort
}

check() { # NAME RANKS CONFIG MODEL(12) [RUN ARGS]...
  expected "${@:4:12}" >"$WORK/$1.expected"
  payload_check "$1" "$2" "$3" "$WORK/$1.expected" "${@:16}"
}

#     name        ranks config              arch  L C  T  V   b q d dp n KV·hs F
check grid        4 tests/tp2d/tiny.yaml    gpt2  2 64 32 256 4 2 1 1  2 0     0 --set train.micro_batch_size=4
check depth2      8 tests/tp2d/depth2.yaml  gpt2  2 64 32 256 8 2 2 1  1 0     0
check dp2         8 tests/tp2d/dp2.yaml     gpt2  2 64 32 256 2 2 1 2  2 0     0
# tests/tp2d/llama.yaml: 4 query heads on 2 key/value heads of 16 channels, ffn 192
check llama_grid  4 tests/tp2d/llama.yaml   llama 2 64 32 256 4 2 1 1  2 32    192 --set train.micro_batch_size=4
check llama_dp2   8 tests/tp2d/llama.yaml   llama 2 64 32 256 2 2 1 2  2 32    192 --set train.micro_batch_size=2 \
                                                                                   --set plugin.dp=2
rm -rf "$WORK"
