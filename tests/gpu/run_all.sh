#!/usr/bin/env bash
# Everything a GPU machine checks, in one go (about 5 minutes on one
# H100/H200, well under 8), from any directory:
#
#   tests/gpu/run_all.sh LOGDIR
#
#   1. configure and build with TESSEL_CUDA=ON and warnings as errors (in
#      $BUILD, default build-gpu);
#   2. ctest -L gpu: every CUDA kernel against the CPU backend, the device
#      communication engine, and a 20-step training run per strategy
#      against the CPU (tests/gpu/train_equiv.sh);
#   3. the GPT-2 124M throughput benchmark (bench/configs/gpt2_124m.yaml,
#      T = 1024, vocabulary 50304) at the largest micro-batch of 64, 32, 16,
#      8 that runs: tokens/s, and MFU against the GPU's dense bf16 peak
#      (H100 SXM and H200: 989 TFLOP/s; H100 PCIe 756; A100 312; other
#      GPUs: tokens/s only).
#
# LOGDIR gets build.log, ctest.log, bench-B<n>.log for each batch tried and
# summary.txt (also printed). Exit status 0 when the build, every gpu test
# and the benchmark succeeded.
set -uo pipefail
LOGDIR=${1:?usage: tests/gpu/run_all.sh LOGDIR}
mkdir -p "$LOGDIR" && LOGDIR=$(cd "$LOGDIR" && pwd)
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build-gpu}
: >"$LOGDIR/summary.txt"
say() { echo "$*" | tee -a "$LOGDIR/summary.txt"; }
t0=$(date +%s)
elapsed() { echo "$(($(date +%s) - t0)) s"; }
status=0

# 1. build
if ! { cmake -S . -B "$BUILD" -DTESSEL_CUDA=ON -DTESSEL_WERROR=ON -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$BUILD" -j "$(nproc)"; } >"$LOGDIR/build.log" 2>&1; then
  tail -30 "$LOGDIR/build.log"
  say "build: FAILED (see build.log)"
  exit 1
fi
say "build: ok ($(elapsed))"
if ! probe=$("$BUILD/tests/gpu/gpu_probe"); then
  say "no usable GPU on this machine: the gpu tests skip and there is nothing to benchmark"
  exit 1
fi
say "GPUs: $probe"

# 2. the gpu tests
ctest --test-dir "$BUILD" -L gpu --output-on-failure --timeout 600 >"$LOGDIR/ctest.log" 2>&1 || status=1
grep -E "tests passed|tests failed|Skipped|Failed|Passed" "$LOGDIR/ctest.log" | sed 's/^ *//' >>"$LOGDIR/summary.txt"
grep -h "largest relative loss difference" "$LOGDIR/ctest.log" >>"$LOGDIR/summary.txt" || true
say "gpu tests: $([ $status -eq 0 ] && echo ok || echo FAILED) ($(elapsed))"

# 3. throughput: the largest micro-batch that fits
name=${probe#* }
case $name in
  *H100*PCIe*) peak=756 ;;
  *H100* | *H200* | *GH200*) peak=989 ;;
  *A100*) peak=312 ;;
  *) peak=0 ;;
esac
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p"; }
chosen=0
for B in 64 32 16 8; do
  dir=$BUILD/bench/gpt2_124m_b$B
  rm -rf "$dir"
  if timeout 300 "$BUILD/bin/tessel" run bench/configs/gpt2_124m.yaml --set train.batch_size=$B \
       --set device.peak_tflops=$peak --set log.dir="$dir" >"$LOGDIR/bench-B$B.log" 2>&1; then
    chosen=$B
    break
  fi
  say "batch $B: did not run ($(grep -m1 -E "error" "$LOGDIR/bench-B$B.log" | cut -c1-160))"
done
if [ $chosen -eq 0 ]; then
  say "benchmark: FAILED at every batch size (see bench-B*.log)"
  exit 1
fi
# steps 1-3 include cuBLASLt's plan search and the allocator's first requests
steps=$(tail -n +4 "$dir/metrics.jsonl")
tps=$(echo "$steps" | field tokens_per_s | median)
ms=$(echo "$steps" | field step_time_s | median)
mfu=$(echo "$steps" | field mfu | median)
line=$(printf 'GPT-2 124M on %s: micro-batch %d x 1024 tokens, %.0f tokens/s, %.1f ms/step' "$name" $chosen "$tps" \
       "$(awk -v s="$ms" 'BEGIN {print 1000 * s}')")
if [ "$peak" != 0 ]; then
  line="$line, MFU $(awk -v m="$mfu" 'BEGIN {printf "%.1f", 100 * m}')% of $peak TFLOP/s dense bf16"
else
  line="$line (no bf16 peak known for this GPU: no MFU)"
fi
say "$line"
say "total: $(elapsed)"
exit $status
