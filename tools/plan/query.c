/*
** tools/plan/query.c — the callbacks of tessel_plan_query.
**
** A strategy's estimate tells the core what one rank keeps (its geometry
** and the CORE-stored parameter elements); the core answers with what it
** would allocate for that on the rank — the same rules state.c, acts.c and
** model.c allocate by, sized through the functions they allocate with — and
** records the traffic that storage causes. Everything else in the estimate
** is the strategy's.
*/
#include "plan/query.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/model.h"
#include "state/state.h"

/* ---- traffic lines ---- */

tsl_status tsl_plan_add_line(tsl_plan_rank *r, const tsl_plan_line *l) {
  for (int i = 0; i < r->n_lines; i++) {
    tsl_plan_line *o = &r->lines[i];
    if (o->axes == l->axes && o->kind == l->kind && o->overlap == l->overlap) {
      o->calls += l->calls;
      o->payload += l->payload;
      return TESSEL_OK;
    }
  }
  if (r->n_lines == r->cap_lines) {
    int cap = r->cap_lines ? 2 * r->cap_lines : 8;
    tsl_plan_line *p = realloc(r->lines, sizeof *p * (size_t)cap);
    if (!p) return tsl_error(TESSEL_E_NOMEM, "out of host memory for traffic lines");
    r->lines = p;
    r->cap_lines = cap;
  }
  r->lines[r->n_lines++] = *l;
  return TESSEL_OK;
}

/* Ranks of the group over `axes`. */
static int group_size(const tessel_mesh *m, uint32_t axes) {
  int n = 1;
  for (int a = 0; a < m->naxes; a++)
    if (axes & (1u << a)) n *= m->sizes[a];
  return n;
}

/* Named like the communicators of core/comm: the axes' names joined by '+'. */
void tsl_plan_group(const tessel_mesh *m, uint32_t axes, char *name, size_t cap, int *ranks) {
  name[0] = '\0';
  *ranks = group_size(m, axes);
  if (axes == 0) snprintf(name, cap, "self");
  for (int a = 0; a < m->naxes; a++) {
    if (!(axes & (1u << a))) continue;
    if (name[0]) strncat(name, "+", cap - strlen(name) - 1);
    strncat(name, m->names[a] ? m->names[a] : "axis", cap - strlen(name) - 1);
  }
}

/* The core's own reductions of a training step, on its communicator
** "core": the loss (sum and count: trainer.c), the step's agreement (each
** tier's peak, the step's time split and the stop signal by maximum, the
** split by sum: step_stats.c) and, when the strategy leaves it to the core,
** the squared gradient norm (optim.c). The accuracy tests hold these counts
** to what the counters see. */
tsl_status tsl_plan_core_lines(const tsl_runtime *rt, tsl_plan_rank *r) {
  enum { PHASES = 4, LOSS = 2, AGREE_MAX = TESSEL_TIER_COUNT + PHASES + 1, AGREE_SUM = PHASES };
  int norm = !(rt->plugin && rt->plugin->vt.grad_norm);
  uint64_t doubles = LOSS + AGREE_MAX + AGREE_SUM + (uint64_t)norm;
  tsl_plan_line l = {.axes = TSL_PLAN_CORE_AXES, .group = "core", .ranks = rt->world.size,
                     .kind = TESSEL_COLL_ALL_REDUCE, .overlap = TESSEL_OVERLAP_NONE, .calls = 3 + (uint64_t)norm,
                     .payload = doubles * sizeof(double)};
  return tsl_plan_add_line(r, &l);
}

static tsl_plan_ctx *ctx_of(tessel_host *h) { return h->rt->plan; }

static tsl_status traffic(tessel_host *h, const tessel_traffic *in) {
  tsl_plan_ctx *ctx = ctx_of(h);
  if (!ctx || !ctx->cand) return tsl_error(TESSEL_E_INTERNAL, "plan->traffic called outside estimate");
  tessel_traffic t;
  tsl_copy_in(&t, sizeof t, in);
  const tessel_mesh *m = &ctx->cand->mesh;
  if ((unsigned)t.kind >= TESSEL_COLL_COUNT || (unsigned)t.overlap > TESSEL_OVERLAP_COMPUTE ||
      (m->naxes < 32 && (t.axes >> m->naxes)))
    return tsl_error(TESSEL_E_INTERNAL, "a traffic line with collective %d, overlap %d over axes 0x%x of a %d-axis mesh",
                     (int)t.kind, (int)t.overlap, t.axes, m->naxes);
  tsl_plan_line l = {.axes = t.axes, .kind = t.kind, .overlap = t.overlap, .calls = t.calls, .payload = t.payload};
  tsl_plan_group(m, t.axes, l.group, sizeof l.group, &l.ranks);
  return tsl_plan_add_line(&ctx->cand->ranks[ctx->rank], &l);
}

static tsl_status option_set(tessel_host *h, const char *options) {
  tsl_plan_ctx *ctx = ctx_of(h);
  if (!ctx || !ctx->strategy) return tsl_error(TESSEL_E_INTERNAL, "plan->option_set called outside enumerate");
  if (!options) return tsl_error(TESSEL_E_INTERNAL, "plan->option_set without options");
  return tsl_plan_add(ctx->plan, ctx->strategy, options, 0);
}

/* ---- the core's storage on a rank ---- */

/* Kernels read the tier directly: the device, or the host of a backend
** without memory of its own (the CPU). */
static int addressable(const tsl_runtime *rt, tessel_tier tier) {
  return tier == TESSEL_TIER_DEVICE || (tier == TESSEL_TIER_HOST && rt->settings.device.kind == TSL_DEVICE_CPU);
}

/* The core allocates at least 8 bytes for an empty buffer (state.c). */
static uint64_t buffer(uint64_t bytes) { return bytes ? bytes : 8; }

/* Master, gradients, working copy and optimizer slots (state.c), and the
** all-gathers after an update of sharded slots (optim.c). */
static tsl_status state_costs(tsl_runtime *rt, tsl_plan_rank *r, uint64_t numel, uint64_t out[][TESSEL_MEM_KIND_COUNT],
                              int *direct) {
  tsl_state *s = tsl_model_state(rt->model);
  const tessel_model_dims *d = tsl_model_dims(rt->model);
  uint64_t es = tessel_dtype_size(d->act_dtype);
  int separate = d->act_dtype != TESSEL_F32 || !addressable(rt, s->master_at.tier);
  out[s->master_at.tier][TESSEL_MEM_PARAM] += buffer(4 * numel);
  out[TESSEL_TIER_DEVICE][TESSEL_MEM_GRAD] += buffer(4 * numel);
  if (separate) out[TESSEL_TIER_DEVICE][TESSEL_MEM_PARAM] += buffer(es * numel);
  *direct = addressable(rt, s->master_at.tier);
  if (s->n_slots == 0) return TESSEL_OK;
  const tessel_placement *sp = &s->slot_at[0];
  int n = sp->shard_axes ? group_size(&rt->mesh, sp->shard_axes) : 1, chunks = 0;
  uint64_t gathered = 0, owned = n > 1 ? tsl_shard_owned_numel(numel, sp->chunk_bytes, n, &chunks, &gathered) : numel;
  for (int i = 0; i < s->n_slots; i++) {
    out[s->slot_at[i].tier][TESSEL_MEM_OPTIM] += buffer(4 * owned);
    *direct &= addressable(rt, s->slot_at[i].tier);
  }
  if (n < 2 || chunks == 0) return TESSEL_OK;
  tsl_plan_line l = {.axes = sp->shard_axes, .kind = TESSEL_COLL_ALL_GATHER, .overlap = TESSEL_OVERLAP_NONE,
                     .calls = (uint64_t)chunks * (separate ? 2 : 1), .payload = gathered * (4 + (separate ? es : 0))};
  tsl_plan_group(&rt->mesh, l.axes, l.group, sizeof l.group, &l.ranks);
  return tsl_plan_add_line(r, &l);
}

/* Elements the core's optimizer stages through the device at a time when
** its state is where kernels cannot read it (optim.c). */
#define STAGE_ELEMS (1u << 20)

static tsl_status core_state(tessel_host *h, const tessel_geometry *g, uint64_t core_numel,
                             uint64_t out[TESSEL_TIER_COUNT][TESSEL_MEM_KIND_COUNT]) {
  tsl_plan_ctx *ctx = ctx_of(h);
  tsl_runtime *rt = h->rt;
  if (!ctx || !ctx->cand || !rt->model) return tsl_error(TESSEL_E_INTERNAL, "plan->core_state called outside estimate");
  tsl_plan_rank *r = &ctx->cand->ranks[ctx->rank];
  if (r->core_described) return tsl_error(TESSEL_E_INTERNAL, "plan->core_state called twice for rank %d", ctx->rank);
  r->core_described = 1;
  memset(out, 0, sizeof(uint64_t) * TESSEL_TIER_COUNT * TESSEL_MEM_KIND_COUNT);
  tessel_geometry geo;
  tsl_copy_in(&geo, sizeof geo, g);
  tsl_status st = tsl_geometry_complete(tsl_model_dims(rt->model), &geo);
  uint64_t act_device = 0, act_host = 0;
  if (st >= 0) st = tsl_model_act_bytes(rt->model, &geo, &act_device, &act_host);
  if (st < 0) return st;
  out[TESSEL_TIER_DEVICE][TESSEL_MEM_ACT] = act_device;
  out[TESSEL_TIER_HOST][TESSEL_MEM_ACT] = act_host;
  int direct;
  if ((st = state_costs(rt, r, core_numel, out, &direct)) < 0) return st;
  /* the reduction scratch, taken before training; an optimizer that stages
  ** its state grows it in the first step, the old block still held while
  ** the new one is taken (compute.c) */
  uint64_t scratch = tsl_model_scratch_bytes(&geo);
  if (!direct && core_numel) {
    uint64_t stage = (uint64_t)(tsl_model_state(rt->model)->n_slots + 1) * STAGE_ELEMS * sizeof(float);
    if (stage > scratch) scratch += TSL_MAX(stage, 2 * scratch);
  }
  out[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH] = scratch;
  return TESSEL_OK;
}

static tsl_status shard_cut(tessel_host *h, uint64_t numel, int32_t ranks, uint64_t chunk_bytes, uint64_t *chunks,
                            uint64_t *covered) {
  (void)h;
  int n = 0;
  if (ranks < 1) return tsl_error(TESSEL_E_INTERNAL, "plan->shard_cut over %d ranks", ranks);
  tsl_shard_owned_numel(numel, chunk_bytes ? chunk_bytes : TSL_STATE_CHUNK_BYTES, ranks, &n, covered);
  *chunks = (uint64_t)n;
  return TESSEL_OK;
}

void tsl_plan_query_init(tessel_plan_query *q, int world, int rank, uint64_t device_capacity,
                         const tessel_model_dims *dims) {
  *q = (tessel_plan_query){.size = sizeof *q, .world_size = world, .rank = rank, .device_capacity = device_capacity,
                           .dims = dims, .option_set = option_set, .core_state = core_state, .traffic = traffic,
                           .shard_cut = shard_cut};
}
