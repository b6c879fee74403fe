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
#                     and one of no tokens
# corpus/elf          two small strategy plugins built by the test suite
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

# ---- ELF ----
fresh elf
for p in good-v1/libtessel-testgood.so nosym/libtessel-nosym.so; do
  strip --strip-unneeded -o "$HERE/corpus/elf/$(basename "$p" .so)" "$BUILD/test-plugins/$p"
done
echo "seed corpora: $(for d in config safetensors shard elf; do printf '%s %d, ' $d "$(ls "$HERE/corpus/$d" | wc -l)"; done)"
