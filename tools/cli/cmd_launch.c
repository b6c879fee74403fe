/* tools/cli/cmd_launch.c — `tessel launch -n N CONFIG`: mpirun with the right flags. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/spawn.h"
#include "common/util.h"
#include "train/signals.h"

static int launch(int argc, char **argv);

const tsl_command tsl_cmd_launch = {
    "launch", "run on N local ranks through mpirun: tessel launch -n N CONFIG [RUN ARGS]",
    "usage: tessel launch -n N CONFIG [--set KEY=VALUE]... [--resume DIR]\n\n"
    "Starts `tessel run CONFIG ...` on N ranks of this machine with mpirun and says how it placed them.\n"
    "With at least N CPUs available to it (its affinity mask: taskset, a cgroup, Slurm), each rank is bound\n"
    "to its own equal part of them and runs that many threads; with fewer, the ranks are left unbound\n"
    "(--oversubscribe) and share the CPUs, one thread each. Adds --allow-run-as-root when run as root.\n"
    "Ctrl-C, SIGTERM, SIGUSR1 or SIGHUP stop the run after its step with a checkpoint (exit status 75; mpirun gets\n"
    "SIGUSR1, which it forwards to every rank); a second Ctrl-C, SIGTERM or SIGHUP aborts. Exits with mpirun's status.\n"
    "For several machines use mpirun or srun directly (docs/cluster.md).\n\n"
    "  -n N   number of ranks\n",
    launch};

static volatile sig_atomic_t mpirun_pid, stops, pending;

/* mpirun kills the ranks a second after it gets SIGTERM or SIGINT itself,
** too soon for a checkpoint; SIGUSR1 it forwards to every rank, which stop
** after the step with a checkpoint (exit 75). So a first stop signal to
** `tessel launch` reaches mpirun as SIGUSR1, and a later Ctrl-C, SIGTERM or
** SIGHUP as SIGINT, which aborts, as a second one aborts `tessel run`: a
** job whose step never ends (a rank stuck in a collective) cannot stop
** with a checkpoint, and a scheduler's second SIGTERM must end it. A
** repeated SIGUSR1 changes nothing, as in the ranks. */
static void forward(int sig) {
  int to = sig != SIGUSR1 && stops > 0 ? SIGINT : SIGUSR1;
  stops++;
  if (mpirun_pid > 0) kill(mpirun_pid, to);
  else pending = to; /* before mpirun exists: passed on once it does (it was lost) */
}

/* Run mpirun as a child in its own process group (a terminal's Ctrl-C then
** reaches only this process, which forwards it as above; its standard
** input is /dev/null, since a background group reading the terminal would
** be stopped) and return its exit status. */
static int supervise(char **args) {
  /* SIGHUP too: a closed terminal or ssh session stops the job (mpirun is
  ** in its own group, so it would not hear it) */
  struct sigaction sa = {.sa_handler = forward}, old[4];
  static const int sigs[4] = {SIGINT, SIGTERM, SIGUSR1, SIGHUP};
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 4; i++) sigaction(sigs[i], &sa, &old[i]);
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, 0);
    tsl_spawn_detach(parent); /* mpirun passes the stop on to every rank */
    for (int i = 0; i < 4; i++) sigaction(sigs[i], &old[i], NULL);
    execvp(args[0], args);
    fprintf(stderr, "error: cannot start mpirun: %s (install openmpi-bin)\n", strerror(errno));
    _exit(TSL_EXIT_FAILURE);
  }
  int status = 0, rc = TSL_EXIT_FAILURE;
  if (pid < 0) {
    fprintf(stderr, "error: cannot start mpirun: %s\n", strerror(errno));
  } else {
    mpirun_pid = pid;
    if (pending) kill(pid, pending);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    rc = tsl_exit_status(status);
  }
  mpirun_pid = 0;
  for (int i = 0; i < 4; i++) sigaction(sigs[i], &old[i], NULL);
  return rc;
}

static int launch(int argc, char **argv) {
  long long n = 0;
  if (argc < 4 || strcmp(argv[1], "-n") != 0 || tsl_parse_count(argv[2], &n) != 0 || n < 1 || n > 4096)
    return tsl_usage_error(&tsl_cmd_launch, "expected -n N CONFIG");
  /* mistakes `tessel run` would find only after mpirun started N of it */
  if (!strcmp(argv[3], "-n")) return tsl_usage_error(&tsl_cmd_launch, "-n is given twice");
  if (!tsl_path_exists(argv[3]))
    return tsl_usage_error(&tsl_cmd_launch, "%s: no such config file", argv[3]);
  char how[512];
  char **args = tsl_run_argv((int)n, 1, argv + 3, argc - 3, how, sizeof how);
  if (!args) {
    fprintf(stderr, "error: cannot find the tessel executable: %s\n", strerror(errno));
    return TSL_EXIT_FAILURE;
  }
  fprintf(stderr, "launch: %s\n", how);
  fflush(stderr);
  int rc = supervise(args);
  tsl_spawn_argv_free(args);
  /* mpirun's banners about a "non-zero status" come last, after the run's
  ** own words: say again, in the last line, what the status means */
  if (rc == TSL_EXIT_STOPPED)
    fprintf(stderr, "launch: the run stopped early with a checkpoint (exit status %d, not a failure); how to go on "
            "is said above\n", rc);
  else if (rc == TSL_EXIT_USAGE)
    fprintf(stderr, "launch: the config was refused before training (exit status %d): its mistakes are above, "
            "before mpirun's report\n", rc);
  return rc;
}
