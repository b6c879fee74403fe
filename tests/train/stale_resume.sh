# Two ranks that resume from one path which is not the same checkpoint on
# both (a checkpoint.dir on each machine's local disk, one holding a stale
# copy of an earlier run): refused, naming the rank, the host and the path.
# It once trained on, each rank from its own state. Here the ranks start in
# two working directories and --resume names a relative path, which finds a
# different checkpoint for each. The same path to one checkpoint resumes.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" stale_resume
sed -i "s|\"core/config/\*.c\"|\"$SRC/core/config/*.c\"|" "$WORK/tiny.yaml" # the ranks start elsewhere
MPI=(mpirun --bind-to none)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
[ "$(nproc)" -lt 2 ] && MPI+=(--oversubscribe)
"$TESSEL" run "$WORK/tiny.yaml" --set train.steps=2 --set log.dir="$WORK/a" >/dev/null 2>&1 || fail "run a failed"
"$TESSEL" run "$WORK/tiny.yaml" --set train.steps=2 --set train.seed=8 --set log.dir="$WORK/b" >/dev/null 2>&1 ||
  fail "run b failed"
mkdir -p "$WORK/wa" "$WORK/wb"
ln -s "$WORK/a/checkpoints/step_00000002" "$WORK/wa/ck"
ln -s "$WORK/b/checkpoints/step_00000002" "$WORK/wb/ck"
args=(run "$WORK/tiny.yaml" --set plugin.name=ddp --set train.steps=4 --set log.dir="$WORK/both" --resume ck)
set +e
"${MPI[@]}" -n 1 -wdir "$WORK/wa" "$TESSEL" "${args[@]}" : -n 1 -wdir "$WORK/wb" "$TESSEL" "${args[@]}" \
  >"$WORK/stale.log" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || fail "two ranks resumed from different checkpoints"
grep -q "rank 1 on host .* finds another checkpoint at ck than rank 0 on host" "$WORK/stale.log" ||
  { cat "$WORK/stale.log" >&2; fail "the refusal does not name the rank and the path"; }
ln -sfn "$WORK/a/checkpoints/step_00000002" "$WORK/wb/ck"
"${MPI[@]}" -n 1 -wdir "$WORK/wa" "$TESSEL" "${args[@]}" --set log.dir="$WORK/same" : \
  -n 1 -wdir "$WORK/wb" "$TESSEL" "${args[@]}" --set log.dir="$WORK/same" >"$WORK/same.log" 2>&1 ||
  { cat "$WORK/same.log" >&2; fail "two ranks resuming from one checkpoint failed"; }
rm -rf "$WORK"
echo "ok: ranks that would resume from different checkpoints at one path are refused"
