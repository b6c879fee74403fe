# Ranks started with different configs (a YAML edited while the job starts,
# a --set that reaches some ranks only) are refused at the start: exit 2,
# one report naming each rank that differs, the first key where it does and
# both values with where they were written, before any run output. They
# once crashed (model.channels: heap corruption), failed with
# MPI_ERR_TRUNCATE (train.steps) or trained different replicas silently
# (optimizer.lr under ddp). Keys that may differ per rank, and the same
# value written in another place, still run.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" config_agree
MPI=(timeout 60 mpirun --bind-to none --oversubscribe)
[ "$(id -u)" -eq 0 ] && MPI+=(--allow-run-as-root)
args=(run "$WORK/tiny.yaml" --set plugin.name=ddp --set train.steps=2 --set train.batch_size=6 --set train.eval_every=0)

# launch NAME RANK1_SETS RANK2_SETS: three ranks, rank 0 with the file as it is.
launch() {
  local name=$1
  set +e
  # the extra sets are lists of words
  # shellcheck disable=SC2086
  "${MPI[@]}" -n 1 "$TESSEL" "${args[@]}" --set log.dir="$WORK/$name" \
    : -n 1 "$TESSEL" "${args[@]}" --set log.dir="$WORK/$name" $2 \
    : -n 1 "$TESSEL" "${args[@]}" --set log.dir="$WORK/$name" $3 >"$WORK/$name.log" 2>&1
  rc=$?
  set -e
}

# refused NAME TEXT...: the run exited 2 with every TEXT in its output and wrote nothing.
refused() {
  local name=$1
  shift
  [ $rc -eq 2 ] || { cat "$WORK/$name.log" >&2; fail "$name: exit status $rc, expected 2"; }
  for text in "$@"; do
    grep -qF -- "$text" "$WORK/$name.log" || { cat "$WORK/$name.log" >&2; fail "$name: the output lacks: $text"; }
  done
  [ "$(grep -c "the ranks do not run the same configuration" "$WORK/$name.log")" -eq 1 ] ||
    { cat "$WORK/$name.log" >&2; fail "$name: the report is not printed once"; }
  [ -e "$WORK/$name/metrics.jsonl" ] && fail "$name: the run wrote metrics before stopping"
  return 0
}

d="config differs from rank 0's at"
launch channels "--set model.channels=64" ""
refused channels "rank 1's $d model.channels: 64 on rank 1 (--set=model.channels=64:1:22), 32 on rank 0 ($WORK/tiny.yaml:1:40)"

launch steps "" "--set train.steps=3"
refused steps "rank 2's $d train.steps: 3 on rank 2 (--set=train.steps=3:1:19), 2 on rank 0 (--set=train.steps=2:1:19)"
grep -q "rank 1's config differs" "$WORK/steps.log" && fail "rank 1, which runs rank 0's config, is reported"

launch both "--set optimizer.lr=1.0e-3" "--set model.heads=4"
refused both "rank 1's $d optimizer.lr: 1.0e-3 on rank 1 (--set=optimizer.lr=1.0e-3:1:20), 3.0e-3 on rank 0 ($WORK/tiny.yaml:4:17)" \
  "rank 2's $d model.heads: 4 on rank 2 (--set=model.heads=4:1:19), 2 on rank 0 ($WORK/tiny.yaml:1:27)"

# the same value from a --set, and keys that may differ per rank: it trains
launch same "--set optimizer.lr=3.0e-3 --set log.level=warn --set device.threads=2" "--set log.progress=always"
[ $rc -eq 0 ] || { cat "$WORK/same.log" >&2; fail "ranks with the same config were refused (status $rc)"; }
[ "$(losses "$WORK/same/metrics.jsonl" | wc -l)" -eq 2 ] || fail "the run that agrees did not train 2 steps"
rm -rf "$WORK"
echo "ok: ranks with different configs are refused with the key and both values; the same config runs"
