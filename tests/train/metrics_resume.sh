# A resume cuts the metrics file back to the steps its checkpoint holds, a
# line at a time: rank 0 holds one line, not the file. It once read the whole
# file into memory, so each resume of a long run (about 700 bytes a step:
# 200 MiB after 300k steps) took that much more memory. Here a run stopped at
# step 4 gets 64 MiB of lines of later steps (as a run killed long after its
# last checkpoint leaves); the resume must hold less than that, and keep
# steps 1 to 4 with its own after them, once each.
. "$(dirname "$0")/common.sh" "$1" "$2" "$3" metrics_resume
PEAK_RSS=$4

set +e
"$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.stop_after=4 >"$WORK/first.log" 2>&1
rc=$?
set -e
[ $rc -eq 75 ] || { cat "$WORK/first.log" >&2; fail "the first part exited $rc, expected 75"; }
metrics=$WORK/run/metrics.jsonl
last=$(tail -1 "$metrics")
awk -v line="$last" 'BEGIN { for (s = 5; bytes < 64 * 1048576; s++) { l = line; sub(/"step":4,/, "\"step\":" s ",", l); print l; bytes += length(l) + 1 } }' >>"$metrics"
size_kib=$(($(stat -c %s "$metrics") / 1024))

set +e
peak=$("$PEAK_RSS" "$TESSEL" run "$WORK/tiny.yaml" --set log.dir="$WORK/run" --set train.stop_after=1 2>"$WORK/second.log")
rc=$?
set -e
[ $rc -eq 75 ] || { cat "$WORK/second.log" >&2; fail "the resumed part exited $rc, expected 75"; }
grep -q "resuming from .*step_00000004" "$WORK/second.log" || { cat "$WORK/second.log" >&2; fail "did not resume at step 4"; }
[ "$peak" -lt "$size_kib" ] ||
  fail "resuming over a metrics file of $size_kib KiB held $peak KiB at its peak: the file was read whole"
steps=$(sed -n 's/.*"step":\([0-9]*\),.*/\1/p' "$metrics" | tr '\n' ' ')
[ "$steps" = "1 2 3 4 5 " ] || fail "the metrics hold steps '$steps' after the resume, expected '1 2 3 4 5 '"
rm -rf "$WORK"
echo "ok: a resume over $size_kib KiB of metrics held $peak KiB and kept steps $steps"
