/*
** tools/plan/validate.c — predicted against measured.
**
** The written configurations run through `tessel compare` (interleaved
** trials, the median trial's figures) and each figure the plan predicts is
** set beside what the runs measured: step time and its split into compute,
** communication the step waited for and pipeline bubble (the comm front
** end's timers), the largest rank's device and host peaks, and rank 0's
** payload per communicator. The verdict says whether the candidate ranked
** first is the measured fastest, or tied with it within the noise of the
** trials (compare's rule: not measurably slower).
*/
#include "plan/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spawn.h"
#include "common/util.h"
#include "compare/compare.h"
#include "compare/table.h"

/* Rank 0's predicted payload on a communicator (metrics count rank 0's). */
static double predicted_payload(const tsl_plan_cand *c, const char *group) {
  double sum = 0;
  for (int i = 0; i < c->ranks[0].n_lines; i++)
    if (!strcmp(c->ranks[0].lines[i].group, group)) sum += (double)c->ranks[0].lines[i].payload;
  return sum;
}

/* "exact" or the communicators whose bytes differ. */
static void traffic_verdict(const tsl_plan_cand *c, const tsl_cmp_trial *t, char *buf, size_t cap) {
  int differ = 0;
  buf[0] = '\0';
  for (int g = 0; g < t->n_groups; g++) {
    double want = predicted_payload(c, t->groups[g].name), got = t->groups[g].payload;
    if (want == got) continue;
    char part[160];
    snprintf(part, sizeof part, "%s%s %.0f vs %.0f", differ++ ? "; " : "", t->groups[g].name, want, got);
    strncat(buf, part, cap - strlen(buf) - 1);
  }
  if (!differ) snprintf(buf, cap, "exact (%d)", t->n_groups);
}

static double percent(double predicted, double measured) { return 100.0 * (predicted - measured) / measured; }

/* Step time: predicted, measured over the trials (median, range), error. */
static void time_table(const tsl_plan *p, const tsl_compare *cmp, FILE *out) {
  static const char *const head[] = {"#", "candidate", "step ms predicted", "measured (trials)", "error",
                                     "compute pred/meas", "comm waited pred/meas", "bubble pred/meas", NULL};
  tsl_table t;
  tsl_table_init(&t, head);
  for (int i = 0; i < cmp->n_runs; i++) {
    const tsl_plan_cand *c = tsl_plan_fitting(p, i);
    const tsl_cmp_run *run = &cmp->runs[i];
    int row = tsl_table_row(&t);
    tsl_table_set(&t, row, 0, "%d", i + 1);
    tsl_table_set(&t, row, 1, "%s {%s}", c->strategy, c->options);
    if (run->failed || !c->timed) {
      tsl_table_set(&t, row, 2, run->failed ? "failed: %s" : "-", run->error);
      continue;
    }
    double tok = tsl_plan_tokens_per_step(c), ms = 1e3 * tok / run->tps;
    const tsl_cmp_split *sp = &run->trials[run->typical].split;
    tsl_table_set(&t, row, 2, "%.2f", c->time.step * 1e3);
    tsl_table_set(&t, row, 3, "%.2f (%.2f–%.2f)", ms, 1e3 * tok / run->tps_hi, 1e3 * tok / run->tps_lo);
    tsl_table_set(&t, row, 4, "%+.0f%%", percent(c->time.step * 1e3, ms));
    tsl_table_set(&t, row, 5, "%.1f / %.1f", (c->time.compute + c->time.optimizer) * 1e3, sp->compute * 1e3);
    tsl_table_set(&t, row, 6, "%.1f / %.1f", c->time.exposed * 1e3, sp->comm_wait_max * 1e3);
    tsl_table_set(&t, row, 7, "%.1f / %.1f", c->time.bubble * 1e3, sp->bubble_max * 1e3);
  }
  tsl_table_print_text(&t, out);
}

/* Memory and traffic: predicted against the median trial's. */
static void memory_table(const tsl_plan *p, const tsl_compare *cmp, FILE *out) {
  static const char *const head[] = {"#", "device peak predicted", "measured", "error", "host peak predicted",
                                     "measured", "traffic (rank 0)", NULL};
  tsl_table t;
  tsl_table_init(&t, head);
  for (int i = 0; i < cmp->n_runs; i++) {
    const tsl_plan_cand *c = tsl_plan_fitting(p, i);
    const tsl_cmp_run *run = &cmp->runs[i];
    if (run->failed) continue;
    const tsl_cmp_trial *tr = &run->trials[run->typical];
    int row = tsl_table_row(&t);
    char a[32], b[32], x[32], y[32], traffic[512];
    tsl_table_set(&t, row, 0, "%d", i + 1);
    tsl_table_set(&t, row, 1, "%s", tsl_format_bytes(c->peak[TESSEL_TIER_DEVICE], a, sizeof a));
    tsl_table_set(&t, row, 2, "%s", tsl_format_bytes((uint64_t)tr->memory[0].peak, b, sizeof b));
    tsl_table_set(&t, row, 3, "%+.1f%%", percent((double)c->peak[TESSEL_TIER_DEVICE], tr->memory[0].peak));
    tsl_table_set(&t, row, 4, "%s", tsl_format_bytes(c->peak[TESSEL_TIER_HOST], x, sizeof x));
    tsl_table_set(&t, row, 5, "%s", tsl_format_bytes((uint64_t)tr->memory[1].peak, y, sizeof y));
    traffic_verdict(c, tr, traffic, sizeof traffic);
    tsl_table_set(&t, row, 6, "%s", traffic);
  }
  tsl_table_print_text(&t, out);
}

/* Is the first-ranked the measured fastest, or tied with it? */
static void verdict(const tsl_compare *cmp, FILE *out) {
  tsl_cmp_verdict v;
  tsl_compare_verdict(cmp, &v);
  const tsl_cmp_run *first = &cmp->runs[0];
  if (!v.fastest || first->failed) {
    fprintf(out, "\nno verdict: %s\n", first->failed ? "the first-ranked run failed" : "no run completed");
    return;
  }
  int tied = 0;
  for (int i = 0; i < v.n_tied; i++) tied |= v.tied[i] == first;
  /* one trial gives no spread: it can neither tie nor separate two runs */
  const char *noise = cmp->repeat < 2 && cmp->n_runs > 1 ? "; one trial cannot tell noise from a difference: use "
                                                           "--repeat 3" : "";
  const char *untold = v.measurable || cmp->n_runs < 2 ? "" : ", though not measurably faster than the next";
  if (v.fastest == first)
    fprintf(out, "\nthe first-ranked candidate is the measured fastest (%s, %.0f tokens/s)%s\n", first->label,
            first->tps, noise[0] ? noise : untold);
  else
    fprintf(out, "\nthe measured fastest is %s (%.0f tokens/s); the first-ranked, %s, made %.0f tokens/s%s\n",
            v.fastest->label, v.fastest->tps, first->label, first->tps,
            noise[0] ? noise : tied ? ": within the measured noise of it" : ": measurably slower");
}

tsl_status tsl_plan_validate(const tsl_plan *p, char **paths, int n, int steps, int repeat, FILE *out) {
  if (n == 0) return TESSEL_OK;
  if (n == 1) fprintf(out, "\nonly one candidate fits: there is nothing to rank against\n");
  tsl_compare cmp = {.steps = steps, .repeat = repeat, .tolerance = 1e-5, .val_tolerance = 0.01,
                     .warmup = (int)TSL_MAX(1, steps / 10)};
  cmp.runs = calloc((size_t)n, sizeof *cmp.runs);
  char *dir = tsl_dirname(paths[0]);
  if (!cmp.runs || !dir) {
    free(cmp.runs);
    free(dir);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory");
  }
  cmp.n_runs = n;
  snprintf(cmp.out, sizeof cmp.out, "%s/compare", dir);
  free(dir);
  for (int i = 0; i < n; i++) {
    cmp.runs[i].config = paths[i];
    cmp.runs[i].ranks = p->world;
  }
  fprintf(out, "\nvalidating the %d best through tessel compare (%d trial(s) of %d steps each) in %s ...\n", n,
          repeat, steps, cmp.out);
  fflush(out);
  tsl_status st = tsl_mkdir_p(cmp.out);
  if (st >= 0) st = tsl_compare_plan(&cmp);
  if (st >= 0 && !tsl_spawn_stopped()) tsl_compare_run_all(&cmp);
  if (tsl_spawn_stopped()) { /* nothing to report: the caller says so */
    tsl_compare_free(&cmp);
    free(cmp.runs);
    return TESSEL_OK;
  }
  if (st >= 0) st = tsl_compare_measure(&cmp);
  if (st >= 0) st = tsl_compare_report(&cmp, out);
  if (st >= 0) {
    fprintf(out, "\npredicted against measured: step time (median of the trials' mean steps after %d warm-up step(s), "
                 "and the range of the trials), its split (the median trial's; communication and bubble of the "
                 "slowest rank)\n",
            cmp.warmup);
    time_table(p, &cmp, out);
    fprintf(out, "\nmemory (the largest rank's peak) and traffic (rank 0's payload per communicator), the median "
                 "trial's\n");
    memory_table(p, &cmp, out);
    verdict(&cmp, out);
  }
  tsl_compare_free(&cmp);
  free(cmp.runs);
  return st;
}
