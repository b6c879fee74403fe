#!/usr/bin/env bash
# Command-line options as a user mistypes them: a value out of range is a
# usage error (exit 2) that names the option and what it takes (every one
# once read "bad option or value", and compare's blamed --out, which was
# not given); `bench peak --threads` above the CPUs is lowered with a
# warning, since a rate recorded per thread from time-shared threads
# inflated every later run's MFU (a recorded 100000 threads read as MFU in
# the millions of percent).
#
#   options.sh TESSEL TMP
set -euo pipefail
TESSEL=$1; TMP=$2
WORK=$TMP/cli_options.$$
rm -rf "$WORK"; mkdir -p "$WORK"
export XDG_CACHE_HOME=$WORK/cache
fail() { echo "FAIL: $*" >&2; exit 1; }
# bad TEXT ARGS...: tessel ARGS exits 2 and its first line of stderr contains TEXT
bad() {
  local text=$1; shift
  set +e; "$TESSEL" "$@" >"$WORK/out" 2>"$WORK/err"; local rc=$?; set -e
  [ $rc -eq 2 ] || { cat "$WORK/err" >&2; fail "tessel $*: exit $rc, expected 2"; }
  grep -qF -- "$text" "$WORK/err" || { cat "$WORK/err" >&2; fail "tessel $*: no '$text'"; }
  echo "ok: tessel $* -> $text"
}
bad "--repeat needs a number of trials from 1 to 32, got '1000'" compare a.yaml b.yaml --repeat 1000
bad "--steps needs a whole number of steps from 1" compare a.yaml b.yaml --steps 0
# the default warm-up leaves nothing to measure: say so, not "--warmup must
# be below --steps" when no --warmup was given
bad "--steps 1 leaves no step to measure after the default --warmup of 1 (a tenth of the steps, at least 1): give --steps 2 or more, or --warmup 0" \
  compare a.yaml b.yaml --steps 1
bad "--warmup 5 must be below --steps 5" compare a.yaml b.yaml --steps 5 --warmup 5
bad "--tolerance needs a relative tolerance of 0 or more, got '-1'" compare a.yaml b.yaml --tolerance -1
bad "-n needs a number of ranks from 1 to 4096, got '0'" compare a.yaml b.yaml -n 0
bad "tessel compare: bad option" compare a.yaml b.yaml --bogus
# a config whose name holds '@' is that config, not CONFIG@RANKS (it was
# "bad rank count"): here it is refused for training another model
printf 'model: {layers: 1, heads: 2, channels: 16, seq_len: 8}\ndata: {train: "x_*.bin"}\ntrain: {steps: 2}\n' >"$WORK/we@ird.yaml"
sed 's/layers: 1/layers: 2/' "$WORK/we@ird.yaml" >"$WORK/other.yaml"
bad "$WORK/we@ird.yaml and $WORK/other.yaml train different models" compare "$WORK/we@ird.yaml" "$WORK/other.yaml" \
  --out "$WORK/cmp"
# two Llamas that differ in their rotary scaling alone are different models
printf 'model: {arch: llama, layers: 1, heads: 2, channels: 16, seq_len: 8}\ndata: {train: "x_*.bin"}\ntrain: {steps: 2}\n' \
  >"$WORK/plain.yaml"
sed 's/seq_len: 8}/seq_len: 8, rope_scaling: {type: llama3}}/' "$WORK/plain.yaml" >"$WORK/scaled.yaml"
bad "$WORK/scaled.yaml: llama with layers 1, heads 2, kv_heads 2, head_dim 8, channels 16, ffn 64, seq_len 8, vocab_size 256, \
rope_theta 10000, rope_scaling {type: llama3, factor: 8, low_freq_factor: 1, high_freq_factor: 4, original_positions: 8192}" \
  compare "$WORK/plain.yaml" "$WORK/scaled.yaml" --out "$WORK/cmp"
# and so are two whose rope_theta differ in the seventh digit (%g printed
# both as 500000, and compare went on to train them as one model)
sed 's/seq_len: 8}/seq_len: 8, rope_theta: 500000}/' "$WORK/plain.yaml" >"$WORK/theta.yaml"
sed 's/seq_len: 8}/seq_len: 8, rope_theta: 500000.4}/' "$WORK/plain.yaml" >"$WORK/theta2.yaml"
bad "rope_theta 500000.4," compare "$WORK/theta.yaml" "$WORK/theta2.yaml" --out "$WORK/cmp"
# and a Llama with q, k and v biases is another model than one without
sed 's/seq_len: 8}/seq_len: 8, qkv_bias: true}/' "$WORK/plain.yaml" >"$WORK/bias.yaml"
bad "qkv_bias true," compare "$WORK/plain.yaml" "$WORK/bias.yaml" --out "$WORK/cmp"
# and one with q/k norms
sed 's/seq_len: 8}/seq_len: 8, qk_norm: true}/' "$WORK/plain.yaml" >"$WORK/norm.yaml"
bad "qk_norm true," compare "$WORK/plain.yaml" "$WORK/norm.yaml" --out "$WORK/cmp"
# tessel import's help names what it imports: it said rope_scaling was
# refused and named no Mistral after both were imported
"$TESSEL" help import >"$WORK/out"
grep -q "MistralForCausalLM" "$WORK/out" && grep -q "Qwen2ForCausalLM" "$WORK/out" &&
  grep -q "Qwen3ForCausalLM" "$WORK/out" && grep -q "rope_scaling llama3" "$WORK/out" &&
  ! grep -q "(rope_scaling," "$WORK/out" || { cat "$WORK/out" >&2; fail "tessel help import: stale"; }
bad "--temperature needs a temperature from 0 (greedy) to 100, got '-1'" sample ckpt --temperature -1
# numbers as a config reads them, in its key's range: strtod took inf, nan,
# hex and 1e308 (a uniform draw, or no loss-equivalence check at all)
for t in inf nan 0x10 1e308 101 1e400; do
  bad "--temperature needs a temperature from 0 (greedy) to 100, got '$t'" sample ckpt --temperature "$t"
done
bad "--tolerance needs a relative tolerance of 0 or more, got 'inf'" compare a.yaml b.yaml --tolerance inf
bad "--val-tolerance needs a relative tolerance of 0 or more, got 'INF'" compare a.yaml b.yaml --val-tolerance INF
bad "--val-tolerance needs a relative tolerance of 0 or more, got '0x1p-3'" compare a.yaml b.yaml --val-tolerance 0x1p-3
bad "--val-fraction needs a fraction from 0 to 0.5, got '0.6'" data prepare x.txt -o d --val-fraction 0.6
bad "--shard-tokens needs a number of tokens above 0, got '0'" data prepare x.txt -o d --shard-tokens 0
bad "--vocab needs a vocabulary size from 2 to 1073741824, got '1'" tokenizer train x.txt -o t.json --vocab 1
bad "--threads needs a number of threads of 1 or more, got '0'" bench peak --threads 0
bad "--max-bytes needs a size of at least 4KiB, got '1'" bench comm --max-bytes 1
bad "--ranks needs a list of up to 8 rank counts" plugin-check x.so --ranks 0
# a ninth count was dropped unsaid; counts whose batch would be huge
bad "--ranks needs a list of up to 8 rank counts from 1 to 1024 (1,2,4), got '1,2,3,4,5,6,7,8,9'" \
  plugin-check x.so --ranks 1,2,3,4,5,6,7,8,9
bad "--ranks: a batch that every count divides would be more than 4096 sequences" plugin-check x.so --ranks 1019,1021
# launch's own mistakes before mpirun starts N ranks to find them: options
# before CONFIG as `tessel run` takes them (--set was once taken for the
# config file), -n's range named, and the config validated once for N
# ranks, as `tessel check --world N` does, with no rank started (no
# placement line: mpirun started 128 ranks to say that a batch of 2 does not
# split over them)
printf 'the quick brown fox jumps over the lazy dog\n%.0s' $(seq 200) >"$WORK/text.txt"
printf 'model: {layers: 1, heads: 2, channels: 16, seq_len: 8, vocab_size: 256}\ndata: {text: [%s]}\ntrain: {steps: 2, batch_size: 2}\ncheckpoint: {resume: never}\nlog: {level: warn}\n' \
  "$WORK/text.txt" >"$WORK/launch.yaml"
launch_bad() {
  bad "$@"
  ! grep -q "^launch:" "$WORK/err" || { cat "$WORK/err" >&2; fail "tessel ${*:2}: mpirun was started"; }
}
launch_bad "$WORK/nope.yaml: no such config file" launch -n 2 "$WORK/nope.yaml"
launch_bad "tessel launch: -n is given twice" launch -n 2 -n 3 "$WORK/nope.yaml"
launch_bad "-n needs a whole number of ranks from 1 to 4096, got 'abc'" launch -n abc "$WORK/launch.yaml"
launch_bad "-n needs a whole number of ranks from 1 to 4096, got '0'" launch -n 0 "$WORK/launch.yaml"
launch_bad "-n needs a whole number of ranks from 1 to 4096, got '4097'" launch -n 4097 "$WORK/launch.yaml"
launch_bad "tessel launch: missing -n N, the number of ranks" launch "$WORK/launch.yaml"
launch_bad "tessel launch: expected one CONFIG file" launch -n 2 "$WORK/launch.yaml" extra
launch_bad "--set=model.layers=two:1:20: model.layers: expected an integer, got 'two'" \
  launch -n 2 --set model.layers=two --set 'plugin={name: ddp}' "$WORK/launch.yaml"
launch_bad "this run has 2 ranks but no strategy" launch "$WORK/launch.yaml" -n2
launch_bad "train.batch_size: 2 sequences do not split evenly over 128 data-parallel ranks" \
  launch -n 128 --set 'plugin={name: ddp}' "$WORK/launch.yaml"
# -h or --help as an option's value is that value, not a help request (the
# usage was printed, exit 0, and nothing sampled); after a flag it is help
bad "--set=-h:1:7: expected KEY.PATH=VALUE" check "$WORK/launch.yaml" --set -h
bad "--set=--help:1:" check --set --help "$WORK/launch.yaml"
"$TESSEL" sample "$WORK/nock" --prompt -h --tokens 3 >"$WORK/out" 2>"$WORK/err" && fail "sample of no checkpoint succeeded"
! grep -q "usage:" "$WORK/out" && grep -q "$WORK/nock: no such checkpoint directory" "$WORK/err" ||
  { cat "$WORK/out" "$WORK/err" >&2; fail "sample --prompt -h: taken as a help request"; }
"$TESSEL" check "$WORK/launch.yaml" --quiet -h >"$WORK/out" 2>&1 && grep -q "^usage: tessel check" "$WORK/out" ||
  { cat "$WORK/out" >&2; fail "check --quiet -h: no help"; }
echo "ok: -h as the value of --set and --prompt is a value; after --quiet it is help"
# a verb's usage error shows that verb's usage line (they showed the first:
# tokenizer train's, bench peak's); extra arguments are refused (bench peak
# ran, help printed the help, both exit 0)
bad "usage: tessel tokenizer encode TOKENIZER [FILE]" tokenizer encode
bad "usage: tessel tokenizer info TOKENIZER" tokenizer info a b
! grep -q "tokenizer train" "$WORK/err" || { cat "$WORK/err" >&2; fail "tokenizer info a b: the train usage line"; }
bad "usage: mpirun -n N tessel bench comm" bench comm --device gpu
bad "tessel bench: bench peak takes no arguments, got 'extra'" bench peak extra
bad "tessel help: takes one command, got 'extra' too" help run extra
# a misspelt --strategy planned nothing and exited 0
bad "--strategy 'dpp' is not an installed strategy (did you mean 'ddp'?); the installed ones are ddp," \
  plan "$WORK/launch.yaml" --world 2 --strategy dpp
if command -v mpirun >/dev/null; then
  "$TESSEL" launch -n 2 --set 'plugin={name: ddp}' --set log.dir="$WORK/launched" -- "$WORK/launch.yaml" \
    >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err" >&2; fail "launch -n 2 with options before CONFIG failed"; }
  [ "$(grep -c '"step"' "$WORK/launched/metrics.jsonl")" -eq 2 ] || fail "launch -n 2: not 2 steps logged"
  echo "ok: tessel launch -n 2 --set ... -- CONFIG trains"
fi
# extra arguments and a missing profile (they exited 0 and 1)
bad "tessel version: takes no arguments, got 'extra'" version extra
printf 'model: {layers: 1, heads: 2, channels: 16, seq_len: 8, vocab_size: 64}\ndata: {text: [x.txt]}\ntrain: {steps: 1, batch_size: 2}\n' \
  >"$WORK/plan.yaml"
bad "--profile $WORK/none.json does not exist" plan "$WORK/plan.yaml" --world 2 --profile "$WORK/none.json"

# the two commands that are not table entries have help too (they were
# once called unknown, with themselves as the suggestion)
for cmd in version help; do
  "$TESSEL" help $cmd >"$WORK/out" 2>&1 || { cat "$WORK/out" >&2; fail "tessel help $cmd failed"; }
  grep -q "^usage: tessel $cmd" "$WORK/out" || { cat "$WORK/out" >&2; fail "tessel help $cmd: no usage"; }
done
echo "ok: tessel help version, tessel help help"

cpus=$(nproc)
"$TESSEL" bench peak --threads $((cpus + 5)) >"$WORK/peak.out" 2>"$WORK/peak.err" || { cat "$WORK/peak.err" >&2; fail "bench peak failed"; }
grep -q "warning: --threads $((cpus + 5)) is more than the $cpus CPU(s)" "$WORK/peak.err" ||
  { cat "$WORK/peak.err" >&2; fail "no warning for --threads above the CPUs"; }
grep -Eq "\"threads\":[[:space:]]*$cpus," "$XDG_CACHE_HOME"/tessel/peak-*.json ||
  { cat "$XDG_CACHE_HOME"/tessel/peak-*.json >&2; fail "the record is not of $cpus threads"; }
echo "ok: bench peak --threads $((cpus + 5)) measures and records $cpus threads"
rm -rf "$WORK"
