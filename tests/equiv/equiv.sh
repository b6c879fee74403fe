#!/usr/bin/env bash
# The strategy equivalence driver, reused by every strategy's tests.
#
#   equiv.sh TESSEL SRC TMP NAME CONFIG RANKS TOL [--set KEY=VALUE]...
#
# Trains CONFIG twice for the same steps, model, data and seed: once as one
# process with no strategy (plugin: null, set after the --set arguments, so
# these may set the strategy's options too) and once under `tessel launch
# -n RANKS` with the config's strategy; then compares the per-step losses of
# the two metrics files. Passes when every step's |a - b| / |a| <= TOL.
# Leaves both metrics files in TMP/NAME.* only on failure. Prints the
# largest relative difference either way. EQUIV_STEPS in the environment
# trains that many steps instead of 20 (tests/equiv/sweep.sh trains 10).
#
# Why a tolerance and not bitwise: a strategy changes the order in which
# fp32 sums are taken (a gradient summed over ranks, a split dot product),
# which rounds differently; AdamW then carries those differences on. Over 20
# steps of the small models used here they stay near 1e-7..1e-6 relative;
# 1e-5 leaves an order of magnitude of room while any real divergence (a
# gradient counted twice, a missed shard) shows at 1e-2 or more.
#
# The first step's gradient norm is compared too, within GRAD_TOL = 5e-7
# relative: both runs start from the same weights, so before any update
# only the order of the sums separates them (at most 4.8e-8 over every
# equivalence test here), and nothing chaotic grows it. A small parameter's
# gradient left partial, which AdamW's later steps may hide in the losses,
# shows there: Qwen3's per-head q/k norms without their sum over the ranks
# that hold the heads move it by 1.8e-6 (hybrid tp 2) to 5.1e-6 (tp2d).
#
# The validation losses (at the end when the data has a validation split,
# and every train.eval_every steps when the --set arguments ask) are compared
# within TOL too: evaluation takes a path of its own through a strategy
# (hybrid's pipeline has an eval_step), which the training losses do not
# cover.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3; NAME=$4; CONFIG=$5; RANKS=$6; TOL=$7
GRAD_TOL=5e-7
STEPS=${EQUIV_STEPS:-20}
shift 7
WORK=$TMP/$NAME.$$
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$SRC"

common=(--set train.steps=$STEPS --set train.sample_tokens=0 --set train.eval_every=0 --set checkpoint.resume=never
        --set log.progress=never --set data.dir="$WORK/data" --set device.threads=1 "$@")
losses() { sed -n 's/.*"loss":\([^,]*\),.*/\1/p' "$1"; }
first_grad_norm() { sed -n '1s/.*"grad_norm":\([^,]*\),.*/\1/p' "$1"; }
val_losses() { sed -n 's/.*"step":\([0-9]*\),.*"val_loss":\([^,}]*\).*/\1 \2/p' "$1"; }

if ! "$TESSEL" run "$CONFIG" --set log.dir="$WORK/ref" "${common[@]}" --set plugin=null >"$WORK/ref.log" 2>&1; then
  cat "$WORK/ref.log" >&2
  echo "FAIL: the single-process reference run failed" >&2
  exit 1
fi
if ! timeout 600 "$TESSEL" launch -n "$RANKS" "$CONFIG" --set log.dir="$WORK/run" "${common[@]}" \
     >"$WORK/run.log" 2>&1; then
  cat "$WORK/run.log" >&2
  echo "FAIL: the $RANKS-rank run failed" >&2
  exit 1
fi
losses "$WORK/ref/metrics.jsonl" >"$WORK/a"
losses "$WORK/run/metrics.jsonl" >"$WORK/b"
n=$(wc -l <"$WORK/a")
[ "$n" -eq "$STEPS" ] && [ "$(wc -l <"$WORK/b")" -eq "$STEPS" ] || { echo "FAIL: expected $STEPS steps, got $n and $(wc -l <"$WORK/b")" >&2; exit 1; }
# the three comparisons, each printed, then one verdict
failed=()
if ! echo "$(first_grad_norm "$WORK/ref/metrics.jsonl") $(first_grad_norm "$WORK/run/metrics.jsonl")" |
     awk -v tol="$GRAD_TOL" '{ d = ($1 - $2) / $1; if (d < 0) d = -d
       printf "step 1 gradient norm relative difference %.3g (tolerance %g)\n", d, tol
       exit !(NF == 2 && d <= tol) }'; then
  failed+=("the first step's gradients differ from one process's")
fi
val_losses "$WORK/ref/metrics.jsonl" >"$WORK/va"
val_losses "$WORK/run/metrics.jsonl" >"$WORK/vb"
if [ -s "$WORK/va" ] || [ -s "$WORK/vb" ]; then
  if ! paste "$WORK/va" "$WORK/vb" | awk -v tol="$TOL" '
       { if (NF != 4 || $1 != $3) bad = 1; else { d = ($2 - $4) / $2; if (d < 0) d = -d; if (d > worst) { worst = d; at = $1 } } }
       END { printf "validation loss relative difference %.3g at step %d (tolerance %g)\n", worst, at, tol
             exit !(!bad && worst <= tol) }'; then
    paste "$WORK/va" "$WORK/vb" >&2
    failed+=("the validation losses differ")
  fi
fi
if ! paste "$WORK/a" "$WORK/b" | awk -v tol="$TOL" '
     { d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > worst) { worst = d; at = NR } }
     END { printf "largest relative loss difference %.3g at step %d (tolerance %g)\n", worst, at, tol; exit !(worst <= tol) }'; then
  paste "$WORK/a" "$WORK/b" >&2
  failed+=("$RANKS ranks diverge from one process")
fi
[ ${#failed[@]} -eq 0 ] && { rm -rf "$WORK"; exit 0; }
for f in "${failed[@]}"; do echo "FAIL: $f; files kept in $WORK" >&2; done
exit 1
