/* core/cli/cmd_launch.c — `tessel launch -n N CONFIG`: mpirun with the right flags. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/spawn.h"

static int launch(int argc, char **argv);

const tsl_command tsl_cmd_launch = {
    "launch", "run on N local ranks through mpirun: tessel launch -n N CONFIG [RUN ARGS]",
    "usage: tessel launch -n N CONFIG [--set KEY=VALUE]... [--resume DIR]\n\n"
    "Starts `tessel run CONFIG ...` on N ranks of this machine with mpirun and says how it placed them.\n"
    "With at least N CPUs available to it (its affinity mask: taskset, a cgroup, Slurm), each rank is bound\n"
    "to its own equal part of them and runs that many threads; with fewer, the ranks are left unbound\n"
    "(--oversubscribe) and share the CPUs, one thread each. Adds --allow-run-as-root when run as root.\n"
    "For several machines use mpirun or srun directly (docs/cluster.md).\n\n"
    "  -n N   number of ranks\n",
    launch};

static int launch(int argc, char **argv) {
  long long n = 0;
  if (argc < 4 || strcmp(argv[1], "-n") != 0 || tsl_parse_count(argv[2], &n) != 0 || n < 1 || n > 4096)
    return tsl_usage_error(&tsl_cmd_launch, "expected -n N CONFIG");
  char how[512];
  char **args = tsl_run_argv((int)n, 1, argv + 3, argc - 3, how, sizeof how);
  if (!args) {
    fprintf(stderr, "error: cannot find the tessel executable: %s\n", strerror(errno));
    return TSL_EXIT_FAILURE;
  }
  fprintf(stderr, "launch: %s\n", how);
  fflush(stderr);
  execvp(args[0], args);
  fprintf(stderr, "error: cannot start mpirun: %s (install openmpi-bin)\n", strerror(errno));
  tsl_spawn_argv_free(args);
  return TSL_EXIT_FAILURE;
}
