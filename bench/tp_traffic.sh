#!/usr/bin/env bash
# Per-rank communication of one training step under 1D (hybrid tp, Megatron),
# 2D (tp2d), 2.5D (tp2d with depth) and 3D (tp3d) tensor parallelism, for
# two model widths. Run from the project root after `make`.
#
# Measured: every configuration that fits this machine (4, 8 and 16 ranks,
# oversubscribed), rank 0's counters for step 1 summed over the strategy's
# communicators — payload (what each call was handed) and bus bytes (what a
# ring or tree moves per rank). Beside each, the same figure from the volume
# formulas of docs/hybrid.md, docs/tp2d.md and docs/tp3d.md (which the
# plugins' traffic tests check byte for byte). At 64 ranks only the formulas
# are used: those rows are computed, not measured.
#
# Model: L=2 blocks, 16 heads, T=64, V=256, one micro-batch of 16 sequences
# (M = 1024 tokens) per step; C = 128 and C = 512; fp32.
set -euo pipefail
TESSEL=${TESSEL:-build/bin/tessel}
cd "$(dirname "$0")/.."
OUT=build/bench/tp_traffic
mkdir -p "$OUT"
L=2; T=64; V=256; H=16; B=16
common=(--set model.layers=$L --set model.heads=$H --set model.seq_len=$T --set model.vocab_size=$V
        --set train.batch_size=$B --set train.steps=2 --set data.val_fraction=0 --set checkpoint.every=0
        --set checkpoint.resume=never --set train.sample_tokens=0 --set train.eval_every=0 --set log.progress=never
        --set device.threads=1 --set data.dir="$OUT/data")

# measure NAME RANKS C [--set plugin...]: "payload bus" of step 1 on rank 0
measure() {
  local name=$1 ranks=$2 c=$3
  shift 3
  "$TESSEL" launch -n "$ranks" configs/quickstart.yaml --set model.channels="$c" --set log.dir="$OUT/$name" \
    "${common[@]}" "$@" </dev/null >"$OUT/$name.log" 2>&1 || { cat "$OUT/$name.log" >&2; exit 1; }
  head -1 "$OUT/$name/metrics.jsonl" | grep -o '"comm":{.*}' | grep -o '"[a-z+]*":{"calls":[^}]*}' | grep -v '^"core"' |
    sed 's/.*"payload_bytes":\([0-9]*\),"bus_bytes":\([0-9]*\).*/\1 \2/' | awk '{p += $1; b += $2} END {printf "%.0f %.0f\n", p, b}'
}

# formula KIND N C Q D: "payload bus" per step from the documented volumes
formula() {
  awk -v kind="$1" -v N="$2" -v C="$3" -v q="$4" -v d="$5" -v L=$L -v T=$T -v V=$V -v M=$((B * T)) 'BEGIN {
    ar = 2 * (N - 1) / N   # the gradient norm: one double over the world
    if (kind == "1d") {    # 4 all-reduces of M·C per block, embedding and head 1 each, CE 20 bytes a row
      p = 4 * (L * 4 * M * C + 2 * M * C) + 20 * M + 8; b = p * ar
    } else if (kind == "2d") {
      m = M / (d * q); s = (q - 1) / q; a = 2 * s; g = d * q
      summa = L * 84 * m * C + 12 * m * V + L * 144 * C * C / q + 12 * V * C / q   # broadcasts, reduces: bus = payload
      stats = L * 64 * m + 20 * m + 32 * m                                        # all-reduces along a grid row
      emb = 8 * m * C                                                             # reduce-scatter + all-gather
      rep = 4 * (L * 13 * C / q + T * C / q + 2 * C / q)                          # over rows (and depth)
      wts = d > 1 ? 4 * (L * 12 * C * C / (q * q) + V * C / (q * q)) : 0         # over depth
      p = summa + stats + emb + rep + wts + 8
      b = summa + stats * a + emb * s + rep * 2 * (g - 1) / g + (d > 1 ? wts * 2 * (d - 1) / d : 0) + 8 * ar
    } else {               # 3d
      r = M / (q * q); s = (q - 1) / q; a = 2 * s; q2 = q * q
      gathers = L * (96 * C * C / q2 + 32 * r * C + 96 * r * C) + 16 * V * C / q2 + 16 * r * C + 8 * r * V
      stats = L * 64 * r + 20 * r + 32 * r
      rep = 4 * (L * 13 * C / q + T * C / q + 2 * C / q)                          # over k·i or k·j planes
      p = gathers + stats + rep + 8
      b = gathers * s + stats * a + rep * 2 * (q2 - 1) / q2 + 8 * ar
    }
    printf "%.0f %.0f\n", p, b
  }'
}

mib() { awk -v x="$1" 'BEGIN { printf "%.2f", x / 1048576 }'; }
# how the counters compare with the formulas: payload to the byte; bus up
# to the core's rounding of each call's bus bytes to a whole byte
agree() {
  awk -v mp="$1" -v mb="$2" -v fp="$3" -v fb="$4" 'BEGIN { d = mb - fb; if (d < 0) d = -d
    if (mp == fp && d < 1000) printf "payload exact, bus ±%.0f B", d
    else printf "MISMATCH: formula %.0f / %.0f", fp, fb }'
}

echo "| C | ranks | strategy | payload MiB/step | bus MiB/step | counted vs formula |"
echo "|---|---|---|---|---|---|"
for C in 128 512; do
  # name ranks label kind q d plugin-args
  while read -r name ranks label kind q d args; do
    read -r mp mb < <(measure "${name}_$C" "$ranks" "$C" $args)
    read -r fp fb < <(formula "$kind" "$ranks" "$C" "$q" "$d")
    echo "| $C | $ranks | $label | $(mib "$mp") | $(mib "$mb") | $(agree "$mp" "$mb" "$fp" "$fb") |"
  done <<'EOF'
h4   4  1D(tp=4)          1d 0 1 --set plugin.name=hybrid --set plugin.tp=4
d4   4  2D(q=2)           2d 2 1 --set plugin.name=tp2d --set plugin.tp=4
h8   8  1D(tp=8)          1d 0 1 --set plugin.name=hybrid --set plugin.tp=8
t8   8  2.5D(q=2,d=2)     2d 2 2 --set plugin.name=tp2d --set plugin.tp=8 --set plugin.depth=2
c8   8  3D(q=2)           3d 2 1 --set plugin.name=tp3d --set plugin.tp=8
h16  16 1D(tp=16)         1d 0 1 --set plugin.name=hybrid --set plugin.tp=16
d16  16 2D(q=4)           2d 4 1 --set plugin.name=tp2d --set plugin.tp=16
EOF
  for row in "1D(tp=64) 1d 0 1" "2D(q=8) 2d 8 1" "2.5D(q=4,d=4) 2d 4 4" "3D(q=4) 3d 4 1"; do
    read -r label kind q d <<<"$row"
    read -r fp fb < <(formula "$kind" 64 "$C" "$q" "$d")
    echo "| $C | 64 | $label | $(mib "$fp") | $(mib "$fb") | computed from the formulas |"
  done
done
