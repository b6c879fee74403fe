/* core/optim/optim.c */
#include "optim.h"

#include <math.h>

#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "compute/compute.h"
#include "plugin/host.h"

/* Step s (from 1) of N with w warm-up steps, as llm.c and nanoGPT count
** (their step is s − 1): lr·s/w while s ≤ w, then the decay from lr at its
** first step (s = w + 1) towards min_lr, which it would reach at s = N + 1.
** So a run without warm-up trains its first step at lr, and one step
** (train.steps: 1) is not taken at min_lr; the last step is above min_lr
** by the decay's last stride. WSD (warm-up, stable, decay) holds lr after
** the warm-up and decays over the last D steps only (D = decay_steps, by
** default a fifth of the N − w after warm-up, rounded up; at most N − w,
** which is the linear decay): its first step at lr too. Its cool-down is
** linear, or 1 − √p (decay_shape 1-sqrt, which Hägele et al. 2024 found
** ends lower than linear). */
double tsl_lr_at(const tsl_settings *s, int64_t step) {
  double lr = s->optim.lr, min_lr = s->optim.min_lr;
  int64_t warm = s->optim.warmup_steps, total = s->train.steps;
  if (step <= warm) return lr * (double)step / (double)warm;
  if (total <= warm) return lr;
  int64_t flat = warm; /* the last step before the decay's first */
  if (s->optim.decay == TSL_DECAY_WSD) {
    /* a fifth rounded up, without the (x + 4) / 5 that overflows at train.steps near INT64_MAX */
    int64_t after = total - warm, d = s->optim.decay_steps ? s->optim.decay_steps : after / 5 + (after % 5 != 0);
    flat = d < after ? total - d : warm;
  }
  double p = step <= flat ? 0.0 : (double)(step - 1 - flat) / (double)(total - flat);
  if (p > 1.0) p = 1.0;
  if (s->optim.decay == TSL_DECAY_WSD && s->optim.decay_sqrt) return min_lr + (1.0 - sqrt(p)) * (lr - min_lr);
  switch (s->optim.decay) {
    case TSL_DECAY_COSINE: return min_lr + 0.5 * (1.0 + cos(M_PI * p)) * (lr - min_lr);
    case TSL_DECAY_LINEAR:
    case TSL_DECAY_WSD: return lr - p * (lr - min_lr);
    case TSL_DECAY_CONSTANT: break;
  }
  return lr;
}

float tsl_clip_scale(double norm, double clip) {
  if (clip <= 0 || !(norm > clip)) return 1.0f;
  return (float)(clip / norm);
}

void tsl_optimizer_describe(const tsl_settings *s, tessel_optimizer_info *out) {
  (void)s;
  *out = (tessel_optimizer_info){.size = sizeof *out, .name = "adamw", .n_slots = 2, .slot_names = {"m", "v"}};
}

/* ---- the gradient norm ---- */

/* A rank's position in the shard group: ranks that share it count disjoint
** pieces of a sharded gradient. */
typedef struct shard_class {
  const tsl_runtime *rt;
  uint32_t axes;
} shard_class;

static int class_of(void *ctx, int rank) {
  const shard_class *c = ctx;
  const tessel_mesh *mesh = &c->rt->mesh;
  int pos = 0, rem = rank, coord[TESSEL_MESH_MAX_AXES];
  for (int a = mesh->naxes - 1; a >= 0; a--) {
    coord[a] = rem % mesh->sizes[a];
    rem /= mesh->sizes[a];
  }
  for (int a = 0; a < mesh->naxes; a++)
    if (c->axes & (1u << a)) pos = pos * mesh->sizes[a] + coord[a];
  return pos;
}

/* Σ g² over the parts this rank answers for (see state/layouts.h). */
static tsl_status local_sumsq(tsl_model *m, double *dev) {
  tsl_runtime *rt = tsl_model_runtime(m);
  tsl_params *ps = tsl_model_params(m);
  tsl_state *s = tsl_model_state(m);
  shard_class cls = {rt, s->grad_at.shard_axes};
  int sharded = s->shard && s->grad_at.shard_axes;
  const tessel_range whole = {0, s->numel, 0};
  const tessel_range *r = sharded ? s->counted : &whole;
  int nr = sharded ? s->n_counted : 1;
  for (int i = 0; i < ps->n; i++) {
    const tsl_param *p = &ps->p[i];
    if (p->offset == TESSEL_NO_OFFSET ||
        !tsl_layouts_supplies(tsl_model_layouts(m), rt->world.rank, i, sharded ? class_of : NULL, &cls))
      continue;
    for (int k = 0; k < nr; k++) {
      uint64_t a = TSL_MAX(p->offset, r[k].begin), b = TSL_MIN(p->offset + p->local_numel, r[k].end);
      if (a >= b) continue;
      int rc = rt->be.sumsq(&rt->be, rt->compute, dev, s->grad + a, (int64_t)(b - a));
      if (rc < 0) return tsl_error_wrap(rc, "gradient norm of %s", p->name);
    }
  }
  return TESSEL_OK;
}

/* The plugin's grad_norm hook: its sum of squares, refused when it is no
** norm to clip by (clipping would silently turn off). A negative one is
** always the hook's bug; NaN or infinity means gradients that are not
** finite, the numeric failure a NaN loss is. */
static tsl_status plugin_norm(tsl_runtime *rt, double *norm) {
  double sumsq = 0;
  tsl_hook_enter(rt);
  tsl_status st = tsl_hook_status(rt, rt->plugin->vt.grad_norm(rt->inst, &sumsq), "grad_norm");
  if (st < 0) return st;
  if (sumsq < 0) {
    tsl_error(TESSEL_E_INTERNAL, "returned the sum of squares %g: a sum of squares is never negative", sumsq);
    return tsl_hook_failed(rt, TESSEL_E_INTERNAL, "grad_norm");
  }
  if (!isfinite(sumsq)) {
    tsl_error(TESSEL_E_NUMERIC, "returned the sum of squares %g: the gradients are not finite, so the run stopped "
              "before applying the step", sumsq);
    return tsl_hook_failed(rt, TESSEL_E_NUMERIC, "grad_norm");
  }
  *norm = sqrt(sumsq);
  return TESSEL_OK;
}

tsl_status tsl_grad_norm(tsl_model *m, double *norm) {
  tsl_runtime *rt = tsl_model_runtime(m);
  tsl_status st;
  double sumsq = 0, *dev;
  if (rt->plugin && rt->plugin->vt.grad_norm) return plugin_norm(rt, norm);
  TSL_TRY(st, tsl_scratch(rt, sizeof(double), (void **)&dev));
  TSL_TRY(st, rt->be.memset_zero(&rt->be, dev, sizeof(double), rt->compute));
  TSL_TRY(st, local_sumsq(m, dev));
  TSL_TRY(st, tsl_mem_copy(&rt->ledger, TESSEL_TIER_HOST, &sumsq, 0, TESSEL_TIER_DEVICE, dev, 0, sizeof sumsq, rt->compute));
  TSL_TRY(st, rt->be.stream_sync(&rt->be, rt->compute));
  if (rt->comm) TSL_TRY(st, tsl_comm_world_reduce(rt->comm, &sumsq, 1, TESSEL_SUM));
  *norm = sqrt(sumsq);
  return TESSEL_OK;
fail:
  return tsl_error_wrap(st, "gradient norm");
}

/* ---- the update ---- */

/* Elements staged through the device at a time when state lives where the
** kernels cannot read it. */
#define STAGE_ELEMS (1u << 20)

typedef struct stepper {
  tsl_model *m;
  const tessel_optim_step *hp;
  int direct;   /* master and every slot are readable by the kernels */
  float *stage; /* device: one block for the master, one per slot */
} stepper;

/* Move one block of the master (at `at`) and the slots (at `packed`)
** between their tiers and the staging blocks. */
static tsl_status stage_block(stepper *c, uint64_t at, uint64_t packed, uint64_t n, int in) {
  tsl_runtime *rt = tsl_model_runtime(c->m);
  tsl_state *s = tsl_model_state(c->m);
  uint64_t f = sizeof(float), B = STAGE_ELEMS;
  tsl_status st = TESSEL_OK;
  for (int i = -1; i < s->n_slots && st >= 0; i++) {
    tessel_tier tier = i < 0 ? s->master_at.tier : s->slot_at[i].tier;
    float *buf = i < 0 ? s->master : s->slot[i];
    uint64_t off = (i < 0 ? at : packed) * f, stage_off = (uint64_t)(i + 1) * B * f;
    st = in ? tsl_mem_copy(&rt->ledger, TESSEL_TIER_DEVICE, c->stage, stage_off, tier, buf, off, n * f, rt->compute)
            : tsl_mem_copy(&rt->ledger, tier, buf, off, TESSEL_TIER_DEVICE, c->stage, stage_off, n * f, rt->compute);
  }
  return st;
}

/* Update elements [at, at+n) of the flat space (slots at `packed`), all of
** one parameter. */
static tsl_status update_range(stepper *c, uint64_t at, uint64_t packed, uint64_t n, int no_decay) {
  tsl_runtime *rt = tsl_model_runtime(c->m);
  tsl_state *s = tsl_model_state(c->m);
  uint64_t es = tessel_dtype_size(rt->be.act_dtype);
  for (uint64_t done = 0; done < n;) {
    uint64_t k = c->direct ? n - done : TSL_MIN(n - done, (uint64_t)STAGE_ELEMS);
    tessel_optim_update u = {.size = sizeof u, .grad = s->grad + at + done, .n = (int64_t)k, .no_decay = no_decay};
    u.work = s->separate_work ? (char *)s->work + (at + done) * es : NULL;
    tsl_status st;
    if (c->direct) {
      u.master = s->master + at + done;
      for (int i = 0; i < s->n_slots; i++) u.slots[i] = s->slot[i] + packed + done;
    } else {
      if ((st = stage_block(c, at + done, packed + done, k, 1)) < 0) return st;
      u.master = c->stage;
      for (int i = 0; i < s->n_slots; i++) u.slots[i] = c->stage + (uint64_t)(i + 1) * STAGE_ELEMS;
    }
    if (!u.work) u.work = u.master;
    if ((st = tsl_optim_update(rt, rt->compute, &u, c->hp)) < 0) return st;
    if (!c->direct && (st = stage_block(c, at + done, packed + done, k, 0)) < 0) return st;
    done += k;
  }
  return TESSEL_OK;
}

/* Every replica puts its updated pieces where the others' copies of them
** are: an in-place all-gather per chunk of the master weights, and of the
** working weights beside them. The tail, updated alike everywhere, stays. */
static tsl_status gather_pieces(tsl_model *m) {
  tsl_runtime *rt = tsl_model_runtime(m);
  tsl_state *s = tsl_model_state(m);
  uint64_t es = tessel_dtype_size(rt->be.act_dtype);
  for (int k = 0; k < s->n_owned - s->has_tail; k++) {
    const tessel_range *r = &s->owned[k];
    uint64_t share = r->end - r->begin, begin = r->begin - (uint64_t)s->shard_rank * share;
    tsl_status st = tsl_all_gather(rt->comm, s->shard, s->master + r->begin, s->master + begin, share, TESSEL_F32, NULL);
    if (st >= 0 && s->separate_work)
      st = tsl_all_gather(rt->comm, s->shard, (char *)s->work + r->begin * es, (char *)s->work + begin * es, share,
                          rt->be.act_dtype, NULL);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}

tsl_status tsl_optimizer_step(tsl_model *m, int64_t step, double lr, float grad_scale) {
  tsl_runtime *rt = tsl_model_runtime(m);
  tsl_state *s = tsl_model_state(m);
  tsl_params *ps = tsl_model_params(m);
  tsl_status st = TESSEL_OK;
  tessel_optim_step hp = {.size = sizeof hp, .step = step, .lr = (float)lr, .grad_scale = grad_scale};
  if (rt->plugin && rt->plugin->vt.prefetch) {
    tsl_hook_enter(rt);
    if ((st = tsl_hook_status(rt, rt->plugin->vt.prefetch(rt->inst, -1, TESSEL_PHASE_OPTIMIZER), "prefetch")) < 0)
      return st;
  }
  if (rt->plugin && rt->plugin->vt.optimizer_step && (rt->plugin->vt.caps & TESSEL_CAP_OWNS_OPTIMIZER)) {
    tsl_hook_enter(rt);
    return tsl_hook_status(rt, rt->plugin->vt.optimizer_step(rt->inst, &hp), "optimizer_step");
  }
  stepper c = {.m = m, .hp = &hp, .direct = tsl_tier_addressable(rt, s->master_at.tier)};
  for (int i = 0; i < s->n_slots; i++) c.direct &= tsl_tier_addressable(rt, s->slot_at[i].tier);
  if (!c.direct &&
      (st = tsl_scratch(rt, (uint64_t)(s->n_slots + 1) * STAGE_ELEMS * sizeof(float), (void **)&c.stage)) < 0)
    return st;
  for (int k = 0; k < s->n_owned && st >= 0; k++) {
    const tessel_range *r = &s->owned[k];
    for (int i = 0; i < ps->n && st >= 0; i++) {
      const tsl_param *p = &ps->p[i];
      if (p->offset == TESSEL_NO_OFFSET) continue;
      uint64_t a = TSL_MAX(p->offset, r->begin), b = TSL_MIN(p->offset + p->local_numel, r->end);
      if (a < b) st = update_range(&c, a, r->packed + (a - r->begin), b - a, (p->info.flags & TESSEL_PARAM_NO_DECAY) != 0);
      if (st < 0) tsl_error_wrap(st, "optimizer step on %s", p->name);
    }
  }
  if (st >= 0 && s->shard && s->shard_size > 1) st = gather_pieces(m);
  return st;
}
