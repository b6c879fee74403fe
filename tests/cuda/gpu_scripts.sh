#!/usr/bin/env bash
# The GPU scripts, checked where there is no GPU:
#
#   gpu_scripts.sh SRC TMP
#
# 1. `tests/gpu/run_all.sh --dry-run` lists every step (probe, build, unit,
#    sanitizer, strategies, bench) with a budget of at most 180 s, and the
#    budgets add up to its total, under the 480 s the GPU session allows
#    the script (8 of its 15 minutes, leaving a rerun's worth).
# 2. tests/gpu/train_equiv.sh, driven by a stand-in `tessel` and GPU probe,
#    turns each outcome into the right ctest verdict: a strategy that
#    declines the GPU (exit status 3) is skipped (77), a failed CUDA run is
#    a failure (1), no GPU is skipped (77), equal losses pass (0), and
#    losses 10% apart fail (1).
set -euo pipefail
SRC=$1
TMP=$2
rm -rf "$TMP"
mkdir -p "$TMP"
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# ---- 1. the plan
plan=$(bash "$SRC/tests/gpu/run_all.sh" --dry-run)
echo "$plan"
for s in probe build unit sanitizer strategies bench; do
  grep -qE "^  $s +[0-9]+ s " <<<"$plan" || fail "the plan has no step '$s'"
done
sum=$(echo "$plan" | awk '$1 != "total" && $3 == "s" {n += $2} END {print n + 0}')
total=$(echo "$plan" | awk '$1 == "total" {print $2}')
longest=$(echo "$plan" | awk '$1 != "total" && $3 == "s" && $2 > m {m = $2} END {print m + 0}')
[ "$sum" = "$total" ] || fail "the steps add up to $sum s, the plan says $total s"
[ "$total" -lt 480 ] || fail "the plan takes $total s, not under 480 s"
[ "$longest" -le 180 ] || fail "a step may take $longest s, more than 180 s"

# ---- 2. train_equiv.sh's verdicts
cat >"$TMP/probe-gpu" <<'EOF'
#!/bin/sh
echo "1 Stand-in GPU"
EOF
cat >"$TMP/probe-none" <<'EOF'
#!/bin/sh
echo "no CUDA device" >&2
exit 77
EOF
# The stand-in `tessel`: `check` prints its arguments as the resolved
# configuration; CUDA runs behave as $FAKE says; runs write 20 steps of
# metrics into their log.dir.
cat >"$TMP/tessel" <<'EOF'
#!/usr/bin/env bash
if [ "$1" = check ]; then echo "resolved: $*"; exit 0; fi
dir="" cuda=0
for a in "$@"; do
  case $a in log.dir=*) dir=${a#log.dir=} ;; device.kind=cuda) cuda=1 ;; esac
done
if [ $cuda -eq 1 ]; then
  case $FAKE in
    decline) echo "error: stand-in.setup: this strategy computes in fp32 only" >&2; exit 3 ;;
    fail) echo "error: a kernel failed" >&2; exit 1 ;;
  esac
fi
mkdir -p "$dir"
for i in $(seq 1 20); do
  loss=$(awk -v i=$i -v f=$([ $cuda -eq 1 ] && [ "$FAKE" = diverge ] && echo 1.1 || echo 1) \
         'BEGIN {printf "%.6f", f * (5.5 - 0.1 * i)}')
  echo "{\"step\":$i,\"loss\":$loss,\"lr\":0.001}"
done >"$dir/metrics.jsonl"
EOF
chmod +x "$TMP/probe-gpu" "$TMP/probe-none" "$TMP/tessel"
verdict() { # FAKE PROBE EXPECTED
  set +e
  FAKE=$1 bash "$SRC/tests/gpu/train_equiv.sh" "$TMP/tessel" "$SRC" "$TMP" "$TMP/$2" ddp >"$TMP/out" 2>&1
  local rc=$?
  set -e
  [ $rc -eq "$3" ] || { cat "$TMP/out" >&2; fail "train_equiv.sh with a CUDA run that does '$1' on $2: exit $rc, expected $3"; }
}
verdict decline probe-gpu 77
grep -q "skipped: ddp declines this GPU: error: stand-in.setup" "$TMP/out" || fail "the skip does not give the reason"
verdict fail probe-gpu 1
verdict ok probe-none 77
verdict ok probe-gpu 0
verdict diverge probe-gpu 1

[ $failures -eq 0 ] || exit 1
rm -rf "$TMP"
echo "ok: the GPU plan fits its budget, and train_equiv.sh's verdicts are right"
