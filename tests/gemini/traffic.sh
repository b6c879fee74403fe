# gemini's traffic, byte for byte. Per step and rank the dp group carries:
#   all-gathers   every time a unit needs a chunk that is not gathered: a
#                 chunk stays gathered while consecutive visits of the
#                 schedule (forward 0..L+1, then backward L+1..0, per
#                 micro-batch) use it, so chunk c is gathered once per run
#                 of consecutive visits that use it, each call counting the
#                 whole gathered chunk (4·size_c bytes of payload);
#   reduce-scatters  one per chunk per micro-batch, the whole chunk each;
#   one all-reduce   of the squared gradient norm, 8 bytes.
# The expected numbers are computed here from the model's parameter list,
# packed independently of the plugin at the chunk size it logs. With the
# first and last chunks of equal size that is 2 gathers per chunk, so the
# bus bytes are 3·(N−1)/N·4·Σsize_c: ZeRO-3's 1.5× of DDP's 2·(N−1)/N·4Ψ,
# over the padded Σsize_c instead of Ψ. A Llama's head (model.norm and its
# own lm_head) is used by the last unit only, whose forward and backward
# are consecutive visits: its chunks are gathered once, so it moves less.
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/gemini_traffic.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
# no validation split: the last step's evaluation would gather chunks too, inside that step's counters
common=(--set train.steps=3 --set train.sample_tokens=0 --set data.val_fraction=0 --set train.eval_every=0 --set checkpoint.resume=never
        --set log.progress=never --set data.dir="$WORK/data" --set device.threads=1)
field() { grep -o "\"dp\":{[^}]*}" "$1" | sed -n "s/.*\"$2\":\([0-9]*\).*/\1/p"; }

# expect ARCH N M CHUNK: "payload bus calls Σsize_c Ψ" per step for
# tests/gemini/tiny.yaml's model (V=256, C=64, T=32, L=4) as a GPT-2, or as
# a Llama (tests/gemini/llama_*.yaml: 2 key/value heads of 16 channels, ffn
# 192, untied lm_head), on N ranks with M micro-batches per step.
expect() {
  awk -v A="$1" -v N="$2" -v M="$3" -v S="$4" -v V=256 -v C=64 -v T=32 -v L=4 -v Ckv=32 -v F=192 '
    function add(numel, lo, hi, tied) { n++; size[n] = numel; ulo[n] = lo; uhi[n] = hi; head[n] = tied; psi += numel }
    function up(x, a) { return int((x + a - 1) / a) * a }
    BEGIN {
      if (A == "llama") {
        add(V * C, 0, 0, 0)                        # embed_tokens
        # a block: input_layernorm, q, k, v, o, post_attention_layernorm, gate, up, down
        split(C " " C*C " " C*Ckv " " C*Ckv " " C*C " " C " " C*F " " C*F " " F*C, blk)
        for (l = 1; l <= L; l++) for (k = 1; k <= 9; k++) add(blk[k], l, l, 0)
        add(C, L + 1, L + 1, 0); add(V * C, L + 1, L + 1, 0)  # model.norm, lm_head
      } else {
        add(V * C, 0, 0, 1); add(T * C, 0, 0, 0)   # wte (also the head: unit L+1), wpe
        # a block: ln_1 w, b; c_attn w, b; c_proj w, b; ln_2 w, b; c_fc w, b; c_proj w, b = coef·C^power
        split("1 1 3 3 1 1 1 1 4 4 4 1", coef); split("1 1 2 1 2 1 1 1 2 1 2 1", power)
        for (l = 1; l <= L; l++) for (k = 1; k <= 12; k++) add(coef[k] * C ^ power[k], l, l, 0)
        add(C, L + 1, L + 1, 0); add(C, L + 1, L + 1, 0)  # ln_f
      }
      U = L + 2; align = 16 * N; nc = 0; room = 0
      for (i = 1; i <= n; i++) {                   # next fit; a tensor above S alone
        if (size[i] > S) { nc++; csize[nc] = up(size[i], align); room = 0 }
        else { if (room == 0 || fill + size[i] > room) { nc++; csize[nc] = S; room = S; fill = 0 } fill += size[i] }
        for (u = ulo[i]; u <= uhi[i]; u++) use[nc, u] = 1
        if (head[i]) use[nc, U - 1] = 1
      }
      p = 0
      for (m = 0; m < M; m++) {                    # the visits of a step, in order
        for (u = 0; u < U; u++) seq[p++] = u
        for (u = U - 1; u >= 0; u--) seq[p++] = u
      }
      for (c = 1; c <= nc; c++) {
        runs = 0
        for (q = 0; q < p; q++) if (use[c, seq[q]] && (q == 0 || !use[c, seq[q - 1]])) runs++
        calls += runs + M; payload += 4 * csize[c] * (runs + M); bus += 4 * csize[c] * (N - 1) / N * (runs + M)
        total += csize[c]
      }
      printf "%d %d %d %d %d\n", payload + 8, bus + int(8 * 2 * (N - 1) / N + 0.5), calls + 1, total, psi
    }'
}

check() { # NAME ARCH N M ZERO3 [--set ...]; ZERO3=1: also assert the 3 × 4·Σsize_c payload of ZeRO-3
  local name=$1 arch=$2 n=$3 m=$4 zero3=$5; shift 5
  local config=tests/gemini/tiny.yaml
  [ "$arch" = llama ] && config=tests/gemini/llama_offload.yaml
  "$TESSEL" launch -n "$n" "$config" --set log.dir="$WORK/$name" "${common[@]}" "$@" >"$WORK/$name.log" 2>&1 \
    || { cat "$WORK/$name.log" >&2; fail "$name: the $n-rank run failed"; }
  grep -q "$n data rank(s) × $m micro-batch(es)" "$WORK/$name.log" || fail "$name: not $m micro-batch(es) per step"
  local chunk
  chunk=$(sed -n 's/.*gemini: chunk \(search\|size\): \([0-9]*\) elements.*/\2/p' "$WORK/$name.log")
  [ -n "$chunk" ] || fail "$name: the chunk size is not in the log"
  read -r payload bus calls total psi <<<"$(expect "$arch" "$n" "$m" "$chunk")"
  if [ "$zero3" = 1 ] && [ "$payload" -ne $(( 3 * 4 * total + 8 )) ]; then
    fail "$name: the layout gives $payload B, not ZeRO-3's 3 × 4 × $total + 8"
  fi
  local forecast
  forecast=$(sed -n 's/.*all-gather \([0-9]*\) B in forward and \([0-9]*\) B in backward, reduce-scatter \([0-9]*\) B.*/\1 + \2 + \3 + 8/p' \
    "$WORK/$name.log")
  [ "$(( forecast ))" -eq "$payload" ] || fail "$name: the plugin forecasts $forecast B, the layout gives $payload B"
  for key in payload_bytes bus_bytes calls; do
    local want
    case $key in payload_bytes) want=$payload ;; bus_bytes) want=$bus ;; calls) want=$calls ;; esac
    [ "$(field "$WORK/$name/metrics.jsonl" $key | wc -l)" -eq 3 ] || fail "$name: dp traffic missing from some step"
    for got in $(field "$WORK/$name/metrics.jsonl" $key); do
      [ "$got" -eq "$want" ] || fail "$name: dp $key $got per step, expected $want (chunks of $chunk elements)"
    done
  done
  awk -v b="$bus" -v n="$n" -v psi="$psi" -v name="$name" -v payload="$payload" -v calls="$calls" 'BEGIN {
    ddp = 2 * (n - 1) / n * 4 * psi
    printf "ok %s: dp payload %d B, bus %d B in %d calls per step = %.3f× ddp'"'"'s bus bytes (Ψ = %d)\n", name, payload,
      b, calls, b / ddp, psi }'
}

check n2 gpt2 2 1 1
check n4 gpt2 4 1 1
check n2_accumulate gpt2 2 2 0 --set train.micro_batch_size=2
check n4_oversized gpt2 4 1 0 --set plugin.chunk_size=48KiB
check llama_n2 llama 2 1 0
check llama_n2_accumulate llama 2 2 0 --set train.micro_batch_size=2
rm -rf "$WORK"
