/* core/compare/verdict.c — which configuration to pick, and whether the
** machine's noise allows saying so. */
#include <math.h>
#include <stddef.h>

#include "compare/compare.h"

/* A difference in throughput is called measurable when
**   - the faster configuration's slowest trial beats the slower one's
**     fastest (the ranges of the trials do not overlap),
**   - it is at least twice the larger spread of the two (spread: the range
**     of a configuration's trials over their median), and
**   - it is at least TSL_CMP_FLOOR percent.
** With three trials each, identical configurations pass all three about
** once in two hundred comparisons under Gaussian noise (simulated), and a
** real difference well above the noise passes them every time. One trial
** has no spread to judge by: nothing is called measurable then. */
#define TSL_CMP_FLOOR 2.0

/* Runs that may be chosen: they ran and train what the reference trains. */
static int eligible(const tsl_cmp_run *r) { return !r->failed && r->equivalent; }

void tsl_compare_verdict(const tsl_compare *c, tsl_cmp_verdict *v) {
  *v = (tsl_cmp_verdict){0};
  for (int r = 0; r < c->n_runs; r++) {
    const tsl_cmp_run *run = &c->runs[r];
    if (!eligible(run)) continue;
    if (!v->fastest || run->tps > v->fastest->tps) {
      v->runner_up = v->fastest;
      v->fastest = run;
    } else if (!v->runner_up || run->tps > v->runner_up->tps) {
      v->runner_up = run;
    }
    double peak = run->trials[run->typical].memory[0].peak;
    if (!v->smallest || peak < v->smallest->trials[v->smallest->typical].memory[0].peak) v->smallest = run;
  }
  if (!v->runner_up) return;
  const tsl_cmp_run *a = v->fastest, *b = v->runner_up;
  v->percent = 100.0 * (a->tps / b->tps - 1.0);
  v->spread = 100.0 * fmax(a->spread, b->spread);
  v->measurable = a->n_ok > 1 && b->n_ok > 1 && a->tps_lo > b->tps_hi && v->percent >= 2.0 * v->spread &&
                  v->percent >= TSL_CMP_FLOOR;
}
