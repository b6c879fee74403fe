# A strategy whose setup hook fails on rank 1 alone (tests/plugins/good.c
# built with TESTGOOD_SETUP_FAILS_ON_RANK=1): the job must end, within the
# guard, with the plugin's message naming the rank, and no rank may be
# left waiting. The other rank once waited for ever in the barrier of the
# peak measurement while rank 1 waited in the agreement after setup.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3; PLUGINS=$4
WORK=$TMP/setup_one_rank.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$WORK/run.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16}
data: {text: ["$SRC/core/config/*.c"], dir: $WORK/data}
train: {steps: 3, batch_size: 4, sample_tokens: 0}
device: {threads: 1}
log: {progress: never, dir: $WORK/run}
plugin: {path: $PLUGINS/good-setupfail/libtessel-testgood.so}
YAML
set +e
timeout 60 "$TESSEL" launch -n 2 "$WORK/run.yaml" >"$WORK/run.log" 2>&1
rc=$?
set -e
[ $rc -ne 124 ] || { cat "$WORK/run.log" >&2; fail "the job was still waiting after 60 s"; }
[ $rc -ne 0 ] && [ $rc -lt 128 ] || { cat "$WORK/run.log" >&2; fail "exit status $rc, expected a failure"; }
grep -q "testgood: no room for its buffers on rank 1" "$WORK/run.log" \
  || { cat "$WORK/run.log" >&2; fail "the plugin's message is not shown"; }
grep -q "^step" "$WORK/run.log" && fail "a step was taken"
rm -rf "$WORK"
echo "ok: setup failing on one rank ends the job with its message (exit $rc)"
