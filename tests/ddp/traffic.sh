# ddp's traffic: every step the dp group carries exactly 4·Ψ payload bytes
# (each fp32 gradient once), and with 4 micro-batches of accumulation it still
# makes the same calls once per step, not once per micro-batch.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/ddp_traffic.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
# Ψ for configs/quickstart.yaml's model (V=256, C=128, T=64, L=4):
# wte V·C + wpe T·C + L·(12C² + 13C) + ln_f 2C
PSI=$(awk 'BEGIN { V = 256; C = 128; T = 64; L = 4; print V*C + T*C + L*(12*C*C + 13*C) + 2*C }')
common=(--set train.steps=3 --set train.sample_tokens=0 --set checkpoint.resume=never --set log.progress=never
        --set data.dir="$WORK/data" --set device.threads=1)
field() { grep -o "\"dp\":{[^}]*}" "$1" | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"; }

"$TESSEL" launch -n 2 configs/ddp.yaml --set log.dir="$WORK/plain" "${common[@]}" >"$WORK/plain.log" 2>&1 \
  || { cat "$WORK/plain.log" >&2; fail "2-rank run failed"; }
"$TESSEL" launch -n 2 configs/ddp.yaml --set log.dir="$WORK/accum" --set train.micro_batch_size=2 "${common[@]}" \
  >"$WORK/accum.log" 2>&1 || { cat "$WORK/accum.log" >&2; fail "2-rank accumulation run failed"; }
grep -q "2 data rank(s) × 4 micro-batch(es) of 2" "$WORK/accum.log" || fail "the accumulation run did not use 4 micro-batches"

for run in plain accum; do
  for p in $(field "$WORK/$run/metrics.jsonl" payload_bytes); do
    [ "$p" -eq $((4 * PSI)) ] || fail "$run: dp payload $p bytes per step, expected 4·Ψ = $((4 * PSI))"
  done
  [ "$(field "$WORK/$run/metrics.jsonl" payload_bytes | wc -l)" -eq 3 ] || fail "$run: dp traffic missing from some step"
done
# a Llama (tests/ddp/llama.yaml: V=256, C=64, L=4, 2 key/value heads of 16
# channels, ffn 192): embed_tokens and lm_head V·C each, per block two RMS
# norms 2C and the linears 2C² + 2C·Ckv + 3C·F, model.norm C
PSI_LLAMA=$(awk 'BEGIN { V = 256; C = 64; L = 4; Ckv = 32; F = 192
  print 2*V*C + L*(2*C + 2*C*C + 2*C*Ckv + 3*C*F) + C }')
"$TESSEL" launch -n 2 tests/ddp/llama.yaml --set log.dir="$WORK/llama" "${common[@]}" >"$WORK/llama.log" 2>&1 \
  || { cat "$WORK/llama.log" >&2; fail "2-rank Llama run failed"; }
for p in $(field "$WORK/llama/metrics.jsonl" payload_bytes); do
  [ "$p" -eq $((4 * PSI_LLAMA)) ] || fail "llama: dp payload $p bytes per step, expected 4·Ψ = $((4 * PSI_LLAMA))"
done
[ "$(field "$WORK/llama/metrics.jsonl" payload_bytes | wc -l)" -eq 3 ] || fail "llama: dp traffic missing from some step"
plain_calls=$(field "$WORK/plain/metrics.jsonl" calls | sort -u)
accum_calls=$(field "$WORK/accum/metrics.jsonl" calls | sort -u)
[ "$plain_calls" = "$accum_calls" ] || fail "calls per step: $plain_calls without accumulation, $accum_calls with 4 micro-batches"
rm -rf "$WORK"
echo "ok: dp payload 4·Ψ = $((4 * PSI)) bytes every step; $plain_calls all-reduce(s) per step with or without accumulation"
echo "ok: Llama dp payload 4·Ψ = $((4 * PSI_LLAMA)) bytes every step"
