#!/usr/bin/env bash
# model.sliding_window through a whole run, on a tiny Llama of seq_len 16:
# (1) a window as long as the sequence is no window: its losses equal the
#     full attention's bit for bit, while a window of 4 changes them;
# (2) MFU counts the keys a query attends to: with device.peak_tflops 1,
#     FLOPs per token = mfu · 1e12 / tokens_per_s, and a window of 4 counts
#     12 · layers · (16 − 4) · heads · head size fewer than none (relative
#     1e-9: the division's rounding, far below the 12·L·C = 768 of one key);
# (3) `tessel sample` from the windowed checkpoint decodes over its cache
#     past the window.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" sliding_window
L=2 H=2 HS=16 T=16
run() { # NAME WINDOW
  "$TESSEL" run "$WORK/tiny.yaml" --set model.arch=llama --set model.layers=$L --set model.heads=$H \
    --set model.channels=$((H * HS)) --set model.seq_len=$T --set model.sliding_window="$2" \
    --set device.peak_tflops=1 --set train.eval_every=0 --set log.dir="$WORK/$1" >"$WORK/$1.log" 2>&1 ||
    { cat "$WORK/$1.log" >&2; fail "training with sliding_window $2 failed"; }
}
run none 0
run whole $T
run four 4
cmp -s <(losses "$WORK/none/metrics.jsonl") <(losses "$WORK/whole/metrics.jsonl") ||
  fail "a window of seq_len ($T) trained otherwise than no window"
cmp -s <(losses "$WORK/none/metrics.jsonl") <(losses "$WORK/four/metrics.jsonl") &&
  fail "a window of 4 of $T positions changed no loss"
grep -q "in a sliding window of 4," "$WORK/four.log" || fail "the run does not name its window"
flops() { sed -n 's/.*"tokens_per_s":\([^,]*\),"mfu":\([^,]*\),.*/\1 \2/p' "$WORK/$1/metrics.jsonl" | head -1 |
  awk '{ printf "%.17g", $2 * 1e12 / $1 }'; }
awk -v none="$(flops none)" -v four="$(flops four)" -v want=$((12 * L * (T - 4) * H * HS)) 'BEGIN {
  got = none - four; d = got - want; if (d < 0) d = -d
  printf "FLOPs per token: %.6g without a window, %.6g with one of 4: %.6g fewer (expected %d)\n", none, four, got, want
  exit !(d <= 1e-9 * none) }' || fail "MFU does not count the window's keys"
CK=$WORK/four/checkpoints/step_00000012
"$TESSEL" sample "$CK" --prompt "static int " --tokens 20 --temperature 0 >"$WORK/sample.txt" 2>"$WORK/sample.log" ||
  { cat "$WORK/sample.log" >&2; fail "sampling from the windowed checkpoint failed"; }
[ "$(wc -c <"$WORK/sample.txt")" -gt 20 ] || fail "the sample is too short"
rm -rf "$WORK"
echo "ok: a window of seq_len is none, a shorter one trains otherwise, MFU counts its keys, and it samples"
