#!/usr/bin/env bash
# tessel plan against the runs it predicts: for each case, plan the
# configuration for its world (`tessel plan --json`), train it for 3 steps,
# and check with plan_check that the predicted peak memory of every tier is
# within 5% of the ledger's measured peak (the largest rank's, the largest
# step's), that the device peak's split into parameters, gradients,
# optimizer state, activations and scratch is the ledger's (each within 5%
# of the peak), and that every communicator's predicted payload bytes and calls
# equal rank 0's counters in every step. 5% because the prediction leaves out
# only what no formula sees: buffers a kernel takes for itself in a step;
# measured differences are printed (most are 0.00%).
#
#   accuracy.sh TESSEL PLAN_CHECK SRC TMP CASE...
# CASE: "NAME|RANKS|CONFIG|PLUGIN|KEY=VALUE ...|FIRST", PLUGIN the plugin
# section as a YAML flow map, the KEY=VALUEs --set for both plan and run,
# FIRST the first step whose traffic is checked (default 1). @WORK@ in a
# case stands for this test's scratch directory.
set -euo pipefail
TESSEL=$1; CHECK=$2; SRC=$3; TMP=$4; shift 4
WORK=$TMP/plan_accuracy.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
for case in "$@"; do
  IFS='|' read -r name ranks config plugin rest first <<<"${case//@WORK@/$WORK}"
  sets=(--set "plugin=$plugin" --set data.dir="$WORK/data" --set log.dir="$WORK/$name")
  for kv in $rest; do sets+=(--set "$kv"); done
  "$TESSEL" plan "$config" --world "$ranks" "${sets[@]}" --json "$WORK/$name.json" >"$WORK/$name.plan" 2>&1 \
    || { cat "$WORK/$name.plan" >&2; fail "$name: tessel plan failed"; }
  "$TESSEL" launch -n "$ranks" "$config" "${sets[@]}" >"$WORK/$name.log" 2>&1 \
    || { cat "$WORK/$name.log" >&2; fail "$name: the $ranks-rank run failed"; }
  echo "== $name: $ranks rank(s), $config, plugin $plugin $rest"
  "$CHECK" "$WORK/$name.json" "$WORK/$name/metrics.jsonl" 0.05 "${first:-1}" || fail "$name: the prediction does not hold"
done
rm -rf "$WORK"
