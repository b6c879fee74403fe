/* core/compare/verdict.c — which configuration to pick, and whether the
** machine's noise allows saying so. */
#include <math.h>
#include <stddef.h>

#include "compare/compare.h"

/* A difference in throughput between a faster configuration A and a slower
** B is called measurable when
**   - A's slowest trial beats B's fastest (the ranges of the trials do not
**     overlap),
**   - it is at least twice the larger spread of the two (spread: the range
**     of a configuration's trials over their median), and
**   - it is at least TSL_CMP_FLOOR percent.
** With three trials each, identical configurations pass all three about
** once in two hundred comparisons under Gaussian noise (simulated), and a
** real difference well above the noise passes them every time. One trial
** has no spread to judge by: nothing is called measurable then. */
#define TSL_CMP_FLOOR 2.0

static int measurable(const tsl_cmp_run *a, const tsl_cmp_run *b, double *percent, double *spread) {
  *percent = 100.0 * (a->tps / b->tps - 1.0);
  *spread = 100.0 * fmax(a->spread, b->spread);
  return a->n_ok > 1 && b->n_ok > 1 && a->tps_lo > b->tps_hi && *percent >= 2.0 * *spread &&
         *percent >= TSL_CMP_FLOOR;
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
    if (device_peak(run) < device_peak(v->choice)) v->choice = run;
  }
  if (v->runner_up) v->measurable = measurable(v->fastest, v->runner_up, &v->percent, &v->spread);
}
