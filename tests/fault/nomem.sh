# One rank short of memory at an allocation a start-up collective needs
# (comparing the ranks' plugin builds, then their meshes) stops every rank
# at once: rank 1 says what it ran out of memory for, rank 0 that rank 1
# failed. Before, rank 1 went on to the next collective alone: rank 0 met it
# in a different one (an MPI error about truncated data), or waited for it
# until train.comm_timeout. The fault library fails the K-th calloc(2, 512)
# of rank 1 (2 ranks × a 512-byte label).
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" fault_nomem
LIB=$4
tiny_config 1 1 "plugin: {name: ddp}"
for c in "1:comparing plugin builds" "2:comparing meshes"; do
  case_name=${c#*:}
  env LD_PRELOAD="$LIB" TESSEL_FAULT_DIR="$WORK" TESSEL_FAULT="enomem-calloc:2x512#${c%%:*}@1" \
    "$TESSEL" launch -n 2 "$WORK/tiny.yaml" --set train.comm_timeout=30s >"$WORK/log" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "exit status $rc, not 1"
  grep -q "^\[rank 1\] error: out of host memory $case_name" "$WORK/log" || fail "rank 1 did not say it ran out of memory"
  grep -q "^\[rank 0\] error: rank 1 failed (out of memory); see its message" "$WORK/log" ||
    fail "rank 0 did not stop because rank 1 failed"
  ! grep -q "has waited\|MPI Error" "$WORK/log" || fail "the ranks were not in the same collective"
  [ $failures -eq 0 ] || cat "$WORK/log" >&2
done
finish "ok: a rank out of memory before a start-up collective stopped both ranks at once, with its message"
