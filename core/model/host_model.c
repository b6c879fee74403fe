/* core/model/host_model.c — tessel_model_api: the model as a plugin sees it. */
#include <string.h>

#include "model/gpt.h"
#include "plugin/host.h"

static tsl_status no_model(void) {
  return tsl_error(TESSEL_E_UNSUPPORTED, "the model does not exist yet (it is built after the mesh and layouts)");
}

#define MODEL(h, m)                          \
  tsl_model *m = (h)->rt->model;             \
  if (!m) return no_model()

static int in_range(const tsl_model *m, int index) { return index >= 0 && index < m->params.n; }

static tsl_status bad_index(int index) {
  return tsl_error(TESSEL_E_INTERNAL, "no parameter with index %d", index);
}

static tsl_status m_dims(tessel_host *h, tessel_model_dims *out) {
  MODEL(h, m);
  *out = m->dims;
  return TESSEL_OK;
}

static int m_param_count(tessel_host *h) { return h->rt->model ? h->rt->model->params.n : 0; }

static tsl_status m_param_info(tessel_host *h, int index, tessel_param_info *out) {
  MODEL(h, m);
  if (!in_range(m, index)) return bad_index(index);
  *out = m->params.p[index].info;
  return TESSEL_OK;
}

static tsl_status m_param_layout(tessel_host *h, int index, tessel_layout *out) {
  MODEL(h, m);
  if (!in_range(m, index)) return bad_index(index);
  *out = m->params.p[index].layout;
  return TESSEL_OK;
}

static tsl_status m_view(tessel_host *h, int index, tessel_param_view *out) {
  MODEL(h, m);
  if (!in_range(m, index)) return bad_index(index);
  tsl_model_view(m, index, out);
  return TESSEL_OK;
}

static tsl_status m_bind(tessel_host *h, int index, void *data, float *grad, float *master) {
  MODEL(h, m);
  if (!in_range(m, index)) return bad_index(index);
  tsl_param *p = &m->params.p[index];
  if (p->layout.store != TESSEL_STORE_PLUGIN)
    return tsl_error(TESSEL_E_INTERNAL, "bind(%s): the core stores this parameter; only STORE_PLUGIN ones can be bound",
                     p->name);
  p->data = data;
  p->grad = grad;
  p->master = master;
  return TESSEL_OK;
}

static tsl_status m_init_flat(tessel_host *h, int index, uint64_t begin, uint64_t end, float *dst) {
  MODEL(h, m);
  if (!in_range(m, index)) return bad_index(index);
  const tsl_param *p = &m->params.p[index];
  uint64_t numel = (uint64_t)p->info.shape[0] * (uint64_t)p->info.shape[1];
  if (begin > end || end > numel)
    return tsl_error(TESSEL_E_INTERNAL, "init_flat(%s): [%llu, %llu) is outside %llu elements", p->name,
                     (unsigned long long)begin, (unsigned long long)end, (unsigned long long)numel);
  enum { CHUNK = 1 << 16 };
  float buf[CHUNK];
  tsl_runtime *rt = h->rt;
  for (uint64_t at = begin; at < end; at += CHUNK) {
    uint64_t n = end - at < CHUNK ? end - at : CHUNK;
    tsl_param_init_values(p, rt->settings.train.seed, at, at + n, buf);
    tsl_status st = tsl_mem_copy(&rt->ledger, TESSEL_TIER_DEVICE, dst, (at - begin) * sizeof(float), TESSEL_TIER_HOST,
                                 buf, 0, n * sizeof(float), rt->compute);
    if (st < 0 || (st = rt->be.stream_sync(&rt->be, rt->compute)) < 0) return st;
  }
  return TESSEL_OK;
}

static int m_unit_params(tessel_host *h, int unit, int *out, int cap) {
  return h->rt->model ? tsl_model_unit_params(h->rt->model, unit, out, cap) : 0;
}

static tsl_status m_forward(tessel_host *h, int micro, int slot, int unit) {
  MODEL(h, m);
  return tsl_model_forward(m, micro, slot, unit);
}

static tsl_status m_backward(tessel_host *h, int micro, int slot, int unit) {
  MODEL(h, m);
  return tsl_model_backward(m, micro, slot, unit);
}

static tsl_status m_boundary(tessel_host *h, int slot, int unit, void **act, void **grad, uint64_t *count) {
  MODEL(h, m);
  return tsl_model_boundary(m, slot, unit, act, grad, count);
}

const tessel_model_api *tsl_host_model(void) {
  static const tessel_model_api api = {.size = sizeof(tessel_model_api),
                                       .dims = m_dims,
                                       .param_count = m_param_count,
                                       .param_info = m_param_info,
                                       .param_layout = m_param_layout,
                                       .view = m_view,
                                       .bind = m_bind,
                                       .init_flat = m_init_flat,
                                       .unit_params = m_unit_params,
                                       .forward = m_forward,
                                       .backward = m_backward,
                                       .boundary = m_boundary};
  return &api;
}
