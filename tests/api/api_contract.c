/*
** tests/api/api_contract.c — promises of tessel/tessel.h that a program
** only sees from outside the library, for tests/api/api.sh.
**
**   api_contract SCENARIO CONFIG [KEY=VALUE...]
**
** open-args   the rank whose OMPI_COMM_WORLD_RANK is API_CONTRACT_BAD_RANK
**             opens with a NULL config, the others correctly: every rank
**             must be refused ("open refused: MESSAGE"), none may wait.
** threads     two runs, the second with the last KEY=VALUE alone (its
**             log.dir), open at once and closed in the order opened: while
**             one is open the OpenMP and OpenBLAS thread counts are the
**             runs' (device.threads: 1, and 1), and after the last close
**             they are the program's again.
** mpi-owned   the program starts MPI itself and sets MPI_COMM_WORLD's
**             error handler to MPI_ERRORS_ARE_FATAL; after a run was opened,
**             stepped and closed, the handler is that one again.
** signals     the stop signals' dispositions (SIGTERM, SIGINT, SIGHUP,
**             SIGUSR1, SIGPIPE) are the program's while a run is open and
**             after it closed: the library catches none of them.
** after-failure  (with a strategy whose every step fails) the failed step
**             is not retried: the next step, an evaluation and a save are
**             refused ("refused: MESSAGE" for each), and none takes a step.
** unwritable  after a step, rank 0 (OMPI_COMM_WORLD_RANK 0, or no launcher)
**             turns the directory API_CONTRACT_BLOCK into a file, so the
**             checkpoint cannot be written there: the save must fail on
**             every rank ("save failed: MESSAGE"), and the run go on (a
**             step taken) and close, the program never ended.
** other-thread  two runs of CONFIG (device.threads: 1), the first without
**             the last KEY=VALUE, the second with it (its log.dir): the
**             first steps from the thread that opened it, the second from
**             another thread (whose own OpenMP thread count,
**             OMP_NUM_THREADS, is not 1); their losses must agree bit for
**             bit ("step N L L").
** alone       one run of CONFIG stepped to its train.steps: "loss STEP L
**             N" for each step, its loss and gradient norm to 17 digits (to
**             compare bit for bit).
** interleaved  two runs of CONFIG, A with device.threads=1 and the next
**             to last KEY=VALUE (its log.dir), B with device.threads=2 and
**             the last: A opens, B opens, they step in turn INTERLEAVED_SHARED
**             times each, A closes, B steps on to its train.steps and
**             closes ("A STEP L N" and "B STEP L N", as alone prints them);
**             after B's close the program's OpenMP and OpenBLAS thread
**             counts must be its own again.
**
** Exit 0 when the scenario's promise holds, 1 (with why) when it does not.
*/
#include <cblas.h>
#include <mpi.h>
#include <omp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tessel/tessel.h"

static int broken(const char *what) {
  fprintf(stderr, "api_contract: %s\n", what);
  return 1;
}

static int open_args(const char *config, const char *const *sets, int n_sets) {
  const char *bad = getenv("API_CONTRACT_BAD_RANK"), *me = getenv("OMPI_COMM_WORLD_RANK");
  tessel_run *run = NULL;
  if (!bad || !me) return broken("open-args needs API_CONTRACT_BAD_RANK and mpirun");
  if (tessel_run_open(strcmp(bad, me) == 0 ? NULL : config, sets, n_sets, &run) >= 0 || run) {
    tessel_run_close(run);
    return broken("a run opened while another rank's arguments were wrong");
  }
  printf("open refused: %s\n", tessel_last_error());
  return 0;
}

/* Whether OpenMP and OpenBLAS run `omp` and `blas` threads now; says so
** (`when`) when they do not. */
static int threads_are(int omp, int blas, const char *when) {
  if (omp_get_max_threads() == omp && openblas_get_num_threads() == blas) return 1;
  fprintf(stderr, "api_contract: %s: OpenMP has %d threads and OpenBLAS %d, not %d and %d\n", when,
          omp_get_max_threads(), openblas_get_num_threads(), omp, blas);
  return 0;
}

static int threads(const char *config, const char *const *sets, int n_sets, const char *second_dir) {
  const int omp = omp_get_max_threads(), blas = openblas_get_num_threads();
  tessel_run *first = NULL, *second = NULL;
  printf("program: OpenMP %d threads, OpenBLAS %d\n", omp, blas);
  if (tessel_run_open(config, sets, n_sets, &first) < 0) return broken(tessel_last_error());
  int ok = threads_are(1, 1, "the first run open") && tessel_run_step(first, NULL) >= 0;
  const char *second_sets[] = {second_dir};
  if (ok && tessel_run_open(config, second_sets, 1, &second) < 0) ok = !broken(tessel_last_error());
  tessel_run_close(first);
  ok = ok && threads_are(1, 1, "the first run closed, the second open") && tessel_run_step(second, NULL) >= 0;
  tessel_run_close(second);
  ok = ok && threads_are(omp, blas, "both runs closed");
  return ok ? 0 : 1;
}

static int mpi_owned(const char *config, const char *const *sets, int n_sets) {
  int provided, ok = 1;
  tessel_run *run = NULL;
  MPI_Errhandler handler;
  MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  if (tessel_run_open(config, sets, n_sets, &run) < 0 || tessel_run_step(run, NULL) < 0)
    ok = !broken(tessel_last_error());
  tessel_run_close(run);
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler);
  if (ok && handler != MPI_ERRORS_ARE_FATAL)
    ok = !broken("MPI_COMM_WORLD's error handler is not the program's after its run closed");
  MPI_Errhandler_free(&handler);
  MPI_Finalize();
  return ok ? 0 : 1;
}

static const int stop_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGPIPE};
#define N_STOP_SIGNALS (sizeof stop_signals / sizeof stop_signals[0])

/* Whether every stop signal's handler is what `before` holds. */
static int stop_signals_are(const struct sigaction *before, const char *when) {
  for (size_t i = 0; i < N_STOP_SIGNALS; i++) {
    struct sigaction now;
    sigaction(stop_signals[i], NULL, &now);
    if (now.sa_handler != before[i].sa_handler) {
      fprintf(stderr, "api_contract: %s: the handler of signal %d is not the program's\n", when, stop_signals[i]);
      return 0;
    }
  }
  return 1;
}

static int signals(const char *config, const char *const *sets, int n_sets) {
  struct sigaction before[N_STOP_SIGNALS];
  tessel_run *run = NULL;
  for (size_t i = 0; i < N_STOP_SIGNALS; i++) sigaction(stop_signals[i], NULL, &before[i]);
  if (tessel_run_open(config, sets, n_sets, &run) < 0) return broken(tessel_last_error());
  int ok = stop_signals_are(before, "a run open") && tessel_run_step(run, NULL) >= 0;
  tessel_run_close(run);
  return ok && stop_signals_are(before, "the run closed") ? 0 : 1;
}

static int after_failure(const char *config, const char *const *sets, int n_sets) {
  tessel_run *run = NULL;
  double val;
  char dir[4096];
  if (tessel_run_open(config, sets, n_sets, &run) < 0) return broken(tessel_last_error());
  int ok = tessel_run_step(run, NULL) < 0 || !broken("the strategy's failing step succeeded");
  printf("failed: %s\n", tessel_last_error());
  if (ok && tessel_run_step(run, NULL) >= 0) ok = !broken("a step after the failed one was taken");
  if (ok) printf("refused: %s\n", tessel_last_error());
  if (ok && tessel_run_evaluate(run, &val) >= 0) ok = !broken("an evaluation after the failed step");
  if (ok) printf("refused: %s\n", tessel_last_error());
  if (ok && tessel_run_save(run, dir, sizeof dir) >= 0) ok = !broken("a checkpoint after the failed step");
  if (ok) printf("refused: %s\n", tessel_last_error());
  if (ok && tessel_run_last_step(run) != 0) ok = !broken("the run counts a step");
  tessel_run_close(run);
  return ok ? 0 : 1;
}

/* Rank 0 turns the directory `path` into an empty file. */
static int block_dir(const char *path) {
  const char *me = getenv("OMPI_COMM_WORLD_RANK");
  char cmd[4200];
  if (me && strcmp(me, "0") != 0) return 0;
  snprintf(cmd, sizeof cmd, "rm -rf '%s' && : > '%s'", path, path);
  return system(cmd) == 0 ? 0 : broken("cannot turn the checkpoint directory into a file");
}

static int unwritable(const char *config, const char *const *sets, int n_sets) {
  const char *block = getenv("API_CONTRACT_BLOCK");
  tessel_run *run = NULL;
  char dir[4096];
  if (!block) return broken("unwritable needs API_CONTRACT_BLOCK");
  if (tessel_run_open(config, sets, n_sets, &run) < 0) return broken(tessel_last_error());
  int ok = tessel_run_step(run, NULL) >= 0 && block_dir(block) == 0;
  tessel_status st = ok ? tessel_run_save(run, dir, sizeof dir) : TESSEL_OK;
  if (ok && st != TESSEL_E_IO) ok = !broken("a checkpoint into a file was not an I/O error");
  if (ok) printf("save failed: %s\n", tessel_last_error());
  if (ok && (tessel_run_step(run, NULL) < 0 || tessel_run_last_step(run) != 2))
    ok = !broken("the run did not go on after the failed save");
  tessel_run_close(run);
  return ok ? 0 : 1;
}

enum { THREAD_STEPS = 3 };

/* Takes THREAD_STEPS steps of the run `arg`, keeping their losses. */
typedef struct stepped {
  tessel_run *run;
  double loss[THREAD_STEPS];
  int failed;
} stepped;

static void *take_steps(void *arg) {
  stepped *s = arg;
  tessel_step_info info = {.size = sizeof info};
  for (int i = 0; i < THREAD_STEPS && !s->failed; i++) {
    s->failed = tessel_run_step(s->run, &info) < 0;
    s->loss[i] = info.loss;
  }
  return NULL;
}

static int other_thread(const char *config, const char *const *sets, int n_sets) {
  stepped mine = {0}, other = {0};
  pthread_t thread;
  if (tessel_run_open(config, sets, n_sets - 1, &mine.run) < 0) return broken(tessel_last_error());
  take_steps(&mine);
  tessel_run_close(mine.run);
  if (tessel_run_open(config, sets, n_sets, &other.run) < 0) return broken(tessel_last_error());
  if (pthread_create(&thread, NULL, take_steps, &other) != 0) other.failed = !broken("pthread_create failed");
  else pthread_join(thread, NULL);
  tessel_run_close(other.run);
  if (mine.failed || other.failed) return broken("a step failed");
  int same = 1;
  for (int i = 0; i < THREAD_STEPS; i++) {
    printf("step %d %.17g %.17g\n", i + 1, mine.loss[i], other.loss[i]);
    same &= mine.loss[i] == other.loss[i];
  }
  return same ? 0 : broken("the run stepped from another thread trained otherwise");
}

/* Steps `run` once and prints "TAG STEP LOSS NORM"; 0 when the run is at
** its end, or the step failed (*failed set, with why). */
static int print_step(tessel_run *run, const char *tag, int *failed) {
  tessel_step_info info = {.size = sizeof info};
  if (tessel_run_step(run, &info) < 0) {
    *failed = broken(tessel_last_error());
    return 0;
  }
  printf("%s %lld %.17g %.17g\n", tag, (long long)info.step, info.loss, info.grad_norm);
  return info.step < info.steps && !info.stopped_by;
}

static int alone(const char *config, const char *const *sets, int n_sets) {
  tessel_run *run = NULL;
  int failed = 0;
  if (tessel_run_open(config, sets, n_sets, &run) < 0) return broken(tessel_last_error());
  while (print_step(run, "loss", &failed)) continue;
  tessel_run_close(run);
  return failed;
}

enum { INTERLEAVED_SHARED = 3, MAX_SETS = 64 };

/* Opens a run of `config` with `sets` and two more, its own. */
static tessel_status open_with(const char *config, const char *const *sets, int n_sets, const char *threads,
                               const char *own, tessel_run **out) {
  const char *all[MAX_SETS + 2];
  if (n_sets > MAX_SETS) {
    broken("more KEY=VALUE than interleaved takes");
    return TESSEL_E_CONFIG;
  }
  memcpy(all, sets, (size_t)n_sets * sizeof *sets);
  all[n_sets] = threads;
  all[n_sets + 1] = own;
  return tessel_run_open(config, all, n_sets + 2, out);
}

static int interleaved(const char *config, const char *const *sets, int n_sets) {
  const int omp = omp_get_max_threads(), blas = openblas_get_num_threads();
  tessel_run *a = NULL, *b = NULL;
  int failed = 0, a_more = 1, b_more = 1;
  printf("program: OpenMP %d threads, OpenBLAS %d\n", omp, blas);
  if (open_with(config, sets, n_sets - 2, "device.threads=1", sets[n_sets - 2], &a) < 0)
    return broken(tessel_last_error());
  if (open_with(config, sets, n_sets - 2, "device.threads=2", sets[n_sets - 1], &b) < 0) {
    tessel_run_close(a);
    return broken(tessel_last_error());
  }
  for (int i = 0; i < INTERLEAVED_SHARED && a_more && b_more && !failed; i++) {
    a_more = print_step(a, "A", &failed);
    if (!failed) b_more = print_step(b, "B", &failed);
  }
  tessel_run_close(a);
  while (b_more && !failed) b_more = print_step(b, "B", &failed);
  tessel_run_close(b);
  if (failed) return 1;
  return threads_are(omp, blas, "both runs closed, the first opened first") ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc < 3) return broken("usage: api_contract SCENARIO CONFIG [KEY=VALUE...]");
  const char *scenario = argv[1], *config = argv[2];
  const char *const *sets = (const char *const *)argv + 3;
  int n_sets = argc - 3;
  if (strcmp(scenario, "open-args") == 0) return open_args(config, sets, n_sets);
  if (strcmp(scenario, "threads") == 0 && n_sets > 1) return threads(config, sets, n_sets - 1, sets[n_sets - 1]);
  if (strcmp(scenario, "other-thread") == 0 && n_sets > 1) return other_thread(config, sets, n_sets);
  if (strcmp(scenario, "alone") == 0) return alone(config, sets, n_sets);
  if (strcmp(scenario, "interleaved") == 0 && n_sets > 1) return interleaved(config, sets, n_sets);
  if (strcmp(scenario, "unwritable") == 0) return unwritable(config, sets, n_sets);
  if (strcmp(scenario, "after-failure") == 0) return after_failure(config, sets, n_sets);
  if (strcmp(scenario, "signals") == 0) return signals(config, sets, n_sets);
  if (strcmp(scenario, "mpi-owned") == 0) return mpi_owned(config, sets, n_sets);
  return broken("unknown scenario");
}
