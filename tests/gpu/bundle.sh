#!/usr/bin/env bash
# Make the device bundle: the Debian packages that building and running
# tessel need beyond a CUDA image, unpacked into one folder that travels
# with the working tree to a GPU machine that cannot install anything.
#
#   tests/gpu/bundle.sh [DIR]        (default: gpu-bundle at the repository root, git-ignored)
#
# Run it on a Debian 12 (bookworm) machine with apt: it fetches the packages
# with `apt-get download` (as any user; nothing is installed), unpacks them
# with `dpkg -x` into DIR/root, and then makes the tree usable from any path:
#
#   - pkg-config files name their directories relative to ${pcfiledir}, so
#     `pkg-config --cflags yaml-0.1` points into the bundle wherever it lies;
#   - the links that Debian's maintainer scripts would have made (openblas.pc
#     and libopenblas.so.0 through the BLAS alternatives, mpirun and mpicc)
#     are made here;
#   - Open MPI is cut down to one machine: the shared-memory, self and TCP
#     transports stay, the InfiniBand, OFI, PSM and UCX components (and the
#     libraries only they need) go, as do Fortran, Java and C++ bindings,
#     static libraries and documentation;
#   - nccl.h from the CUDA toolkit here goes to DIR/nccl/include, for
#     machines whose NCCL is a bare libnccl.so.2 from a Python wheel.
#
# Then every ELF file's needed libraries are checked against the bundle and
# the C runtime every Linux system has (BASE_SONAMES), and the folder's size
# is printed: it must stay under 50 MiB so that it and the working tree
# travel together (64 MiB in all). tests/gpu/bundle_env.sh puts it to use;
# tests/gpu/bundle_check.sh proves it in a bare Debian chroot.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
DIR=${1:-$SRC/gpu-bundle}
MAX_MIB=50

# The project's libraries (scripts/install-deps.sh) and, one level down,
# what they load; pkg-config itself, which a CUDA image may lack.
PACKAGES=(
  libyaml-0-2 libyaml-dev
  libcjson1 libcjson-dev
  libutf8proc2 libutf8proc-dev
  libpcre2-8-0 libpcre2-dev
  libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0
  libopenmpi3 libopenmpi-dev openmpi-bin openmpi-common
  libevent-core-2.1-7 libevent-pthreads-2.1-7 libhwloc15 libpmix2 libmunge2 libnuma1
  zlib1g zlib1g-dev
  pkgconf pkgconf-bin libpkgconf3
)
# Sonames that every glibc system with a compiler has; never bundled.
BASE_SONAMES="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2 libgcc_s.so.1
libstdc++.so.6 libz.so.1 libudev.so.1 libuuid.so.1"
MULTIARCH=x86_64-linux-gnu

die() { echo "bundle: $*" >&2; exit 1; }
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || die "needs a Debian machine (apt-get, dpkg-deb)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "the GPU machine is x86-64: run this on an amd64 Debian"

rm -rf "$DIR"
mkdir -p "$DIR/debs" "$DIR/root"
ROOT=$DIR/root
LIB=$ROOT/usr/lib/$MULTIARCH

echo "bundle: fetching ${#PACKAGES[@]} packages"
(cd "$DIR/debs" && apt-get download -qq "${PACKAGES[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
for p in "${PACKAGES[@]}"; do
  ls "$DIR/debs/${p}_"*.deb >/dev/null 2>&1 || die "apt-get download did not fetch $p (run apt-get update first)"
done
for deb in "$DIR/debs"/*.deb; do dpkg-deb -x "$deb" "$ROOT"; done
(cd "$DIR/debs" && ls) >"$DIR/packages.txt"
rm -rf "$DIR/debs"

# ---- cut down to what one machine needs
rm -rf "$ROOT/usr/share/doc" "$ROOT/usr/share/man" "$ROOT/usr/share/lintian" "$ROOT/usr/share/bug" "$LIB/fortran"
find "$ROOT" -name '*.a' -delete
rm -f "$LIB"/openblas-pthread/lib{blas,lapack}.so* "$LIB"/openblas-pthread/pkgconfig/{blas,lapack}-openblas.pc
rm -f "$LIB"/libmpi_{mpifh,usempif08,usempi_ignore_tkr,java,cxx}.so* "$LIB"/openmpi/lib/libmpi_{mpifh,usempif08,usempi_ignore_tkr,java,cxx}.so
rm -f "$ROOT"/usr/bin/mpijavac* "$ROOT"/usr/bin/mpif* "$ROOT"/usr/bin/mpiC* "$ROOT"/usr/bin/mpic++* "$ROOT"/usr/bin/mpicxx*
rm -f "$LIB"/openmpi/lib/pkgconfig/ompi-{fort,f77,f90,cxx}.pc "$LIB"/pkgconfig/ompi-{fort,cxx}.pc
find "$LIB"/openmpi/lib -name '*.mod' -delete
# transports for other machines' networks: their components and helpers
for pat in '*ucx*' '*ofi*' '*openib*' '*psm*' '*usnic*' '*verbs*' 'reachable_netlink*'; do
  find "$LIB" \( -name "mca_$pat" -o -name "libmca_common_$pat" \) -delete
done
# MPI-IO (tessel writes its files itself) and its ompio/ROMIO parts
for fw in io fs fbtl fcoll sharedfp; do find "$LIB/openmpi" -name "mca_${fw}_*" -delete; done
find "$LIB" -name "libmca_common_ompio.so*" -delete
# OpenSHMEM, and the headers for writing Open MPI components (mpi.h
# needs only itself, mpi_portable_platform.h and, for C++, ompi/mpi/cxx)
rm -rf "$LIB"/liboshmem.so* "$ROOT"/usr/bin/{osh,shmem}* "$LIB"/openmpi/include/{openshmem,pshmem*.h,shmem*}
for fw in atomic memheap scoll spml sshmem; do find "$LIB/openmpi" -name "mca_${fw}_*" -delete; done
inc=$LIB/openmpi/include/openmpi
find "$inc" -mindepth 1 -maxdepth 1 ! -name ompi -exec rm -rf {} +
find "$inc/ompi" -mindepth 1 -maxdepth 1 ! -name mpi -exec rm -rf {} +
find "$inc/ompi/mpi" -mindepth 1 -maxdepth 1 ! -name cxx -exec rm -rf {} +
find "$ROOT" -xtype l -delete # links whose targets went

# ---- what the maintainer scripts would have linked
mkdir -p "$LIB/pkgconfig"
cp "$LIB/openblas-pthread/pkgconfig/openblas.pc" "$LIB/pkgconfig/openblas.pc"
ln -sf openblas-pthread/libopenblas.so.0 "$LIB/libopenblas.so.0"
ln -sf mpirun.openmpi "$ROOT/usr/bin/mpirun"
ln -sf mpiexec.openmpi "$ROOT/usr/bin/mpiexec"
ln -sf mpicc.openmpi "$ROOT/usr/bin/mpicc"
# libz.so.1 is the system's at run time (BASE_SONAMES); the bundle keeps
# only the link-time name, so it never stands in for a newer system zlib
rm -f "$LIB/libz.so.1"

# ---- pkg-config files that work from any path
find "$ROOT" -name '*.pc' -print0 | while IFS= read -r -d '' pc; do
  up=$(realpath --relative-to="$(dirname "$pc")" "$ROOT")
  sed -i "s|=/usr\\b|=\${pcfiledir}/$up/usr|g; s|-I/usr/|-I\${pcfiledir}/$up/usr/|g; s|-L/usr/|-L\${pcfiledir}/$up/usr/|g" "$pc"
done

# ---- the NCCL header, for a NCCL that came without one
nccl_h=""
for d in "${CUDA_HOME:-/usr/local/cuda}/include" /usr/local/cuda/include /usr/include /usr/local/include; do
  if [ -f "$d/nccl.h" ]; then nccl_h=$d/nccl.h; break; fi
done
[ -n "$nccl_h" ] || die "no nccl.h on this machine (looked beside the CUDA toolkit and in /usr/include)"
mkdir -p "$DIR/nccl/include"
cp "$(realpath "$nccl_h")" "$DIR/nccl/include/nccl.h"
nccl_version=$(sed -n 's/^#define NCCL_\(MAJOR\|MINOR\|PATCH\) *\([0-9]*\).*/\2/p' "$nccl_h" | paste -sd.)

# ---- every needed library is in the bundle or in BASE_SONAMES
have=$(find "$ROOT" \( -type f -o -type l \) -name '*.so*' -printf '%f\n' | sort -u)
missing=0
while IFS= read -r f; do
  for need in $(objdump -p "$f" 2>/dev/null | awk '$1 == "NEEDED" {print $2}'); do
    if ! grep -qxF "$need" <<<"$have" && ! grep -qw -- "$need" <<<"$BASE_SONAMES"; then
      echo "bundle: ${f#"$ROOT"/} needs $need, which is neither bundled nor a base library" >&2
      missing=1
    fi
  done
done < <(find "$ROOT" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c 'head -c4 "$1" | grep -q ELF && echo "$1"' _ {} \;)
[ $missing -eq 0 ] || die "incomplete: add the packages above to PACKAGES"

# bytes as they travel (the files' sizes, not the disk blocks they take)
bytes=$(du -sb "$DIR" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}')
printf 'bundle: %s: %d packages, nccl.h %s, %s MiB\n' "$DIR" "$(wc -l <"$DIR/packages.txt")" "$nccl_version" "$mib"
[ "$bytes" -le $((MAX_MIB << 20)) ] || die "the bundle is $mib MiB, over the $MAX_MIB MiB it may take of the 64 MiB that travels"
