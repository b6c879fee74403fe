#!/usr/bin/env bash
# Single-rank ddp against no strategy, same model and data ("small", 80
# steps): the median step time of each and the overhead of ddp in percent.
# The target is within 3%. Run from the project root after `make`.
set -euo pipefail
TESSEL=${TESSEL:-build/bin/tessel}
cd "$(dirname "$0")/.."
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
step_ms() { tail -n 60 "$1" | sed -n 's/.*"step_time_s":\([^,]*\).*/\1/p' | median | awk '{print 1000 * $1}'; }

common=(--set train.steps=80 --set log.every=1000)
# alternate the two to spread any drift of the machine over both
for round in 1 2; do
  "$TESSEL" run bench/configs/small.yaml "${common[@]}" --set log.dir=build/bench/ddp_none_$round >/dev/null 2>&1
  "$TESSEL" run bench/configs/small.yaml "${common[@]}" --set log.dir=build/bench/ddp_one_$round \
    --set plugin.name=ddp >/dev/null 2>&1
done
none=$(for r in 1 2; do step_ms build/bench/ddp_none_$r/metrics.jsonl; done | median)
ddp=$(for r in 1 2; do step_ms build/bench/ddp_one_$r/metrics.jsonl; done | median)
awk -v a="$none" -v b="$ddp" 'BEGIN {
  printf "no strategy: %.2f ms/step\nddp, 1 rank: %.2f ms/step\noverhead:    %+.1f%%\n", a, b, 100 * (b - a) / a }'
