#!/usr/bin/env bash
# tests/fault/nvme_full.sh — gemini's NVMe directory without room for the
# AdamW moments it is to hold.
#
# usage: nvme_full.sh TESSEL SRC TMP FAULT_LIB
#
# The space is taken when the NVMe tier allocates (fallocate), so the run
# fails in the strategy's setup, before any step, with a message that names
# the directory, what it needs and has, and the keys that fix it. The files
# were sparse: setup passed and the first optimizer step died on a short
# write naming only a chunk, in a directory whose files are unlinked.
# FAULT_LIB (LD_PRELOAD) makes the directory full after 1000 bytes.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" nvme_full
LIB=$4
case_name=nvme_full
env LD_PRELOAD="$LIB" TESSEL_FAULT_DIR="$WORK/swap" TESSEL_FAULT=enospc:1000 \
  "$TESSEL" run tests/gemini/nvme.yaml --set log.dir="$WORK/run" --set plugin.nvme_dir="$WORK/swap" \
  --set train.sample_tokens=0 >"$WORK/out" 2>"$WORK/err"
status=$?
[ $status -eq 1 ] || fail "exit status $status, expected 1: $(cat "$WORK/err")"
for want in "failed in setup" "nvme tier: cannot reserve" "in $WORK/swap: No space left on device" \
  "plugin.nvme_dir" "nvme_optim_frac"; do
  grep -qF -- "$want" "$WORK/err" || fail "no '$want' in: $(cat "$WORK/err")"
done
! grep -q "^step" "$WORK/out" "$WORK/err" || fail "it trained before failing"
# with room, the same run trains
"$TESSEL" run tests/gemini/nvme.yaml --set log.dir="$WORK/ok" --set plugin.nvme_dir="$WORK/swap" \
  --set train.sample_tokens=0 --set train.steps=2 >"$WORK/ok.log" 2>&1 || fail "the run with room failed: $(cat "$WORK/ok.log")"
finish "ok: an NVMe directory without room is refused in setup, naming it and the keys that fix it"
