# tessel compare on Llama configs: configs/llama.yaml against itself under
# ddp and hybrid (tp 2 + sequence parallelism) is judged equivalent, with a
# row per run in report.md; a GPT-2 and a Llama of the same sizes are
# different models, which compare refuses unless told to compare anyway.
#   llama.sh TESSEL SRC TMP
set -uo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/compare_llama.$$
rm -rf "$WORK"; mkdir -p "$WORK"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
common=(--steps 8 --repeat 1 --set model.layers=2 --set device.threads=1 --set data.dir="$WORK/data" --set log.every=100)

"$TESSEL" compare configs/llama.yaml tests/compare/llama_ddp.yaml@2 tests/compare/llama_hybrid.yaml@2 \
  --out "$WORK/good" "${common[@]}" >"$WORK/good.out" 2>&1 || { cat "$WORK/good.out" >&2; fail "the comparison failed"; }
R=$WORK/good/report.md
[ -s "$R" ] || fail "no report.md"
for label in llama@1 llama_ddp@2 llama_hybrid@2; do
  grep -q "^| $label | [0-9]* | ok |" "$R" || { cat "$R" >&2; fail "no ok row for $label"; }
done
[ "$(grep -c 'equivalent (' "$R")" -eq 2 ] || { cat "$R" >&2; fail "not both strategies are equivalent to one process"; }

"$TESSEL" compare configs/quickstart.yaml configs/llama.yaml --out "$WORK/mixed" "${common[@]}" >"$WORK/mixed.out" 2>&1
rc=$?
[ $rc -eq 2 ] || { cat "$WORK/mixed.out" >&2; fail "comparing a GPT-2 with a Llama exited $rc, expected 2"; }
grep -q "train different models" "$WORK/mixed.out" && grep -q "llama with layers 2, heads 4, kv_heads 2" "$WORK/mixed.out" \
  || { cat "$WORK/mixed.out" >&2; fail "the refusal does not name the two models"; }
rm -rf "$WORK"
echo "ok: ddp and hybrid train configs/llama.yaml like one process in tessel compare; GPT-2 vs Llama is refused as different models"
