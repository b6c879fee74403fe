#!/usr/bin/env bash
# The hybrid plugin's counted traffic per step against the Megatron volumes,
# exactly, on rank 0 (tp rank 0, the first stage, dp rank 0), whose step
# counters go into metrics.jsonl. Payload is what each call was handed (the
# whole vector of an all-reduce, the gathered / unscattered vector of an
# all-gather / reduce-scatter, the message of a send; a recv counts none); bus bytes
# weigh it as a ring moves it (all-reduce × 2(n−1)/n, all-gather and
# reduce-scatter × (n−1)/n: × 1 and × 1/2 for the groups of 2 here).
#
#   traffic.sh TESSEL SRC TMP
#
# Validation is switched off (data.val_fraction=0) so that no step also
# carries evaluation traffic.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/hybrid_traffic.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }

# tests/hybrid/tiny.yaml: L blocks, h = C channels, s = T tokens, V vocabulary,
# 8 sequences per step; activations and gradients are fp32 (4 bytes).
L=4; C=64; T=32; V=256; E=4
common=(--set train.steps=3 --set data.val_fraction=0 --set checkpoint.every=0 --set checkpoint.resume=never
        --set log.progress=never --set data.dir="$WORK/data" --set device.threads=1)

# run NAME RANKS CONFIG [ARGS]: 3 steps; the metrics file is $WORK/NAME/metrics.jsonl
run() {
  "$TESSEL" launch -n "$2" "$3" --set log.dir="$WORK/$1" "${common[@]}" "${@:4}" >"$WORK/$1.log" 2>&1 \
    || { cat "$WORK/$1.log" >&2; fail "$1: the $2-rank run failed"; }
}
# expect NAME GROUP KEY VALUE WHAT: every step's GROUP.KEY equals VALUE
expect() {
  local got
  got=$(grep -o "\"$2\":{[^}]*}" "$WORK/$1/metrics.jsonl" | sed -n "s/.*\"$3\":\([0-9]*\).*/\1/p" | sort -u)
  [ "$(grep -c "\"$2\":{" "$WORK/$1/metrics.jsonl")" -eq 3 ] || fail "$1: no $2 traffic in some step"
  [ "$got" = "$4" ] || fail "$1: $2 $3 per step is $(echo $got), expected $5 = $4"
  echo "ok: $1: $2 $3 per step = $5 = $4"
}

# --- tp 2 (tests/hybrid/tiny.yaml): one micro-batch of b = 8 sequences.
# Per block per micro-batch, two all-reduces of b·s·h in forward (after the
# row-parallel attn.c_proj and mlp.c_proj) and two in backward (the input
# gradients of the column-parallel c_attn and c_fc): 4·b·s·h elements. Outside
# the blocks: the vocabulary-parallel embedding sums its lookup (b·s·h,
# forward), the head sums its input gradient (b·s·h, backward), and the
# vocabulary-parallel cross-entropy all-reduces per row a maximum (fp32) and
# a (sum of exponentials, target logit) pair (fp64): (4 + 16)·b·s bytes.
b=8; bsh=$((b * T * C))
run tp2 2 tests/hybrid/tiny.yaml
tp=$((E * (L * 4 * bsh + bsh + bsh) + 20 * b * T))
expect tp2 tp payload_bytes $tp "4·(L·4·bsh + bsh + bsh) + 20·b·s with b=$b s=$T h=$C L=$L"
expect tp2 tp bus_bytes $tp "the payload (all-reduce over 2 ranks: × 1)"
expect tp2 tp calls $((4 * L + 2 + 2)) "4 per block + embedding + head + 2 cross-entropy sums"

# --- tp 2 with sequence parallelism: every all-reduce above becomes a
# reduce-scatter plus an all-gather of the same b·s·h vector, and backward
# gathers each column-parallel layer's input again for its weight gradient:
# per block 4·b·s·h forward + 6·b·s·h backward. The embedding reduce-scatters
# (forward) and gathers (backward), the head gathers (forward) and reduce-
# scatters (backward); the cross-entropy works on the gathered rows as above;
# once per step the (4L + 2)·C layer-norm gradients, partial over row shards,
# are all-reduced. On the bus the blocks move 10/8 of the plain tp volume.
run tp2_sp 2 tests/hybrid/tp2_sp.yaml
ln=$(( (4 * L + 2) * C ))
expect tp2_sp tp payload_bytes $((E * (L * 10 * bsh + 2 * bsh + 2 * bsh + ln) + 20 * b * T)) \
  "4·(L·10·bsh + 2·bsh + 2·bsh + (4L+2)·C) + 20·b·s"
expect tp2_sp tp bus_bytes $((E * (L * 5 * bsh + 2 * bsh + ln) + 20 * b * T)) \
  "4·(L·5·bsh + 2·bsh + (4L+2)·C) + 20·b·s"

# --- tp 2 × pp 2 (4 ranks): 4 micro-batches of b = 2; rank 0 is the first
# stage (the embedding and L/2 blocks). The pipeline moves b·s·h per
# micro-batch each way across the boundary (the activation out, its
# gradient back), and once per step the first and last stage swap their
# (V/tp)·C gradients of the tied wte. A transfer's payload counts once, at
# its sender: rank 0 sends m activations and its half of the wte swap, and
# its m receives of gradients count as calls of no payload.
b=2; bsh=$((b * T * C)); m=4
run tp2_pp2 4 tests/hybrid/tp2_pp2.yaml
expect tp2_pp2 tp payload_bytes $((E * m * (L / 2 * 4 * bsh + bsh))) "4·m·((L/2)·4·bsh + bsh) with m=$m b=$b"
expect tp2_pp2 pp payload_bytes $((E * (m * bsh + V / 2 * C))) "4·(m·bsh + (V/2)·C)"
expect tp2_pp2 pp calls $((2 * m + 2)) "2 per micro-batch + the wte exchange"

# --- tp 2 × dp 2 with ZeRO (4 ranks): rank 0 holds Ψ₀ elements, its tensor-
# parallel half of the model: wte V/2·C, wpe T·C, per block 6C² + 9.5C
# (c_attn and c_fc halves, c_proj row halves, their split biases, replicated
# layer norms and c_proj biases), ln_f 2C. ZeRO-1 all-reduces the gradients
# (Ψ₀) and all-gathers the updated parameters (Ψ₀); ZeRO-2 reduce-scatters
# instead (same payload, half the bus of an all-reduce).
psi0=$((V / 2 * C + T * C + L * (6 * C * C + 19 * C / 2) + 2 * C))
run zero1 4 tests/hybrid/tp2_dp2_zero1.yaml
run zero2 4 tests/hybrid/tp2_dp2_zero2.yaml
expect zero1 dp payload_bytes $((E * 2 * psi0)) "4·(Ψ₀ + Ψ₀) with Ψ₀=$psi0"
expect zero1 dp bus_bytes $((E * psi0 + E * psi0 / 2)) "4·(Ψ₀·2·½ + Ψ₀·½)"
expect zero2 dp payload_bytes $((E * 2 * psi0)) "4·(Ψ₀ + Ψ₀)"
expect zero2 dp bus_bytes $((E * psi0)) "4·(Ψ₀·½ + Ψ₀·½)"

# --- The same meshes on a Llama (tests/hybrid/llama_*.yaml: the tiny model
# with 4 query heads on 2 key/value heads of hs = 16 channels, ffn F = 192,
# RMS norms, an untied lm_head). Its block has five column-parallel
# linears (q, k, v, gate, up) and two row-parallel ones (o, down); each
# column-parallel linear all-reduces its own input gradient (the three
# attention projections and the two MLP inputs share an input, but their
# gradients are summed by the core after each one's reduction), so a block
# moves 7·b·s·h per micro-batch: 2 in forward, 5 in backward. The
# embedding and head sums and the cross-entropy are GPT-2's.
F=192; Ckv=32
b=8; bsh=$((b * T * C))
run llama_tp2 2 tests/hybrid/llama_tp2.yaml
llama_tp=$((E * (L * 7 * bsh + bsh + bsh) + 20 * b * T))
expect llama_tp2 tp payload_bytes $llama_tp "4·(L·7·bsh + bsh + bsh) + 20·b·s with b=$b s=$T h=$C L=$L"
expect llama_tp2 tp bus_bytes $llama_tp "the payload (all-reduce over 2 ranks: × 1)"
expect llama_tp2 tp calls $((7 * L + 2 + 2)) "7 per block + embedding + head + 2 cross-entropy sums"

# Sequence parallelism: every column-parallel linear gathers its input rows
# in forward and again in backward (for its weight gradient) and
# reduce-scatters its input gradient; every row-parallel one
# reduce-scatters its output in forward and gathers its output gradient in
# backward: per block 5·3 + 2·2 = 19·b·s·h. Outside the blocks as GPT-2;
# the once-per-step sum of the norm gradients is (2L + 1)·C (RMS norms have
# no bias). All of it is gathers and scatters over 2 ranks except the norm
# sum: the bus carries half.
run llama_tp2_sp 2 tests/hybrid/llama_tp2_sp.yaml
ln=$(( (2 * L + 1) * C ))
expect llama_tp2_sp tp payload_bytes $((E * (L * 19 * bsh + 2 * bsh + 2 * bsh + ln) + 20 * b * T)) \
  "4·(L·19·bsh + 2·bsh + 2·bsh + (2L+1)·C) + 20·b·s"
expect llama_tp2_sp tp bus_bytes $((E * (L * 19 * bsh / 2 + 2 * bsh + ln) + 20 * b * T)) \
  "4·(L·19·bsh/2 + 2·bsh + (2L+1)·C) + 20·b·s"

# Two stages, 4 micro-batches of b = 2: b·s·h out per micro-batch, and no
# table to exchange (the Llama head is its own lm_head, on the last stage).
b=2; bsh=$((b * T * C)); m=4
run llama_pp2 2 tests/hybrid/llama_pp2.yaml
expect llama_pp2 pp payload_bytes $((E * m * bsh)) "4·m·bsh with m=$m b=$b"
expect llama_pp2 pp calls $((2 * m)) "2 per micro-batch (a send, a receive of no payload)"

# tp 2 × dp 2 with ZeRO-1: rank 0 holds Ψ₀ elements: half of embed_tokens
# and of lm_head (V/2·C each), per block the replicated norms 2C and half
# of every linear, (2C² + 2C·Ckv + 3C·F)/2, and model.norm C.
psi0=$((V / 2 * C * 2 + L * (2 * C + (2 * C * C + 2 * C * Ckv + 3 * C * F) / 2) + C))
run llama_zero1 4 tests/hybrid/tp2_dp2_zero1.yaml --set model.arch=llama --set model.kv_heads=2
expect llama_zero1 dp payload_bytes $((E * 2 * psi0)) "4·(Ψ₀ + Ψ₀) with Ψ₀=$psi0"
expect llama_zero1 dp bus_bytes $((E * psi0 + E * psi0 / 2)) "4·(Ψ₀·2·½ + Ψ₀·½)"
rm -rf "$WORK"
