/*
** tests/api/api_demo.c — a program that trains through the public C API
** (tessel/tessel.h) only, for tests/api/api.sh.
**
**   api_demo CONFIG STEPS [KEY=VALUE...]
**
** Opens a run of CONFIG with the overrides, steps until STEPS, printing
** "step N loss L" (L to 17 digits: the same double the metrics hold),
** validates, saves, closes; then opens the same run again, which resumes
** from that checkpoint, and prints "resumed at N". With STEPS 0 it only
** opens, and prints the error of a failing open. Exit 0, or 1 with the
** library's error. Before all that, and after the first open, the calls are
** misused (NULL handles and outputs, a NULL --set string, a step_info of
** .size 0): each must fail with an error, not crash or take a step.
**
** A step that stops the run (out.stopped_by: train.stop_after, a signal)
** prints "stopped by REASON"; the program then tries one more step, which
** must be refused ("refused after the stop: MESSAGE"), and goes on to
** validate and save. With API_DEMO_NULL_EVAL_RANK=R the rank whose
** OMPI_COMM_WORLD_RANK is R first asks for an evaluation into NULL and the
** others into a variable: every rank must be refused ("evaluate refused:
** MESSAGE"), none may wait for the others.
*/
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/tessel.h"

static int failed(const char *what) {
  fprintf(stderr, "api_demo: %s failed: %s\n", what, tessel_last_error());
  return 1;
}

static int misuse(const char *what) {
  fprintf(stderr, "api_demo: %s was not refused\n", what);
  return 1;
}

/* Calls without a run: each an error value with a message. */
static int misuse_without_run(const char *config) {
  const char *null_set[] = {NULL};
  tessel_run *run = NULL;
  double val;
  if (tessel_run_open(config, NULL, 0, NULL) >= 0) return misuse("tessel_run_open(..., NULL)");
  if (tessel_run_open(config, null_set, 1, &run) >= 0 || run) return misuse("a NULL --set string");
  if (!strstr(tessel_last_error(), "sets[0] is NULL")) return misuse("a NULL --set string (message)");
  if (tessel_run_step(NULL, NULL) >= 0) return misuse("tessel_run_step(NULL)");
  if (tessel_run_evaluate(NULL, &val) >= 0) return misuse("tessel_run_evaluate(NULL)");
  if (tessel_run_save(NULL, NULL, 0) >= 0) return misuse("tessel_run_save(NULL)");
  if (tessel_run_last_step(NULL) != -1) return misuse("tessel_run_last_step(NULL)");
  tessel_run_close(NULL);
  return 0;
}

/* One rank's bad argument fails the call on every rank (when asked to). */
static int misuse_on_one_rank(tessel_run *run) {
  const char *who = getenv("API_DEMO_NULL_EVAL_RANK"), *me = getenv("OMPI_COMM_WORLD_RANK");
  double val;
  if (!who || !me) return 0;
  if (tessel_run_evaluate(run, strcmp(who, me) == 0 ? NULL : &val) >= 0)
    return misuse("an evaluation into NULL on one rank");
  printf("evaluate refused: %s\n", tessel_last_error());
  return 0;
}

/* The rank named by API_DEMO_STOP_RANK stops itself before it exits, as a
** program stuck after its last run would: the other ranks' exit must not
** wait for it for ever. */
static void stuck_at_exit(void) {
  const char *who = getenv("API_DEMO_STOP_RANK"), *me = getenv("OMPI_COMM_WORLD_RANK");
  fflush(stdout);
  if (who && me && strcmp(who, me) == 0) raise(SIGSTOP);
}

/* Calls on an open run with bad arguments: refused, and no step taken. */
static int misuse_with_run(tessel_run *run) {
  int64_t before = tessel_run_last_step(run);
  tessel_step_info unsized = {.size = 0};
  if (tessel_run_evaluate(run, NULL) >= 0) return misuse("tessel_run_evaluate(run, NULL)");
  if (tessel_run_step(run, &unsized) >= 0) return misuse("a tessel_step_info of .size 0");
  if (tessel_run_last_step(run) != before) return misuse("a step taken before refusing .size 0");
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: api_demo CONFIG STEPS [KEY=VALUE...]\n");
    return 2;
  }
  const char *const *sets = (const char *const *)argv + 3;
  int n_sets = argc - 3;
  long long steps = atoll(argv[2]);
  tessel_run *run;
  if (misuse_without_run(argv[1])) return 1;
  if (tessel_run_open(argv[1], sets, n_sets, &run) < 0) return failed("tessel_run_open");
  if (misuse_with_run(run) || misuse_on_one_rank(run)) return 1;
  /* a caller built against an older header knows only the first fields:
  ** the library must write no more than .size bytes, and keep .size */
  struct {
    tessel_step_info info;
    unsigned char canary[16];
  } older;
  memset(&older, 0xAB, sizeof older);
  older.info.size = (uint32_t)offsetof(tessel_step_info, val_loss);
  tessel_step_info info = {.size = sizeof info};
  if (steps > 0) { /* the first step into the older caller's struct */
    if (tessel_run_step(run, &older.info) < 0) return failed("tessel_run_step");
    printf("step %lld loss %.17g\n", (long long)older.info.step, older.info.loss);
  }
  while (tessel_run_last_step(run) < steps && !info.stopped_by) {
    if (tessel_run_step(run, &info) < 0) return failed("tessel_run_step");
    printf("step %lld loss %.17g\n", (long long)info.step, info.loss);
  }
  if (info.stopped_by) {
    printf("stopped by %s\n", info.stopped_by);
    if (tessel_run_step(run, &info) >= 0) return misuse("a step after the run stopped");
    printf("refused after the stop: %s\n", tessel_last_error());
  }
  const unsigned char *tail = (const unsigned char *)&older.info + offsetof(tessel_step_info, val_loss);
  for (size_t i = 0; i < sizeof older - offsetof(tessel_step_info, val_loss); i++)
    if (tail[i] != 0xAB) {
      fprintf(stderr, "api_demo: tessel_run_step wrote past the caller's .size\n");
      return 1;
    }
  if (older.info.size != offsetof(tessel_step_info, val_loss)) {
    fprintf(stderr, "api_demo: tessel_run_step changed .size\n");
    return 1;
  }
  double val;
  char dir[4096];
  if (steps > 0) {
    if (tessel_run_evaluate(run, &val) < 0) return failed("tessel_run_evaluate");
    printf("val %.17g\n", val);
    if (tessel_run_save(run, dir, sizeof dir) < 0) return failed("tessel_run_save");
    printf("saved %s\n", dir);
  }
  tessel_run_close(run);
  if (steps == 0) return 0;
  /* a second run in the same process: it resumes from the checkpoint */
  if (tessel_run_open(argv[1], sets, n_sets, &run) < 0) return failed("the second tessel_run_open");
  printf("resumed at %lld\n", (long long)tessel_run_last_step(run));
  tessel_run_close(run);
  printf("tessel %s\n", tessel_version());
  stuck_at_exit();
  return 0;
}
