/* tools/compare/run.c — running the trials. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spawn.h"
#include "common/log.h"
#include "common/util.h"
#include "compare/compare.h"

void tsl_compare_first_error(const char *log, char *out, size_t cap) {
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

static void trial_failed(tsl_cmp_trial *t, const char *why) {
  t->failed = 1;
  snprintf(t->error, sizeof t->error, "%s", why);
}

static void run_trial(tsl_compare *c, tsl_cmp_run *run, int k) {
  tsl_cmp_trial *t = &run->trials[k];
  char log[4300], buf[16][4200];
  const char *redirect[32];
  snprintf(t->dir, sizeof t->dir, "%s/trial-%d", run->dir, k + 1);
  snprintf(log, sizeof log, "%s/run.log", t->dir);
  tsl_remove_tree(t->dir);
  if (tsl_mkdir_p(t->dir) < 0) {
    trial_failed(t, tsl_error_message());
    return;
  }
  int m = tsl_compare_redirects(c, run, t->dir, buf, redirect, (int)TSL_ARRAY_LEN(redirect));
  char steps[64];
  snprintf(steps, sizeof steps, "train.steps=%lld", (long long)c->steps);
  int n = 1 + 2 * c->n_sets + 2 + m;
  char **args = calloc((size_t)n, sizeof(char *));
  if (!args) {
    trial_failed(t, "out of host memory");
    return;
  }
  int a = 0;
  args[a++] = run->config;
  for (int i = 0; i < c->n_sets; i++) {
    args[a++] = "--set";
    args[a++] = (char *)c->sets[i];
  }
  args[a++] = "--set";
  args[a++] = steps;
  for (int i = 0; i < m; i++) args[a++] = (char *)redirect[i];
  char **argv = tsl_run_argv(run->ranks, 0, args, a, NULL, 0);
  tsl_info("compare: trial %d/%d of %s on %d rank(s) ...", k + 1, c->repeat, run->label, run->ranks);
  int rc = argv ? tsl_spawn_wait(argv, log) : -1;
  tsl_spawn_argv_free(argv);
  free(args);
  if (rc != 0) {
    char first[768];
    tsl_compare_first_error(log, first, sizeof first);
    t->failed = 1;
    /* the whole story (every rank's lines, mpirun's) is in the log: say where */
    if (!strncmp(first, "see ", 4)) snprintf(t->error, sizeof t->error, "%s", first);
    else snprintf(t->error, sizeof t->error, "%s (log: %s)", first, log);
    if (tsl_spawn_stopped()) tsl_info("compare: %s trial %d stopped by the signal", run->label, k + 1);
    else tsl_info("compare: %s trial %d failed (exit status %d): %s", run->label, k + 1, rc, t->error);
  }
}

void tsl_compare_run_all(tsl_compare *c) {
  /* interleaved, and each round in the other direction (A B C, C B A, A B
  ** C ...): a slow spell of the machine falls on every configuration, not
  ** on one, and none always runs first or right after the same other */
  for (int k = 0; k < c->repeat; k++)
    for (int i = 0; i < c->n_runs; i++) {
      int r = k % 2 ? c->n_runs - 1 - i : i;
      if (tsl_spawn_stopped()) return; /* the trial it stopped has ended; start no other */
      if (!c->runs[r].failed) run_trial(c, &c->runs[r], k);
    }
}
