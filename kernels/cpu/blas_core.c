/*
** kernels/cpu/blas_core.c — which OpenBLAS kernel family this CPU can run.
**
** Debian's OpenBLAS is a DYNAMIC_ARCH build: at load time it reads the CPU
** model and picks the kernels written for it. A model newer than its table
** (0.3.21 does not know every AVX-512 Xeon) gets the Prescott (SSE3)
** kernels, its fallback, whatever the CPU can do. Measured on such a Xeon
** with AVX-512: one-thread sgemm 512³ at 17–26 GFLOP/s with Prescott's
** kernels and 93–100 with SkylakeX's. The choice is made before any BLAS
** call and cannot be changed after: OPENBLAS_CORETYPE, read once when the
** library loads, is the documented way to force it, so the `tessel` program
** and the benchmarks set it and run themselves again
** (tsl_cpu_blas_restart); a program that links libtessel is told in the
** backend description.
**
** The same restart keeps OpenBLAS from starting a thread pool nobody uses.
** Its pthread build starts, as it loads, one thread per core, which waits
** for work by spinning on sched_yield for about 0.1 s before it sleeps.
** tessel never gives it work (OpenBLAS runs one thread in each member of
** the OpenMP team, matmul.c), so in that time it only takes cores from the
** team. Measured on 2 cores: 20 two-thread sgemm calls of 0.5–1.4 ms in a
** row had their slowest at 8.6–12.1 ms with the pool and 1.4–2.7 ms
** without, and the first row of `tessel bench peak` (512³, measured as the
** program starts) read 35–91 GFLOP/s against 183–193 without it.
** OPENBLAS_NUM_THREADS=1 starts no pool.
*/
#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cpu.h"

const char *tsl_cpu_blas_core_for(const char *current, const tsl_cpu_features *f) {
  /* Only OpenBLAS's fallback is replaced: a core it recognised was chosen
  ** by its own table, which knows more about that CPU than a feature list. */
  if (!current || strcasecmp(current, "Prescott") != 0) return NULL;
  if (f->avx512f && f->avx512bw && f->avx512dq && f->avx512vl && f->avx512cd)
    return f->avx512bf16 ? "Cooperlake" : "SkylakeX";
  if (f->avx2 && f->fma) return "Haswell";
  return NULL;
}

/* __builtin_cpu_supports also checks that the OS saves the wide registers
** (XCR0), so a feature reported here can be used. */
const char *tsl_cpu_blas_core_better(void) {
  __builtin_cpu_init();
  tsl_cpu_features f = {
      .avx2 = __builtin_cpu_supports("avx2") != 0,
      .fma = __builtin_cpu_supports("fma") != 0,
      .avx512f = __builtin_cpu_supports("avx512f") != 0,
      .avx512bw = __builtin_cpu_supports("avx512bw") != 0,
      .avx512dq = __builtin_cpu_supports("avx512dq") != 0,
      .avx512vl = __builtin_cpu_supports("avx512vl") != 0,
      .avx512cd = __builtin_cpu_supports("avx512cd") != 0,
      .avx512bf16 = __builtin_cpu_supports("avx512bf16") != 0,
  };
  /* OPENBLAS_CORETYPE means something only to a DYNAMIC_ARCH build; one
  ** built for a single CPU reports that CPU as its core whatever it is */
  const char *config = openblas_get_config();
  if (!config || !strstr(config, "DYNAMIC_ARCH")) return NULL;
  return tsl_cpu_blas_core_for(openblas_get_corename(), &f);
}

int tsl_cpu_blas_pool_started(void) {
  return openblas_get_parallel() == 1 && openblas_get_num_threads() > 1;
}

/* Sets `name` to `value` when it is unset; 1 if it was set here. */
static int set_if_unset(const char *name, const char *value) {
  return value && !getenv(name) && setenv(name, value, 1) == 0;
}

/* Before any BLAS call or MPI_Init, so that every rank a launcher starts
** does the same. A variable the user set is kept, and the ones set here
** stop a second restart. If the restart fails the program goes on with
** what OpenBLAS chose. */
void tsl_cpu_blas_restart(char **argv) {
  int core = set_if_unset("OPENBLAS_CORETYPE", tsl_cpu_blas_core_better());
  int pool = tsl_cpu_blas_pool_started() && set_if_unset("OPENBLAS_NUM_THREADS", "1");
  if (!core && !pool) return;
  /* the program's own path, not /proc/self/exe: the kernel names a process
  ** after the file it executes, and ranks named "exe" escape pgrep, pkill
  ** and top */
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len > 0) {
    self[len] = '\0';
    execv(self, argv);
  }
  execv("/proc/self/exe", argv);
  if (core) unsetenv("OPENBLAS_CORETYPE");
  if (pool) unsetenv("OPENBLAS_NUM_THREADS");
}
