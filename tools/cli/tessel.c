/* tools/cli/tessel.c — the `tessel` program. */
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cpu/cpu.h"

/* OpenBLAS picked its slow Prescott fallback on a CPU it does not know but
** that runs faster kernels (kernels/cpu/blas_core.c): name those kernels
** in OPENBLAS_CORETYPE and start again, before any BLAS call or MPI_Init,
** so that every command and every rank a launcher starts gets them. A
** coretype the user set is kept; the variable, once set, stops a second
** restart. If the restart fails the program goes on with the fallback. */
static void restart_with_faster_blas(char **argv) {
  if (getenv("OPENBLAS_CORETYPE")) return;
  const char *core = tsl_cpu_blas_core_better();
  if (!core || setenv("OPENBLAS_CORETYPE", core, 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OPENBLAS_CORETYPE");
}

int main(int argc, char **argv) {
  restart_with_faster_blas(argv);
  return tsl_cli_main(argc, argv);
}
