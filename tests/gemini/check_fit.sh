# `tessel check` refuses a device.memory_limit gemini cannot train in, as
# `tessel run` does, without training or writing a file. gemini knows its
# least device only from its plan: the place hook refuses activations that
# do not fit beside the least chunks, setup a static placement that does
# not fit. check once passed all three cases below; it now asks gemini's
# estimate (what `tessel plan` asks), which refuses with the run's own
# words: the message after "failed in HOOK: " must be the run's, byte for
# byte, and the exit status the run's (1).
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/gemini_check_fit.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
CONFIG=tests/gemini/memory.yaml
common=(--set train.steps=2 --set train.sample_tokens=0 --set train.eval_every=0 --set checkpoint.resume=never
        --set log.progress=never --set device.threads=1)
offload=(--set plugin.offload_optim_frac=1 --set plugin.offload_param_frac=1)
body() { sed -n "s/^error: strategy 'gemini' failed in [a-z0-9 ]*: //p" "$1"; }

# case NAME HOOK TEXT ARGS...: run refuses in HOOK saying TEXT; check says the same
case_() {
  local name=$1 hook=$2 text=$3 rc; shift 3
  set +e
  "$TESSEL" check "$CONFIG" --quiet --set log.dir="$WORK/check" --set data.dir="$WORK/check-data" "${common[@]}" "$@" 2>"$WORK/$name.check" >/dev/null
  rc=$?
  set -e
  [ $rc -eq 1 ] || { cat "$WORK/$name.check" >&2; fail "$name: check exited $rc, not 1 as run does"; }
  [ ! -e "$WORK/check" ] && [ ! -e "$WORK/check-data" ] || fail "$name: check wrote files"
  grep "^error: strategy 'gemini' failed in estimate for rank 0: " "$WORK/$name.check" | grep -F "$text" >/dev/null ||
    { cat "$WORK/$name.check" >&2; fail "$name: check did not refuse: $text"; }
  set +e
  "$TESSEL" run "$CONFIG" --set log.dir="$WORK/$name" --set data.dir="$WORK/data" "${common[@]}" "$@" >"$WORK/$name.run" 2>&1
  rc=$?
  set -e
  [ $rc -eq 1 ] || { cat "$WORK/$name.run" >&2; fail "$name: run exited $rc"; }
  grep -q "^error: strategy 'gemini' failed in $hook: " "$WORK/$name.run" ||
    { cat "$WORK/$name.run" >&2; fail "$name: run did not fail in $hook"; }
  [ -n "$(body "$WORK/$name.check")" ] && [ "$(body "$WORK/$name.check")" = "$(body "$WORK/$name.run")" ] ||
    { diff <(body "$WORK/$name.check") <(body "$WORK/$name.run") >&2; fail "$name: check and run refuse differently"; }
  echo "ok $name: check refuses as run does in $hook"
}

case_ least place "this model cannot train on this device even with every chunk offloaded: a step needs at least" \
  --set device.memory_limit=2MiB "${offload[@]}"
case_ static setup "static placement needs" --set device.memory_limit=4MiB
case_ auto_full place "even with every chunk offloaded and every unit's activations recomputed in full" \
  --set device.memory_limit=1MiB --set plugin.placement=auto --set train.recompute=full
# for more ranks too (every rank holds a shard of the same size)
"$TESSEL" check "$CONFIG" --quiet --world 2 --set data.dir="$WORK/data" "${common[@]}" --set device.memory_limit=4MiB 2>"$WORK/world2.check" && \
  fail "check --world 2 passed a static placement that does not fit"
grep -qF "failed in estimate for rank 0: static placement needs" "$WORK/world2.check" ||
  { cat "$WORK/world2.check" >&2; fail "check --world 2 refused otherwise"; }
# and a limit gemini trains in still checks (memory.sh trains it)
"$TESSEL" check "$CONFIG" --quiet --world 2 --set data.dir="$WORK/data" "${common[@]}" --set device.memory_limit=4MiB "${offload[@]}" ||
  fail "check refused a limit gemini trains in"
rm -rf "$WORK"
echo "ok: check refuses what gemini's place and setup refuse, in their words"
