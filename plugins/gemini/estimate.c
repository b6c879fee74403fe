/*
** plugins/gemini/estimate.c — what chunk-based ZeRO-3 costs a rank, from
** the same dry simulation its start-up checks and forecast run (hooks.c,
** gm_simulate) and the placement rules of docs/gemini.md.
**
** The core keeps only activations and its scratch (every parameter is
** plugin-stored); that is the non-model memory the placement plans around.
** Per chunk a rank keeps four shards of size/N fp32 elements where its
** placement puts them (master and gradient on the device or the host, the
** AdamW moments there or on NVMe, and a device copy of a host chunk's
** parameters where asked). The device's model data at its peak — resident
** shards, gathered chunks, gradient buffers and reduce results — and the
** step's all-gathers and reduce-scatters come from a simulated step, the
** warm-up's and the steady one's under placement auto. Ranks are alike.
*/
#include <stdio.h>

#include "gemini.h"

/* Resident shards by tier and kind, for the current placement. */
static void shards(const gemini *g, uint64_t mem[TESSEL_TIER_COUNT][TESSEL_MEM_KIND_COUNT]) {
  uint64_t most = 0;
  int any_host = 0, any_nvme = 0;
  for (int k = 0; k < g->cs.nc; k++) {
    const gm_chunk *c = &g->cs.c[k];
    uint64_t bytes = 4 * c->shard;
    mem[c->otier][TESSEL_MEM_PARAM] += bytes;
    mem[c->otier][TESSEL_MEM_GRAD] += bytes;
    mem[c->nvme ? TESSEL_TIER_NVME : c->otier][TESSEL_MEM_OPTIM] += 2 * bytes;
    if (c->param_dev) mem[TESSEL_TIER_DEVICE][TESSEL_MEM_PARAM] += bytes;
    if (c->shard > most) most = c->shard;
    any_host |= c->otier != TESSEL_TIER_DEVICE;
    any_nvme |= c->nvme;
  }
  /* host staging: NVMe moments, or gradients added into host shards */
  if (any_nvme || (any_host && g->dims.micro_steps > 1)) mem[TESSEL_TIER_HOST][TESSEL_MEM_SCRATCH] += 2 * 4 * most;
}

/* One simulated step's device peak and traffic; under auto the warm-up
** and then the settled placement (whose shards are the device's). */
static tessel_status simulate(gemini *g, gm_sim *peak_step, gm_sim *steady) {
  g->dry = 1;
  tessel_status st = gm_simulate(g, GM_RELEASE, g->o.placement == GM_AUTO ? 0 : g->o.prefetch, 0, 0, peak_step);
  *steady = *peak_step;
  int promoted;
  if (st >= 0 && g->o.placement == GM_AUTO) st = gm_settle(g, &promoted, steady);
  if (steady->peak > peak_step->peak) {
    peak_step->peak = steady->peak;
    peak_step->peak_grads = steady->peak_grads;
  }
  g->dry = 0;
  return st;
}

static tessel_status traffic(gemini *g, const tessel_plan_query *q, const gm_sim *s) {
  const tessel_sdk x = {g->api, g->host, NULL};
  tessel_overlap gathers = g->o.prefetch > 0 ? TESSEL_OVERLAP_COMPUTE : TESSEL_OVERLAP_NONE;
  if (g->world == 1) return TESSEL_OK;
  TESSEL_TRY(tessel_est_traffic(&x, q, 1u << 0, TESSEL_COLL_ALL_GATHER, gathers, s->ag_calls[0] + s->ag_calls[1],
                                s->ag_bytes[0] + s->ag_bytes[1]));
  /* each reduce-scatter runs behind the next unit's compute */
  TESSEL_TRY(tessel_est_traffic(&x, q, 1u << 0, TESSEL_COLL_REDUCE_SCATTER, TESSEL_OVERLAP_COMPUTE, s->rs_calls,
                                s->rs_bytes));
  return tessel_est_traffic(&x, q, 1u << 0, TESSEL_COLL_ALL_REDUCE, TESSEL_OVERLAP_NONE, 1, sizeof(double));
}

tessel_status gm_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out) {
  gemini *g = inst;
  const tessel_sdk x = {g->api, g->host, NULL};
  tessel_geometry whole = {.size = sizeof whole};
  g->dims.size = sizeof g->dims;
  TESSEL_TRY(g->api->model->dims(g->host, &g->dims));
  if (!g->units) {
    TESSEL_TRY(gm_units_build(g));
    TESSEL_TRY(gm_schedules_build(g));
  }
  TESSEL_TRY(tessel_est_core(&x, q, &whole, 0, out));
  out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH] += 2 * sizeof(double); /* the norm and shared decisions */
  gm_acts_choice acts;
  /* what the place hook refuses on this device, refused here the same */
  TESSEL_TRY(gm_acts_choose(g, q->device_capacity, &acts));
  if (gm_auto_places_acts(g)) { /* the activations as auto will place them */
    uint64_t *dev_act = &out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_ACT], saved = acts.plain_device - acts.device;
    *dev_act = *dev_act > saved ? *dev_act - saved : 0;
    out->memory[TESSEL_TIER_HOST][TESSEL_MEM_ACT] += acts.host - acts.plain_host; /* what offload moved there */
  }
  g->cap = q->device_capacity;
  g->nonmodel = out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_ACT] + out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH];
  gm_place(g);
  /* and what setup refuses (gm_check_fit) */
  TESSEL_TRY(gm_check_fit(g));
  /* the host holds what the start placement puts there (under auto: every
  ** chunk, until the warm-up moves some to the device) */
  uint64_t start[TESSEL_TIER_COUNT][TESSEL_MEM_KIND_COUNT] = {{0}};
  shards(g, start);
  gm_sim peak, steady;
  TESSEL_TRY(simulate(g, &peak, &steady));
  uint64_t settled[TESSEL_TIER_COUNT][TESSEL_MEM_KIND_COUNT] = {{0}}, resident = 0;
  shards(g, settled);
  for (int k = 0; k < TESSEL_MEM_KIND_COUNT; k++) resident += settled[TESSEL_TIER_DEVICE][k];
  for (int k = 0; k < TESSEL_MEM_KIND_COUNT; k++) {
    out->memory[TESSEL_TIER_DEVICE][k] += settled[TESSEL_TIER_DEVICE][k];
    out->memory[TESSEL_TIER_HOST][k] += start[TESSEL_TIER_HOST][k];
    out->memory[TESSEL_TIER_NVME][k] += start[TESSEL_TIER_NVME][k];
  }
  /* gathered chunks (parameters), gradient buffers and reduce results
  ** (gradients) at the peak, as the ledger files them */
  uint64_t transient = peak.peak > resident ? peak.peak - resident : 0;
  uint64_t grads = peak.peak_grads < transient ? peak.peak_grads : transient;
  out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_GRAD] += grads;
  out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_PARAM] += transient - grads;
  TESSEL_TRY(traffic(g, q, &steady));
  return tessel_est_step_flops(&x, 0, g->dims.units - 1, &out->flops);
}

/* Everything on the device; optimizer state, then parameters too, on the
** host (ZeRO-Offload); auto placement within the device. */
tessel_status gm_enumerate(void *inst, const tessel_plan_query *q) {
  gemini *g = inst;
  static const char *const sets[] = {"placement: static",
                                     "placement: static, offload_optim_frac: 1",
                                     "placement: static, offload_optim_frac: 1, offload_param_frac: 1",
                                     "placement: auto", "placement: static, prefetch: 1"};
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) TESSEL_TRY(q->option_set(g->host, sets[i]));
  return TESSEL_OK;
}
