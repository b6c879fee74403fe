# gemini's checkpoints: 12 steps straight equal 5 steps, stop, resume, 7
# more, bit for bit (losses and the final model and optimizer files), with
# the moments on the NVMe tier, whose files are gone when the runs end. And
# checkpoints are logical tensors: gemini's resumes with no strategy, and a
# plain run's resumes under gemini on 4 ranks, each continuing the other's
# losses within the equivalence tolerance (1e-5, see tests/equiv/equiv.sh).
set -euo pipefail
TESSEL=$1; SRC=$2; TMP=$3
WORK=$TMP/gemini_resume.$$
rm -rf "$WORK"; mkdir -p "$WORK/swap"; cd "$SRC"
fail() { echo "FAIL: $*" >&2; exit 1; }
common=(--set train.steps=12 --set train.eval_every=6 --set train.sample_tokens=0 --set checkpoint.resume=auto
        --set log.progress=never --set data.dir="$WORK/data" --set device.threads=1)
nvme=(tests/gemini/nvme.yaml --set plugin.nvme_dir="$WORK/swap")
losses() { sed -n 's/.*"loss":\([^,]*\),.*/\1/p' "$1"; }
close() { # A B: the same number of steps, each loss within 1e-5
  [ "$(wc -l <"$1")" -eq "$(wc -l <"$2")" ] || return 1
  paste "$1" "$2" | awk '{ d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > 1e-5) bad = 1 } END { exit bad }'
}
go() { # LOG RANKS ARGS...: exits 0, or 75 (stopped early, resumable) when train.stop_after is among ARGS
  local log=$1 n=$2 want=0 rc=0; shift 2
  case " $* " in *train.stop_after=*) want=75 ;; esac
  "$TESSEL" launch -n "$n" "$@" >"$WORK/$log.log" 2>&1 || rc=$?
  [ $rc -eq $want ] || { cat "$WORK/$log.log" >&2; fail "$log exited with $rc, not $want"; }
}

go straight 2 "${nvme[@]}" --set log.dir="$WORK/straight" "${common[@]}"
go first 2 "${nvme[@]}" --set log.dir="$WORK/resumed" --set train.stop_after=5 "${common[@]}"
go second 2 "${nvme[@]}" --set log.dir="$WORK/resumed" "${common[@]}"
grep -q "resuming from .*step_00000005" "$WORK/second.log" || fail "the second half did not resume from step 5"
losses "$WORK/straight/metrics.jsonl" >"$WORK/a"
losses "$WORK/resumed/metrics.jsonl" >"$WORK/b"
[ "$(wc -l <"$WORK/a")" -eq 12 ] || fail "straight run logged $(wc -l <"$WORK/a") steps, expected 12"
diff "$WORK/a" "$WORK/b" >&2 || fail "loss trajectories differ after resuming"
for f in model.safetensors optimizer.safetensors; do
  cmp "$WORK/straight/checkpoints/step_00000012/$f" "$WORK/resumed/checkpoints/step_00000012/$f" \
    || fail "$f differs after resuming"
done
[ -z "$(ls -A "$WORK/swap")" ] || fail "NVMe files left behind: $(ls "$WORK/swap")"

# gemini's step-5 checkpoint under no strategy, one process
go plain_from_gemini 1 "${nvme[@]}" --set plugin=null --set log.dir="$WORK/cross1" "${common[@]}" \
  --resume "$WORK/resumed/checkpoints/step_00000005"
grep -q "resuming from .*step_00000005" "$WORK/plain_from_gemini.log" || fail "no resume without a strategy"
tail -n 7 "$WORK/a" >"$WORK/a7"
losses "$WORK/cross1/metrics.jsonl" >"$WORK/c1"
close "$WORK/a7" "$WORK/c1" || { paste "$WORK/a7" "$WORK/c1" >&2; fail "no-strategy resume of a gemini checkpoint diverges"; }

# a plain run's step-5 checkpoint under gemini static offload on 4 ranks
go plain 1 tests/gemini/offload.yaml --set plugin=null --set log.dir="$WORK/plain" --set train.stop_after=5 "${common[@]}"
go gemini_from_plain 4 tests/gemini/offload.yaml --set log.dir="$WORK/cross2" "${common[@]}" \
  --resume "$WORK/plain/checkpoints/step_00000005"
grep -q "resuming from .*step_00000005" "$WORK/gemini_from_plain.log" || fail "no resume under gemini"
go plain_rest 1 tests/gemini/offload.yaml --set plugin=null --set log.dir="$WORK/plain" "${common[@]}"
losses "$WORK/plain/metrics.jsonl" | tail -n 7 >"$WORK/p7"
losses "$WORK/cross2/metrics.jsonl" >"$WORK/c2"
close "$WORK/p7" "$WORK/c2" || { paste "$WORK/p7" "$WORK/c2" >&2; fail "gemini resume of a plain checkpoint diverges"; }
rm -rf "$WORK"
echo "ok: 12 gemini steps = 5 + resume + 7 bit for bit with NVMe moments; checkpoints cross between gemini and no strategy"
