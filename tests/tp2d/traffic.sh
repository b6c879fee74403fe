#!/usr/bin/env bash
# tp2d's traffic: the payload bytes every communicator counts on rank 0 in a
# training step equal, byte for byte, the SUMMA volumes of docs/tp2d.md, for
# a 2×2 grid with 2 micro-batches, 2.5D (depth 2) and 2×2 × dp 2 with 2
# micro-batches. Steps 1 and 2 are checked (the last step also runs the
# final validation pass).
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/tp2d_traffic.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$SRC/tests/equiv/metrics.sh"
common=(--set train.steps=3 --set checkpoint.resume=never --set log.progress=never --set data.dir="$WORK/data"
        --set device.threads=1)

# expected NAME L C T V b q d dp n: "group bytes" per step (fp32, 4 bytes an
# element) for L blocks, C channels, T tokens a sequence, vocabulary V, b
# sequences per micro-batch of a data rank, a q×q grid, depth d, dp
# replicas, n micro-batches. Every rank counts the same; m is its rows.
expected() {
  awk -v L="$1" -v C="$2" -v T="$3" -v V="$4" -v b="$5" -v q="$6" -v d="$7" -v dp="$8" -v n="$9" 'BEGIN {
    m = b / (d * q) * T
    # per block per micro-batch: along grid rows ("col") the activation side
    # of 4 SUMMA linears, 3·m·K elements each with ΣK = 7C, and 4 layer-norm
    # statistic all-reduces of 2m doubles; along grid columns ("row") the
    # weight side, 3·K·N/q elements each with ΣK·N = 12C².
    blk_col = 4 * 21 * m * C + 4 * 16 * m
    blk_row = 4 * 36 * C * C / q
    # per micro-batch outside the blocks: embedding reduce-scatter and
    # all-gather (m·C each, "row"); head: 3 SUMMA forms with wte (3·m·V on
    # "col", 3·V·C/q on "row"), cross-entropy max (4m bytes) and sums (16m),
    # ln_f statistics (2 × 16m).
    col = n * (L * blk_col + 4 * 3 * m * V + 20 * m + 32 * m)
    row = n * (L * blk_row + 4 * 2 * m * C + 4 * 3 * V * C / q)
    # per step: gradients summed over replicas. Biases, layer norms and wpe
    # are replicated over rows (and depth, dp); weights and wte over depth, dp.
    rep = 4 * (L * 13 * C / q + T * C / q + 2 * C / q)
    wts = 4 * (L * 12 * C * C / (q * q) + V * C / (q * q))
    repg = (dp > 1 ? "dp+" : "") (d > 1 ? "depth+" : "") "row"
    wtsg = dp > 1 && d > 1 ? "dp+depth" : dp > 1 ? "dp" : d > 1 ? "depth" : ""
    out["col"] += col; out["row"] += row; out[repg] += rep
    if (wtsg != "") out[wtsg] += wts
    printf "# per block per micro-batch: col %d bytes, row %d bytes (m = %d rows)\n", blk_col, blk_row, m
    for (g in out) printf "%s %d\n", g, out[g]
  }' | sort
}

check() { # NAME RANKS CONFIG MODEL... [RUN ARGS]...
  expected "${@:4:9}" >"$WORK/$1.expected"
  payload_check "$1" "$2" "$3" "$WORK/$1.expected" "${@:13}"
}

#     name   ranks config                L C  T  V   b q d dp n
check grid   4 tests/tp2d/tiny.yaml      2 64 32 256 4 2 1 1 2 --set train.micro_batch_size=4
check depth2 8 tests/tp2d/depth2.yaml    2 64 32 256 8 2 2 1 1
check dp2    8 tests/tp2d/dp2.yaml       2 64 32 256 2 2 1 2 2
rm -rf "$WORK"
