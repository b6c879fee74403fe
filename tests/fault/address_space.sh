# Under an address-space limit (ulimit -v) OpenBLAS retries a refused
# mapping of its working buffer for ever: runs spun in their first product
# (one process: until killed; one rank of two: until train.comm_timeout,
# where the others blamed a hang). A limit with no room for the buffers now
# stops the backend's start with the limit, the need and what to do; one
# with room for them but not for the model fails at the model's allocation,
# naming it. Each run must end within 60 s (status 124: it hung).
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" fault_address_space
tiny_config 3 0
needs="leaves no room for OpenBLAS's working buffers"

case_name="one process"
(ulimit -v 300000 && exec timeout 60 "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/one") >"$WORK/one.log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "exit status $rc, expected 1"
grep -q "error: starting the cpu backend on rank 0: ulimit -v ([0-9]* MiB of address space) $needs" "$WORK/one.log" ||
  fail "no reason given: $(cat "$WORK/one.log")"

case_name="one rank of two"
printf '#!/bin/sh\n[ "$OMPI_COMM_WORLD_RANK" = 1 ] && ulimit -v 300000\nexec "$@"\n' >"$WORK/limit_rank1.sh"
chmod +x "$WORK/limit_rank1.sh"
MPI=(timeout 60 mpirun --bind-to none --oversubscribe -n 2)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
"${MPI[@]}" "$WORK/limit_rank1.sh" "$TESSEL" run "$WORK/tiny.yaml" --set plugin.name=ddp --set log.dir="$WORK/two" \
  >"$WORK/two.log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "exit status $rc, expected 1"
grep -q "^\[rank 1\] error: starting the cpu backend on rank 1: ulimit -v .*$needs" "$WORK/two.log" ||
  fail "rank 1 did not say why: $(cat "$WORK/two.log")"

case_name="room for the buffers, not the model"
(ulimit -v 1200000 && exec timeout 60 "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/model" \
  --set model.channels=1024 --set model.heads=16 --set model.layers=8) >"$WORK/model.log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "exit status $rc, expected 1"
grep -q "error: the device tier cannot hold '.*': allocating .* failed" "$WORK/model.log" ||
  fail "the allocation that failed is not named: $(cat "$WORK/model.log")"
finish "ok: under ulimit -v a run stops with the reason (one process, one rank of two), or at the allocation that did not fit"
