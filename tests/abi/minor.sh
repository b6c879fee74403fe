#!/usr/bin/env bash
# Plugins built against an older and a newer minor of plugin.h (see
# minor.awk) load and train like one process, as does the same plugin built
# against this one: `tessel plugin-check` at 1 and 2 ranks passes all three.
set -uo pipefail
TESSEL=$1; PLUGINS=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
for build in current older newer; do
  so="$PLUGINS/probe-$build/libtessel-probe.so"
  [ -f "$so" ] || fail "$so was not built"
  out=$("$TESSEL" plugin-check "$so" --ranks 1,2 2>&1)
  echo "$out" | grep -q "^result: ok" || { echo "$out" >&2; fail "the probe built against the $build header fails plugin-check"; }
  echo "ok: probe built against the $build plugin.h passes plugin-check"
done
