# How tessel compare fails, as a user comparing strategies meets it.
#  1. CONFIG@ with no rank count is a usage error (exit 2), not a search for
#     a file called "CONFIG@"; a missing config is named once, not twice.
#  2. One configuration failing at run time (its loss becomes NaN) is
#     reported with its message and its log, the others are still compared,
#     and compare exits 1. When it is the first, the one that differs is
#     said to differ from the configuration it was measured against.
#  3. A comparison that fails its checks after clearing the report folder
#     leaves no report or chart of the earlier comparison behind.
#   failures.sh TESSEL SRC TMP
set -uo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/compare_failures.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat >"$WORK/plain.yaml" <<YAML
model: {layers: 1, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}
data: {text: ["core/config/*.c"], dir: $WORK/data, val_fraction: 0.1}
train: {steps: 30, batch_size: 4, seed: 7, sample_tokens: 0}
device: {threads: 1}
YAML
printf 'base: plain.yaml\noptimizer: {lr: 1.0e-2}\n' >"$WORK/lr.yaml"
# a constant, huge step size without clipping: the loss is NaN by step 10
printf 'base: plain.yaml\noptimizer: {lr: 10, min_lr: 10, grad_clip: 0, warmup_steps: 0, beta2: 0.0}\n' >"$WORK/nan.yaml"
printf 'base: plain.yaml\ntrain: {bogus_key: 3}\n' >"$WORK/badkey.yaml"
C=(--steps 12 --repeat 1 --out "$WORK/cmp")

"$TESSEL" compare "$WORK/plain.yaml@" "$WORK/lr.yaml" "${C[@]}" >"$WORK/at.log" 2>&1
rc=$?
[ $rc -eq 2 ] && grep -q "bad rank count in '$WORK/plain.yaml@'" "$WORK/at.log" \
  || { cat "$WORK/at.log" >&2; fail "CONFIG@ exited $rc without naming the bad rank count"; }
"$TESSEL" compare "$WORK/missing.yaml" "$WORK/lr.yaml" "${C[@]}" >"$WORK/missing.log" 2>&1
rc=$?
[ $rc -eq 2 ] && [ "$(grep -o "$WORK/missing.yaml" "$WORK/missing.log" | wc -l)" -eq 1 ] \
  || { cat "$WORK/missing.log" >&2; fail "a missing config: exit $rc, or its name not said once"; }

"$TESSEL" compare "$WORK/nan.yaml" "$WORK/plain.yaml" "$WORK/lr.yaml" "${C[@]}" >"$WORK/nan.log" 2>&1
rc=$?
R=$WORK/cmp/report.md
[ $rc -eq 1 ] && [ -f "$R" ] || { cat "$WORK/nan.log" >&2; fail "a failing configuration: exit $rc, expected 1 and a report"; }
grep -q "^- nan@1 failed: error: the loss became NaN .* (log: $WORK/cmp/1-nan@1/trial-1/run.log)$" "$R" \
  || { cat "$R" >&2; fail "the report does not give the failure's message and log"; }
grep -q "NaN" "$WORK/cmp/1-nan@1/trial-1/run.log" || fail "the log named is not the failed trial's"
grep -q '^| nan@1 | 1 | FAILED |' "$R" && grep -q '^| plain@1 | 1 | ok | [0-9.]* | reference |' "$R" \
  && grep -q '^| lr@1 | 1 | ok | [0-9.]* | DIFFERS' "$R" || { cat "$R" >&2; fail "the rest were not compared"; }
grep -q "^- lr@1 does not train the same function as plain@1, the first completed configuration" "$R" \
  || { cat "$R" >&2; fail "lr@1 is not said to differ from plain@1, its reference"; }
sed -n 3p "$R" | grep -q '\*\*plain@1\*\*' || { cat "$R" >&2; fail "the decision is not plain@1"; }

ls "$WORK"/cmp/*.png >/dev/null 2>&1 || [ -z "$(command -v gnuplot)" ] || fail "no charts were drawn"
"$TESSEL" compare "$WORK/plain.yaml" "$WORK/badkey.yaml" "${C[@]}" >"$WORK/bad.log" 2>&1
rc=$?
[ $rc -eq 2 ] || { cat "$WORK/bad.log" >&2; fail "a config failing its check: exit $rc, expected 2"; }
left=$(ls "$WORK"/cmp/report.md "$WORK"/cmp/*.png 2>/dev/null)
[ -z "$left" ] || fail "the earlier comparison's report and charts are left over runs it no longer has: $left"
rm -rf "$WORK"
echo "ok: CONFIG@ is a usage error; a failing configuration is reported with its log and the rest compared; no stale report"
