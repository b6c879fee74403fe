#!/usr/bin/env bash
# tests/fault/bad_inputs.sh — inputs that are not what they claim to be,
# through the CLI: each gets a clear error and the right exit status, never
# a crash or a wait.
#
# usage: bad_inputs.sh TESSEL SRC TMP PLUGIN_DIR
#
#   - a FIFO as the config, as a base:, as plugin.path, as Hugging Face weights and as a text to
#     train a tokenizer on (nothing writes to it: a plain open would wait
#     forever);
#   - a truncated plugin and one built for another machine (aarch64);
#   - a directory in place of checkpoint.dir/latest;
#   - a shard with a token past the vocabulary its tokens.json records;
#   - a config nested 25,000 levels deep (50 KB);
#   - a log.dir of 1,500 bytes: the paths derived from it stay whole;
#   - a checkpoint whose trainer.json was edited (heads 0, layers 0, a step
#     that is not the directory's): sample, export and resume refuse it;
#   - `export CKPT -o CKPT/model.safetensors`, which would overwrite the
#     checkpoint's own model, also with CKPT given as its checkpoint.dir or
#     `latest`, and into another checkpoint; and an export named other than
#     model.safetensors, which nothing would load;
#   - a run directory, a file and an empty directory where a checkpoint is
#     expected (sample, export, --resume): each named as what it is;
#   - 300 --set options and 40 TESSEL_PLUGIN_PATH entries, more than any
#     fixed table would hold;
#   - bytes that are not UTF-8, found where they are, not at 1:1;
#   - `--resume ""`, which once meant "start again from step 1";
#   - a sample prompt with a byte the byte-level model never sees (it was
#     taken modulo the vocabulary);
#   - log.metrics naming a directory: an error naming the key, and no
#     temporary file left beside it;
#   - a model the machine cannot hold (an address-space limit) with no
#     device.memory_limit set: the error says the machine is out of memory
#     instead of advising a larger limit "of 16777216 TiB";
#   - tokenizer train over one of its inputs, with an empty pattern, on
#     empty text;
#   - tokenizer decode of a directory or a FIFO: refused, not "expected ids"
#     or a wait; an id longer than 63 characters, once read as two; and
#     endless junk on standard input, refused at once.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" bad_inputs
PLUGINS=$4

# run CASE CMD...: with a 20 s guard, so a wait is a failure, not a hang
run() {
  case_name=$1
  shift
  timeout 20 "$@" >"$WORK/$case_name.out" 2>"$WORK/$case_name.err" </dev/null
  status=$?
}

# expect STATUS TEXT...
expect() {
  local want=$1
  shift
  if [ "$status" -eq 124 ]; then
    fail "still waiting after 20 s"
  elif [ "$status" -ge 128 ] || grep -qE 'Sanitizer|runtime error:|Segmentation fault' "$WORK/$case_name.err"; then
    fail "crashed (status $status): $(head -5 "$WORK/$case_name.err")"
  else
    [ "$status" -eq "$want" ] || fail "exit status $status, expected $want: $(head -5 "$WORK/$case_name.err")"
    for text in "$@"; do
      grep -qF -- "$text" "$WORK/$case_name.err" || fail "stderr lacks: $text; got: $(head -5 "$WORK/$case_name.err")"
    done
  fi
}

valid() { # a config on line 1-3 that `check` accepts, plus extra lines
  printf '%s\n' "model: {layers: 2, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}" \
    "data: {text: [\"core/config/*.c\"], dir: $WORK/data}" "train: {steps: 2, batch_size: 4, sample_tokens: 0}" "$@"
}

# ---- FIFOs ----
mkfifo "$WORK/fifo.yaml" "$WORK/libtessel-fifo.so"
run fifo_config "$TESSEL" check "$WORK/fifo.yaml"
expect 2 "$WORK/fifo.yaml: is a FIFO, not a config file" # the command line's mistake, as with base:
valid "base: fifo.yaml" >"$WORK/base_fifo.yaml"
run fifo_base "$TESSEL" check "$WORK/base_fifo.yaml"
expect 2 "$WORK/base_fifo.yaml:4:7: base: 'fifo.yaml' is a FIFO, not a config file"
valid "plugin: {path: $WORK/libtessel-fifo.so}" >"$WORK/plugin_fifo.yaml"
run fifo_plugin "$TESSEL" check "$WORK/plugin_fifo.yaml"
expect 1 "libtessel-fifo.so: is a FIFO, not a shared object"
run fifo_tokenizer_text "$TESSEL" tokenizer train "$WORK/fifo.yaml" --vocab 300 -o "$WORK/fifo_tokenizer.json"
expect 1 "$WORK/fifo.yaml: is a FIFO, not a regular file"
run fifo_decode "$TESSEL" tokenizer decode tests/tokenizer/fixtures/gpt2_1024.json "$WORK/fifo.yaml"
expect 1 "$WORK/fifo.yaml: is a FIFO, not a regular file"
# a FIFO as a Hugging Face model's weights, imported or started from
mkdir -p "$WORK/hf_fifo" && cp tests/fixtures/gpt2_tiny/config.json "$WORK/hf_fifo/"
mkfifo "$WORK/hf_fifo/model.safetensors"
run fifo_import "$TESSEL" import "$WORK/hf_fifo" -o "$WORK/hf_fifo_out"
expect 1 "$WORK/hf_fifo/model.safetensors: is a FIFO, not a regular file"
# a config.json claiming a million layers beside a small model: refused before
# anything of that size is allocated (20 s and 4 GB before)
mkdir -p "$WORK/hf_huge" && cp tests/fixtures/gpt2_tiny/model.safetensors "$WORK/hf_huge/"
sed 's/"n_layer": *[0-9]*/"n_layer": 1048576/' tests/fixtures/gpt2_tiny/config.json >"$WORK/hf_huge/config.json"
grep -q '"n_layer": 1048576' "$WORK/hf_huge/config.json" || fail "could not make the config claim 2^20 layers"
run huge_import bash -c 'ulimit -v 1000000 && exec "$@"' _ "$TESSEL" import "$WORK/hf_huge" -o "$WORK/hf_huge_out"
expect 1 "config.json describes a model of" "(1048576 layers), but its weights hold only"
# a damaged tokenizer: as a command's input file a runtime failure (exit 1),
# named by a config a mistake at its key (exit 2); both once varied with
# what was wrong inside it
printf '{"model": {"vocab": {' >"$WORK/cut_tokenizer.json"
run cut_tokenizer_encode "$TESSEL" tokenizer encode "$WORK/cut_tokenizer.json" core/config/parse.c
expect 1 "$WORK/cut_tokenizer.json: not valid JSON"
printf '%s\n' "model: {layers: 2, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}" \
  "data: {text: [\"core/config/*.c\"], dir: $WORK/data, tokenizer: $WORK/cut_tokenizer.json}" \
  "train: {steps: 2, batch_size: 4, sample_tokens: 0}" >"$WORK/cut_tokenizer.yaml"
run cut_tokenizer_run "$TESSEL" run "$WORK/cut_tokenizer.yaml" --set log.dir="$WORK/cut_tokenizer_run"
expect 2 "$WORK/cut_tokenizer.yaml:2:" "data.tokenizer: $WORK/cut_tokenizer.json: not valid JSON"
run sample_hf "$TESSEL" sample tests/fixtures/gpt2_tiny --tokens 2
expect 1 "tests/fixtures/gpt2_tiny is a Hugging Face model directory, not a tessel checkpoint" "model.init_from" \
  "tessel import"
# a FIFO or a directory among the shards a glob matches (the FIFO once made
# the run wait for ever, deaf to SIGTERM)
mkdir -p "$WORK/shards/train_000001.bin" && mkfifo "$WORK/shards/train_000000.bin"
valid "data: {train: \"$WORK/shards/train_000000.bin\"}" | sed '2d' >"$WORK/shard_fifo.yaml"
run fifo_shard "$TESSEL" run "$WORK/shard_fifo.yaml" --set log.dir="$WORK/shard_fifo"
expect 1 "$WORK/shards/train_000000.bin: is a FIFO, not a token shard"
valid "data: {train: \"$WORK/shards/train_000001.bin\"}" | sed '2d' >"$WORK/shard_dir.yaml"
run dir_shard "$TESSEL" run "$WORK/shard_dir.yaml" --set log.dir="$WORK/shard_dir"
expect 1 "$WORK/shards/train_000001.bin: is a directory, not a token shard"
# a strategy's option that does not fit the model and batch is the
# config's mistake, found by its layout: said before data.text is prepared,
# and the run directory is not left behind (it was made, with shards in it)
run hybrid_layout "$TESSEL" run configs/hybrid.yaml --set plugin.tp=1 --set plugin.pp=1 --set train.steps=2 \
  --set log.dir="$WORK/hybrid_layout" --set data.dir="$WORK/hybrid_layout/data"
expect 2 "configs/hybrid.yaml:16:21: plugin.num_microbatches: is 4, but each data rank's 16 sequences per step make 8"
[ ! -e "$WORK/hybrid_layout" ] || fail "the refused run left $(find "$WORK/hybrid_layout" | head -5 | tr '\n' ' ')"
# a directory where checkpoint.dir/latest goes: refused before a step (the
# run trained one, failed at its save as a file-system error, and again at
# every rerun)
mkdir -p "$WORK/latest_dir/checkpoints/latest"
valid >"$WORK/latest_dir.yaml"
run latest_dir "$TESSEL" run "$WORK/latest_dir.yaml" --set log.dir="$WORK/latest_dir"
expect 1 "$WORK/latest_dir/checkpoints/latest is a directory, not the file in which each checkpoint names itself"
[ -z "$(ls "$WORK/latest_dir/checkpoints" | grep step_)" ] || fail "a step was trained and saved before the refusal"
# tessel check refuses it as the run does (it passed, with a warning)
run latest_dir_check "$TESSEL" check "$WORK/latest_dir.yaml" --set log.dir="$WORK/latest_dir"
expect 1 "$WORK/latest_dir/checkpoints/latest is a directory, not the file in which each checkpoint names itself"
# a token past the vocabulary in a shard whose tokens.json says it was made
# for that vocabulary is damage (exit 1), not a shard made for a larger one
# (a configuration mistake, exit 2, as it was said)
"$TESSEL" data prepare core/config/parse.c -o "$WORK/flipped" >/dev/null 2>&1 || fail "data prepare failed"
printf '\377\377' | dd of="$WORK/flipped/train_000000.bin" bs=1 seek=1044 conv=notrunc status=none
valid "data: {train: \"$WORK/flipped/train_*.bin\"}" | sed '2d' >"$WORK/flipped.yaml"
run flipped_shard "$TESSEL" run "$WORK/flipped.yaml" --set log.dir="$WORK/flipped_run"
expect 1 "$WORK/flipped/train_000000.bin: token 65535 at offset 10 is >= model.vocab_size = 256, though" \
  "$WORK/flipped/tokens.json says its shards hold tokens below 256: the file is damaged"

# ---- a deep config, a long directory ----
{ printf 'x: '; head -c 25000 /dev/zero | tr '\0' '['; head -c 25000 /dev/zero | tr '\0' ']'; echo; } >"$WORK/deep.yaml"
run deep_config "$TESSEL" check "$WORK/deep.yaml"
expect 2 "$WORK/deep.yaml:1:67: nesting deeper than 64 levels"
long=$WORK/$(head -c 1500 /dev/zero | tr '\0' 'd' | sed 's/d\{100\}/&\//g')
valid >"$WORK/long.yaml"
run long_log_dir "$TESSEL" check --set log.dir="$long" "$WORK/long.yaml"
expect 0
grep -qF "dir: $long/checkpoints" "$WORK/long_log_dir.out" || fail "checkpoint.dir under a long log.dir was cut short"

# ---- plugin files that dlopen would crash on or misreport ----
mkdir -p "$WORK/cut" "$WORK/arm"
head -c 9000 "$PLUGINS/libtessel-ddp.so" >"$WORK/cut/libtessel-ddp.so"
cp "$PLUGINS/libtessel-ddp.so" "$WORK/arm/libtessel-ddp.so"
# e_machine (bytes 18-19): aarch64 (183), or x86-64 (62) when this machine is the aarch64 one
if [ "$(uname -m)" = aarch64 ]; then foreign='\076\000' foreign_name=x86-64; else foreign='\267\000' foreign_name=aarch64; fi
printf "$foreign" | dd of="$WORK/arm/libtessel-ddp.so" bs=1 seek=18 conv=notrunc 2>/dev/null
valid "plugin: {path: $WORK/cut/libtessel-ddp.so}" >"$WORK/cut.yaml"
run truncated_plugin "$TESSEL" check "$WORK/cut.yaml"
expect 1 "$WORK/cut/libtessel-ddp.so is not a loadable shared object" "is truncated: its segment"
run truncated_plugin_listed env TESSEL_PLUGIN_PATH="$WORK/cut" "$TESSEL" plugins
expect 0
grep -qF "is truncated" "$WORK/truncated_plugin_listed.out" || fail "plugins does not list the truncated file's reason"
valid "plugin: {path: $WORK/arm/libtessel-ddp.so}" >"$WORK/arm.yaml"
run foreign_plugin "$TESSEL" check "$WORK/arm.yaml"
expect 1 "is a shared object for $foreign_name, but this tessel runs on"

# ---- a checkpoint to damage ----
valid "checkpoint: {dir: $WORK/ckpt}" "log: {dir: $WORK/run, progress: never}" >"$WORK/run.yaml"
run train "$TESSEL" run "$WORK/run.yaml"
expect 0
ck=$WORK/ckpt/step_00000002
for edit in heads layers step; do
  mkdir -p "$WORK/$edit"
  cp -r "$ck" "$WORK/$edit/step_00000002" # named as a step: its trainer.json must say the same
  sed -i "s/\"$edit\":[^,]*,/\"$edit\": $([ $edit = step ] && echo 1000000 || echo 0),/" \
    "$WORK/$edit/step_00000002/trainer.json"
  run "resume_$edit" "$TESSEL" run "$WORK/run.yaml" --resume "$WORK/$edit/step_00000002"
  expect 1 "trainer.json has been altered or damaged"
  run "sample_$edit" "$TESSEL" sample "$WORK/$edit/step_00000002" --tokens 5
  expect 1 "trainer.json has been altered or damaged"
  [ -s "$WORK/sample_$edit.out" ] && fail "printed text from a damaged checkpoint"
  mkdir -p "$WORK/export_$edit"
  run "export_$edit" "$TESSEL" export "$WORK/$edit/step_00000002" -o "$WORK/export_$edit/model.safetensors"
  expect 1 "trainer.json has been altered or damaged"
  [ -e "$WORK/export_$edit/config.json" ] && fail "wrote a config.json for a damaged checkpoint"
done

# ---- an export over its own checkpoint ----
cp "$ck/model.safetensors" "$WORK/model.before"
run export_into_checkpoint "$TESSEL" export "$ck" -o "$ck/model.safetensors"
expect 2 "is inside the checkpoint" "would overwrite the checkpoint's own files"
cmp -s "$ck/model.safetensors" "$WORK/model.before" || fail "the checkpoint's model was overwritten"
[ -e "$ck/config.json" ] && fail "config.json was written into the checkpoint"
# the same through what stands for it (checkpoint.dir, its `latest`), into
# a new directory inside it, and into another step's directory: the
# guard once compared the output with the argument as typed
ckdir=$(dirname "$ck")
cp -r "$ckdir/step_00000002" "$ckdir/step_00000001"
for spec in "latest $ckdir/latest $ck/model.safetensors" "dir $ckdir $ck/model.safetensors" \
  "new_subdir $ckdir $ck/hf/model.safetensors" "other_step $ckdir $ckdir/step_00000001/model.safetensors"; do
  set -- $spec
  run "export_into_checkpoint_$1" "$TESSEL" export "$2" -o "$3"
  expect 2 "is inside the checkpoint" "would overwrite the checkpoint's own files"
done
cmp -s "$ck/model.safetensors" "$WORK/model.before" || fail "the checkpoint's model was overwritten"
cmp -s "$ckdir/step_00000001/model.safetensors" "$WORK/model.before" || fail "another checkpoint's model was overwritten"
[ -e "$ck/config.json" ] || [ -e "$ck/hf" ] || [ -e "$ckdir/step_00000001/config.json" ] &&
  fail "an export wrote into a checkpoint"
rm -r "$ckdir/step_00000001"
# only model.safetensors is loaded back (from_pretrained, tessel import):
# another name, or a directory, is refused with the -o to use
mkdir -p "$WORK/hf_dir"
for spec in "name $WORK/named/weights.safetensors $WORK/named/model.safetensors" \
  "directory $WORK/hf_dir $WORK/hf_dir/model.safetensors"; do
  set -- $spec
  run "export_$1" "$TESSEL" export "$ckdir" -o "$2"
  expect 2 "the export must be named model.safetensors" "write -o $3"
done
[ -e "$WORK/named" ] || [ -n "$(ls "$WORK/hf_dir")" ] && fail "a refused export wrote something"
run sample_after "$TESSEL" sample "$ck" --tokens 4
expect 0

# ---- what is given where a checkpoint is expected ----
# a run's log.dir, a file, a directory of neither: each said what it is
# (they were "DIR/trainer.json: cannot open"), and the run directory where
# its checkpoints are
mkdir -p "$WORK/rundir" "$WORK/neither" && cp -r "$ckdir" "$WORK/rundir/checkpoints"
rundir_said="$WORK/rundir looks like a run directory, not a checkpoint: its checkpoints are in $WORK/rundir/checkpoints"
run rundir_sample "$TESSEL" sample "$WORK/rundir" --tokens 2
expect 1 "$rundir_said"
run rundir_export "$TESSEL" export "$WORK/rundir" -o "$WORK/rundir_hf/model.safetensors"
expect 1 "$rundir_said"
run rundir_resume "$TESSEL" run "$WORK/run.yaml" --resume "$WORK/rundir"
expect 1 "resuming from $WORK/rundir: $rundir_said"
run file_sample "$TESSEL" sample "$WORK/run.yaml"
expect 1 "$WORK/run.yaml is not a directory (it is a regular file)"
run neither_sample "$TESSEL" sample "$WORK/neither"
expect 1 "$WORK/neither is not a tessel checkpoint: it holds no trainer.json, nor step_NNNNNNNN checkpoints"

# ---- lists with no fixed size ----
sets=()
for i in $(seq 1 300); do sets+=(--set "train.seed=$i"); done
run many_sets "$TESSEL" check --quiet "${sets[@]}" "$WORK/run.yaml"
expect 0
path=
for i in $(seq 1 39); do mkdir -p "$WORK/empty$i" && path="$path$WORK/empty$i:"; done
mkdir -p "$WORK/fortieth" && cp "$PLUGINS/libtessel-ddp.so" "$WORK/fortieth/"
run many_plugin_dirs env TESSEL_PLUGIN_PATH="${path}$WORK/fortieth" "$TESSEL" plugins
expect 0
grep -A1 '^ddp ' "$WORK/many_plugin_dirs.out" | grep -q "^  $WORK/fortieth/libtessel-ddp.so\$" ||
  fail "the plugin in the 40th TESSEL_PLUGIN_PATH entry was not found first"

# ---- odd bytes and values ----
{ valid; printf '# caf\351\n'; } >"$WORK/latin1.yaml"
run latin1_config "$TESSEL" check "$WORK/latin1.yaml"
expect 2 "$WORK/latin1.yaml:4:6: YAML syntax error: incomplete UTF-8 octet sequence"
run resume_empty "$TESSEL" run "$WORK/run.yaml" --resume ""
expect 2 "--resume needs a checkpoint directory"
grep -q "^step" "$WORK/resume_empty.out" "$WORK/resume_empty.err" && fail "--resume \"\" trained"
# a mistyped --resume is the command line's mistake (it exited 1)
run resume_missing "$TESSEL" run "$WORK/run.yaml" --resume "$WORK/no_such_step"
expect 2 "--resume $WORK/no_such_step: no such checkpoint directory"
seq 1 3000 >"$WORK/digits.txt" # bytes 0x0A and 0x30-0x39 only
printf '%s\n' "model: {layers: 1, heads: 2, channels: 16, seq_len: 8, vocab_size: 64}" \
  "data: {text: [\"$WORK/digits.txt\"], dir: $WORK/digits}" \
  "train: {steps: 1, batch_size: 2, sample_tokens: 4, sample_prompt: \"12A\"}" "log: {dir: $WORK/digits_run}" \
  >"$WORK/digits.yaml"
run prompt_byte "$TESSEL" run "$WORK/digits.yaml"
expect 2 "$WORK/digits.yaml:3:67: train.sample_prompt: byte 2 (0x41) is not in this byte-level model's vocabulary of 64 tokens"
grep -q "^step" "$WORK/prompt_byte.out" "$WORK/prompt_byte.err" && fail "trained before refusing the prompt"
mkdir -p "$WORK/metrics_dir"
run metrics_dir "$TESSEL" run "$WORK/digits.yaml" --set train.sample_tokens=0 --set log.metrics="$WORK/metrics_dir"
# refused with the config, before anything is prepared or trained
expect 2 "--set=log.metrics=$WORK/metrics_dir:1:19: log.metrics: $WORK/metrics_dir is a directory, not a file"
[ -e "$WORK/metrics_dir.tmp" ] && fail "left $WORK/metrics_dir.tmp behind"
run out_of_memory bash -c 'ulimit -v 3000000 && exec "$@"' _ "$TESSEL" run "$WORK/digits.yaml" \
  --set train.sample_tokens=0 --set model.layers=24 --set model.channels=2048 --set checkpoint.every=0
expect 1 "allocating" "more failed (the machine is out of memory)"
grep -q "16777216 TiB\|raise device.memory_limit" "$WORK/out_of_memory.err" && fail "blamed device.memory_limit"
# a run that fails before its first step leaves no run directory it made,
# parents included (only its lock files were in them), and keeps the rest
run too_small "$TESSEL" run "$WORK/digits.yaml" --set train.sample_tokens=0 --set device.memory_limit=1KiB \
  --set log.dir="$WORK/fresh/run"
expect 1 "the device tier cannot hold"
[ -e "$WORK/fresh" ] && fail "a run that never trained left $WORK/fresh: $(find "$WORK/fresh")"
mkdir -p "$WORK/kept" && touch "$WORK/kept/mine"
run too_small_kept "$TESSEL" run "$WORK/digits.yaml" --set train.sample_tokens=0 --set device.memory_limit=1KiB \
  --set log.dir="$WORK/kept/a/run/"
expect 1 "the device tier cannot hold"
[ "$(cd "$WORK/kept" && find . | sort | tr '\n' ' ')" = ". ./mine " ] ||
  fail "a run that never trained left or took: $(find "$WORK/kept")"
# refused at the lock of a checkpoint.dir another run holds: the log.dir it
# made for itself goes too (its lock file and new parents stayed)
mkdir -p "$WORK/busy"
exec 9>"$WORK/busy/.tessel-lock" # held by this shell, as another run would hold it
flock -x 9
run busy_ckpt "$TESSEL" run "$WORK/digits.yaml" --set train.sample_tokens=0 --set log.dir="$WORK/lockless/run" \
  --set checkpoint.dir="$WORK/busy"
exec 9>&-
expect 1 "checkpoint.dir $WORK/busy is in use by another tessel run"
[ -e "$WORK/lockless" ] && fail "a run refused at checkpoint.dir's lock left $(find "$WORK/lockless")"
# the advice leaves out what the run already does with its activations
run too_small_acts "$TESSEL" run "$WORK/digits.yaml" --set train.sample_tokens=0 --set device.memory_limit=1KiB \
  --set train.recompute=full --set train.offload_activations=true
expect 1 "the device tier cannot hold" "raise device.memory_limit, or shard or offload the model state"
grep -q "train.recompute\|train.offload_activations" "$WORK/too_small_acts.err" && fail "suggested what the run already does"
# tokenizer train: an output that is one of the inputs (by another name too)
# replaced the text with the tokenizer; an empty pattern or empty text
# trained a tokenizer of bytes alone
cp core/config/parse.c "$WORK/text.c" && ln -s "$WORK/text.c" "$WORK/text_link"
for out in text.c text_link; do
  run "train_over_input_$out" "$TESSEL" tokenizer train core/config/load.c "$WORK/text.c" --vocab 300 -o "$WORK/$out"
  expect 2 "-o $WORK/$out is the input file $WORK/text.c"
done
cmp -s core/config/parse.c "$WORK/text.c" || fail "tokenizer train replaced its input"
run train_empty_pattern "$TESSEL" tokenizer train "$WORK/text.c" --vocab 300 --pattern '' -o "$WORK/empty_pattern.json"
expect 2 "--pattern is empty"
: >"$WORK/empty.txt"
run train_empty_text "$TESSEL" tokenizer train "$WORK/empty.txt" --vocab 300 -o "$WORK/empty_text.json"
expect 1 "empty input: $WORK/empty.txt holds no bytes"
[ -e "$WORK/empty_pattern.json" ] || [ -e "$WORK/empty_text.json" ] && fail "a refused training wrote a tokenizer"
run decode_directory "$TESSEL" tokenizer decode tests/tokenizer/fixtures/gpt2_1024.json "$WORK"
expect 1 "$WORK: is a directory, not a regular file"
# an id of 70 characters is one id (it was read as two, 0 and 73); junk
# without end is refused at once
printf '%070d 73\n' 73 >"$WORK/long_id.txt"
run long_id "$TESSEL" tokenizer decode tests/tokenizer/fixtures/gpt2_1024.json "$WORK/long_id.txt"
expect 0
[ "$(cat "$WORK/long_id.out")" = "$("$TESSEL" tokenizer decode tests/tokenizer/fixtures/gpt2_1024.json <<<"73 73")" ] ||
  fail "decoded $(od -c "$WORK/long_id.out" | head -2)"
case_name=endless_junk
timeout 20 "$TESSEL" tokenizer decode tests/tokenizer/fixtures/gpt2_1024.json </dev/zero >/dev/null 2>"$WORK/$case_name.err"
status=$?
expect 2 "standard input: expected whole-number ids"

finish "ok: FIFOs, broken plugins, damaged and self-overwriting checkpoints, long option lists, odd bytes and values: each a clear error"
