/*
** tools/plan/time.c — a rank's step time on a machine profile.
**
**   compute    its FLOPs over (peak × efficiency): a GPU's peak, or a CPU
**              core's GEMM rate times the cores the rank gets (a machine's
**              cores shared by the ranks on it);
**   optimizer  the elements whose AdamW moments it holds, streamed once
**              (parameter, gradient, m, v read; parameter, m, v written:
**              28 bytes each) at the profile's memory bandwidth (as
**              measured with as many ranks running, when it was);
**   comm       every traffic line: calls × α + bus bytes / bus bandwidth, α
**              and bandwidth looked up for its collective, group size and
**              whether the group spans machines;
**   exposed    what of comm the step waits for: lines marked NONE whole;
**              BACKWARD lines beyond `overlap` × the backward compute (2/3
**              of it); COMPUTE lines beyond `overlap` × what compute is
**              left to hide behind;
**   bubble     the strategy's idle ratio × compute (a pipeline's fill and
**              drain).
** step = compute + optimizer + exposed + bubble. Every rank waits for the
** slowest at the end of a step, so a candidate's step is its slowest rank's.
*/
#include <math.h>
#include <string.h>

#include "common/util.h"
#include "plan/plan.h"

double tsl_plan_bus_factor(tessel_collective kind, int ranks) {
  double n = ranks > 0 ? ranks : 1;
  switch (kind) {
    case TESSEL_COLL_ALL_REDUCE: return 2.0 * (n - 1) / n;
    case TESSEL_COLL_REDUCE_SCATTER:
    case TESSEL_COLL_ALL_GATHER:
    case TESSEL_COLL_ALL_TO_ALL: return (n - 1) / n;
    case TESSEL_COLL_RECV: return 0;
    default: return 1;
  }
}

double tsl_plan_bus_bytes(const tsl_plan_line *l) {
  return (double)l->payload * tsl_plan_bus_factor(l->kind, l->ranks);
}

double tsl_plan_line_seconds(const tsl_profile *pr, const tsl_plan_line *l, int world) {
  /* a receive's transfer is timed at its sender; one rank alone moves nothing */
  if (l->kind == TESSEL_COLL_RECV || l->ranks < 2) return 0;
  const tsl_link *k = tsl_profile_link(pr, l->kind, l->ranks, l->nodes, world);
  if (!k) return NAN;
  return (double)l->calls * k->alpha + tsl_plan_bus_bytes(l) / k->busbw;
}

/* FLOP/s one rank of a world of `world` gets. */
static double rank_rate(const tsl_profile *pr, int world) {
  if (pr->gpu) return pr->peak * pr->efficiency;
  int on_node = pr->ranks_per_node > 0 ? TSL_MIN(pr->ranks_per_node, world) : world;
  return pr->peak * pr->cores / (double)on_node * pr->efficiency;
}

void tsl_plan_time_rank(const tsl_plan *p, const tsl_plan_cand *c, int rank, tsl_plan_time *out) {
  const tsl_profile *pr = &p->profile;
  const tsl_plan_rank *r = &c->ranks[rank];
  double by[3] = {0, 0, 0};
  memset(out, 0, sizeof *out);
  out->compute = r->flops / rank_rate(pr, c->world);
  double moments = 0; /* AdamW keeps two fp32 moments per element it updates */
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) moments += (double)r->memory[t][TESSEL_MEM_OPTIM] / 8.0;
  out->optimizer = moments * 28.0 / tsl_profile_stream(pr, c->world);
  for (int i = 0; i < r->n_lines; i++) {
    double s = tsl_plan_line_seconds(pr, &r->lines[i], c->world);
    out->comm += s;
    by[r->lines[i].overlap] += s;
  }
  double ov = pr->overlap, bwd = ov * out->compute * 2.0 / 3.0, hidden_bwd = TSL_MIN(by[TESSEL_OVERLAP_BACKWARD], bwd);
  double left = TSL_MAX(0.0, ov * out->compute - hidden_bwd);
  out->exposed = by[TESSEL_OVERLAP_NONE] + (by[TESSEL_OVERLAP_BACKWARD] - hidden_bwd) +
                 TSL_MAX(0.0, by[TESSEL_OVERLAP_COMPUTE] - left);
  out->bubble = r->bubble * out->compute;
  out->step = out->compute + out->optimizer + out->exposed + out->bubble;
}
