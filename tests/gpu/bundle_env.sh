# tests/gpu/bundle_env.sh — sourced (bash) by tests/gpu/run_all.sh and
# tests/gpu/bundle_check.sh: find what the build needs on this machine and,
# where the system lacks the project's libraries, take them from the device
# bundle made by tests/gpu/bundle.sh.
#
#   . tests/gpu/bundle_env.sh
#   gpu_env BUNDLE_DIR     # prints one "name: value" line per finding
#
# Afterwards GPU_GENERATOR holds the cmake generator option for a new build
# folder (Ninja where make is missing), GPU_CMAKE_ARGS the other extra cmake
# arguments (NCCL; MPI and pkg-config from the bundle) and, when the bundle
# is used, PATH (mpirun, mpicc,
# pkg-config), LD_LIBRARY_PATH, PKG_CONFIG_PATH, CMAKE_PREFIX_PATH and
# OPAL_PREFIX point into it. Returns 1, after saying what is missing, when
# neither the system nor the bundle has something the build needs.

# Where a NCCL that came from a Python wheel (nvidia-nccl-cu*) or a system
# package may be; searched in this order, shallow first.
GPU_NCCL_DIRS="/usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu /usr/local/lib /opt /usr/local /usr/lib"

gpu_find_nccl_library() {
  local d f
  for d in ${CUDA_HOME:+$CUDA_HOME/lib64 $CUDA_HOME/lib} /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
    [ -e "$d/libnccl.so.2" ] && { echo "$d/libnccl.so.2"; return 0; }
  done
  f=$(ldconfig -p 2>/dev/null | awk '$1 == "libnccl.so.2" {print $NF; exit}')
  [ -n "$f" ] && { echo "$f"; return 0; }
  if command -v python3 >/dev/null; then
    f=$(python3 -c 'import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
    [ -n "$f" ] && [ -e "$f" ] && { echo "$f"; return 0; }
  fi
  for d in $GPU_NCCL_DIRS; do
    f=$(find "$d" -maxdepth 8 -name libnccl.so.2 -print -quit 2>/dev/null)
    [ -n "$f" ] && { echo "$f"; return 0; }
  done
  return 1
}

# nccl.h beside the library, in the toolkit or the system, else the bundle's.
gpu_find_nccl_header() {
  local lib=$1 bundle=$2 d
  for d in "$(dirname "$lib")/../include" ${CUDA_HOME:+$CUDA_HOME/include} /usr/local/cuda/include /usr/include /usr/local/include; do
    [ -f "$d/nccl.h" ] && { (cd "$d" && pwd); return 0; }
  done
  [ -f "$bundle/nccl/include/nccl.h" ] && { echo "$bundle/nccl/include"; return 0; }
  return 1
}

gpu_system_has_packages() {
  command -v pkg-config >/dev/null && pkg-config --exists yaml-0.1 libcjson openblas zlib 2>/dev/null &&
    command -v mpicc >/dev/null && command -v mpirun >/dev/null
}

gpu_use_bundle() {
  local root=$1/root lib
  lib=$root/usr/lib/x86_64-linux-gnu
  export PATH=$root/usr/bin:$PATH
  export LD_LIBRARY_PATH=$lib:$lib/openblas-pthread:$lib/openmpi/lib:$lib/pmix2/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_PATH=$lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}
  export CMAKE_PREFIX_PATH=$root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  # Open MPI and PMIx find their components, help texts and wrapper data
  # relative to these instead of the /usr they were built for
  export OPAL_PREFIX=$root/usr
  # PMIx 4 takes its component and help-text directories from PMIX_LIBDIR
  # and PMIX_DATADIR: without them a run finds no compression component and
  # prints a banner about a help file missing from the /usr path
  export PMIX_LIBDIR=$lib/pmix2/lib PMIX_DATADIR=$lib/pmix2/share
  # Open MPI starts even a single process's runtime through its rsh
  # launcher, which refuses to work without ssh or rsh (Debian's openmpi-bin
  # pulls in openssh-client for it); on one machine the isolated launcher
  # forks the processes itself
  if ! command -v ssh >/dev/null && ! command -v rsh >/dev/null; then export OMPI_MCA_plm=isolated; fi
  GPU_CMAKE_ARGS+=(-DMPI_C_COMPILER="$root/usr/bin/mpicc" -DPKG_CONFIG_EXECUTABLE="$root/usr/bin/pkg-config")
}

gpu_env() {
  local bundle=$1 nccl_lib nccl_inc
  GPU_CMAKE_ARGS=()
  GPU_GENERATOR=()
  if ! command -v make >/dev/null; then
    command -v ninja >/dev/null || { echo "generator: neither make nor ninja is installed" >&2; return 1; }
    GPU_GENERATOR=(-G Ninja)
  fi
  echo "generator: $(command -v make || command -v ninja)"
  echo "compiler: $(command -v cc || echo none) $(cc -dumpfullversion 2>/dev/null)"
  echo "cmake: $(cmake --version 2>/dev/null | head -1)"
  if gpu_system_has_packages; then
    echo "libraries: the system's (libyaml, cJSON, OpenBLAS, zlib, Open MPI all installed)"
  elif [ -d "$bundle/root" ]; then
    gpu_use_bundle "$bundle"
    echo "libraries: the bundle's ($bundle: $(wc -l <"$bundle/packages.txt") Debian packages)"
  else
    echo "libraries: the system lacks some of libyaml, cJSON, OpenBLAS, zlib, Open MPI and there is no bundle" \
         "at $bundle (make it with tests/gpu/bundle.sh on a Debian machine)" >&2
    return 1
  fi
  echo "mpirun: $(command -v mpirun)"
  if ! nccl_lib=$(gpu_find_nccl_library); then
    echo "nccl: no libnccl.so.2 (looked beside the CUDA toolkit, in ldconfig's cache, Python's nvidia.nccl and $GPU_NCCL_DIRS)" >&2
    return 1
  fi
  if ! nccl_inc=$(gpu_find_nccl_header "$nccl_lib" "$bundle"); then
    echo "nccl: no nccl.h for $nccl_lib on this machine or in the bundle" >&2
    return 1
  fi
  # the full path, so no unversioned libnccl.so is needed; its folder
  # becomes the backend's run path
  GPU_CMAKE_ARGS+=(-DTESSEL_NCCL_LIBRARY="$nccl_lib" -DTESSEL_NCCL_INCLUDE_DIR="$nccl_inc")
  echo "nccl: $nccl_lib, header $nccl_inc/nccl.h"
  return 0
}
