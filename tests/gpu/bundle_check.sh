#!/usr/bin/env bash
# Prove that the device bundle (tests/gpu/bundle.sh) is all a bare CUDA
# machine needs: in a minimal Debian chroot with a compiler, make and
# CMake — what a CUDA image has — and none of the project's packages, with
# only the CUDA toolkit mounted in, tests/gpu/run_all.sh --build-only
# configures and builds tessel with the CUDA backend from the bundle, and
# then the CPU test suite runs there (the gpu tests report as skipped).
#
#   sudo tests/gpu/bundle_check.sh [CHROOT]     (default /var/tmp/tessel-bundle-chroot)
#
# Needs root, debootstrap, overlayfs, the bundle in gpu-bundle/ and a CUDA
# toolkit at /usr/local/cuda. The chroot is made once and reused. As on the
# GPU machine, NCCL is a bare libnccl.so.2 from a Python wheel: the
# toolkit's own NCCL (header, libnccl.so, libnccl.so.2) is hidden by an
# overlay, and the library alone appears under /opt/venv, so the build must
# find it there and take nccl.h from the bundle. Prints the time of each
# phase; exit status 0 when the build and every CPU test pass.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
CH=${1:-/var/tmp/tessel-bundle-chroot}
CUDA=$(realpath /usr/local/cuda)
# the project's packages (scripts/install-deps.sh): none may be in the chroot
PROJECT_PACKAGES="libyaml-0-2 libyaml-dev libcjson1 libcjson-dev libutf8proc2 libutf8proc-dev libpcre2-dev libopenblas0 libopenblas-dev libopenmpi3 libopenmpi-dev
openmpi-bin pkgconf pkg-config zlib1g-dev gnuplot-nox"
WHEEL=/opt/venv/lib/python3/site-packages/nvidia/nccl/lib

die() { echo "bundle_check: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, mounts, chroot)"
[ -d "$SRC/gpu-bundle/root" ] || die "no bundle: run tests/gpu/bundle.sh first"
[ -x "$CUDA/bin/nvcc" ] || die "no CUDA toolkit at /usr/local/cuda"
nccl=$(realpath "$(ls "$CUDA"/lib*/libnccl.so.2 | head -1)") || die "no libnccl.so.2 in the toolkit to stand for the wheel's"
t0=$(date +%s)
lap() { echo "bundle_check: $1 took $(($(date +%s) - t0)) s"; t0=$(date +%s); }

# ---- the chroot: minbase plus the tools of a CUDA image
if [ ! -f "$CH/etc/debian_version" ]; then
  command -v debootstrap >/dev/null || die "install debootstrap (apt-get install debootstrap)"
  debootstrap --variant=minbase bookworm "$CH" >"$CH.debootstrap.log" 2>&1 || die "debootstrap failed: see $CH.debootstrap.log"
fi
in_chroot() { chroot "$CH" /usr/bin/env -i PATH=/usr/local/cuda/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
MOUNTS=()
cleanup() {
  local i
  for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do umount "${MOUNTS[$i]}" 2>/dev/null || umount -l "${MOUNTS[$i]}"; done
}
trap cleanup EXIT
mnt() { mount "$@"; MOUNTS+=("${!#}"); }
mnt -t proc proc "$CH/proc"
# CMake from bookworm-backports (3.31): bookworm's 3.25 stops in
# FindCUDAToolkit on CUDA 13, which no longer ships nvToolsExt; a CUDA
# image brings a CMake of its own
if ! in_chroot sh -c 'command -v cc && command -v make && cmake --version | grep -q "version 3.31"' >/dev/null; then
  sed 's/ bookworm main/ bookworm-backports main/' "$CH/etc/apt/sources.list" >"$CH/etc/apt/sources.list.d/backports.list"
  in_chroot sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                   build-essential && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                   -t bookworm-backports cmake' >"$CH.apt.log" 2>&1 || die "installing the compiler and CMake failed: see $CH.apt.log"
fi
for p in $PROJECT_PACKAGES; do
  if in_chroot dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    die "the chroot has the project's package $p: use a fresh CHROOT"
  fi
done
lap "the chroot (debootstrap --variant=minbase bookworm, build-essential, cmake from backports)"

# ---- mounts: devices, the toolkit without its NCCL, NCCL as a wheel has it, the sources
mnt -t sysfs sysfs "$CH/sys" # hwloc reads the CPU topology there
mnt --rbind /dev "$CH/dev" # with /dev/pts: the tests that sample on a terminal open one
mount --make-rslave "$CH/dev" # nothing mounted or unmounted under it reaches the machine's /dev
mnt -t tmpfs tmpfs "$CH/dev/shm"
ov=$(mktemp -d /var/tmp/tessel-cuda-overlay.XXXXXX)
mkdir -p "$ov/upper/include" "$ov/upper/lib" "$ov/work" "$CH$CUDA"
for f in include/nccl.h lib/libnccl.so lib/libnccl.so.2 lib/libnccl_static.a; do mknod "$ov/upper/$f" c 0 0; done
mnt -t overlay overlay -o "ro,lowerdir=$CUDA,upperdir=$ov/upper,workdir=$ov/work" "$CH$CUDA"
ln -sfn "$CUDA" "$CH/usr/local/cuda"
mkdir -p "$CH$WHEEL" && touch "$CH$WHEEL/libnccl.so.2"
mnt --bind "$nccl" "$CH$WHEEL/libnccl.so.2"
mkdir -p "$CH$SRC"
mnt --bind "$SRC" "$CH$SRC"
if [ -d "$SRC/../shared" ]; then
  shared=$(cd "$SRC/../shared" && pwd)
  mkdir -p "$CH$shared"
  mnt --bind -o ro "$shared" "$CH$shared"
fi
in_chroot test ! -e "$CUDA/include/nccl.h" || die "the overlay did not hide the toolkit's nccl.h"

# ---- build with the bundle, then the CPU test suite
out=$SRC/build-chroot/run
in_chroot bash -c "cd '$SRC' && BUILD=build-chroot tests/gpu/run_all.sh --build-only '$out'" || die "the build failed: see $out/build.log"
grep -q "libraries: the bundle's" "$out/probe.log" || die "the build did not use the bundle (see $out/probe.log)"
grep -q "nccl: $WHEEL/libnccl.so.2, header $SRC/gpu-bundle/nccl/include" "$out/probe.log" ||
  die "NCCL was not taken from the wheel's library and the bundle's header (see $out/probe.log)"
lap "configure and build with CUDA on"
# one process and two, as the GPU run starts them: Open MPI and PMIx must
# find their components and texts in the bundle, and say nothing of it
in_chroot bash -c ". '$SRC/tests/gpu/bundle_env.sh' && gpu_env '$SRC/gpu-bundle' >/dev/null && cd '$SRC' &&
                   build-chroot/bin/tessel check configs/quickstart.yaml &&
                   build-chroot/bin/tessel launch -n 2 configs/ddp.yaml --set train.steps=1 \
                     --set train.sample_tokens=0 --set log.dir='$out/launch'" >"$out/mpi.log" 2>&1 ||
  die "tessel did not start from the bundle: see $out/mpi.log"
if grep -E "^Sorry!|help file|unable to find a usable" "$out/mpi.log"; then
  die "Open MPI or PMIx printed the above: see $out/mpi.log"
fi
lap "one and two processes from the bundle"
in_chroot bash -c ". '$SRC/tests/gpu/bundle_env.sh' && gpu_env '$SRC/gpu-bundle' >/dev/null &&
                   ctest --test-dir '$SRC/build-chroot' --output-on-failure -j 2" | tee "$out/ctest.log" | tail -15
rc=${PIPESTATUS[0]}
lap "the CPU test suite"
[ "$rc" -eq 0 ] || die "tests failed in the chroot: see $out/ctest.log"
echo "bundle_check: passed"
