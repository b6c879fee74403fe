#!/usr/bin/env bash
# A trained Llama (grouped-query attention) exported by `tessel export` loads
# in Hugging Face transformers as LlamaForCausalLM, with every tensor in
# place, and continues a prompt greedily with the very bytes `tessel sample
# --temperature 0` gives (see hf_llama_check.py), with plain rotary
# frequencies, with Llama 3's scaling of them, with YaRN's, linearly scaled, with LongRoPE's (whose
# frequencies change as the sequence passes 16 positions), with dynamic NTK's (plain within the
# 64 positions), turning 8 of each head's 16 elements under LongRoPE (exported as a Phi3ForCausalLM,
# q|k|v and gate|up fused), with Qwen2's q, k and v
# biases (exported as a Qwen2ForCausalLM), and in a sliding window of 8
# positions, which the 39 of prompt and continuation pass (exported as a
# MistralForCausalLM; tessel decodes over its cache of keys and values,
# transformers runs the whole sequence); and, with plain frequencies,
# under a repetition penalty of 1.3 as transformers' own processor applies
# it; and trained on text prepared with a SentencePiece tokenizer.json
# (tests/tokenizer/fixtures/sp_1000.json, byte fallback and the ▁ prefix),
# which the export carries and transformers' AutoTokenizer loads. With a
# fourth argument `qwen3`, Qwen3's per-head q and k norms
# instead (exported as a Qwen3ForCausalLM, which transformers has from
# 4.51). Needs python3 with transformers and torch (and Qwen3ForCausalLM
# for qwen3); without them it reports itself skipped (exit 77), never
# passed.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" "hf_llama_export${4:+_$4}"
variants=${4:-plain scaled yarn linear longrope dynamic partial qwen2 mistral sentencepiece}
needs="import transformers, torch"
[ "$variants" = qwen3 ] && needs="$needs; from transformers import Qwen3ForCausalLM"
if ! python3 -c "$needs" 2>/dev/null; then
  echo "skipped: python3 cannot $needs (pip install 'transformers>=4.51' torch)"
  exit 77
fi
# plain rotary frequencies, then Llama 3's scaling of them (exported as
# config.json's rope_scaling, which transformers must apply to agree), then
# q, k and v biases; or q and k norms
for variant in $variants; do
  scaling=null bias=false norm=false window=0 tokenizer=() vocab=256 rotary=()
  [ "$variant" = sentencepiece ] && tokenizer=(--set data.tokenizer=tests/tokenizer/fixtures/sp_1000.json \
    --set data.dir="$WORK/sp-data") && vocab=1000
  [ "$variant" = scaled ] && scaling="{type: llama3, factor: 4, low_freq_factor: 1, high_freq_factor: 4, original_positions: 16}"
  [ "$variant" = yarn ] && scaling="{type: yarn, factor: 4, original_positions: 16, beta_fast: 8, beta_slow: 0.5}"
  [ "$variant" = linear ] && scaling="{type: linear, factor: 4}"
  [ "$variant" = dynamic ] && scaling="{type: dynamic, factor: 4}"
  [ "$variant" = partial ] && rotary=(--set model.rotary_dim=8) && scaling="{type: longrope, factor: 4, \
original_positions: 16, short_factor: [1, 1.1, 1.25, 1.5], long_factor: [1, 1.7, 2.9, 4.1]}"
  [ "$variant" = longrope ] && scaling="{type: longrope, factor: 4, original_positions: 16, \
short_factor: [1, 1.1, 1.25, 1.5, 2, 2.5, 3, 3.3], long_factor: [1, 1.7, 2.9, 4.1, 6, 9.3, 12, 16.7]}"
  [ "$variant" = qwen2 ] && bias=true
  [ "$variant" = qwen3 ] && norm=true
  [ "$variant" = mistral ] && window=8
  "$TESSEL" run "$WORK/tiny.yaml" --set model.arch=llama --set model.heads=4 --set model.kv_heads=2 \
    --set model.channels=64 --set model.seq_len=64 --set "model.rope_scaling=$scaling" --set model.qkv_bias=$bias \
    --set model.qk_norm=$norm --set model.sliding_window=$window --set model.vocab_size=$vocab "${tokenizer[@]}" "${rotary[@]}" --set train.steps=150 \
    --set train.eval_every=0 --set log.dir="$WORK/$variant" >"$WORK/$variant.log" 2>&1 \
    || { cat "$WORK/$variant.log" >&2; fail "training ($variant) failed"; }
  CK="$WORK/$variant/checkpoints/step_00000150"
  "$TESSEL" sample "$CK" --prompt "static " --tokens 32 --temperature 0 >"$WORK/greedy.txt" || fail "sampling failed"
  mkdir -p "$WORK/hf-$variant"
  "$TESSEL" export "$CK" -o "$WORK/hf-$variant/model.safetensors" >/dev/null || fail "export ($variant) failed"
  truncate -s -1 "$WORK/greedy.txt" # tessel sample ends with a newline of its own
  python3 "$(dirname "$0")/hf_llama_check.py" "$WORK/hf-$variant" "static " "$WORK/greedy.txt" "$variant" \
    || fail "transformers disagrees ($variant)"
  [ "$variant" = plain ] || continue
  "$TESSEL" sample "$CK" --prompt "static " --tokens 32 --temperature 0 --repetition-penalty 1.3 >"$WORK/penalized.txt" ||
    fail "sampling with a repetition penalty failed"
  truncate -s -1 "$WORK/penalized.txt"
  cmp -s "$WORK/penalized.txt" "$WORK/greedy.txt" && fail "the repetition penalty changed nothing"
  python3 "$(dirname "$0")/hf_llama_check.py" "$WORK/hf-$variant" "static " "$WORK/penalized.txt" "$variant" 1.3 \
    || fail "transformers disagrees under a repetition penalty"
done
rm -rf "$WORK"
