# A strategy that makes one bad host call (tests/plugins/hostcalls.c, one
# per HOSTCALLS mode): each is refused with the exit status the run owes it
# and a message naming the call and the bad value, where it once crashed
# the core, read or wrote past its arrays, or passed for success.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3; PLUGINS=$4
WORK=$TMP/hostcalls.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$WORK/run.yaml" <<YAML
model: {layers: 1, heads: 2, channels: 16, seq_len: 8, vocab_size: 256}
data: {text: ["$SRC/core/config/*.c"], dir: $WORK/data}
train: {steps: 2, batch_size: 4, sample_tokens: 0}
device: {threads: 1}
log: {progress: never}
plugin: {path: $PLUGINS/hostcalls/libtessel-testhostcalls.so}
YAML
# expect MODE STATUS TEXT: `tessel run` with HOSTCALLS=MODE exits with
# STATUS and says TEXT (its own log.dir: a finished run's checkpoint would
# make the next one resume past its steps)
expect() {
  local mode=$1 want=$2 text=$3 rc
  set +e
  HOSTCALLS=$mode timeout 60 "$TESSEL" run "$WORK/run.yaml" --set log.dir="$WORK/$mode" >"$WORK/$mode.log" 2>&1
  rc=$?
  set -e
  [ $rc -eq "$want" ] || { cat "$WORK/$mode.log" >&2; fail "$mode: exit status $rc, expected $want"; }
  [ -z "$text" ] || grep -qF -- "$text" "$WORK/$mode.log" || { cat "$WORK/$mode.log" >&2; fail "$mode: no '$text'"; }
}
S="strategy 'testhostcalls' failed in"
expect none 0 ""
E="comm->coord is not available yet: a rank's coordinates exist once the mesh hook has returned (from layout on)"
expect coord_create 1 "$S create: $E"
expect coord_mesh 1 "$S mesh: $E"
expect alloc_kind 1 "$S setup: mem->alloc: memory kind 12345 is not a tessel_mem_kind (PARAM 0 .. SCRATCH 4)"
expect alloc_tier 1 "$S setup: mem->alloc: tier 7 is not a tessel_tier (DEVICE 0, HOST 1 or NVME 2)"
expect stats_tier 1 "$S setup: mem->stats: tier 9 is not a tessel_tier"
expect copy_tier 1 "$S setup: mem->copy: the destination's tier 5 is not a tessel_tier"
expect copy_dst_end 1 "$S setup: mem->copy: 32 bytes at offset 48 run past the end of the destination 'copy device', 64 bytes on the device tier: copy at most 16 bytes there"
expect copy_src_end 1 "$S setup: mem->copy: 32 bytes at offset 8 run past the end of the source 'copy host', 64 bytes on the host tier, the pointer 40 bytes into it: copy at most 16 bytes there"
expect private_many 1 "$S setup: more than 8 private slots"
expect declines 3 "$S setup: declines: a test of declining"
expect scale_bf16 1 "$S setup: kernels->scale(BF16, 8 elements): the cpu backend does not support this kernel in these dtypes"
expect scale_count 1 "$S grads_finish: kernels->scale: the element count -5 is negative"
expect scale_dtype 1 "$S grads_finish: kernels->scale: dtype 42 is not a tessel_dtype"
expect norm_neg 1 "$S grad_norm: returned the sum of squares -4: a sum of squares is never negative"
expect norm_nan 1 "$S grad_norm: returned the sum of squares nan: the gradients are not finite"
expect norm_inf 1 "$S grad_norm: returned the sum of squares inf: the gradients are not finite"
expect private_null 1 "$S setup: state->add_private: the name is NULL"
expect act_null 1 "$S setup: model->act_memory: tier is NULL (tier and recompute need one entry per unit, 3 here)"
expect null_group 1 "$S grads_finish: comm->all_reduce: the group is NULL (get one with comm->group, from setup on)"
expect null_barrier 1 "$S grads_finish: comm->barrier: the group is NULL"
rm -rf "$WORK"
echo "ok: every bad host call refused with the call and the value"
