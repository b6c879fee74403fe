# `tessel sample` holds a model's weights, not a training run's state: no
# gradients and no optimizer moments (which are three times the weights
# under AdamW). A 13M-parameter model (52 MB of fp32 weights) must sample
# within 3 times its weights above what the tiny model of common.sh takes:
# the weights once, the checkpoint file's pages as they are read (resident
# too) and the activations came to 2.2 times; with the whole training state
# it was 5.2 times.
# Usage: sample_memory.sh TESSEL SRC TMP PEAK_RSS
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" sample_memory
PEAK_RSS=$4
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/tiny" --set train.steps=1 >/dev/null 2>&1 || fail "tiny run"
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/big" --set train.steps=1 --set model.layers=4 \
  --set model.channels=512 --set model.heads=8 >"$WORK/big.log" 2>&1 || fail "13M run: $(tail -3 "$WORK/big.log")"
grep -q "= 12.7[0-9]M parameters" "$WORK/big.log" || fail "the big model is not the one this test sizes: $(grep parameters "$WORK/big.log")"
base=$("$PEAK_RSS" "$TESSEL" sample "$WORK/tiny/checkpoints/step_00000001" --tokens 4 2>/dev/null | tail -n 1)
big=$("$PEAK_RSS" "$TESSEL" sample "$WORK/big/checkpoints/step_00000001" --tokens 4 2>/dev/null | tail -n 1)
weights_kib=$((12700000 * 4 / 1024))
echo "peak resident: tiny ${base} KiB, 13M ${big} KiB, weights ${weights_kib} KiB"
[ $((big - base)) -lt $((weights_kib * 3)) ] ||
  fail "sampling the 13M model took $((big - base)) KiB above the tiny one's, more than 3 x its weights (${weights_kib} KiB)"
rm -rf "$WORK"
