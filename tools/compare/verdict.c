/* tools/compare/verdict.c — which configuration to pick, and whether the
** machine's noise allows saying so. */
#include <math.h>
#include <stddef.h>

#include "compare/compare.h"

/* A difference in throughput between a faster configuration A and a slower
** B is called measurable when A's slowest trial beats B's fastest
**   - by at least twice the larger spread of the two (spread: the range of
**     a configuration's trials over their median), and
**   - by at least TSL_CMP_FLOOR percent.
** The gap between the trials, not between the medians: of two trials the
** median is the slower one, so one slow trial of B once widened the median
** gap as much as B's spread, and two runs of one config were called 55×
** apart. Simulated under Gaussian noise, identical configurations are
** called different about once in 600 comparisons with three trials each
** (once in 25 with two); a 50% difference at 5% noise is found 87% of the
** time with three. One trial has no spread to judge by: nothing is called
** measurable then. The percent reported is the medians' difference. */
#define TSL_CMP_FLOOR 2.0

static int measurable(const tsl_cmp_run *a, const tsl_cmp_run *b, double *percent, double *spread) {
  *percent = 100.0 * (a->tps / b->tps - 1.0);
  *spread = 100.0 * fmax(a->spread, b->spread);
  double gap = 100.0 * (a->tps_lo / b->tps_hi - 1.0);
  return a->n_ok > 1 && b->n_ok > 1 && gap >= 2.0 * *spread && gap >= TSL_CMP_FLOOR;
}

/* Runs that may be chosen: they ran and train what the reference trains. */
static int eligible(const tsl_cmp_run *r) { return !r->failed && r->equivalent; }

static double device_peak(const tsl_cmp_run *r) { return r->trials[r->typical].memory[0].peak; }

void tsl_compare_verdict(const tsl_compare *c, tsl_cmp_verdict *v) {
  *v = (tsl_cmp_verdict){0};
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (!eligible(run)) continue;
    if (!v->fastest || run->tps > v->fastest->tps) v->fastest = run;
    if (!v->smallest || device_peak(run) < device_peak(v->smallest)) v->smallest = run;
  }
  if (!v->fastest) return;
  v->tied[v->n_tied++] = v->fastest;
  v->choice = v->fastest;
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    double pct, spread;
    if (!eligible(run) || run == v->fastest) continue;
    if (!v->runner_up || run->tps > v->runner_up->tps) v->runner_up = run;
    if (measurable(v->fastest, run, &pct, &spread) || v->n_tied == TSL_CMP_MAX_TIED) continue;
    v->tied[v->n_tied++] = run;
    if (!v->versus || run->tps < v->versus->tps) v->versus = run;
    if (device_peak(run) < device_peak(v->choice)) v->choice = run;
  }
  if (!v->versus) v->versus = v->runner_up;
  if (v->versus) v->measurable = measurable(v->fastest, v->versus, &v->percent, &v->spread);
}
