#!/usr/bin/env bash
# A trained Llama (grouped-query attention) exported by `tessel export` loads
# in Hugging Face transformers as LlamaForCausalLM, with every tensor in
# place, and continues a prompt greedily with the very bytes `tessel sample
# --temperature 0` gives (see hf_llama_check.py). Needs python3 with
# transformers and torch; without them it reports itself skipped (exit 77),
# never passed.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" hf_llama_export
if ! python3 -c "import transformers, torch" 2>/dev/null; then
  echo "skipped: python3 cannot import transformers and torch (pip install transformers torch)"
  exit 77
fi
"$TESSEL" run "$WORK/tiny.yaml" --set model.arch=llama --set model.heads=4 --set model.kv_heads=2 \
  --set model.channels=64 --set model.seq_len=64 --set train.steps=150 --set train.eval_every=0 \
  --set log.dir="$WORK/run" >"$WORK/run.log" 2>&1 || { cat "$WORK/run.log" >&2; fail "training failed"; }
CK="$WORK/run/checkpoints/step_00000150"
"$TESSEL" sample "$CK" --prompt "static " --tokens 32 --temperature 0 >"$WORK/greedy.txt" || fail "sampling failed"
mkdir -p "$WORK/hf"
"$TESSEL" export "$CK" -o "$WORK/hf/model.safetensors" >/dev/null || fail "export failed"
truncate -s -1 "$WORK/greedy.txt" # tessel sample ends with a newline of its own
python3 "$(dirname "$0")/hf_llama_check.py" "$WORK/hf" "static " "$WORK/greedy.txt" || fail "transformers disagrees"
rm -rf "$WORK"
