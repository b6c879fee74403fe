#!/usr/bin/env bash
# tests/fuzz/make_corpus.sh — (re)make the committed seed corpora of the
# fuzz targets from the shipped configs and from files tessel itself writes.
#
# usage: tests/fuzz/make_corpus.sh BUILD_DIR     (from the repository root)
#
# corpus/config       configs/*.yaml and tests/configs/bad/*.yaml, and a few
#                     with a base file and --set arguments (parts, fuzz.h)
# corpus/safetensors  a real checkpoint of a 1-layer model (model, trainer.json,
#                     optimizer), its model alone, its Hugging Face export,
#                     and two minimal files
# corpus/shard        shards `tessel data prepare` makes of a short text,
#                     one of no tokens, and one in the uint32 format
# corpus/elf          two small strategy plugins built by the test suite
# corpus/tokenizer    the tokenizer fixtures (GPT-2, Llama 3 and SentencePiece kinds), small
#                     byte-level BPEs cut from them (256 byte symbols and a
#                     few merges) in each supported variant (pre-tokenizer
#                     Sequences of StarCoder's, Falcon's and DeepSeek's shape
#                     and Splits of every behavior among them, two over a BPE
#                     whose merges cross spaces), and refused ones
# corpus/ckpt_meta    the tiny checkpoint's trainer.json (as the directory
#                     step_00000001, and as another), a version 1 one, Llamas
#                     (one with a rotary scaling, one with q/k/v biases and
#                     heads of their own size), an import's (step 0 of version
#                     3, no optimizer moments), damaged ones
# corpus/hf_config    GPT-2, Llama (with Llama 3's rotary scaling), Mistral and Qwen2 with windows,
#                     Qwen2 with YaRN, Qwen3 and Phi-3 config.json as transformers writes them,
#                     one with a shard index, refused ones
# corpus/profile      bench/profiles/*.json, a measured CPU profile's shape,
#                     refused ones
#
# Inputs of past crashes (crash-*, hang-*) stay: they are regression tests.
set -eu
BUILD=$(realpath "${1:?usage: make_corpus.sh BUILD_DIR}")
TESSEL=$BUILD/bin/tessel
HERE=tests/fuzz
MARK=$'\n#--tessel-fuzz-part--\n'
[ -x "$TESSEL" ] || { echo "no $TESSEL: build first" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fresh() { mkdir -p "$HERE/corpus/$1" && find "$HERE/corpus/$1" -type f ! -name 'crash-*' ! -name 'hang-*' -delete; }

# ---- config ----
fresh config
for f in configs/*.yaml; do cp "$f" "$HERE/corpus/config/shipped-$(basename "$f")"; done
for f in tests/configs/bad/*.yaml; do cp "$f" "$HERE/corpus/config/bad-$(basename "$f")"; done
parts() { # OUT MAIN BASE SETS: one input of three parts
  printf '%s%s%s%s%s' "$2" "$MARK" "$3" "$MARK" "$4" >"$HERE/corpus/config/$1"
}
parts with-base-and-sets "base: base.yaml
model: {layers: 4}
train: {steps: 10}" "$(cat configs/quickstart.yaml)" "train.steps=5
model.heads=2
optimizer.lr=2e-3
plugin.name=ddp"
parts bad-sets "base: base.yaml" "$(cat configs/ddp.yaml)" "model.layers=abc
=3
model..x=1
model.layers.x=1
train.steps=[1, {a: 2}]"
parts base-loop "base: base.yaml
x: 1" "base: main.yaml
y: 2" ""

# ---- safetensors and checkpoints ----
fresh safetensors
printf 'tiny text for a tiny model, a few hundred bytes of it. ' >"$work/text.txt"
for _ in 1 2 3 4 5 6; do cat "$work/text.txt" "$work/text.txt" >"$work/t2" && mv "$work/t2" "$work/text.txt"; done
cat >"$work/tiny.yaml" <<YAML
model: {layers: 1, heads: 1, channels: 4, seq_len: 4}
data: {text: ["$work/text.txt"], dir: $work/data}
train: {steps: 1, batch_size: 2, sample_tokens: 0}
device: {threads: 1}
log: {dir: $work/run, progress: never}
YAML
"$TESSEL" run "$work/tiny.yaml" >/dev/null 2>&1
ck=$work/run/checkpoints/step_00000001
{ cat "$ck/model.safetensors"; printf '%s' "$MARK"; cat "$ck/trainer.json"; printf '%s' "$MARK"
  cat "$ck/optimizer.safetensors"; } >"$HERE/corpus/safetensors/checkpoint"
cp "$ck/model.safetensors" "$HERE/corpus/safetensors/model-only"
mkdir -p "$work/hf"
"$TESSEL" export "$ck" -o "$work/hf/model.safetensors" >/dev/null
cp "$work/hf/model.safetensors" "$HERE/corpus/safetensors/hf-export"
printf '\x08\x00\x00\x00\x00\x00\x00\x00{}      ' >"$HERE/corpus/safetensors/empty"
meta='{"__metadata__":{"format":"pt"},"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}'
printf "$(printf '\\x%02x' "${#meta}")\\x00\\x00\\x00\\x00\\x00\\x00\\x00%s\\x01\\x02" "$meta" \
  >"$HERE/corpus/safetensors/one-tensor"

# ---- shards ----
fresh shard
"$TESSEL" data prepare "$work/text.txt" -o "$work/shards" --shard-tokens 300 --val-fraction 0.2 >/dev/null
cp "$work/shards/train_000000.bin" "$HERE/corpus/shard/train"
cp "$work/shards/val_000000.bin" "$HERE/corpus/shard/val"
head -c 1024 "$work/shards/train_000000.bin" >"$work/empty.bin"
printf '\x00\x00\x00\x00' | dd of="$work/empty.bin" bs=1 seek=8 conv=notrunc 2>/dev/null
cp "$work/empty.bin" "$HERE/corpus/shard/no-tokens"
# llm.c's uint32 format (magic 20240801, version 7) of a vocabulary past 65536
perl -e 'print pack("l<3", 20240801, 7, 6), "\0" x (1024 - 12), pack("L<*", 1, 2, 255, 0, 17, 200)' \
  >"$HERE/corpus/shard/wide-llama3"

# ---- ELF ----
fresh elf
for p in good-v1/libtessel-testgood.so nosym/libtessel-nosym.so; do
  strip --strip-unneeded -o "$HERE/corpus/elf/$(basename "$p" .so)" "$BUILD/test-plugins/$p"
done
# ---- tokenizer.json ----
fresh tokenizer
for f in gpt2_1024 llama3_512; do cp "tests/tokenizer/fixtures/$f.json" "$HERE/corpus/tokenizer/$f"; done
python3 - "$HERE/corpus/tokenizer" tests/tokenizer/fixtures <<'PY'
import copy, json, sys
out, fixtures = sys.argv[1], sys.argv[2]
def small(name, merges):
    """The fixture with its 256 byte symbols, <|endoftext|> and its first merges."""
    t = json.load(open(f"{fixtures}/{name}.json"))
    keep = 257 + merges
    t["model"]["vocab"] = {k: v for k, v in t["model"]["vocab"].items() if v < keep}
    t["model"]["merges"] = t["model"]["merges"][:merges]
    return t
def write(name, t):
    with open(f"{out}/{name}", "w", encoding="utf-8") as f:
        json.dump(t, f, ensure_ascii=False, separators=(",", ":"))
gpt2, llama = small("gpt2_1024", 24), small("llama3_512", 24)
write("small-gpt2", gpt2)
write("small-llama3", llama)
t = copy.deepcopy(llama)  # every option tessel honours at once
t["model"]["ignore_merges"] = True
t["model"]["merges"] = [m.split(" ") if isinstance(m, str) else m for m in t["model"]["merges"]]
t["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = True
t["added_tokens"].append({"id": 281, "content": "<|pad|>", "special": False})
t["model"]["vocab"]["<|pad|>"] = 281
write("small-llama3-options", t)
t = copy.deepcopy(gpt2)
t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"String": " "}, "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
write("small-split-string", t)
def pre_tokenizer(t, *steps):  # a Sequence of steps
    t = copy.deepcopy(t)
    t["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": list(steps)}
    return t
def split(regex, behavior, invert=False):
    return {"type": "Split", "pattern": {"Regex": regex}, "behavior": behavior, "invert": invert}
byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
write("small-starcoder", pre_tokenizer(gpt2, {"type": "Digits", "individual_digits": True}, byte_level))
write("small-falcon", pre_tokenizer(gpt2, {"type": "Punctuation", "behavior": "Contiguous"}, byte_level,
                                    {"type": "Digits", "individual_digits": False},
                                    split("[0-9][0-9][0-9]", "Isolated")))
write("small-deepseek", pre_tokenizer(gpt2, split("\\p{N}{1,3}", "Isolated"), split("[\u4e00-\u9fa5]+", "Isolated"),
                                      split("\\s?\\p{L}+|\\s+(?!\\S)|\\s+", "Isolated"),
                                      dict(byte_level, use_regex=False)))
write("small-split-behaviors", pre_tokenizer(gpt2, split("\\s*", "MergedWithNext", True), split("[,.]", "Removed"),
                                             dict(byte_level, add_prefix_space=True),
                                             split("\u0120", "MergedWithPrevious"), split("\\d+", "Contiguous", True)))
# a BPE whose merges cross spaces and punctuation (trained on text no
# pre-tokenizer cut): a text cut where a piece does not end encodes
# otherwise there, under a Sequence that may be cut and one that may not
unsplit = small("unsplit_1000", 64)
write("small-unsplit-starcoder", pre_tokenizer(unsplit, {"type": "Digits", "individual_digits": True}, byte_level))
write("small-unsplit-punctuation", pre_tokenizer(unsplit, {"type": "Punctuation", "behavior": "MergedWithNext"},
                                                 dict(byte_level, use_regex=False)))
t = copy.deepcopy(gpt2)
t["pre_tokenizer"]["add_prefix_space"] = True
t["decoder"] = None
t["added_tokens"] = []
write("small-prefix-space-no-added", t)
sp = json.load(open(f"{fixtures}/sp_1000.json"))  # SentencePiece's kind: bytes, characters and 24 merges
vocab = sorted(sp["model"]["vocab"].items(), key=lambda e: e[1])
keep = [k for k, v in vocab if v < 259 or len(k) == 1]  # <unk> <s> </s>, the 256 byte tokens, the characters
merges = []
for a, b in sp["model"]["merges"]:
    if len(merges) < 24 and a in keep and b in keep:
        merges.append([a, b])
        keep.append(a + b)
sp["model"]["vocab"] = {k: i for i, k in enumerate(keep)}  # ids stay dense
sp["model"]["merges"] = merges
write("small-sentencepiece", sp)
t = copy.deepcopy(sp)  # the Prepend normalizer, and Metaspace's older key with splitting
t["pre_tokenizer"] = None
t["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                   {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
write("small-sentencepiece-prepend", t)
t = copy.deepcopy(sp); t["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
write("small-sentencepiece-split", t)
t = copy.deepcopy(sp); t["model"]["byte_fallback"] = False; write("bad-sentencepiece-no-fallback", t)
t = copy.deepcopy(llama); t["normalizer"] = {"type": "NFC"}; write("small-llama3-nfc", t)
t = copy.deepcopy(gpt2); t["normalizer"] = {"type": "NFKC"}; write("bad-normalizer", t)
t = copy.deepcopy(gpt2); t["model"]["vocab"]["zz"] = t["model"]["vocab"].pop("\u0100"); write("bad-missing-byte", t)
t = copy.deepcopy(gpt2); t["model"]["vocab"]["zz"] = 400; write("bad-id-hole", t)
t = copy.deepcopy(gpt2); t["model"]["merges"].append("zz q"); write("bad-merge-unknown", t)
t = copy.deepcopy(gpt2); t["model"]["type"] = "WordPiece"; write("bad-model-type", t)
t = copy.deepcopy(gpt2); t["added_tokens"][0]["lstrip"] = True; write("bad-added-lstrip", t)
PY
head -c 3000 tests/tokenizer/fixtures/gpt2_1024.json >"$HERE/corpus/tokenizer/bad-truncated"

# ---- trainer.json ----
fresh ckpt_meta
cp "$ck/trainer.json" "$HERE/corpus/ckpt_meta/tiny"
{ cat "$ck/trainer.json"; printf '%s' "$MARK"; printf 'runs/x/checkpoints/step_00000007/'; } \
  >"$HERE/corpus/ckpt_meta/tiny-other-step"
python3 - "$ck/trainer.json" "$HERE/corpus/ckpt_meta" <<'PY'
import json, struct, sys
t, out = json.load(open(sys.argv[1])), sys.argv[2]
def fnv(data, seed):  # tsl_hash_bytes
    h = 1469598103934665603 ^ seed
    for b in data:
        h = ((h ^ b) * 1099511628211) % 2**64
    return h
def write(name, d):
    with open(f"{out}/{name}", "w") as f:
        json.dump(d, f, indent=1)
v1 = {k: t[k] for k in ("format", "step", "seed", "next_data_step", "world_size", "config_hash", "plugin",
                        "tessel_version")}
v1["version"] = 1
v1["model"] = {k: t["model"][k] for k in ("layers", "heads", "channels", "seq_len", "vocab_size")}
v1["model_hash"] = "%016x" % fnv(struct.pack("<5i", *v1["model"].values()), 0x6d6f64656c)
v1["files"] = {k: v for k, v in t["files"].items() if k != "private.safetensors"}
write("version-1", v1)
def mix64(x):  # tsl_mix64
    x = (x + 0x9e3779b97f4a7c15) % 2**64
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) % 2**64
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) % 2**64
    return x ^ (x >> 31)
def llama(rope_theta, norm_eps, **sizes):  # a Llama with a tokenizer (meta_crc32 is resealed by the fuzzer)
    d = json.loads(json.dumps(t))
    d["model"].update(dict(dict(arch="llama", heads=4, kv_heads=2, channels=8, ffn=24, rope_theta=rope_theta,
                                norm_eps=norm_eps, tie_embeddings=False), **sizes))
    m = d["model"]
    dims = [1.0, m["layers"], m["heads"], m["kv_heads"], m["channels"], m["ffn"], m["seq_len"], m["vocab_size"],
            m["rope_theta"], m["norm_eps"], 0.0]
    d["model_hash"] = "%016x" % fnv(struct.pack("<11d", *dims), 0x6d6f64656c)
    d["tokenizer"] = {"file": "tokenizer.json", "hash": "0123456789abcdef"}
    d["files"]["tokenizer.json"] = {"bytes": 2100, "crc32": "89abcdef"}
    return d
write("llama-tokenizer", llama(500000, 1e-6))
write("llama-17-digits", llama(10000.000000000002, 1.0000000000000002e-05))  # numbers cJSON printed inexactly
d = llama(500000, 1e-6)  # Llama 3's rotary scaling: its values hashed on after the dimensions
d["model"]["rope_scaling"] = {"type": "llama3", "factor": 32, "low_freq_factor": 1, "high_freq_factor": 4,
                              "original_positions": 8192}
d["model_hash"] = "%016x" % fnv(struct.pack("<4d", 32, 1, 4, 8192), int(d["model_hash"], 16))
write("llama-rope-scaling", d)
# LongRoPE's: its type's name, its values, then each list after its length
d = llama(10000, 1e-5)
d["model"]["rope_scaling"] = {"type": "longrope", "factor": 4, "original_positions": 16, "attention_factor": 1.5,
                              "short_factor": [1.25], "long_factor": [8]}
h = fnv(struct.pack("<3d", 4, 16, 1.5), mix64(int(d["model_hash"], 16) ^ fnv(b"longrope", 0)))
for factor in (1.25, 8):
    h = fnv(struct.pack("<d", factor), mix64(h ^ 1))
d["model_hash"] = "%016x" % h
write("llama-longrope", d)
# Qwen2's biases and 3 heads of their own size (head_dim 4) in 8 channels:
# each mixed into the hash after the dimensions
d = llama(1e6, 1e-6, heads=3, kv_heads=1)
d["model"].update(qkv_bias=True, head_dim=4)
h = mix64(mix64(int(d["model_hash"], 16) ^ 0x71b1a5) ^ (4 << 32 | 0x68))
d["model_hash"] = "%016x" % h
write("llama-head-dim", d)
# Mistral's sliding window of 5, mixed in after the dimensions
d = llama(1e6, 1e-5)
d["model"]["sliding_window"] = 5
d["model_hash"] = "%016x" % mix64(int(d["model_hash"], 16) ^ (5 << 32 | 0x77))
write("llama-window", d)
d = dict(t, version=4); write("bad-version-4", d)
# what `tessel import` writes: step 0 of version 3 without optimizer moments
# (its directory's name follows the part mark, as in tiny-other-step)
d = json.loads(json.dumps(t)); d.update(version=3, step=0, next_data_step=1); del d["files"]["optimizer.safetensors"]
with open(f"{out}/import-step-0", "w") as f:
    json.dump(d, f, indent=1)
    f.write("\n#--tessel-fuzz-part--\nruns/x/checkpoints/step_00000000/")
d = json.loads(json.dumps(t)); d["model"]["heads"] = 3; write("bad-heads", d)
d = json.loads(json.dumps(t)); d["model"]["arch"] = "llama"; d["model"]["kv_heads"] = 2; write("bad-llama", d)
d = dict(t, tokenizer={"file": "tokenizer.json", "hash": "00112233445566778"}); write("bad-tokenizer-hash", d)
d = dict(t); del d["files"]; write("bad-no-files", d)
PY
head -c 300 "$ck/trainer.json" >"$HERE/corpus/ckpt_meta/bad-truncated"

# ---- config.json ----
fresh hf_config
cat >"$HERE/corpus/hf_config/gpt2" <<'JSON'
{"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1, "bos_token_id": 50256,
 "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
 "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": null, "n_layer": 12,
 "n_positions": 1024, "reorder_and_upcast_attn": false, "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": false,
 "scale_attn_weights": true, "tie_word_embeddings": true, "torch_dtype": "float32", "transformers_version": "4.44.0",
 "use_cache": true, "vocab_size": 50257}
JSON
cat >"$HERE/corpus/hf_config/llama" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0, "bos_token_id": 1,
 "eos_token_id": 2, "head_dim": 64, "hidden_act": "silu", "hidden_size": 512, "initializer_range": 0.02,
 "intermediate_size": 1376, "max_position_embeddings": 2048, "mlp_bias": false, "model_type": "llama",
 "num_attention_heads": 8, "num_hidden_layers": 4, "num_key_value_heads": 2, "pretraining_tp": 1,
 "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 500000.0, "tie_word_embeddings": false,
 "torch_dtype": "bfloat16", "transformers_version": "4.44.0", "use_cache": true, "vocab_size": 32000}
JSON
cat >"$HERE/corpus/hf_config/llama-rope-parameters" <<'JSON'
{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1,
 "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 32, "tie_word_embeddings": true,
 "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"}, "rms_norm_eps": 1e-05}
JSON
cat >"$HERE/corpus/hf_config/qwen2-yarn" <<'JSON'
{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "intermediate_size": 128, "max_position_embeddings": 128,
 "model_type": "qwen2", "num_attention_heads": 4, "num_hidden_layers": 1, "num_key_value_heads": 2,
 "rope_theta": 1000000.0, "tie_word_embeddings": true, "vocab_size": 256,
 "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32, "beta_fast": 16}}
JSON
cat >"$HERE/corpus/hf_config/llama-linear" <<'JSON'
{"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128, "max_position_embeddings": 64,
 "model_type": "llama", "num_attention_heads": 4, "num_hidden_layers": 1, "num_key_value_heads": 4,
 "rms_norm_eps": 1e-06, "rope_theta": 100000, "tie_word_embeddings": false, "vocab_size": 256,
 "rope_scaling": {"type": "linear", "factor": 4.0}}
JSON
cat >"$HERE/corpus/hf_config/phi3-longrope" <<'JSON'
{"architectures": ["Phi3ForCausalLM"], "hidden_size": 64, "intermediate_size": 128, "max_position_embeddings": 64,
 "model_type": "phi3", "num_attention_heads": 4, "num_hidden_layers": 1, "num_key_value_heads": 4,
 "original_max_position_embeddings": 16, "rope_theta": 10000.0, "sliding_window": null, "vocab_size": 256,
 "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.1, 1.25, 1.5, 2.0, 2.5, 3.0, 3.3],
                  "long_factor": [1.0, 1.7, 2.9, 4.1, 6.0, 9.3, 12.0, 16.7]}}
JSON
cat >"$HERE/corpus/hf_config/phi3-partial" <<'JSON'
{"architectures": ["Phi3ForCausalLM"], "hidden_size": 64, "intermediate_size": 128, "max_position_embeddings": 64,
 "model_type": "phi3", "num_attention_heads": 4, "num_hidden_layers": 1, "num_key_value_heads": 2,
 "original_max_position_embeddings": 16, "partial_rotary_factor": 0.75, "rope_theta": 10000.0,
 "sliding_window": 262144, "tie_word_embeddings": true, "vocab_size": 256,
 "rope_scaling": {"type": "longrope", "short_factor": [1.0, 1.1, 1.25, 1.5, 2.0, 2.5],
                  "long_factor": [1.0, 1.7, 2.9, 4.1, 6.0, 9.3]}}
JSON
cat >"$HERE/corpus/hf_config/phi3" <<'JSON'
{"architectures": ["Phi3ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "embd_pdrop": 0.0,
 "eos_token_id": 32000, "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02,
 "intermediate_size": 8192, "max_position_embeddings": 4096, "model_type": "phi3", "num_attention_heads": 32,
 "num_hidden_layers": 32, "num_key_value_heads": 32, "original_max_position_embeddings": 4096, "pad_token_id": 32000,
 "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": null, "rope_theta": 10000.0, "sliding_window": 2047,
 "tie_word_embeddings": false, "torch_dtype": "bfloat16", "transformers_version": "4.40.2", "use_cache": true,
 "vocab_size": 32064}
JSON
cat >"$HERE/corpus/hf_config/llama3-rope-scaling" <<'JSON'
{"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 1,
 "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 131072, "tie_word_embeddings": true,
 "rope_theta": 500000.0, "rms_norm_eps": 1e-05,
 "rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192}}
JSON
cat >"$HERE/corpus/hf_config/mistral-window" <<'JSON'
{"model_type": "mistral", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1,
 "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 32768, "sliding_window": 4096,
 "rope_theta": 1000000.0, "rms_norm_eps": 1e-05}
JSON
cat >"$HERE/corpus/hf_config/qwen2-window" <<'JSON'
{"model_type": "qwen2", "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
 "intermediate_size": 128, "vocab_size": 256, "max_position_embeddings": 32768, "tie_word_embeddings": true,
 "use_sliding_window": true, "sliding_window": 1024, "max_window_layers": 1, "rope_theta": 1000000.0,
 "rms_norm_eps": 1e-06}
JSON
cat >"$HERE/corpus/hf_config/qwen3" <<'JSON'
{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 64, "head_dim": 32,
 "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "intermediate_size": 160,
 "vocab_size": 256, "max_position_embeddings": 40960, "tie_word_embeddings": true, "attention_bias": false,
 "use_sliding_window": false, "sliding_window": null, "max_window_layers": 28, "rope_theta": 1000000,
 "rope_scaling": null, "rms_norm_eps": 1e-06, "hidden_act": "silu"}
JSON
{ cat "$HERE/corpus/hf_config/gpt2"; printf '%s' "$MARK"
  printf '{"metadata": {"total_size": 1024}, "weight_map": {"transformer.wte.weight": "model-00001-of-00002.safetensors", "transformer.wpe.weight": "model-00002-of-00002.safetensors", "lm_head.weight": "model-00001-of-00002.safetensors"}}'
} >"$HERE/corpus/hf_config/gpt2-sharded"
printf '{"model_type": "llama", "rope_scaling": {"type": "proportional", "factor": 2.0}}' \
  >"$HERE/corpus/hf_config/bad-rope-scaling"
printf '{"model_type": "gpt2", "n_embd": 100, "n_head": 3}' >"$HERE/corpus/hf_config/bad-heads"
printf '{"model_type": "mistral", "hidden_size": 4096}' >"$HERE/corpus/hf_config/bad-model-type"
{ printf '{"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2}'; printf '%s' "$MARK"
  printf '{"weight_map": {"a": "../escape.safetensors", "b": ".hidden"}}'; } >"$HERE/corpus/hf_config/bad-index"

# ---- machine profiles ----
fresh profile
for f in bench/profiles/*.json; do cp "$f" "$HERE/corpus/profile/$(basename "$f" .json)"; done
cat >"$HERE/corpus/profile/cpu-measured" <<'JSON'
{"name": "host", "ranks_per_node": 4, "overlap": 0.5,
 "compute": {"device": "cpu", "gflops_per_core": 40.5, "cores": 16, "efficiency": 0.6},
 "memory": {"device": 34359738368, "host": "64GiB"},
 "streams": [{"world": 1, "gbps": 12.5}, {"world": 4, "gbps": 6.25}],
 "links": [{"within": "node", "collective": "all_reduce", "ranks": 2, "world": 2, "alpha_us": 3.5, "busbw_gbps": 8},
           {"within": "node", "collective": "all_gather", "ranks": 4, "world": 4, "alpha_us": 6, "busbw_gbps": 5},
           {"within": "node", "collective": "recv", "ranks": 2, "world": 4, "alpha_us": 2, "busbw_gbps": 9},
           {"within": "cluster", "collective": "any", "alpha_us": 40, "busbw_gbps": 1.5}]}
JSON
printf '{"compute": {"device": "gpu"}, "links": [{"within": "node", "alpha_us": 1, "busbw_gbps": 1}]}' \
  >"$HERE/corpus/profile/bad-no-peak"
printf '{"compute": {"device": "cpu", "gflops_per_core": 1, "cores": 1}, "links": []}' >"$HERE/corpus/profile/bad-no-links"
printf '{"compute": {"device": "tpu"}, "memory": {"device": "lots"}, "links": [{"within": "rack"}]}' \
  >"$HERE/corpus/profile/bad-kinds"
echo "seed corpora: $(for d in config safetensors shard elf tokenizer ckpt_meta hf_config profile; do printf '%s %d, ' $d "$(ls "$HERE/corpus/$d" | wc -l)"; done)"
