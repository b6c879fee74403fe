#!/usr/bin/env bash
# Plugins built against an older and a newer minor of plugin.h (see
# minor.awk) load and train like one process, as does the same plugin built
# against this one: `tessel plugin-check` at 1 and 2 ranks passes all three.
# Planned: the current and newer builds' estimates (sized structs crossing
# both ways through the query's callbacks) predict their 2-rank runs
# exactly (plan_check, tolerance 0); the older build, whose table ends
# before the estimate hook, is listed as having no estimate.
#
#   minor.sh TESSEL PLUGINS PLAN_CHECK SRC TMP
set -uo pipefail
TESSEL=$1; PLUGINS=$2; CHECK=$3; SRC=$4; TMP=$5
WORK=$TMP/abi_minor.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
sets=(--set "plugin={name: probe}" --set data.dir="$WORK/data")
for build in current older newer; do
  so="$PLUGINS/probe-$build/libtessel-probe.so"
  [ -f "$so" ] || fail "$so was not built"
  out=$("$TESSEL" plugin-check "$so" --ranks 1,2 2>&1)
  grep -q "^result: ok" <<<"$out" || { echo "$out" >&2; fail "the probe built against the $build header fails plugin-check"; }
  echo "ok: probe built against the $build plugin.h passes plugin-check"
  export TESSEL_PLUGIN_PATH="$PLUGINS/probe-$build"
  "$TESSEL" plan tests/plan/gpt2.yaml --world 2 --strategy probe "${sets[@]}" --json "$WORK/$build.json" \
    >"$WORK/$build.plan" 2>&1 || { cat "$WORK/$build.plan" >&2; fail "tessel plan fails on the $build probe"; }
  if [ "$build" = older ]; then
    grep -q '"no_estimate"' "$WORK/$build.json" || fail "the older probe (no estimate hook) was not listed as having no estimate"
    echo "ok: the probe built against the older plugin.h is planned as having no estimate"
    continue
  fi
  "$TESSEL" launch -n 2 tests/plan/gpt2.yaml "${sets[@]}" --set log.dir="$WORK/$build" >"$WORK/$build.log" 2>&1 \
    || { cat "$WORK/$build.log" >&2; fail "the $build probe's 2-rank run failed"; }
  "$CHECK" "$WORK/$build.json" "$WORK/$build/metrics.jsonl" 0 || fail "the $build probe's estimate does not hold"
  echo "ok: the estimate of the probe built against the $build plugin.h holds exactly"
done
rm -rf "$WORK"
