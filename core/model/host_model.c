/* core/model/host_model.c — tessel_model_api: the model as a plugin sees it.
** Every struct is copied out with the reader's size (tsl_copy_out). */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/internal.h"
#include "plugin/host.h"

static tsl_status no_model(void) {
  return tsl_error(TESSEL_E_UNSUPPORTED, "the model does not exist yet (it is built after the mesh)");
}

#define MODEL(h, m)              \
  tsl_model *m = (h)->rt->model; \
  if (!m) return no_model()

static tsl_status check_index(const tsl_model *m, int index) {
  if (index >= 0 && index < m->params.n) return TESSEL_OK;
  return tsl_error(TESSEL_E_INTERNAL, "no parameter with index %d (the model has %d)", index, m->params.n);
}

static tsl_status check_unit(const tsl_model *m, int unit) {
  if (unit >= 0 && unit < m->dims.units) return TESSEL_OK;
  return tsl_error(TESSEL_E_INTERNAL, "no unit %d (the model has %d)", unit, m->dims.units);
}

static tsl_status check_op(const tsl_model *m, int unit, int op) {
  tsl_status st = check_unit(m, unit);
  if (st < 0 || (op >= 0 && op < tsl_model_unit(m, unit)->n_ops)) return st;
  return tsl_error(TESSEL_E_INTERNAL, "unit %d has no op %d", unit, op);
}

static tsl_status m_dims(tessel_host *h, tessel_model_dims *out) {
  MODEL(h, m);
  return tsl_copy_out(out, &m->dims, sizeof m->dims);
}

static tsl_status m_param_count(tessel_host *h, int *out) {
  MODEL(h, m);
  *out = m->params.n;
  return TESSEL_OK;
}

static tsl_status m_param_info(tessel_host *h, int index, tessel_param_info *out) {
  MODEL(h, m);
  tsl_status st = check_index(m, index);
  return st < 0 ? st : tsl_copy_out(out, &m->params.p[index].info, sizeof(tessel_param_info));
}

static tsl_status m_param_layout(tessel_host *h, int index, tessel_layout *out) {
  MODEL(h, m);
  tsl_status st = check_index(m, index);
  return st < 0 ? st : tsl_copy_out(out, &m->params.p[index].layout, sizeof(tessel_layout));
}

static tsl_status m_unit_info(tessel_host *h, int unit, tessel_unit_info *out) {
  MODEL(h, m);
  tsl_status st = check_unit(m, unit);
  return st < 0 ? st : tsl_copy_out(out, tsl_model_unit(m, unit), sizeof(tessel_unit_info));
}

static tsl_status m_unit_op(tessel_host *h, int unit, int op, tessel_op *out) {
  MODEL(h, m);
  tsl_status st = check_op(m, unit, op);
  if (st < 0) return st;
  return tsl_copy_out(out, tsl_model_op(m, unit, op), sizeof(tessel_op));
}

static tsl_status m_view(tessel_host *h, int index, tessel_param_view *out) {
  MODEL(h, m);
  tsl_status st = check_index(m, index);
  if (st < 0) return st;
  tessel_param_view v;
  tsl_model_view(m, index, &v);
  return tsl_copy_out(out, &v, sizeof v);
}

static tsl_status m_bind(tessel_host *h, int index, void *data, float *grad, float *master) {
  MODEL(h, m);
  tsl_status st = check_index(m, index);
  if (st < 0) return st;
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
  tsl_status st = check_index(m, index);
  if (st < 0) return st;
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
    st = tsl_mem_copy(&rt->ledger, TESSEL_TIER_DEVICE, dst, (at - begin) * sizeof(float), TESSEL_TIER_HOST, buf, 0,
                      n * sizeof(float), rt->compute);
    if (st < 0 || (st = rt->be.stream_sync(&rt->be, rt->compute)) < 0) return st;
  }
  return TESSEL_OK;
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

static tsl_status m_act_memory(tessel_host *h, const int32_t *tier, const int32_t *recompute, uint64_t *device,
                               uint64_t *host) {
  MODEL(h, m);
  int U = m->dims.units;
  if (!tier || !recompute || !device || !host)
    return tsl_error(TESSEL_E_INTERNAL, "model->act_memory: %s is NULL (tier and recompute need one entry per unit, "
                     "%d here)", !tier ? "tier" : !recompute ? "recompute" : !device ? "device" : "host", U);
  tsl_unit_plan *plans = calloc((size_t)U, sizeof *plans);
  if (!plans) return tsl_error(TESSEL_E_NOMEM, "out of host memory sizing activations");
  tsl_status st = TESSEL_OK;
  for (int u = 0; u < U && st >= 0; u++) {
    if ((tier[u] != TESSEL_TIER_DEVICE && tier[u] != TESSEL_TIER_HOST) || recompute[u] < TESSEL_RECOMPUTE_NONE ||
        recompute[u] > TESSEL_RECOMPUTE_FULL)
      st = tsl_error(TESSEL_E_INTERNAL, "act_memory: unit %d placed on tier %d with recompute %d", u, tier[u],
                     recompute[u]);
    else
      st = tsl_unit_plan_for(m->units[u].decl,
                             &(tessel_placement){.tier = (tessel_tier)tier[u], .recompute = recompute[u]}, &plans[u]);
  }
  if (st >= 0) st = tsl_acts_size(m, plans, device, host);
  if (st >= 0) *device += tsl_model_scratch_bytes(&m->geo);
  free(plans);
  return st;
}

static tsl_status m_op_reruns(tessel_host *h, int unit, int op, int32_t *reruns) {
  MODEL(h, m);
  tsl_status st = check_op(m, unit, op);
  if (st < 0) return st;
  if (!m->state.act_at) return tsl_error(TESSEL_E_INTERNAL, "op_reruns called before activations were placed");
  const tsl_unit_decl *d = m->units[unit].decl;
  const tessel_placement *p = &m->state.act_at[unit];
  tsl_unit_plan *plan = &m->reruns_plan;
  if (m->reruns_decl != d || plan->recompute != p->recompute || plan->tier != p->tier) {
    m->reruns_decl = NULL;
    if ((st = tsl_unit_plan_for(d, p, plan)) < 0) return st;
    m->reruns_decl = d;
  }
  *reruns = plan->rerun[op];
  return TESSEL_OK;
}

const tessel_model_api *tsl_host_model(void) {
  static const tessel_model_api api = {.size = sizeof(tessel_model_api),
                                       .dims = m_dims,
                                       .param_count = m_param_count,
                                       .param_info = m_param_info,
                                       .param_layout = m_param_layout,
                                       .unit_info = m_unit_info,
                                       .unit_op = m_unit_op,
                                       .view = m_view,
                                       .bind = m_bind,
                                       .init_flat = m_init_flat,
                                       .forward = m_forward,
                                       .backward = m_backward,
                                       .boundary = m_boundary,
                                       .act_memory = m_act_memory,
                                       .op_reruns = m_op_reruns};
  return &api;
}
