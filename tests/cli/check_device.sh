#!/usr/bin/env bash
# tests/cli/check_device.sh — `tessel check` and `device.kind: cuda`.
#
# usage: check_device.sh TESSEL SOURCE_DIR SCRATCH_DIR WITH_CUDA
#   WITH_CUDA  ON when this build made the CUDA backend (libtessel-cuda.so)
#
# Without the CUDA backend `tessel run` refuses `kind: cuda` at the key
# (exit 2); `tessel check` once passed such a config. It must refuse it
# with run's very line: FILE:LINE:COL at device.kind, the same message, the
# same exit status. With the backend built, check must pass the config: it
# loads no GPU, so it says nothing of the machine it runs on.
set -u
TESSEL=$1; SRC=$2; TMP=$3; WITH_CUDA=$4
WORK=$TMP/check_device.$$
rm -rf "$WORK"; mkdir -p "$WORK"
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$WORK/cuda.yaml" <<YAML
model: {layers: 1, heads: 2, channels: 16, seq_len: 8}
data: {text: ["$SRC/core/config/*.c"], dir: $WORK/data}
train: {steps: 1, batch_size: 2}
device:
  threads: 1
  kind: cuda
log: {dir: $WORK/log, progress: never}
YAML
"$TESSEL" check "$WORK/cuda.yaml" --quiet >"$WORK/check.out" 2>"$WORK/check.err"
check_rc=$?
case $WITH_CUDA in
  ON | on | 1 | TRUE | true)
    [ $check_rc -eq 0 ] || { cat "$WORK/check.err" >&2; fail "check refused kind: cuda on a build with the CUDA backend"; }
    echo "ok: a build with the CUDA backend checks kind: cuda cleanly"
    exit 0 ;;
esac

want="$WORK/cuda.yaml:6:9: device.kind: cuda needs the CUDA backend libtessel-cuda.so, which this build does not have"
[ $check_rc -eq 2 ] || { cat "$WORK/check.err" >&2; fail "check exited $check_rc on kind: cuda without the CUDA backend, not 2"; }
head -n 1 "$WORK/check.err" | grep -qF -- "$want" || { cat "$WORK/check.err" >&2; fail "check did not say: $want"; }
grep -qF "Build tessel where nvcc is available" "$WORK/check.err" || fail "check did not say what to do"

"$TESSEL" run "$WORK/cuda.yaml" >"$WORK/run.out" 2>"$WORK/run.err"
run_rc=$?
[ $run_rc -eq $check_rc ] || { cat "$WORK/run.err" >&2; fail "run exited $run_rc, check $check_rc"; }
# the same paragraph, whatever run logs before it
grep -F -A 20 -- "$want" "$WORK/run.err" >"$WORK/run.msg"
grep -F -A 20 -- "$want" "$WORK/check.err" >"$WORK/check.msg"
cmp -s "$WORK/run.msg" "$WORK/check.msg" || { diff "$WORK/check.msg" "$WORK/run.msg" >&2; fail "check and run differ"; }
echo "ok: without the CUDA backend check refuses kind: cuda at 6:9 as run does (exit $check_rc)"
