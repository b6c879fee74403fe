#!/bin/sh
# tests/plugins/rank_mismatch.sh — two ranks that load different builds of
# the same strategy must stop at the cross-rank agreement check, before any
# data is touched, with a report naming the rank that differs and both
# versions. A control run, where both ranks load the same build, must get
# past that check (it then fails on training data that is not a shard).
#
# usage: rank_mismatch.sh TESSEL TEST_PLUGIN_DIR SCRATCH_DIR MPIEXEC
#
# MPMD launch, one app context per rank, each with its own
# TESSEL_PLUGIN_PATH (set through `env`, which works with any MPI's
# launcher): rank 0 sees good-v1 (testgood 1.0), rank 1 good-v2 (2.0).
# Open MPI needs --oversubscribe on a machine with fewer cores than ranks and
# --allow-run-as-root as root; nothing else is needed.
set -u

TESSEL=$1
PLUGINS=$2
TMP=$3
MPIEXEC=$4

case $TESSEL in /*) ;; *) echo "TESSEL must be an absolute path, got $TESSEL" >&2; exit 1 ;; esac
[ -x "$TESSEL" ] || { echo "$TESSEL is not an executable" >&2; exit 1; }

rm -rf "$TMP"
mkdir -p "$TMP" || exit 1
cd "$TMP" || exit 1
unset TESSEL_PLUGIN_PATH

flags=""
if "$MPIEXEC" --version 2>&1 | grep -qiE "open ?mpi|openrte|open-mpi"; then
  flags="--oversubscribe"
  [ "$(id -u)" -eq 0 ] && flags="$flags --allow-run-as-root"
fi

mkdir -p "$TMP/none" && echo "not a shard" >"$TMP/none/bad.bin"
cat >"$TMP/run.yaml" <<EOF
model: {layers: 1, heads: 1, channels: 8, seq_len: 8}
data: {train: "$TMP/none/*.bin"}
train: {steps: 1}
log: {dir: $TMP/runs}
plugin:
  name: testgood
EOF

failures=0
fail() {
  echo "FAIL [$case_name]: $*" >&2
  failures=$((failures + 1))
}

# launch CASE DIR0 DIR1: rank 0 searches DIR0, rank 1 DIR1.
launch() {
  case_name=$1
  # $flags is a list of words.
  # shellcheck disable=SC2086
  timeout 60 "$MPIEXEC" $flags -n 1 env TESSEL_PLUGIN_PATH="$2" "$TESSEL" run "$TMP/run.yaml" \
    : -n 1 env TESSEL_PLUGIN_PATH="$3" "$TESSEL" run "$TMP/run.yaml" >"$TMP/$case_name.log" 2>&1
  status=$?
  log="$TMP/$case_name.log"
  if [ "$status" -eq 124 ]; then
    fail "did not finish within 60 s"
  elif [ "$status" -ge 128 ]; then
    fail "crashed or was killed (status $status)"
  elif [ "$status" -eq 0 ]; then
    fail "succeeded, but its training data is not a shard"
  fi
}

expect_log() {
  for text in "$@"; do
    grep -qF -- "$text" "$log" || fail "the output lacks: $text"
  done
}

show() {
  echo "--- [$case_name] status $status; output:" >&2
  cat "$log" >&2
}

# Different builds: the agreement check stops the run.
launch mismatch "$PLUGINS/good-v1" "$PLUGINS/good-v2"
expect_log "ranks loaded different builds of the strategy plugin" \
  "rank 0: $PLUGINS/good-v1/libtessel-testgood.so (version 1.0, build " \
  "rank 1 (differs from rank 0): $PLUGINS/good-v2/libtessel-testgood.so (version 2.0, build "
grep -q 'rank 0 (differs' "$log" && fail "rank 0 is reported as differing from itself"
grep -qF "none/*.bin" "$log" && fail "the run reached the data before stopping"
[ "$failures" -eq 0 ] || show

# The same build on both ranks: the check passes, the run reaches the data.
before=$failures
launch same "$PLUGINS/good-v1" "$PLUGINS/good-v1"
grep -q "different builds" "$log" && fail "ranks with the same build were reported as different"
expect_log "none/*.bin"
[ "$failures" -eq "$before" ] || show

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)" >&2
  exit 1
fi
echo "rank build mismatch detected; identical builds pass"
