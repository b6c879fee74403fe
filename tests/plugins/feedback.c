/*
** tests/plugins/feedback.c — a strategy with state of its own that must
** survive a checkpoint: data parallel, and after the gradients are summed
** it adds half of the previous step's gradient (a residual it keeps), then
** keeps this step's. Declared lossy: one process does no such thing.
**
** Built twice: `feedback` keeps the residual in a private slot
** (state->add_private), so checkpoints carry it and a resumed run goes on
** bit for bit; `feedbackmem` (FEEDBACK_IN_MEMORY) keeps it in memory of its
** own, which no checkpoint sees, so a resumed run starts it from zero and
** drifts — the control that shows the private slot is what carries it.
*/
#include <stdlib.h>

#include <tessel/plugin.h>

typedef struct fb {
  const tessel_host_api *api;
  tessel_host *host;
  tessel_group *dp;
  float *grad, *residual;
  uint64_t n;
} fb;

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  (void)section;
  fb *f = calloc(1, sizeof *f);
  if (!f) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  f->api = api;
  f->host = host;
  *out = f;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  fb *f = inst;
#ifdef FEEDBACK_IN_MEMORY
  if (f->residual) f->api->mem->free(f->host, TESSEL_TIER_DEVICE, f->residual);
#endif
  free(f);
}

static tessel_status mesh(void *inst, int world_size, tessel_mesh *m) {
  (void)inst;
  m->naxes = 1;
  m->names[0] = "dp";
  m->sizes[0] = world_size;
  m->data_axes = 1u;
  return TESSEL_OK;
}

static tessel_status setup(void *inst) {
  fb *f = inst;
  void *grad, *res;
  uint64_t n;
  tessel_status st = f->api->comm->group(f->host, 1u, &f->dp);
  if (st >= 0) st = f->api->state->flat(f->host, (tessel_state_ref){TESSEL_STATE_GRAD, 0}, &grad, &f->n);
  if (st < 0) return st;
  f->grad = grad;
#ifdef FEEDBACK_IN_MEMORY
  st = f->api->mem->alloc(f->host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, f->n * sizeof(float), "residual", &res);
  n = f->n;
#else
  int slot;
  st = f->api->state->add_private(f->host, "residual", TESSEL_TIER_DEVICE, &slot);
  if (st >= 0) st = f->api->state->flat(f->host, (tessel_state_ref){TESSEL_STATE_PRIVATE, slot}, &res, &n);
#endif
  if (st >= 0 && n != f->n) st = f->api->set_error(f->host, TESSEL_E_INTERNAL, "residual of %llu elements, not %llu",
                                                    (unsigned long long)n, (unsigned long long)f->n);
  f->residual = res;
  return st;
}

/* grad = Σ_ranks grad + ½·residual; residual = grad */
static tessel_status grads_finish(void *inst) {
  fb *f = inst;
  tessel_stream *s;
  tessel_status st = f->api->comm->all_reduce(f->host, f->dp, f->grad, f->grad, f->n, TESSEL_F32, TESSEL_SUM, NULL);
  if (st >= 0) st = f->api->stream->compute(f->host, &s);
  if (st >= 0) st = f->api->kernels->axpy(f->host, s, TESSEL_F32, f->grad, 0.5f, f->residual, (int64_t)f->n);
  if (st >= 0)
    st = f->api->mem->copy(f->host, TESSEL_TIER_DEVICE, f->residual, 0, TESSEL_TIER_DEVICE, f->grad, 0,
                           f->n * sizeof(float), s);
  return st;
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
#ifdef FEEDBACK_IN_MEMORY
    .name = "feedbackmem",
#else
    .name = "feedback",
#endif
    .version = "1.0",
    .description = "test strategy: a gradient residual carried from step to step",
    .caps = TESSEL_CAP_DATA_PARALLEL | TESSEL_CAP_LOSSY,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .setup = setup,
    .grads_finish = grads_finish,
};

TESSEL_STRATEGY_DEFINE(strategy)
