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

/* Before any BLAS call or MPI_Init, so that every rank a launcher starts
** does the same. A coretype the user set is kept; the variable, once set,
** stops a second restart. If the restart fails the program goes on with
** the fallback. */
void tsl_cpu_blas_restart(char **argv) {
  if (getenv("OPENBLAS_CORETYPE")) return;
  const char *core = tsl_cpu_blas_core_better();
  if (!core || setenv("OPENBLAS_CORETYPE", core, 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");
}
