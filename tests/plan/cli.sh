#!/usr/bin/env bash
# tessel plan and tessel bench comm as a user meets them: usage and
# configuration mistakes exit 2 with a clear message, a --strategy that is
# not installed too (a misspelt one planned nothing and exited 0); the
# configuration's own strategy not found is listed, not fatal; --write writes configurations `tessel
# check` accepts for the planned world; GPT-2 1.5B on the hand-written
# 64 × H100 profile ranks every strategy, refuses what cannot run there for
# the stated reasons, and keeps Megatron's 18 bytes of model state per
# parameter under data parallelism (fp32 master, bf16 working copy, fp32
# gradient, two fp32 AdamW moments); bench comm writes a profile per world
# size that plan reads.
#
#   cli.sh TESSEL SRC TMP
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/plan_cli.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
export XDG_CACHE_HOME=$WORK/cache
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_exit CODE PATTERN ARGS...: tessel ARGS exits CODE and prints PATTERN
expect_exit() {
  local code=$1 pattern=$2; shift 2
  set +e; "$TESSEL" "$@" >"$WORK/out" 2>&1; local got=$?; set -e
  [ "$got" -eq "$code" ] || { cat "$WORK/out" >&2; fail "tessel $* exited $got, expected $code"; }
  grep -q -- "$pattern" "$WORK/out" || { cat "$WORK/out" >&2; fail "tessel $*: no '$pattern' in its output"; }
  echo "ok: tessel $* -> $code ($pattern)"
}
g=tests/plan/gpt2.yaml
expect_exit 2 "expected one CONFIG" plan --world 2
expect_exit 2 "world N is required" plan $g
expect_exit 2 "--world needs a number of ranks from 1 to 65536, got .0." plan $g --world 0
expect_exit 2 "--top needs a number of rows from 1 to 60, got .61." plan $g --world 2 --top 61
expect_exit 2 "does not exist" plan missing.yaml --world 2
# an output that cannot be written says why, under the name given (it
# read "cannot create" and nothing more; a temporary name stood in for it)
expect_exit 1 "$WORK: is a directory, not a file" plan $g --world 2 --json "$WORK"
expect_exit 1 "$WORK/none/p.json: cannot create: No such file or directory" plan $g --world 2 --json "$WORK/none/p.json"
printf 'model: {layers: 2\n' >"$WORK/broken.yaml"
expect_exit 2 "broken.yaml:" plan "$WORK/broken.yaml" --world 2
printf '{"compute": {"device": "gpu"}, "links": []}\n' >"$WORK/bad.json"
expect_exit 2 "bad.json: compute.peak_tflops" plan $g --world 2 --profile "$WORK/bad.json"
# a size past 2^64 bytes is refused (it was converted to an integer it does not fit)
printf '{"compute": {"device": "gpu", "peak_tflops": 1}, "memory": {"device": 1e20},
  "links": [{"within": "node", "alpha_us": 1, "busbw_gbps": 1}]}\n' >"$WORK/huge.json"
expect_exit 2 "huge.json: device: expected a size" plan $g --world 2 --profile "$WORK/huge.json"
# a mistake outside the plugin section is the configuration's, not a
# candidate's: exit 2 once, before anything is planned
expect_exit 2 "unknown key 'bogus' in model" plan $g --world 2 --set model.bogus=1
expect_exit 2 "init_from: cannot start from these weights" plan $g --world 2 --set model.init_from="$WORK/none"
expect_exit 2 "--strategy 'nosuch' is not an installed strategy; the installed ones are .*ddp" plan $g --world 2 --strategy nosuch
expect_exit 2 "--strategy 'dpp' is not an installed strategy (did you mean 'ddp'?)" plan $g --world 2 --strategy ddp --strategy dpp
expect_exit 0 "nosuch {(as configured)}: .*plugin.name: strategy plugin 'nosuch' was not found" plan $g --world 2 --set plugin.name=nosuch
# the whole message (it once ended at "Looked for:")
expect_exit 0 "^    Check the name (.tessel plugins. lists what is installed)" plan $g --world 2 --set plugin.name=nosuch
expect_exit 0 "profile: none" plan $g --world 2 --strategy ddp
# the configuration's device.memory_limit is the device a candidate must fit,
# as --memory-limit is (ddp keeps 9.5 MiB a rank of this model)
expect_exit 0 "^1 .*dp 2 .* no$" plan $g --world 2 --strategy ddp --set device.memory_limit=1MiB
expect_exit 0 "^1 .*dp 2 .* yes$" plan $g --world 2 --strategy ddp --set device.memory_limit=64MiB
# a device no gemini candidate fits: those are listed as not ranked, with
# gemini's reason, and the plan goes on (it once stopped: "out of memory")
expect_exit 0 "gemini {placement: auto}: strategy 'gemini' failed in estimate" plan $g --world 2 --memory-limit 1MiB
# a strategy's warning is advice for a run of it: shown when the user
# configured that strategy, not when plan only asks it about its options
# (tp3d at 4 ranks once warned above every plan, listed or not)
expect_exit 0 "warning: tp3d: no tensor-parallel group" plan $g --world 4 --set 'plugin={name: tp3d}'
"$TESSEL" plan $g --world 4 >"$WORK/quiet.log" 2>&1 || { cat "$WORK/quiet.log" >&2; fail "plan --world 4 failed"; }
grep -q "^warning: tp3d" "$WORK/quiet.log" && { cat "$WORK/quiet.log" >&2; fail "plan shows tp3d's warning for a run nobody asked for"; }
grep -q "tp3d {(defaults)}: offers no option set for 4 rank" "$WORK/quiet.log" \
  || { cat "$WORK/quiet.log" >&2; fail "plan does not say why tp3d is not ranked"; }
echo "ok: plan shows a strategy's warnings only for the configured one"

# --write: the best fitting candidates as configurations for the world
"$TESSEL" plan $g --world 4 --top 6 --write "$WORK/best" --set data.dir="$WORK/data" >"$WORK/write.log" 2>&1 \
  || { cat "$WORK/write.log" >&2; fail "plan --write failed"; }
n=0
for f in "$WORK"/best/*.yaml; do
  "$TESSEL" check "$f" --world 4 --quiet || fail "$f, written by plan --write, does not pass tessel check --world 4"
  n=$((n + 1))
done
[ "$n" -eq 6 ] || fail "plan --write --top 6 wrote $n configurations"
echo "ok: plan --write wrote $n configurations that tessel check accepts at 4 ranks"
# a plan made for --memory-limit writes that limit into its choices: gemini's
# auto placement, chosen for the limit, once ran unbounded from them
"$TESSEL" plan $g --world 2 --strategy gemini --memory-limit 48MiB --top 1 --write "$WORK/limited" \
  --set data.dir="$WORK/data" >"$WORK/limited.log" 2>&1 || { cat "$WORK/limited.log" >&2; fail "plan --memory-limit --write failed"; }
grep -q "^  memory_limit: 50331648$" "$WORK"/limited/01-*.yaml ||
  { cat "$WORK"/limited/01-*.yaml >&2; fail "the written choice lacks the planned device.memory_limit"; }
# a second plan into the same folder says which of the first's choices are
# left beside its own (03..06 sat there unmentioned), and removes nothing:
# one may be the config it plans from; replacing that one is refused
# (named with a trailing slash, as shell completion writes it: its files
# are named without a doubled one)
"$TESSEL" plan $g --world 4 --top 2 --write "$WORK/best/" --set data.dir="$WORK/data" >"$WORK/write2.log" 2>&1 \
  || { cat "$WORK/write2.log" >&2; fail "the second plan --write failed"; }
grep -qxF "wrote $WORK/best/$(basename "$(ls "$WORK"/best/01-*.yaml)")" "$WORK/write2.log" ||
  { cat "$WORK/write2.log" >&2; fail "plan --write DIR/ does not name its first file DIR/01-..."; }
grep -q "best also holds 4 choice(s) of an earlier plan (.*03-.*), left as they are" "$WORK/write2.log" ||
  { cat "$WORK/write2.log" >&2; fail "the earlier plan's choices went unmentioned"; }
[ "$(ls "$WORK/best" | wc -l)" -eq 6 ] || fail "the second plan --write changed what the folder holds: $(ls "$WORK/best")"
# (nor one it includes as its base, and nothing is written before saying so)
first=$(ls "$WORK/best"/01-*.yaml)
second=$(ls "$WORK/best"/02-*.yaml)
cp "$first" "$WORK/first.before"
cp "$second" "$WORK/second.before"
printf 'base: %s\ntrain: {steps: 3}\n' "$second" >"$WORK/mine.yaml"
for cfg in "$first" "$WORK/mine.yaml"; do
  set +e
  "$TESSEL" plan "$cfg" --world 4 --top 2 --write "$WORK/best" >"$WORK/write3.log" 2>&1
  rc=$?
  set -e
  [ $rc -eq 2 ] && grep -q "would replace .*, which $cfg is read from, with a choice: write to another folder (nothing was written)" \
    "$WORK/write3.log" || { cat "$WORK/write3.log" >&2; fail "planning $cfg into the folder of what it reads: exit $rc"; }
  cmp -s "$first" "$WORK/first.before" && cmp -s "$second" "$WORK/second.before" ||
    fail "planning $cfg replaced a file before refusing"
done
# a log.dir the config names: each written configuration gets its own below
# it (they shared it, so running them in turn resumed the first's checkpoint)
"$TESSEL" plan $g --world 4 --top 3 --write "$WORK/own" --set log.dir="$WORK/mine" >"$WORK/own.log" 2>&1 \
  || { cat "$WORK/own.log" >&2; fail "plan --write with log.dir failed"; }
dirs=$(sed -n '/^log:/,/^[a-z]/s/^  dir: //p' "$WORK"/own/*.yaml | sort -u)
[ "$(echo "$dirs" | grep -c "^$WORK/mine/plan-")" -eq 3 ] ||
  { echo "$dirs" >&2; fail "the written configurations do not each have their own log.dir under $WORK/mine"; }
echo "ok: plan --write gives each configuration its own log.dir under the one the config names"

# A sliding window cuts the attention FLOPs the estimates count: llama.yaml
# (4 layers, 4 heads of 16, seq_len 32, 16 sequences a step) under a window
# of 8, forward and backward, 3 · 512 tokens · 4 · 2·4·16 · (32 − 8) fewer
flops_of() { tr -d ' \t\n' <"$1" | grep -o '"flops":[0-9.e+]*' | head -1 | cut -d: -f2; }
for w in 0 8; do
  "$TESSEL" plan tests/plan/llama.yaml --world 2 --strategy ddp --set model.sliding_window=$w --json "$WORK/w$w.json" \
    >"$WORK/w$w.log" 2>&1 || { cat "$WORK/w$w.log" >&2; fail "the plan with sliding_window $w failed"; }
done
awk -v a="$(flops_of "$WORK/w0.json")" -v b="$(flops_of "$WORK/w8.json")" -v want=$((3 * 512 * 4 * 2 * 4 * 16 * 24)) \
  'BEGIN { exit !(a - b == want) }' || fail "a window of 8 does not cut the estimated FLOPs by the attention it skips"
echo "ok: the estimates count the keys a windowed query attends to"

# GPT-2 1.5B on 64 H100s
plan=$WORK/gpt2_1.5b.json
"$TESSEL" plan bench/configs/gpt2_1.5b.yaml --world 64 --profile bench/profiles/h100x64.json --json "$plan" \
  >"$WORK/h100.log" 2>&1 || { cat "$WORK/h100.log" >&2; fail "the GPT-2 1.5B plan failed"; }
grep -q "needs fp32 activations" "$WORK/h100.log" || fail "gemini was not refused for bf16 activations"
grep -q "tp2d {(defaults)}: offers no option set for 64 rank" "$WORK/h100.log" || fail "tp2d was not refused (25 heads)"
grep -q "^1 .* yes$" "$WORK/h100.log" || fail "the first-ranked GPT-2 1.5B candidate does not fit an 80 GiB H100"
L=48; C=1600; T=1024; V=50304 # the vocabulary padded to a multiple of 64
psi=$((V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C))
# (no `| head` here: under pipefail the grep it cuts short fails the script)
ddp=$(tr -d ' \t\n' <"$plan" | grep -o '"strategy":"ddp".*')
ddp=${ddp:0:2000}
for kind in "params $((6 * psi))" "grads $((4 * psi))" "optim $((8 * psi))"; do
  set -- $kind
  grep -q "\"$1\":$2," <<<"$ddp" || fail "ddp: $1 is not $2 bytes (Psi = $psi): $ddp"
done
echo "ok: GPT-2 1.5B under ddp keeps 18 bytes per parameter (Psi = $psi) and the first choice fits"

# bench comm: one measurement per world size, read back by plan
MPI=(mpirun --bind-to none --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
# no `tessel bench peak` first: on a machine without a record, bench comm
# measures the GEMM rate itself (its profile once lacked it, and plan
# refused the file)
for n in 2 4; do
  "${MPI[@]}" -n $n "$TESSEL" bench comm --max-bytes 64KiB --out "$WORK/comm.json" >"$WORK/comm$n.log" 2>&1 \
    || { cat "$WORK/comm$n.log" >&2; fail "bench comm on $n ranks failed"; }
done
flat=$(tr -d ' \t\n' <"$WORK/comm.json")
[ "$(echo "$flat" | grep -o '"ranks":2,"world":2' | wc -l)" -eq 7 ] || fail "not 7 collectives on groups of 2 at world 2"
[ "$(echo "$flat" | grep -o '"world":4,"alpha_us"' | wc -l)" -eq 14 ] || fail "not 7 collectives each on groups of 2 and 4 at world 4"
"$TESSEL" plan $g --world 2 --profile "$WORK/comm.json" --strategy ddp >"$WORK/local.log" 2>&1 \
  || { cat "$WORK/local.log" >&2; fail "plan cannot read the measured profile"; }
grep -q "^1  *ddp .* yes$" "$WORK/local.log" || { cat "$WORK/local.log" >&2; fail "no timed ddp row on the measured profile"; }
echo "ok: bench comm measured worlds 2 and 4 into one profile; plan times with it"
rm -rf "$WORK"
