# The verdict of tessel compare holds up to the noise, and the report's
# splits add up.
#  1. The same config twice, three interleaved trials each: "no measurable
#     difference" (identical work; the criterion calls identical runs
#     different about once in two hundred under Gaussian noise).
#  2. No strategy against the sleepy test strategy, which computes the same
#     model bit for bit but sleeps SLEEP ms per step — many times the ~1-5 ms
#     of a step of this model, so that even a loaded machine's noise stays
#     far below the difference: the plain config is named faster, by a
#     percentage near SLEEP / (its step time) — within 0.5x to 2x of that,
#     since sleeps overshoot and the two configs' trials meet different load.
#     The same with the sleep on every third step only: a cost paid every
#     few steps counts (throughput is tokens over the measured steps' time).
#  3. report.md leads with the decision; its time split adds up to the step
#     time within 5% (parts are averaged so that they add up exactly; 5%
#     allows the rounding of the printed milliseconds); the memory split adds
#     up to the peak within 1%.
#  4. With two trials, each row's tokens/s and ms/step describe one trial;
#     the run folders of an earlier comparison in --out are cleared.
#   verdict.sh TESSEL SRC TMP SLEEPY_PLUGIN
set -uo pipefail
TESSEL=$1; SRC=$2; TMP=$3; PLUGIN=$4
WORK=$TMP/compare_verdict.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
SLEEP=20
cat >"$WORK/plain.yaml" <<YAML
model: {layers: 2, heads: 2, channels: 32, seq_len: 16, vocab_size: 256}
data: {text: ["core/config/*.c"], dir: $WORK/data, val_fraction: 0.1}
train: {steps: 30, batch_size: 4, seed: 7, sample_tokens: 0}
device: {threads: 1}
YAML
printf 'base: plain.yaml\nplugin: {path: %s, sleep_ms: %d}\n' "$PLUGIN" $SLEEP >"$WORK/sleepy.yaml"

"$TESSEL" compare "$WORK/plain.yaml" "$WORK/plain.yaml" --repeat 3 --out "$WORK/same" >"$WORK/same.log" 2>&1 \
  || { cat "$WORK/same.log" >&2; fail "comparing a config with itself failed"; }
R=$WORK/same/report.md
sed -n 3p "$R" | grep -Eq "^For this model on this machine: no measurable difference in speed between plain@1(#2)? and plain@1" \
  || { cat "$R" >&2; fail "identical configs: the report does not lead with 'no measurable difference'"; }

"$TESSEL" compare "$WORK/sleepy.yaml" "$WORK/plain.yaml" --repeat 3 --out "$WORK/slow" >"$WORK/slow.log" 2>&1 \
  || { cat "$WORK/slow.log" >&2; fail "plain against sleepy failed"; }
R=$WORK/slow/report.md
line=$(sed -n 3p "$R")
pct=$(echo "$line" | sed -n 's/.*\*\*plain@1\*\*, because plain@1 is faster than sleepy@1 by \([0-9.]*\)% (spread [0-9.]*%).*/\1/p')
[ -n "$pct" ] || { cat "$R" >&2; fail "plain@1 is not named faster than sleepy@1 in the decision"; }
grep -q '^| plain@1 | 1 | ok | [0-9.]* | equivalent (0.0e+00' "$R" || fail "sleepy@1 and plain@1 do not train the same function bit for bit"
ms=$(grep '^| plain@1 | 1 | ok |' "$R" | awk -F'|' '{ print $10 }' | tr -d ' ')
awk -v p="$pct" -v ms="$ms" -v s=$SLEEP 'BEGIN { e = 100 * s / ms; printf "faster by %s%%; %d ms of sleep on %.2f ms steps predicts %.0f%%\n", p, s, ms, e
  exit !(p >= 0.5 * e && p <= 2 * e) }' || fail "the percentage $pct is not plausible"

# a cost paid on every third step only counts too: a median step missed it
# ("no measurable difference" for a config 17x slower in all)
printf 'base: plain.yaml\nplugin: {path: %s, sleep_ms: %d, every: 3}\n' "$PLUGIN" $SLEEP >"$WORK/hiccup.yaml"
"$TESSEL" compare "$WORK/hiccup.yaml" "$WORK/plain.yaml" --repeat 3 --out "$WORK/hiccup" >"$WORK/hiccup.log" 2>&1 \
  || { cat "$WORK/hiccup.log" >&2; fail "plain against a sleep on every third step failed"; }
sed -n 3p "$WORK/hiccup/report.md" | grep -q '\*\*plain@1\*\*, because plain@1 is faster than hiccup@1 by' ||
  { cat "$WORK/hiccup/report.md" >&2; fail "a sleep on every third step is not seen"; }

# the splits add up
grep '^| \(plain\|sleepy\)@1 | [0-9.]* | [0-9.]* |' "$R" | awk -F'|' '{
  step = $3; comp = $4; split($5, w, " "); split($6, b, " "); sum = comp + w[1] + b[1]
  printf "%s: step %.3f ms, compute %.3f + wait %.3f + bubble %.3f = %.3f\n", $2, step, comp, w[1], b[1], sum
  d = (sum - step) / step; if (d < 0) d = -d; if (d > 0.05) bad = 1; n++ } END { exit bad || n != 2 }' \
  || { cat "$R" >&2; fail "the time split does not add up to the step time within 5%"; }
grep '^| \(plain\|sleepy\)@1 | device |' "$R" | awk -F'|' '{ split($4, p, " "); sum = $5 + $6 + $7 + $8 + $9
  d = (sum - p[1]) / p[1]; if (d < 0) d = -d; if (d > 0.01 || p[1] <= 0) bad = 1; n++ } END { exit bad || n != 2 }' \
  || { cat "$R" >&2; fail "the memory split does not add up to the peak"; }
grep -q '^## Time per step' "$R" && grep -q '^## Memory per rank at the peak' "$R" || fail "sections missing"

# 4. With an even number of trials, a row's tokens/s and ms/step are the
#    same trial's: tokens/s × ms/step = the 64 tokens of a step, within the
#    printed rounding (ms/step has two decimals: 1.1% of a 0.45 ms step)
#    plus 0.2% (the mean of the two middle trials' tokens/s
#    once sat beside the slower one's step time, 7% to 2x apart).
#    A config with its own train.stop_after runs all its steps in a trial
#    (a trial never resumes; it was "failed (exit status 75)").
mkdir -p "$WORK/even/7-earlier@2/trial-1" "$WORK/even/notes"
printf 'base: plain.yaml\ntrain: {stop_after: 3}\n' >"$WORK/stops.yaml"
"$TESSEL" compare "$WORK/plain.yaml" "$WORK/stops.yaml" --repeat 2 --steps 10 --out "$WORK/even" >"$WORK/even.log" 2>&1 \
  || { cat "$WORK/even.log" >&2; fail "the comparison with two trials failed"; }
grep '^| \(plain\|stops\)@1 | 1 | ok |' "$WORK/even/report.md" | awk -F'|' '{ split($7, t, " "); tokens = t[1] * $10 / 1000
  printf "%s: %s tokens/s × %s ms = %.2f tokens\n", $2, t[1], $10, tokens
  d = (tokens - 64) / 64; if (d < 0) d = -d; if (d > 0.005 / $10 + 0.5 / t[1] + 0.002) bad = 1; n++ }
  END { exit bad || n != 2 }' \
  || { cat "$WORK/even/report.md" >&2; fail "a row's tokens/s and ms/step are not of the same trial"; }
[ ! -d "$WORK/even/7-earlier@2" ] || fail "an earlier comparison's run folder is left beside the new report"
[ -d "$WORK/even/notes" ] || fail "a folder compare did not write was removed"
rm -rf "$WORK"
echo "ok: identical configs: no measurable difference; plain@1 faster than sleepy@1 by $pct%; splits add up"
