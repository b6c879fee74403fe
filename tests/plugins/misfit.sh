# A strategy's answers that do not fit the model or each other
# (tests/plugins/misfit.c, one misfit per MISFIT mode) are refused before
# the first step, with the strategy, the hook, the parameter and what does
# not fit; they once trained a silently different model, or crashed inside
# the core. `one`: what one rank's answers show (tessel check --world 2, and
# one process for a plugin-stored part never bound); `ranks`: what only the
# ranks together show (tessel launch -n 2).
set -euo pipefail
WHICH=$1; TESSEL=$2; SRC=$3; TMP=$4; PLUGINS=$5
WORK=$TMP/misfit.$WHICH.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$WORK/run.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16}
data: {text: ["$SRC/core/config/*.c"], dir: $WORK/data}
train: {steps: 2, batch_size: 4, sample_tokens: 0}
device: {threads: 1}
log: {progress: never, dir: $WORK/run}
plugin: {path: $PLUGINS/misfit/libtessel-testmisfit.so}
YAML
# expect MODE STATUS TEXT COMMAND...: the command with MISFIT=MODE exits
# with STATUS and says TEXT
expect() {
  local mode=$1 want=$2 text=$3 rc
  shift 3
  set +e
  MISFIT=$mode timeout 60 "$@" >"$WORK/$mode.log" 2>&1
  rc=$?
  set -e
  [ $rc -eq "$want" ] || { cat "$WORK/$mode.log" >&2; fail "$mode: exit status $rc, expected $want"; }
  [ -z "$text" ] || grep -qF -- "$text" "$WORK/$mode.log" || { cat "$WORK/$mode.log" >&2; fail "$mode: no '$text'"; }
  ! grep -q "^step" "$WORK/$mode.log" || [ "$want" -eq 0 ] || fail "$mode: a step was taken"
}
check=("$TESSEL" check "$WORK/run.yaml" --world 2 --quiet)
launch=("$TESSEL" launch -n 2 "$WORK/run.yaml")

S="strategy 'testmisfit' failed in"
if [ "$WHICH" = one ]; then
  expect none 0 "" "${check[@]}"
  expect positive 1 "$S layout(wte.weight) on rank 0: returned 1, which is not a tessel_status" "${check[@]}"
  expect store 1 "$S layout(wte.weight) on rank 0: store 9 is not a tessel_store" "${check[@]}"
  expect split_twice 1 "$S layout(wte.weight) on rank 0: dimension 0 is split twice" "${check[@]}"
  expect split_whole 1 "$S layout(wte.weight) with geometry on rank 0: the core's embedding in unit 0 (embedding) reads this rank's part of wte.weight as [256, 32] by the geometry (width 32, heads 2, kv_heads 2, ffn 128), but the layout keeps [128, 32]" "${check[@]}"
  expect absent 1 "$S layout(wte.weight) on rank 0: unit 0 (embedding) runs on this rank, but its embedding uses wte.weight, which the layout makes ABSENT here" "${check[@]}"
  expect rows 1 "$S geometry on rank 0: the core's embedding in unit 0 (embedding) does not fit the geometry: it covers all B·T = 32 rows of a micro-batch, but the geometry gives the residual stream rows 1" "${check[@]}"
  expect width 1 "$S layout(wte.weight) with geometry on rank 0: the core's embedding in unit 0 (embedding) reads this rank's part of wte.weight as [256, 7]" "${check[@]}"
  expect heads 1 "$S layout(h.0.attn.c_attn.weight) with geometry on rank 0: the core's linear in unit 1 (block 0) reads this rank's part of h.0.attn.c_attn.weight as [32, 48]" "${check[@]}"
  expect slots 1 "$S geometry on rank 0: inconsistent geometry: act_slots is below 1" "${check[@]}"
  # a strategy of ABI 2.2 that splits the heads of a Llama with per-head
  # q/k norms would leave their gradients partial
  sed -e 's/channels: 32,/channels: 32, arch: llama, qk_norm: true,/' -e 's/testmisfit\.so/testmisfitold.so/' \
    "$WORK/run.yaml" >"$WORK/old.yaml"
  expect heads 1 "strategy 'testmisfitold' splits the attention heads and was built for plugin ABI 2.2, before the per-head q/k norms of model.qk_norm (ABI 2.3)" \
    "$TESSEL" check "$WORK/old.yaml" --world 2 --quiet
  # one of ABI 2.2 whose attention hooks would attend past a sliding window
  sed -e 's/channels: 32,/channels: 32, arch: llama, sliding_window: 4,/' -e 's/testmisfit\.so/testmisfitold.so/' \
    "$WORK/run.yaml" >"$WORK/window.yaml"
  expect none 1 "strategy 'testmisfitold' computes attention itself and was built for plugin ABI 2.2, before the sliding window of model.sliding_window (ABI 2.4)" \
    "$TESSEL" check "$WORK/window.yaml" --world 2 --quiet
  expect unbound 1 "$S before_forward: wte.weight is STORE_PLUGIN and has no data bound when unit 0 (embedding) runs forward" \
    "$TESSEL" run "$WORK/run.yaml"
  # a hook that crashes: the process still dies by the signal (a core file,
  # Open MPI's backtrace), but first says the crash is in the plugin
  expect crash 139 "error: the process crashed (SIGSEGV, a bad memory access) inside the strategy plugin $PLUGINS/misfit/libtessel-testmisfit.so: a bug in it" \
    "$TESSEL" run "$WORK/run.yaml"
else
  expect flat_overlap 1 "the parts of wte.weight on ranks 0 and 1 overlap (rank 0 holds elements [0, 4112), rank 1 holds elements [4096, 8192))" "${launch[@]}"
  expect flat_missing 1 "elements [4096, 8192) of wte.weight are held by no rank (the ranks hold 4096 of its 8192 elements)" "${launch[@]}"
  expect split_same 1 "4096 of the 8192 elements of wte.weight are held by no rank (1 distinct part(s): rank 0 holds piece 0 of 2 along dimension 0)" "${launch[@]}"
  expect split_overlap 1 "the parts of wte.weight on ranks 0 and 1 overlap (rank 0 holds piece 0 of 2 along dimension 0, rank 1 holds piece 1 of 4 along dimension 0)" "${launch[@]}"
  expect mesh_differs 1 "strategy 'testmisfit' gave rank 1 the mesh dp 1 × x 2 (data axes 0x1), and rank 0 the mesh dp 2 (data axes 0x1): its mesh hook must answer the same on every rank" "${launch[@]}"
  expect inflight 1 "$S grads_finish on rank 0: it returned with 28 non-blocking transfer(s) still in flight" "${launch[@]}"
fi
rm -rf "$WORK"
echo "ok: every misfit ($WHICH) refused with what does not fit"
