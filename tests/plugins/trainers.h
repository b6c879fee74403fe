/*
** tests/plugins/trainers.h — a data-parallel strategy that owns the
** optimizer, as the base of the plugins that break it on purpose: every
** gradient summed over the ranks after backward, AdamW through the host's
** optimizer kernel with the moments in plugin memory. Each broken plugin
** defines one defect and includes this file.
*/
#ifndef TSL_TEST_TRAINERS_H
#define TSL_TEST_TRAINERS_H

#include <stdlib.h>
#include <string.h>

#include <tessel/plugin.h>

typedef struct trainer {
  const tessel_host_api *api;
  tessel_host *host;
  float *m, *v;
  uint64_t numel;
} trainer;

static inline tessel_status tr_create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **inst) {
  (void)section;
  trainer *t = calloc(1, sizeof *t);
  if (!t) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  t->api = api;
  t->host = host;
  *inst = t;
  return TESSEL_OK;
}

static inline void tr_destroy(void *inst) { free(inst); }

static inline tessel_status tr_mesh(void *inst, int world_size, tessel_mesh *out) {
  (void)inst;
  out->naxes = 1;
  out->names[0] = "dp";
  out->sizes[0] = world_size;
  out->data_axes = 1u;
  return TESSEL_OK;
}

static inline tessel_status tr_setup(void *inst) {
  trainer *t = inst;
  void *grad;
  tessel_status st = t->api->state->flat(t->host, (tessel_state_ref){TESSEL_STATE_GRAD, 0}, &grad, &t->numel);
  if (st >= 0)
    st = t->api->mem->alloc(t->host, TESSEL_TIER_DEVICE, TESSEL_MEM_OPTIM, t->numel * 4 + 4, "m", (void **)&t->m);
  if (st >= 0)
    st = t->api->mem->alloc(t->host, TESSEL_TIER_DEVICE, TESSEL_MEM_OPTIM, t->numel * 4 + 4, "v", (void **)&t->v);
  return st;
}

static inline tessel_status tr_grads_finish(void *inst) {
  trainer *t = inst;
  tessel_group *dp;
  void *grad;
  uint64_t n;
  tessel_status st = t->api->comm->group(t->host, 1u, &dp);
  if (st >= 0) st = t->api->state->flat(t->host, (tessel_state_ref){TESSEL_STATE_GRAD, 0}, &grad, &n);
  if (st >= 0) st = t->api->comm->all_reduce(t->host, dp, grad, grad, n, TESSEL_F32, TESSEL_SUM, NULL);
  return st;
}

/* AdamW parameter by parameter (weight decay differs between them). */
static inline tessel_status tr_adamw(trainer *t, const tessel_optim_step *hp) {
  int n;
  tessel_stream *s;
  tessel_status st = t->api->model->param_count(t->host, &n);
  if (st >= 0) st = t->api->stream->compute(t->host, &s);
  for (int i = 0; i < n && st >= 0; i++) {
    tessel_param_info in = {.size = sizeof in};
    tessel_param_view v = {.size = sizeof v};
    if ((st = t->api->model->param_info(t->host, i, &in)) < 0 || (st = t->api->model->view(t->host, i, &v)) < 0) break;
    tessel_optim_update u = {.size = sizeof u, .master = v.master, .work = v.data, .grad = v.grad,
                             .slots = {t->m + v.flat_offset, t->v + v.flat_offset}, .n = (int64_t)v.local_numel,
                             .no_decay = (in.flags & TESSEL_PARAM_NO_DECAY) != 0};
    st = t->api->kernels->optimizer_update(t->host, s, &u, hp);
  }
  return st;
}

/* This rank's part of a moment: the flat range of the parameter. */
static inline tessel_status tr_moment(trainer *t, int param, tessel_state_ref ref, float **at, uint64_t *n) {
  tessel_param_view v = {.size = sizeof v};
  tessel_status st = t->api->model->view(t->host, param, &v);
  *at = (ref.index == 0 ? t->m : t->v) + v.flat_offset;
  *n = v.local_numel;
  return st;
}

/* Extra capabilities of a test trainer: -DTRAINER_CAPS=TESSEL_CAP_LOSSY. */
#ifndef TRAINER_CAPS
#define TRAINER_CAPS 0
#endif

#define TRAINER_TABLE(NAME, DESCRIPTION, OPTIMIZER_STEP, STATE_READ, STATE_WRITE)                           \
  static const tessel_strategy table = {.size = sizeof(tessel_strategy),                                    \
                                        .abi_version = TESSEL_ABI_VERSION,                                  \
                                        .name = NAME,                                                       \
                                        .version = "1.0",                                                   \
                                        .description = DESCRIPTION,                                         \
                                        .caps = TESSEL_CAP_DATA_PARALLEL | TESSEL_CAP_OWNS_OPTIMIZER |      \
                                                TRAINER_CAPS,                                               \
                                        .create = tr_create,                                                \
                                        .destroy = tr_destroy,                                              \
                                        .mesh = tr_mesh,                                                    \
                                        .setup = tr_setup,                                                  \
                                        .grads_finish = tr_grads_finish,                                    \
                                        .optimizer_step = OPTIMIZER_STEP,                                   \
                                        .state_read = STATE_READ,                                           \
                                        .state_write = STATE_WRITE};                                        \
  TESSEL_STRATEGY_DEFINE(table)

#endif
