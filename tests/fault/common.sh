# tests/fault/common.sh — shared by the fault tests. Usage from a test:
#   . "$(dirname "$0")/common.sh" TESSEL SRC TMP NAME
# sets TESSEL and WORK (a fresh absolute scratch directory), changes to the
# source tree, and provides fail (counted; `finish` reports and exits), die
# (fail and exit now) and tiny_config.
set -u
TESSEL=$1
WORK=$3/$4.$$
rm -rf "$WORK"
mkdir -p "$WORK"
cd "$2" || exit 1
WORK=$(realpath "$WORK")

failures=0
case_name=
fail() {
  echo "FAIL${case_name:+ [$case_name]}: $*" >&2
  failures=$((failures + 1))
}
die() {
  fail "$@"
  exit 1
}
finish() { # finish MESSAGE: exit 1 after failures, else print MESSAGE and clean up
  if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)" >&2
    exit 1
  fi
  rm -rf "$WORK"
  echo "$1"
}

# tiny_config STEPS KEEP [LINE...]: $WORK/tiny.yaml, a 34k-parameter model on
# this tree's config sources, a checkpoint after every step (one is about
# 410 KiB: the model 136 KiB, the AdamW moments 272 KiB)
tiny_config() {
  local steps=$1 keep=$2
  shift 2
  {
    echo "model: {layers: 2, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}"
    echo "data: {text: [\"core/config/*.c\"], dir: $WORK/data}"
    echo "train: {steps: $steps, batch_size: 4, seed: 7, sample_tokens: 0}"
    echo "device: {threads: 1}"
    echo "checkpoint: {every: 1, keep: $keep}"
    echo "log: {every: 1, progress: never}"
    for line in "$@"; do echo "$line"; done
  } >"$WORK/tiny.yaml"
}

# under_fault DIR FAULT LOG ARGS...: `tessel run $WORK/tiny.yaml ARGS` with
# the fault library ($LIB, tests/fault/inject.c) doing FAULT under DIR, its
# output in LOG; returns the run's exit status
under_fault() {
  local dir=$1 fault=$2 log=$3
  shift 3
  env LD_PRELOAD="$LIB" TESSEL_FAULT_DIR="$dir" TESSEL_FAULT="$fault" "$TESSEL" run "$WORK/tiny.yaml" "$@" >"$log" 2>&1
}
