/* core/compare/run.c — running each configuration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spawn.h"
#include "common/log.h"
#include "common/util.h"
#include "compare/compare.h"

/* tessel's own error line in a run's log (a positioned config error or an
** "error:" line, not mpirun's banner around it), for the table. */
static void first_error(const char *log, char *out, size_t cap) {
  char *text = NULL;
  snprintf(out, cap, "see %s", log);
  if (tsl_read_file(log, &text, NULL) < 0) return;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char *msg = strncmp(line, "[rank ", 6) == 0 && strchr(line, ']') ? strchr(line, ']') + 2 : line;
    if (tsl_has_position(msg) || !strncmp(msg, "error: ", 7)) {
      snprintf(out, cap, "%s", msg);
      break;
    }
  }
  free(text);
}

static void run_one(tsl_compare *c, int index) {
  tsl_cmp_run *run = &c->runs[index];
  char log[4200], steps[64], dir[4200];
  snprintf(run->dir, sizeof run->dir, "%s/%d-%s", c->out, index + 1, run->label);
  snprintf(log, sizeof log, "%s/run.log", run->dir);
  snprintf(dir, sizeof dir, "log.dir=%s", run->dir);
  snprintf(steps, sizeof steps, "train.steps=%lld", (long long)c->steps);
  tsl_remove_tree(run->dir);
  if (tsl_mkdir_p(run->dir) < 0) {
    run->failed = 1;
    snprintf(run->error, sizeof run->error, "%s", tsl_error_message());
    return;
  }
  /* the comparison is of training: no resuming, no sample, no bar */
  const char *fixed[] = {"--set", steps, "--set", dir, "--set", "checkpoint.resume=never", "--set",
                         "train.sample_tokens=0", "--set", "log.progress=never"};
  int n = (int)TSL_ARRAY_LEN(fixed) + 2 * c->n_sets + 1;
  char **args = calloc((size_t)n, sizeof(char *));
  if (!args) {
    run->failed = 1;
    snprintf(run->error, sizeof run->error, "out of host memory");
    return;
  }
  int k = 0;
  args[k++] = run->config;
  for (size_t i = 0; i < TSL_ARRAY_LEN(fixed); i++) args[k++] = (char *)fixed[i];
  for (int i = 0; i < c->n_sets; i++) {
    args[k++] = "--set";
    args[k++] = (char *)c->sets[i];
  }
  char **argv = tsl_run_argv(run->ranks, 0, args, k);
  tsl_info("compare: running %s on %d rank(s) ...", run->config, run->ranks);
  int rc = argv ? tsl_spawn_wait(argv, log) : -1;
  tsl_spawn_argv_free(argv);
  free(args);
  if (rc != 0) {
    run->failed = 1;
    first_error(log, run->error, sizeof run->error);
    tsl_info("compare: %s failed (exit status %d): %s", run->config, rc, run->error);
  }
}

void tsl_compare_run_all(tsl_compare *c) {
  for (int r = 0; r < c->n_runs; r++)
    if (!c->runs[r].failed) run_one(c, r);
}
