#!/usr/bin/env bash
# How `tessel plan` scales with the model's depth: wall-clock time and peak
# resident memory of planning tests/plan/gpt2.yaml (every installed
# strategy, no profile) with model.layers set to each LAYERS, at each WORLD.
#
#   bench/plan_layers.sh [LAYERS...]     (default: 1024 4096 16384; from the project root, after make)
#   WORLDS="2 8" TESSEL=build/bin/tessel bench/plan_layers.sh 1024
set -euo pipefail
TESSEL=${TESSEL:-build/bin/tessel}
layers=${*:-1024 4096 16384}
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$PWD/build/bench/plan-layers-cache}
uptime
printf '%-6s  %-6s  %10s  %12s  %s\n' world layers seconds "peak RSS" candidates
for w in ${WORLDS:-2 8}; do
  for l in $layers; do
    out=$(mktemp)
    /usr/bin/time -f '%e %M' -o "$out.time" "$TESSEL" plan tests/plan/gpt2.yaml --world "$w" \
      --set model.layers="$l" >"$out" 2>&1
    read -r secs kib <"$out.time"
    printf '%-6s  %-6s  %10s  %9s MiB  %s\n' "$w" "$l" "$secs" "$((kib / 1024))" \
      "$(sed -n 's/^\([0-9]* candidate(s)\) for.*/\1/p' "$out")"
    rm -f "$out" "$out.time"
  done
done
uptime
