/* tools/cli/spawn.c */
#include "cli/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"
#include "runtime/cpus.h"

/* mpirun's placement: each rank bound to its own equal part of the cores
** this process may use when there are enough, else unbound and
** oversubscribed (the OS shares the cores; the ranks see that and say so).
** Hardware threads are counted as CPUs, as sched_getaffinity counts them.
** Under a mask narrower than the machine (taskset, a Slurm step bound by
** affinity rather than a cgroup) mpirun would bind to the machine's CPUs
** from 0, outside the mask, and Open MPI 4's --cpu-set cannot be combined
** with a number of CPUs per rank: the ranks are left unbound, inheriting
** the mask, and share it (each runs its part of it). */
static int binding(char **argv, int k, int ranks, char *how, size_t how_cap) {
  tsl_cpus cpus;
  char pe[48];
  tsl_cpus_self(&cpus);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (ranks <= cpus.cores && online > cpus.cores) {
    argv[k++] = tsl_strdup("--bind-to");
    argv[k++] = tsl_strdup("none");
    if (how)
      snprintf(how, how_cap, "%d rank(s) sharing the %d CPU(s) this process may use (%s), unbound: mpirun would "
               "bind them to the machine's first CPUs instead", ranks, cpus.cores, cpus.list);
  } else if (ranks <= cpus.cores) {
    int per = cpus.cores / ranks;
    snprintf(pe, sizeof pe, "slot:PE=%d", per);
    argv[k++] = tsl_strdup("--use-hwthread-cpus");
    argv[k++] = tsl_strdup("--map-by");
    argv[k++] = tsl_strdup(pe);
    argv[k++] = tsl_strdup("--bind-to");
    argv[k++] = tsl_strdup("hwthread");
    if (how)
      snprintf(how, how_cap, "%d rank(s), each bound to %d of the %d CPU(s) this process may use (%s)", ranks, per,
               cpus.cores, cpus.list);
  } else {
    argv[k++] = tsl_strdup("--oversubscribe");
    argv[k++] = tsl_strdup("--bind-to");
    argv[k++] = tsl_strdup("none");
    if (how)
      snprintf(how, how_cap, "%d rank(s) on %d CPU(s) (%s): more ranks than CPUs, so they are not bound and share "
               "them (oversubscribed: speeds measure the sharing)", ranks, cpus.cores, cpus.list);
  }
  return k;
}

char **tsl_run_argv(int ranks, int launcher, char *const *run_args, int n_args, char *how, size_t how_cap) {
  char self[4096], count[32];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return NULL;
  self[len] = '\0';
  snprintf(count, sizeof count, "%d", ranks);
  char **argv = calloc((size_t)n_args + 20, sizeof(char *));
  if (!argv) return NULL;
  int k = 0;
  if (how) snprintf(how, how_cap, "1 process, unbound");
  if (ranks > 1 || launcher) {
    argv[k++] = tsl_strdup("mpirun");
    argv[k++] = tsl_strdup("-n");
    argv[k++] = tsl_strdup(count);
    if (geteuid() == 0) argv[k++] = tsl_strdup("--allow-run-as-root");
    k = binding(argv, k, ranks, how, how_cap);
  }
  argv[k++] = tsl_strdup(self);
  argv[k++] = tsl_strdup("run");
  for (int i = 0; i < n_args; i++) argv[k++] = tsl_strdup(run_args[i]);
  return argv;
}

void tsl_spawn_argv_free(char **argv) {
  for (int i = 0; argv && argv[i]; i++) free(argv[i]);
  free(argv);
}

static volatile sig_atomic_t child_pid, stop_signal, stop_count;

/* A stop for this command is a stop for its child: SIGUSR1 first (a run
** checkpoints after its step and exits; mpirun forwards SIGUSR1 to every
** rank, where SIGTERM would have it kill them a second later), then, on a
** second signal, SIGINT, which aborts it. */
static void pass_on(int sig) {
  if (!stop_signal) stop_signal = sig;
  if (child_pid > 0) kill(child_pid, stop_count++ ? SIGINT : SIGUSR1);
}

void tsl_spawn_detach(pid_t parent) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGUSR1);
  if (getppid() != parent) _exit(128 + SIGUSR1); /* it died before the line above */
}

int tsl_spawn_stopped(void) { return stop_signal; }

int tsl_spawn_stop_report(const char *command) {
  fprintf(stderr, "%s: stopped by signal %d, with nothing it started left running\n", command, (int)stop_signal);
  return 128 + stop_signal;
}

int tsl_spawn_wait(char **argv, const char *log_path) {
  /* SIGHUP too: a closed terminal or ssh session stops the command */
  static const int sigs[4] = {SIGINT, SIGTERM, SIGUSR1, SIGHUP};
  struct sigaction sa = {.sa_handler = pass_on}, old[4];
  if (stop_signal) return 128 + stop_signal; /* stopped before: start nothing more */
  int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < 4; i++) sigaction(sigs[i], &sa, &old[i]);
  pid_t parent = getpid(), pid = fork();
  if (pid == 0) {
    tsl_spawn_detach(parent);
    for (int i = 0; i < 4; i++) sigaction(sigs[i], &old[i], NULL);
    dup2(fd, 1);
    dup2(fd, 2);
    execvp(argv[0], argv);
    _exit(127);
  }
  close(fd);
  int status = 0, rc = -1;
  if (pid > 0) {
    child_pid = pid;
    stop_count = 0;
    if (stop_signal) kill(pid, SIGUSR1); /* arrived while it was being started */
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    rc = tsl_exit_status(status);
  }
  child_pid = 0;
  for (int i = 0; i < 4; i++) sigaction(sigs[i], &old[i], NULL);
  return rc;
}

int tsl_exit_status(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}
