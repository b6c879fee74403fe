#!/usr/bin/env bash
# `tessel plan --validate` on this machine: measure its profile (the GEMM
# rate of one core, and every collective at 2, 4 and 8 ranks), then plan
# bench/configs/plan_small.yaml at 2, 4 and 8 ranks and run the best
# candidates through `tessel compare` (REPEAT, default 5, interleaved trials of 20 steps
# each), printing predicted against measured step time, memory and traffic,
# and whether the first-ranked is the measured fastest or tied with it.
# At 4 and 8 ranks on a machine with fewer cores the ranks share cores: the
# times measure that sharing too, and so does the profile taken the same way.
#
#   bench/plan_validate.sh [WORLD...]     (default: 2 4 8; from the project root, after make)
set -euo pipefail
TESSEL=${TESSEL:-build/bin/tessel}
OUT=${OUT:-runs/plan-validate}
worlds=${*:-2 4 8}
mkdir -p "$OUT"
export XDG_CACHE_HOME=$PWD/$OUT/cache
MPI=(mpirun --bind-to none --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
uptime | tee "$OUT/load.txt"
"$TESSEL" bench peak --threads 1 | tee "$OUT/peak.log"
for n in $worlds; do "${MPI[@]}" -n "$n" "$TESSEL" bench comm | tee "$OUT/comm$n.log"; done
# the candidates: at 2 ranks everything that fits; at 4 the best 8, and
# tp2d's 2×2 grid beside ddp; at 8 tp3d's cube beside ddp
validate() { # NAME WORLD TOP [--strategy S]...
  local name=$1 n=$2 top=$3; shift 3
  "$TESSEL" plan bench/configs/plan_small.yaml --world "$n" --top "$top" --validate --repeat "${REPEAT:-5}" --steps 20 \
    --write "$OUT/$name" "$@" | tee "$OUT/$name.log"
  uptime | tee -a "$OUT/load.txt"
}
for n in $worlds; do
  case $n in
    2) validate world2 2 12 ;;
    4) validate world4 4 8; validate tp2d4 4 2 --strategy tp2d --strategy ddp ;;
    *) validate tp3d$n "$n" 2 --strategy tp3d --strategy ddp ;;
  esac
done
