/* tools/cli/cmd_launch.c — `tessel launch -n N CONFIG`: mpirun with the right flags. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/spawn.h"
#include "common/util.h"
#include "runtime/build.h"
#include "train/signals.h"

static int launch(int argc, char **argv);

#define MAX_RANKS 4096

/* `tessel run`'s options and -n */
static const tsl_options launch_options = {"n:s:r:", tsl_run_long_options};

const tsl_command tsl_cmd_launch = {
    "launch", "run on N local ranks through mpirun: tessel launch -n N CONFIG [RUN ARGS]",
    "usage: tessel launch -n N CONFIG [--set KEY=VALUE]... [--resume DIR]\n\n"
    "Validates CONFIG for N ranks as `tessel check --world N` does (a mistake is reported once, exit status 2,\n"
    "before any rank starts), then starts `tessel run CONFIG ...` on N ranks of this machine with mpirun and\n"
    "says how it placed them. Options may come before or after CONFIG, as for `tessel run`.\n"
    "With at least N CPUs available to it (its affinity mask), each rank is bound to its own equal part of\n"
    "them and runs that many threads; with fewer, the ranks are left unbound (--oversubscribe) and share the\n"
    "CPUs, one thread each. Under a mask narrower than the machine (taskset, a Slurm step), where mpirun\n"
    "would bind to the machine's first CPUs, the ranks are left unbound and share the mask. Adds\n"
    "--allow-run-as-root when run as root.\n"
    "Ctrl-C, SIGTERM, SIGUSR1 or SIGHUP stop the run after its step with a checkpoint (exit status 75; mpirun gets\n"
    "SIGUSR1, which it forwards to every rank); a second Ctrl-C, SIGTERM or SIGHUP aborts the ranks still running.\n"
    "Exits with mpirun's status.\n"
    "For several machines use mpirun or srun directly (docs/cluster.md).\n\n"
    "  -n N                  number of ranks, 1 to " TSL_STR(MAX_RANKS) "\n"
    "  -s, --set KEY=VALUE   override a config key on every rank (repeatable)\n"
    "  -r, --resume DIR      resume from this checkpoint directory instead of checkpoint.resume\n",
    launch, (const tsl_options *const[]){&launch_options, NULL}};

static volatile sig_atomic_t mpirun_pid, stops, pending, abort_asked;

/* mpirun kills the ranks a second after it gets SIGTERM or SIGINT itself,
** too soon for a checkpoint; SIGUSR1 it forwards to every rank, which stop
** after the step with a checkpoint (exit 75). So a first stop signal to
** `tessel launch` reaches mpirun as SIGUSR1, and a later Ctrl-C, SIGTERM or
** SIGHUP as SIGINT, which aborts, as a second one aborts `tessel run`: a
** job whose step never ends (a rank stuck in a collective) cannot stop
** with a checkpoint, and a scheduler's second SIGTERM must end it. A
** repeated SIGUSR1 changes nothing, as in the ranks. The abort is passed
** on by supervise, which first looks whether there is anything to abort. */
static void forward(int sig) {
  if (sig != SIGUSR1 && stops > 0) abort_asked = 1;
  else if (mpirun_pid > 0) kill(mpirun_pid, SIGUSR1);
  else pending = SIGUSR1; /* before mpirun exists: passed on once it does (it was lost) */
  stops++;
}

/* Whether process `pid` is alive: not gone, not a zombie. */
static int alive(long pid) {
  char path[64], line[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char *end = fgets(line, sizeof line, f) ? strrchr(line, ')') : NULL; /* the name may hold ')' */
  fclose(f);
  return end && end[1] == ' ' && end[2] != 'Z' && end[2] != 'X';
}

/* Whether any child of mpirun (a rank) is alive, from /proc's list of each
** of its threads' children; 1 when the kernel keeps no such list. Once
** every rank has stopped with its checkpoint, mpirun is only tearing the
** job down, and Open MPI 4.1's, interrupted there, exits 1 or crashes in
** PMIx_Finalize: a second Ctrl-C then has nothing left to abort. */
static int ranks_alive(pid_t mpirun) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/task", (long)mpirun);
  DIR *tasks = opendir(path);
  if (!tasks) return 1;
  int any = 0, listed = 0;
  struct dirent *t;
  while (!any && (t = readdir(tasks))) {
    char children[320];
    snprintf(children, sizeof children, "%s/%s/children", path, t->d_name);
    FILE *f = t->d_name[0] == '.' ? NULL : fopen(children, "r");
    if (!f) continue;
    listed = 1;
    long child;
    while (!any && fscanf(f, "%ld", &child) == 1) any = alive(child);
    fclose(f);
  }
  closedir(tasks);
  return any || !listed;
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
    /* polled, not waited for: a signal between a check and the wait would be missed */
    for (int first = 1;; first = 0) {
      pid_t got = waitpid(pid, &status, WNOHANG);
      if (got == pid || (got < 0 && errno != EINTR)) break;
      /* before mpirun has started its ranks, nothing is checkpointing */
      if (abort_asked == 1 && (first || ranks_alive(pid))) {
        kill(pid, SIGINT);
        abort_asked = 2;
      }
      usleep(50000);
    }
    rc = tsl_exit_status(status);
  }
  mpirun_pid = 0;
  for (int i = 0; i < 4; i++) sigaction(sigs[i], &old[i], NULL);
  return rc;
}

typedef struct launch_args {
  int ranks;
  tsl_run_args run;
} launch_args;

/* -n, launch's one option beyond `tessel run`'s (tsl_own_option; ctx is
** the int of ranks). */
static int ranks_option(void *ctx, int opt) {
  int *ranks = ctx;
  if (opt == -1) return *ranks ? 0 : tsl_usage_error(&tsl_cmd_launch, "missing -n N, the number of ranks");
  if (*ranks) return tsl_usage_error(&tsl_cmd_launch, "-n is given twice");
  if (!tsl_option_int(optarg, 1, MAX_RANKS, ranks))
    return tsl_option_error(&tsl_cmd_launch, launch_options.longs, opt,
                            "a whole number of ranks from 1 to " TSL_STR(MAX_RANKS));
  return 0;
}

/* The arguments of `tessel run` on every rank: CONFIG first, as `ps`
** shows a rank and scripts look for it (a name starting with '-' as
** ./NAME, which run cannot take for an option), then the options. NULL when
** out of memory; free the array and args[0]. */
static char **run_args(const tsl_run_args *a, int *n) {
  char **args = calloc((size_t)(2 * a->n_sets + 3), sizeof *args);
  if (!args || !(args[0] = tsl_asprintf("%s%s", a->config[0] == '-' ? "./" : "", a->config))) {
    free(args);
    return NULL;
  }
  *n = 1;
  for (int i = 0; i < a->n_sets; i++) {
    args[(*n)++] = "--set";
    args[(*n)++] = (char *)a->sets[i];
  }
  if (a->resume) {
    args[(*n)++] = "--resume";
    args[(*n)++] = (char *)a->resume;
  }
  return args;
}

/* The config's mistakes, found here once as `tessel check --world N` finds
** them, not by N ranks after mpirun started them: 0 or the exit status.
** With --resume the ranks check that checkpoint, not the one
** checkpoint.resume names. */
static int validate(const launch_args *a) {
  tsl_runtime rt = {0};
  tessel_model_dims dims;
  tsl_status st = tsl_check_config(&rt, a->run.config, a->run.sets, a->run.n_sets, a->ranks,
                                   a->run.resume ? 0 : TSL_CHECK_RESUME, &dims);
  int rc = st < 0 ? tsl_fail(st) : TSL_EXIT_OK;
  tsl_runtime_destroy(&rt);
  return rc;
}

static int launch(int argc, char **argv) {
  launch_args a = {0};
  char how[512], **pass = NULL, **args = NULL;
  int n_pass = 0, rc;
  rc = tsl_parse_run_args(&tsl_cmd_launch, &launch_options, ranks_option, &a.ranks, argc, argv, &a.run);
  if (rc != TSL_EXIT_OK || (rc = validate(&a)) != TSL_EXIT_OK) goto done;
  if (!(pass = run_args(&a.run, &n_pass))) {
    rc = tsl_fail(tsl_error(TESSEL_E_NOMEM, "out of host memory reading the command line"));
    goto done;
  }
  if (!(args = tsl_run_argv(a.ranks, 1, pass, n_pass, how, sizeof how))) {
    fprintf(stderr, "error: cannot find the tessel executable: %s\n", strerror(errno));
    rc = TSL_EXIT_FAILURE;
    goto done;
  }
  fprintf(stderr, "launch: %s\n", how);
  fflush(stderr);
  rc = supervise(args);
  /* mpirun's banners about a "non-zero status" come last, after the run's
  ** own words: say again, in the last line, what the status means */
  if (rc == TSL_EXIT_STOPPED)
    fprintf(stderr, "launch: the run stopped early with a checkpoint (exit status %d, not a failure); how to go on "
            "is said above\n", rc);
  else if (rc == TSL_EXIT_USAGE)
    fprintf(stderr, "launch: the config was refused before training (exit status %d): its mistakes are above, "
            "before mpirun's report\n", rc);
done:
  tsl_spawn_argv_free(args);
  if (pass) free(pass[0]);
  free(pass);
  free(a.run.sets);
  return rc;
}
