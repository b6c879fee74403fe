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
** It uses only the public header: options through api->cfg, the gradient and
** parameter buffers through api->model, collectives through api->comm, and
** kernels through api->kernels. It links nothing of tessel.
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
} localsgd;

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  localsgd *s = calloc(1, sizeof *s);
  if (!s) return api->set_error(host, TESSEL_E_NOMEM, "localsgd: out of memory");
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

static void destroy(void *inst) { free(inst); }

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
  if (st >= 0) s->ranks = s->api->comm->nranks(s->host, s->dp);
  return st;
}

/* The core stores every parameter in one contiguous run per buffer (they
** are replicated here), so one call covers them all: the first parameter's
** pointer and the total element count. */
static tessel_status whole_model(localsgd *s, float **grad, float **master, uint64_t *count) {
  tessel_param_view v = {.size = sizeof v};
  int n = s->api->model->param_count(s->host);
  tessel_status st = s->api->model->view(s->host, 0, &v);
  *grad = v.grad;
  *master = v.master;
  *count = 0;
  for (int i = 0; i < n && st >= 0; i++) {
    st = s->api->model->view(s->host, i, &v);
    *count += v.local_numel;
  }
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
    return api->kernels->scale(s->host, NULL, TESSEL_F32, grad, (float)s->ranks, (int64_t)n);
  }
  if (s->drifted) { /* bring the replicas back together before the update */
    st = api->comm->all_reduce(s->host, s->dp, master, master, n, TESSEL_F32, TESSEL_SUM, NULL);
    if (st >= 0) st = api->kernels->scale(s->host, NULL, TESSEL_F32, master, 1.0f / (float)s->ranks, (int64_t)n);
    if (st < 0) return st;
    s->drifted = 0;
  }
  return api->comm->all_reduce(s->host, s->dp, grad, grad, n, TESSEL_F32, TESSEL_SUM, NULL);
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "localsgd",
    .version = "1.0.0",
    .description = "local SGD: independent replicas averaged every sync_every steps (an out-of-tree example)",
    .caps = TESSEL_CAP_DATA_PARALLEL,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .setup = setup,
    .grads_finish = grads_finish,
};

TESSEL_STRATEGY_DEFINE(strategy)
