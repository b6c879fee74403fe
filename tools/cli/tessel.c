/* tools/cli/tessel.c — the `tessel` program. */
#include "cli/cli.h"
#include "cpu/cpu.h"

/* OpenBLAS may have loaded its slow Prescott fallback on a CPU it does not
** know: restart with the kernels the CPU runs (kernels/cpu/blas_core.c). */
int main(int argc, char **argv) {
  tsl_cpu_blas_restart(argv);
  return tsl_cli_main(argc, argv);
}
