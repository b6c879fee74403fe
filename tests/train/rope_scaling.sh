# A Llama's rotary scaling (model.rope_scaling) belongs to the model: its
# checkpoint records it, and a resume or a start from those weights whose
# config scales otherwise, or not at all, is refused at model.rope_scaling,
# as a differing rope_theta is (before, the scaling was not compared and
# the model went on with other rotary frequencies without a word). With
# the same scaling it resumes.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" rope_scaling
cat > "$WORK/rope.yaml" <<YAML
model: {arch: llama, layers: 1, heads: 2, channels: 16, seq_len: 16, vocab_size: 256,
        rope_scaling: {type: llama3, factor: 4, original_positions: 8}}
data: {text: ["core/config/*.c"], dir: $WORK/data, val_fraction: 0}
train: {steps: 2, batch_size: 2, seed: 7, sample_tokens: 0}
device: {threads: 1}
checkpoint: {every: 1, keep: 0}
log: {dir: $WORK/run, progress: never}
YAML
"$TESSEL" run "$WORK/rope.yaml" --set train.steps=1 >"$WORK/first.log" 2>&1 || { cat "$WORK/first.log" >&2; fail "training failed"; }
CK="$WORK/run/checkpoints/step_00000001"
grep -q '"factor":[[:space:]]*4,' "$CK/trainer.json" && grep -q '"original_positions":[[:space:]]*8' "$CK/trainer.json" ||
  fail "trainer.json does not record the scaling: $(cat "$CK/trainer.json")"

refused() { # WHAT PATTERN ARGS...: tessel run ARGS exits 2 with a line matching PATTERN
  local what=$1 pattern=$2 rc
  shift 2
  set +e
  "$TESSEL" run "$@" >/dev/null 2>"$WORK/err"
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q -- "$pattern" "$WORK/err" || fail "$what: exit $rc, $(cat "$WORK/err")"
}
theirs="holds rope_scaling {type: llama3, factor: 4, low_freq_factor: 1, high_freq_factor: 4, original_positions: 8}"
refused "resuming with another factor" \
  "model.rope_scaling.*: is {type: llama3, factor: 2, .*}, but checkpoint .* $theirs; resume with the model it holds" \
  "$WORK/rope.yaml" --set model.rope_scaling.factor=2
refused "resuming without the scaling" "model.rope_scaling: is none, but checkpoint .* $theirs" \
  "$WORK/rope.yaml" --set model.rope_scaling=null
refused "starting from its weights without the scaling" \
  "model.rope_scaling: is none, but the weights model.init_from names ($CK) have rope_scaling {type: llama3, factor: 4," \
  "$WORK/rope.yaml" --set model.rope_scaling=null --set model.init_from="$CK" --set log.dir="$WORK/other"
"$TESSEL" run "$WORK/rope.yaml" >"$WORK/second.log" 2>&1 || { cat "$WORK/second.log" >&2; fail "resuming failed"; }
grep -q "resum" "$WORK/second.log" && [ -d "$WORK/run/checkpoints/step_00000002" ] ||
  fail "the run with the same scaling did not resume: $(cat "$WORK/second.log")"
rm -rf "$WORK"
echo "ok: the rotary scaling is recorded and compared on resume and init_from"
