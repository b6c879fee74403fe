#!/usr/bin/env bash
# Everything a GPU machine checks, as one call that ends by itself inside
# 8 minutes (TESSEL_GPU_LIMIT seconds, default 480), from any directory:
#
#   tests/gpu/run_all.sh [--dry-run | --build-only] [OUTDIR]
#
# OUTDIR defaults to $OUT, else gpu-run/ at the repository root. The steps,
# each under its own time budget (--dry-run prints them and adds them up):
#
#   probe       toolchain, generator, libraries (the system's, else the
#               device bundle of tests/gpu/bundle.sh in gpu-bundle/), NCCL,
#               the GPU and compute-sanitizer; seconds
#   build       configure with TESSEL_CUDA=ON and build; warnings are counted
#               (errors only under --build-only)
#   unit        ctest -L gpu, the kernel, memory and NCCL tests, with
#               CUDA_LAUNCH_BLOCKING=1 so that a fault names its launch
#   sanitizer   the two smallest of them and the attention kernels again
#               under compute-sanitizer (memcheck)
#   strategies  the 20-step run of each strategy against one CPU process
#               (tests/gpu/train_equiv.sh); a strategy that declines the
#               GPU's 16-bit compute is reported as skipped
#   bench       GPT-2 124M (bench/configs/gpt2_124m.yaml, T = 1024) at the
#               largest micro-batch of 128, 64, 32, 16 that fits: tokens/s,
#               MFU against the GPU's dense bf16 peak, peak device memory;
#               then 3 steps of it with TESSEL_OP_TIMES=1, whose largest
#               ops go in the summary
#
# A step that would run past the limit is cut short by `timeout`; steps
# with no time left are reported as not run. OUTDIR gets at most eight
# files: summary.txt (also printed), probe.log, build.log, unit.log,
# sanitizer.log, strategies.log, bench.log and bench-metrics.jsonl (the
# chosen batch's per-step metrics). --build-only stops after the build
# (tests/gpu/bundle_check.sh uses it on a machine without a GPU, without
# the time limit). Exit
# status 0 when every step that ran passed.
set -uo pipefail
LIMIT=${TESSEL_GPU_LIMIT:-480}
STEPS=(probe build unit sanitizer strategies bench)
declare -A BUDGET=([probe]=10 [build]=150 [unit]=45 [sanitizer]=45 [strategies]=120 [bench]=100)
declare -A WHAT=(
  [probe]="toolchain, libraries (system or bundle), NCCL, GPU, compute-sanitizer"
  [build]="configure (TESSEL_CUDA=ON) and build, all cores; warnings counted"
  [unit]="ctest -L gpu: kernels, cuBLASLt, allocator, NCCL (CUDA_LAUNCH_BLOCKING=1)"
  [sanitizer]="compute-sanitizer memcheck on gpu_memory, gpu_elementwise and gpu_attention"
  [strategies]="20 steps of none, ddp, gemini, hybrid, tp2d, tp3d, llama_wide, qwen3 against the CPU"
  [bench]="GPT-2 124M, T=1024, largest micro-batch of 128/64/32/16 that fits; its op times")

mode=run
case ${1:-} in
  --dry-run) mode=dry; shift ;;
  --build-only) mode=build; shift ;;
  -*) echo "usage: tests/gpu/run_all.sh [--dry-run | --build-only] [OUTDIR]" >&2; exit 2 ;;
esac

# building alone is the bundle check's, on machines of any speed: no clock
[ $mode = build ] && LIMIT=7200 && BUDGET[build]=7200

if [ $mode = dry ]; then
  total=0
  echo "tests/gpu/run_all.sh: steps and time budgets (limit $LIMIT s)"
  for s in "${STEPS[@]}"; do
    printf '  %-11s %4d s  %s\n' "$s" "${BUDGET[$s]}" "${WHAT[$s]}"
    total=$((total + BUDGET[$s]))
  done
  printf '  %-11s %4d s\n' total $total
  exit 0
fi

SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${1:-${OUT:-$SRC/gpu-run}}
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd)
cd "$SRC"
BUILD=${BUILD:-build-gpu}
export TESSEL_TEST_TMP=$SRC/$BUILD/test-tmp OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
: >"$OUTDIR/summary.txt"
say() { echo "$*" | tee -a "$OUTDIR/summary.txt"; }
t0=$(date +%s)
now() { echo $(($(date +%s) - t0)); }
status=0

# The seconds step $1 may take: its budget, or what is left before the
# limit (keeping 5 s to write the summary), whichever is smaller; 0 when
# fewer than 10 s are left.
allowance() {
  local left=$((LIMIT - $(now) - 5)) b=${BUDGET[$1]}
  [ $left -lt $b ] && b=$left
  [ $b -lt 10 ] && b=0
  echo $b
}
# step NAME: start a step, or report it as not run and fail
step() {
  T=$(allowance "$1")
  STEP_START=$(now)
  if [ "$T" -eq 0 ]; then
    say "$1: not run: the ${LIMIT} s limit is reached ($(now) s)"
    status=1
    return 1
  fi
}
done_step() { # NAME RC [NOTE]
  local took=$(($(now) - STEP_START)) verdict=ok
  [ "$2" -eq 124 ] && verdict="OUT OF TIME (allowed $T s)"
  [ "$2" -ne 0 ] && [ "$2" -ne 124 ] && verdict=FAILED
  [ "$2" -ne 0 ] && status=1
  say "$1: $verdict ($took s of ${BUDGET[$1]} s)${3:+ $3}"
}

# ---- probe
step probe
{
  date -u
  . tests/gpu/bundle_env.sh
  gpu_env "$SRC/gpu-bundle" && env_ok=1 || env_ok=0
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | sed 's/^/gpu: /'
  else
    echo "gpu: no nvidia-smi"
  fi
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer \
              /usr/local/cuda/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
  echo "compute-sanitizer: ${sanitizer:-none}"
} >"$OUTDIR/probe.log" 2>&1
cat "$OUTDIR/probe.log"
[ $env_ok -eq 1 ] || { done_step probe 1 "(see probe.log)"; exit 1; }
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
sanitizer=$(sed -n 's/^compute-sanitizer: //p' "$OUTDIR/probe.log" | grep -v '^none$')
done_step probe 0

# ---- build
if step build; then
  # a build folder keeps the generator it was made with
  [ -f "$BUILD/CMakeCache.txt" ] || GPU_CMAKE_ARGS+=("${GPU_GENERATOR[@]}")
  # Warnings stop the bundle check's build; on a GPU machine, whose
  # compiler may warn where CI's does not, they are counted and reported
  # instead, so that a new warning costs no measurement
  werror=OFF
  [ $mode = build ] && werror=ON
  timeout "$T" bash -c 'cmake -S . -B "$1" -DTESSEL_CUDA=ON -DTESSEL_WERROR=$2 -DCMAKE_BUILD_TYPE=Release "${@:3}" &&
                        cmake --build "$1" -j "$(nproc)"' _ "$BUILD" $werror "${GPU_CMAKE_ARGS[@]}" >"$OUTDIR/build.log" 2>&1
  rc=$?
  [ $rc -ne 0 ] && tail -30 "$OUTDIR/build.log"
  warnings=$(grep -c 'warning:' "$OUTDIR/build.log")
  done_step build $rc "$warnings warning(s)$([ "$warnings" -gt 0 ] && echo ': see build.log')"
  [ "$warnings" -gt 0 ] && grep 'warning:' "$OUTDIR/build.log" | sort -u | head -5 | sed 's/^/  /' | tee -a "$OUTDIR/summary.txt"
  [ $rc -ne 0 ] && exit 1
else
  exit 1
fi
[ $mode = build ] && exit $status

if ! probe=$("$BUILD/tests/gpu/gpu_probe"); then
  say "no usable GPU on this machine (gpu_probe): the gpu tests would only skip, and there is nothing to measure"
  exit 1
fi
say "GPUs: $probe"
[ -n "$gpu_name" ] || gpu_name=${probe#* }

# the line of ctest's closing summary and its failures, for the summary
ctest_digest() { grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|\*\*\*Skipped" "$1" | sed 's/^ */  /'; }

# ---- unit: every gpu test but the training runs
if step unit; then
  CUDA_LAUNCH_BLOCKING=1 timeout "$T" ctest --test-dir "$BUILD" -L gpu -E '^gpu_train_' --output-on-failure \
    --timeout 40 >"$OUTDIR/unit.log" 2>&1
  rc=$?
  done_step unit $rc
  ctest_digest "$OUTDIR/unit.log" | tee -a "$OUTDIR/summary.txt"
fi

# ---- sanitizer: the smallest unit tests, then the attention kernels'
# hand-made tiling, under memcheck
if [ -z "$sanitizer" ]; then
  say "sanitizer: not run: no compute-sanitizer on this machine"
elif step sanitizer; then
  rc=0
  for t in gpu_memory gpu_elementwise gpu_attention; do
    left=$((T - ($(now) - STEP_START)))
    [ $left -lt 5 ] && { rc=124; break; }
    echo "== $t" >>"$OUTDIR/sanitizer.log"
    timeout "$left" "$sanitizer" --tool memcheck --error-exitcode 1 --print-limit 20 "$BUILD/tests/gpu/$t" \
      >>"$OUTDIR/sanitizer.log" 2>&1
    r=$?
    [ $r -ne 0 ] && [ $rc -eq 0 ] && rc=$r
  done
  done_step sanitizer $rc "$(grep 'ERROR SUMMARY' "$OUTDIR/sanitizer.log" | sed 's/^========= //' | paste -sd ';' -)"
fi

# ---- strategies
if step strategies; then
  timeout "$T" ctest --test-dir "$BUILD" -R '^gpu_train_' --output-on-failure --timeout 100 \
    >"$OUTDIR/strategies.log" 2>&1
  rc=$?
  done_step strategies $rc
  ctest_digest "$OUTDIR/strategies.log" | tee -a "$OUTDIR/summary.txt"
  grep -h "largest relative loss difference\|^skipped:" "$OUTDIR/strategies.log" | sed 's/^/  /' >>"$OUTDIR/summary.txt"
fi

# ---- bench: the largest micro-batch that fits
# Dense bf16 peaks (TFLOP/s) from NVIDIA's datasheets; the NVL parts run at
# lower clocks than the SXM ones of the same name.
case $gpu_name in
  *H200*NVL* | *H100*NVL*) peak=835 ;;
  *H100*PCIe*) peak=756 ;;
  *H100* | *H200* | *GH200*) peak=989 ;;
  *A100*) peak=312 ;;
  *) peak=0 ;;
esac
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { sed -n "s/.*\"$1\":\\([^,}]*\\).*/\\1/p"; }
if step bench; then
  chosen=0
  rc=1
  for B in 128 64 32 16; do
    left=$((T - ($(now) - STEP_START)))
    [ $left -lt 10 ] && { rc=124; break; }
    dir=$BUILD/bench/gpt2_124m_b$B
    rm -rf "$dir"
    echo "== micro-batch $B" >>"$OUTDIR/bench.log"
    timeout "$left" "$BUILD/bin/tessel" run bench/configs/gpt2_124m.yaml --set train.batch_size=$B \
      --set device.peak_tflops=$peak --set log.dir="$dir" >>"$OUTDIR/bench.log" 2>&1
    r=$?
    if [ $r -eq 0 ]; then chosen=$B; rc=0; break; fi
    [ $r -eq 124 ] && { rc=124; break; }
    say "  micro-batch $B: did not run ($(grep -m1 "error" "$OUTDIR/bench.log" | cut -c1-160))"
  done
  if [ $chosen -ne 0 ]; then
    cp "$dir/metrics.jsonl" "$OUTDIR/bench-metrics.jsonl"
    # steps 1-3 include cuBLASLt's plan search and the allocator's first requests
    steps=$(tail -n +4 "$dir/metrics.jsonl")
    tps=$(echo "$steps" | field tokens_per_s | median)
    ms=$(echo "$steps" | field step_time_s | median)
    mfu=$(echo "$steps" | field mfu | median)
    mem=$(echo "$steps" | sed -n 's/.*"device":{[^}]*"peak":\([0-9.e+]*\).*/\1/p' | sort -g | tail -1)
    line=$(printf 'GPT-2 124M on %s: micro-batch %d x 1024 tokens, %.0f tokens/s, %.1f ms/step, peak device memory %.1f GiB' \
           "$gpu_name" $chosen "$tps" "$(awk -v s="$ms" 'BEGIN {print 1000 * s}')" \
           "$(awk -v m="${mem:-0}" 'BEGIN {print m / 1073741824}')")
    if [ "$peak" != 0 ]; then
      line="$line, MFU $(awk -v m="$mfu" 'BEGIN {printf "%.1f", 100 * m}')% of $peak TFLOP/s dense bf16"
    else
      line="$line (no bf16 peak known for this GPU: no MFU)"
    fi
  fi
  # where the chosen batch's step goes: 3 more steps with each op timed
  # (the first is left out), not part of the figures above
  left=$((T - ($(now) - STEP_START)))
  if [ $chosen -ne 0 ] && [ $left -ge 20 ]; then
    echo "== op times, micro-batch $chosen" >>"$OUTDIR/bench.log"
    TESSEL_OP_TIMES=1 timeout "$left" "$BUILD/bin/tessel" run bench/configs/gpt2_124m.yaml \
      --set train.batch_size=$chosen --set train.steps=3 --set device.peak_tflops=$peak \
      --set log.dir="$BUILD/bench/gpt2_124m_ops" >>"$OUTDIR/bench.log" 2>&1
  fi
  done_step bench $rc
  [ $chosen -ne 0 ] && say "  $line"
  sed -n '/^op times/,/outside the ops/p' "$OUTDIR/bench.log" | head -9 | sed 's/^ */  /' >>"$OUTDIR/summary.txt"
fi
say "total: $(now) s of the $LIMIT s limit"
exit $status
