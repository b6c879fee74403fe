#!/usr/bin/env bash
# A/B step time of two tessel builds on the "small" and "baby" models,
# interleaved so that both see the same machine load:
#   bench/cpu_ab.sh A_TESSEL B_TESSEL [ROUNDS]
# Each round runs, for each model, A then B (40 steps, 2 threads) and takes
# the median step time of steps 11..40; the result is the median over the
# rounds, with the sgemm ceiling (`tessel bench peak --threads 2`, best of
# its repeats) measured once per round in between, and MFU = model FLOPs per
# step (6·N + 12·L·T·C per token, as the metrics count) / step time / ceiling.
# A library directory beside a binary is put first on LD_LIBRARY_PATH, so
# that a copied build from before the program linked its runtime statically
# runs its own libtessel.so. Timing lives here,
# never in the tests.
set -euo pipefail
A=$1; B=$2; ROUNDS=${3:-5}
cd "$(dirname "$0")/.."
OUT=build/bench/ab
mkdir -p "$OUT"
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p"; }
run() { # BIN ARGS...
  local bin=$1; shift
  LD_LIBRARY_PATH="$(dirname "$bin")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" "$@"
}
flops() { # model: FLOPs per step; N without the position table, as the metrics count
  case $1 in
    small) echo "3225088 4 64 256 256" ;;
    baby) echo "826112 4 64 128 768" ;;
  esac | awk '{ printf "%.0f", (6 * $1 + 12 * $2 * $3 * $4) * $5 }'
}
: >"$OUT/peaks"
for r in $(seq "$ROUNDS"); do
  run "$B" bench peak --threads 2 | sed -n 's/^peak: \([0-9.]*\).*/\1/p' >>"$OUT/peaks"
  for model in small baby; do
    for side in A B; do
      bin=$A; [ "$side" = B ] && bin=$B
      run "$bin" run "bench/configs/$model.yaml" --set log.dir="$OUT/${model}_${side}_$r" --set train.eval_batches=1 \
        >/dev/null 2>&1
      tail -n 30 "$OUT/${model}_${side}_$r/metrics.jsonl" | field step_time_s | median >>"$OUT/${model}_$side"
    done
  done
done
peak=$(median <"$OUT/peaks")
printf 'sgemm ceiling (2 threads): median of %d rounds %.1f GFLOP/s\n' "$ROUNDS" "$peak"
for model in small baby; do
  for side in A B; do
    ms=$(tail -n "$ROUNDS" "$OUT/${model}_$side" | median)
    printf '%-5s %s: %7.2f ms/step  MFU %5.1f%%  (median of %d rounds)\n' "$model" "$side" "$(awk -v s="$ms" 'BEGIN {print 1000 * s}')" \
      "$(awk -v s="$ms" -v f="$(flops $model)" -v p="$peak" 'BEGIN {print 100 * f / s / (p * 1e9)}')" "$ROUNDS"
  done
done
