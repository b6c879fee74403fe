/* core/train/step_stats.c — what the ranks agree on after each step. */
#include "train/report.h"

#include "mem/ledger.h"

enum { PHASES = 4 };

static void phases_to(const tsl_phases *p, double *v) {
  v[0] = p->step;
  v[1] = p->compute;
  v[2] = p->comm_wait;
  v[3] = p->bubble;
}

static tsl_phases phases_from(const double *v) { return (tsl_phases){v[0], v[1], v[2], v[3]}; }

tsl_status tsl_step_agree(const tsl_runtime *rt, tsl_step_report *s, int stop_mine) {
  enum { MAXN = TESSEL_TIER_COUNT + PHASES + 1 };
  double most[MAXN], sum[PHASES];
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) {
    const tsl_tier_account *a = &rt->ledger.tier[t];
    tsl_mem_stats(&rt->ledger, (tessel_tier)t, &s->tier[t]);
    s->activations[t] = a->by_kind[TESSEL_MEM_ACT];
    s->scratch[t] = a->by_kind[TESSEL_MEM_SCRATCH];
    most[t] = (double)s->tier[t].peak;
  }
  phases_to(&s->mine, most + TESSEL_TIER_COUNT);
  phases_to(&s->mine, sum);
  /* one rank may have been signalled alone: the largest reason wins, so
  ** every rank leaves after the same step */
  most[MAXN - 1] = stop_mine;
  tsl_status st = tsl_comm_world_reduce(rt->comm, most, MAXN, TESSEL_MAX);
  if (st >= 0) st = tsl_comm_world_reduce(rt->comm, sum, PHASES, TESSEL_SUM);
  if (st < 0) return st;
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) s->tier[t].peak = (uint64_t)most[t];
  s->max = phases_from(most + TESSEL_TIER_COUNT);
  for (int i = 0; i < PHASES; i++) sum[i] /= rt->world.size;
  s->mean = phases_from(sum);
  s->stop = (int)most[MAXN - 1];
  return TESSEL_OK;
}
