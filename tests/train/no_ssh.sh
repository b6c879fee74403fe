# `tessel run` without a launcher trains where no ssh or rsh is on PATH, as
# in most containers. Open MPI starts a local daemon for such a singleton,
# and its default launcher refused to start without one ("Unable to start a
# daemon on the local node"); tessel now gives singletons the launcher that
# starts nothing. The whole environment is emptied but for what the run
# reads, so the outcome does not depend on the machine's own PATH; where
# the libraries and Open MPI lie outside the system's paths (the device
# bundle of tests/gpu/bundle.sh), the variables that find them stay.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" no_ssh

keep=()
for v in LD_LIBRARY_PATH OPAL_PREFIX PMIX_LIBDIR PMIX_DATADIR; do
  [ -n "${!v:-}" ] && keep+=("$v=${!v}")
done
if ! env -i HOME="$HOME" "${keep[@]}" PATH=/nonexistent OMP_NUM_THREADS=1 "$TESSEL" run "$WORK/tiny.yaml" --set train.steps=2 \
  --set log.dir="$WORK/run" >"$WORK/out" 2>&1; then
  cat "$WORK/out" >&2
  fail "a single-process run without ssh on PATH did not train"
fi
[ "$(losses "$WORK/run/metrics.jsonl" | wc -l)" -eq 2 ] || fail "expected 2 steps in metrics.jsonl"
# a launcher the user chose is left alone: an unknown one makes Open MPI refuse
if env -i HOME="$HOME" "${keep[@]}" PATH=/nonexistent OMPI_MCA_plm=no_such_launcher "$TESSEL" run "$WORK/tiny.yaml" \
  --set train.steps=1 --set log.dir="$WORK/chosen" >"$WORK/chosen.out" 2>&1; then
  fail "OMPI_MCA_plm set by the user was overridden"
fi
rm -rf "$WORK"
echo "ok: a single-process run trains without ssh on PATH, and a launcher the user set stays"
