/*
** localsgd.c — local SGD, a tessel strategy built outside tessel's tree.
**
** Ranks train independently on their own slices of each batch and average
** their parameters every `sync_every` steps (Lin et al., "Don't use large
** mini-batches, use local SGD", 2018). A step that ends a period is itself
** synchronous: its gradients are summed over the ranks before the update,
** after the replicas' parameters have been averaged if they drifted apart
** during local steps. So with sync_every: 1 every step is a data-parallel
** step and the trajectory is ddp's; with larger periods the replicas trade
** some accuracy for 1/sync_every of the traffic.
**
** It uses only the public header: options through api->cfg, the flat
** gradient and parameter buffers through api->state, collectives through
** api->comm, and kernels through api->kernels. It links nothing of tessel.
** Replicas that step on their own gradients are not one process's model,
** so it declares itself lossy: it is judged by its validation loss.
*/
#include <stdlib.h>

#include "tessel/plugin.h"

typedef struct localsgd {
  const tessel_host_api *api;
  tessel_host *host;
  int64_t sync_every;
  int64_t step;     /* optimizer steps taken */
  int drifted;      /* a local step happened since the last average */
  tessel_group *dp;
  int ranks;
  tessel_stream *s;
  double *norm; /* device: this replica's squared gradient norm */
} localsgd;

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  localsgd *s = calloc(1, sizeof *s);
  if (!s) return api->set_error(host, TESSEL_E_NOMEM, "out of memory");
  s->api = api;
  s->host = host;
  tessel_status st = api->cfg->get_int(host, section, "sync_every", 1, 1, INT64_MAX, &s->sync_every);
  if (st < 0) {
    free(s);
    return st;
  }
  *out = s;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  localsgd *s = inst;
  if (s->norm) s->api->mem->free(s->host, TESSEL_TIER_DEVICE, s->norm);
  free(s);
}

static tessel_status mesh(void *inst, int world_size, tessel_mesh *m) {
  (void)inst;
  m->naxes = 1;
  m->names[0] = "dp";
  m->sizes[0] = world_size;
  m->data_axes = 1u << 0;
  return TESSEL_OK;
}

static tessel_status setup(void *inst) {
  localsgd *s = inst;
  tessel_status st = s->api->comm->group(s->host, 1u << 0, &s->dp);
  if (st >= 0) st = s->api->comm->group_info(s->host, s->dp, NULL, &s->ranks);
  if (st >= 0) st = s->api->stream->compute(s->host, &s->s);
  if (st >= 0)
    st = s->api->mem->alloc(s->host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, sizeof(double), "norm", (void **)&s->norm);
  return st;
}

/* The core keeps the parameters' gradients and master weights in one flat
** buffer each, so one call covers the whole model. */
static tessel_status whole_model(localsgd *s, float **grad, float **master, uint64_t *count) {
  void *g, *m;
  tessel_status st = s->api->state->flat(s->host, (tessel_state_ref){TESSEL_STATE_GRAD, 0}, &g, count);
  if (st >= 0) st = s->api->state->flat(s->host, (tessel_state_ref){TESSEL_STATE_MASTER, 0}, &m, count);
  *grad = g;
  *master = m;
  return st;
}

/* After backward, before the optimizer: decide what this step is. */
static tessel_status grads_finish(void *inst) {
  localsgd *s = inst;
  const tessel_host_api *api = s->api;
  float *grad, *master;
  uint64_t n;
  tessel_status st = whole_model(s, &grad, &master, &n);
  if (st < 0) return st;
  s->step++;
  if (s->step % s->sync_every != 0) {
    /* a local step: the core scaled each token's loss by 1/(global batch),
    ** so this rank's gradient is 1/ranks of its own mean; restore the mean */
    s->drifted = 1;
    return api->kernels->scale(s->host, s->s, TESSEL_F32, grad, (float)s->ranks, (int64_t)n);
  }
  if (s->drifted) { /* bring the replicas back together before the update */
    st = api->comm->all_reduce(s->host, s->dp, master, master, n, TESSEL_F32, TESSEL_SUM, NULL);
    if (st >= 0) st = api->kernels->scale(s->host, s->s, TESSEL_F32, master, 1.0f / (float)s->ranks, (int64_t)n);
    if (st < 0) return st;
    s->drifted = 0;
  }
  return api->comm->all_reduce(s->host, s->dp, grad, grad, n, TESSEL_F32, TESSEL_SUM, NULL);
}

/* Each replica clips by its own gradient (all equal on synchronous steps). */
static tessel_status grad_norm(void *inst, double *sumsq) {
  localsgd *s = inst;
  const tessel_host_api *api = s->api;
  float *grad, *master;
  uint64_t n;
  const double zero = 0;
  tessel_status st = whole_model(s, &grad, &master, &n);
  if (st >= 0) st = api->mem->copy(s->host, TESSEL_TIER_DEVICE, s->norm, 0, TESSEL_TIER_HOST, &zero, 0, sizeof zero, s->s);
  if (st >= 0) st = api->kernels->sumsq(s->host, s->s, s->norm, grad, (int64_t)n);
  if (st >= 0) st = api->mem->copy(s->host, TESSEL_TIER_HOST, sumsq, 0, TESSEL_TIER_DEVICE, s->norm, 0, sizeof *sumsq, s->s);
  return st < 0 ? st : api->stream->sync(s->host, s->s);
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "localsgd",
    .version = "2.0.0",
    .description = "local SGD: independent replicas averaged every sync_every steps (an out-of-tree example)",
    .caps = TESSEL_CAP_DATA_PARALLEL | TESSEL_CAP_LOSSY,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .setup = setup,
    .grads_finish = grads_finish,
    .grad_norm = grad_norm,
};

TESSEL_STRATEGY_DEFINE(strategy)
