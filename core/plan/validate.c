/* core/plan/validate.c — predicted against measured. */
#include "plan/validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "compare/compare.h"
#include "compare/table.h"

/* The candidate behind written configuration i: the i-th that fits, in
** ranked order (as tsl_plan_write wrote them). */
static const tsl_plan_cand *written(const tsl_plan *p, int i) {
  for (int k = 0; k < p->n; k++) {
    const tsl_plan_cand *c = &p->c[p->order[k]];
    if (c->state == TSL_CAND_OK && c->fits && i-- == 0) return c;
  }
  return NULL;
}

/* Rank 0's predicted payload on a communicator (metrics count rank 0's). */
static double predicted_payload(const tsl_plan_cand *c, const char *group) {
  double sum = 0;
  for (int i = 0; i < c->ranks[0].n_lines; i++)
    if (!strcmp(c->ranks[0].lines[i].group, group)) sum += (double)c->ranks[0].lines[i].payload;
  return sum;
}

/* "exact" or the communicators whose bytes differ. */
static void traffic_verdict(const tsl_plan_cand *c, const tsl_cmp_run *run, char *buf, size_t cap) {
  int differ = 0;
  buf[0] = '\0';
  for (int g = 0; g < run->n_groups; g++) {
    double want = predicted_payload(c, run->groups[g].name), got = run->groups[g].payload;
    if (want == got) continue;
    char part[160];
    snprintf(part, sizeof part, "%s%s %.0f vs %.0f", differ++ ? "; " : "", run->groups[g].name, want, got);
    strncat(buf, part, cap - strlen(buf) - 1);
  }
  if (!differ) snprintf(buf, cap, "exact (%d communicators)", run->n_groups);
}

/* A run's step time range over its measured steps, from tokens/s. */
static void step_range(const tsl_cmp_run *run, const tsl_plan_cand *c, double *lo, double *hi) {
  double tokens = (double)c->dims.micro_batch * c->dims.micro_steps * c->dims.data_ranks * c->dims.seq_len;
  *lo = 1e3 * tokens / run->tps_max;
  *hi = 1e3 * tokens / run->tps_min;
}

static double percent(double predicted, double measured) { return 100.0 * (predicted - measured) / measured; }

static void print_table(const tsl_plan *p, const tsl_compare *cmp, FILE *out) {
  static const char *const head[] = {"#", "candidate", "step ms predicted", "measured (range)", "error",
                                     "device peak predicted", "measured", "error", "traffic", NULL};
  tsl_table t;
  tsl_table_init(&t, head);
  for (int i = 0; i < cmp->n_runs; i++) {
    const tsl_plan_cand *c = written(p, i);
    const tsl_cmp_run *run = &cmp->runs[i];
    int row = tsl_table_row(&t);
    char a[32], b[32], traffic[512];
    tsl_table_set(&t, row, 0, "%d", i + 1);
    tsl_table_set(&t, row, 1, "%s {%s}", c->strategy, c->options);
    if (run->failed) {
      tsl_table_set(&t, row, 2, "failed: %s", run->error);
      continue;
    }
    double lo, hi;
    step_range(run, c, &lo, &hi);
    if (c->timed) tsl_table_set(&t, row, 2, "%.2f", c->time.step * 1e3);
    else tsl_table_set(&t, row, 2, "-");
    tsl_table_set(&t, row, 3, "%.2f (%.2f–%.2f)", run->step_ms, lo, hi);
    if (c->timed) tsl_table_set(&t, row, 4, "%+.0f%%", percent(c->time.step * 1e3, run->step_ms));
    tsl_table_set(&t, row, 5, "%s", tsl_format_bytes(c->peak[TESSEL_TIER_DEVICE], a, sizeof a));
    tsl_table_set(&t, row, 6, "%s", tsl_format_bytes((uint64_t)run->peak[0], b, sizeof b));
    tsl_table_set(&t, row, 7, "%+.1f%%", percent((double)c->peak[TESSEL_TIER_DEVICE], run->peak[0]));
    traffic_verdict(c, run, traffic, sizeof traffic);
    tsl_table_set(&t, row, 8, "%s", traffic);
  }
  tsl_table_print_text(&t, out);
}

/* Is the first-ranked the measured fastest, or within the noise of it (the
** two runs' step-time ranges overlap)? */
static void verdict(const tsl_plan *p, const tsl_compare *cmp, FILE *out) {
  int fastest = -1;
  for (int i = 0; i < cmp->n_runs; i++)
    if (!cmp->runs[i].failed && (fastest < 0 || cmp->runs[i].step_ms < cmp->runs[fastest].step_ms)) fastest = i;
  if (fastest < 0 || cmp->runs[0].failed) {
    fprintf(out, "\nno verdict: the first-ranked run failed\n");
    return;
  }
  double lo0, hi0, lo, hi;
  step_range(&cmp->runs[0], written(p, 0), &lo0, &hi0);
  step_range(&cmp->runs[fastest], written(p, fastest), &lo, &hi);
  if (fastest == 0)
    fprintf(out, "\nthe first-ranked candidate is the measured fastest (%.2f ms per step)\n", cmp->runs[0].step_ms);
  else
    fprintf(out, "\nthe measured fastest is #%d (%.2f ms, range %.2f–%.2f); the first-ranked took %.2f ms (range "
                 "%.2f–%.2f): %s\n",
            fastest + 1, cmp->runs[fastest].step_ms, lo, hi, cmp->runs[0].step_ms, lo0, hi0,
            lo0 <= hi ? "within the measured noise" : "measurably slower");
}

tsl_status tsl_plan_validate(const tsl_plan *p, char **paths, int n, int steps, FILE *out) {
  if (n == 0) return TESSEL_OK;
  tsl_compare cmp = {.steps = steps, .tolerance = 1e-5, .warmup = (int)TSL_MAX(1, steps / 10)};
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
  fprintf(out, "\nvalidating the %d best through tessel compare (%d steps each) in %s ...\n", n, steps, cmp.out);
  fflush(out);
  tsl_status st = tsl_compare_plan(&cmp);
  if (st >= 0) st = tsl_mkdir_p(cmp.out);
  if (st >= 0) {
    tsl_compare_run_all(&cmp);
    st = tsl_compare_measure(&cmp);
  }
  if (st >= 0) st = tsl_compare_report(&cmp, out);
  if (st >= 0) {
    fprintf(out, "\npredicted against measured (step time: median after %d warm-up step(s); memory: the largest rank's "
                 "peak; traffic: rank 0's payload per communicator)\n",
            cmp.warmup);
    print_table(p, &cmp, out);
    verdict(p, &cmp, out);
  }
  tsl_compare_free(&cmp);
  free(cmp.runs);
  return st;
}
