/* sdk/estimate.c — what every strategy's estimate needs: a rank's parts,
** traffic lines, the core's storage and the FLOPs of the model's units. */
#include <stdlib.h>
#include <string.h>

#include "tessel/sdk.h"

uint64_t tessel_layout_numel(const tessel_param_info *p, const tessel_layout *l) {
  uint64_t numel = (uint64_t)p->shape[0] * (uint64_t)p->shape[1];
  switch (l->kind) {
    case TESSEL_LAYOUT_ABSENT: return 0;
    case TESSEL_LAYOUT_FLAT: return l->flat_end - l->flat_begin;
    case TESSEL_LAYOUT_SPLIT:
      for (int i = 0; i < l->nsplit; i++) numel /= (uint64_t)l->split[i].parts;
      return numel;
    default: return numel;
  }
}

void tessel_parts_free(tessel_parts *p) {
  free(p->info);
  free(p->layout);
  free(p->numel);
  free(p->offset);
  memset(p, 0, sizeof *p);
}

tessel_status tessel_parts_of(const tessel_sdk *x, tessel_layout_fn layout, void *inst, tessel_parts *out) {
  memset(out, 0, sizeof *out);
  TESSEL_TRY(x->api->model->param_count(x->host, &out->n));
  size_t n = (size_t)out->n + 1;
  out->info = calloc(n, sizeof *out->info);
  out->layout = calloc(n, sizeof *out->layout);
  out->numel = calloc(n, sizeof *out->numel);
  out->offset = calloc(n, sizeof *out->offset);
  if (!out->info || !out->layout || !out->numel || !out->offset) {
    tessel_parts_free(out);
    return x->api->set_error(x->host, TESSEL_E_NOMEM, "out of host memory for the parts of a rank");
  }
  for (int i = 0; i < out->n; i++) {
    tessel_param_info *in = &out->info[i];
    tessel_layout *l = &out->layout[i];
    in->size = sizeof *in;
    *l = (tessel_layout){.size = sizeof *l, .kind = TESSEL_LAYOUT_REPLICATED, .store = TESSEL_STORE_CORE};
    tessel_status st = x->api->model->param_info(x->host, i, in);
    if (st >= 0 && layout) st = layout(inst, in, l);
    if (st < 0) {
      tessel_parts_free(out);
      return st;
    }
    out->numel[i] = tessel_layout_numel(in, l);
    out->offset[i] = TESSEL_NO_OFFSET;
    if (l->store == TESSEL_STORE_CORE && l->kind != TESSEL_LAYOUT_ABSENT) {
      out->offset[i] = out->core_numel;
      out->core_numel += out->numel[i];
    }
  }
  return TESSEL_OK;
}

tessel_status tessel_est_traffic(const tessel_sdk *x, const tessel_plan_query *q, uint32_t axes,
                                 tessel_collective kind, tessel_overlap overlap, uint64_t calls, uint64_t payload) {
  if (calls == 0) return TESSEL_OK;
  tessel_traffic t = {.size = sizeof t, .axes = axes, .kind = kind, .overlap = overlap, .calls = calls,
                      .payload = payload};
  return q->traffic(x->host, &t);
}

tessel_status tessel_est_op_passes(const tessel_sdk *x, int unit, int op, uint64_t *passes) {
  const tessel_model_api *model = x->api->model;
  int32_t again = 0;
  if (TESSEL_HAS(model, tessel_model_api, op_reruns) && model->op_reruns)
    TESSEL_TRY(model->op_reruns(x->host, unit, op, &again));
  *passes = again ? 2 : 1;
  return TESSEL_OK;
}

tessel_status tessel_est_core(const tessel_sdk *x, const tessel_plan_query *q, const tessel_geometry *g,
                              uint64_t core_numel, tessel_estimate *out) {
  uint64_t core[TESSEL_TIER_COUNT][TESSEL_MEM_KIND_COUNT];
  TESSEL_TRY(q->core_state(x->host, g, core_numel, core));
  for (int t = 0; t < TESSEL_TIER_COUNT; t++)
    for (int k = 0; k < TESSEL_MEM_KIND_COUNT; k++) out->memory[t][k] += core[t][k];
  return TESSEL_OK;
}

/* 2·K·N: the FLOPs per token of a product with parameter `index`. */
static tessel_status product(const tessel_sdk *x, int index, double *per_token) {
  tessel_param_info p = {.size = sizeof p};
  TESSEL_TRY(x->api->model->param_info(x->host, index, &p));
  *per_token = 2.0 * (double)p.shape[0] * (double)p.shape[1];
  return TESSEL_OK;
}

/* The forward FLOPs per token of one unit (see tessel_est_step_flops). */
static tessel_status unit_flops(const tessel_sdk *x, const tessel_model_dims *d, int unit, double *per_token) {
  tessel_unit_info u = {.size = sizeof u};
  TESSEL_TRY(x->api->model->unit_info(x->host, unit, &u));
  *per_token = 0;
  for (int k = 0; k < u.n_ops; k++) {
    tessel_op op = {.size = sizeof op};
    double f = 0;
    TESSEL_TRY(x->api->model->unit_op(x->host, unit, k, &op));
    if ((op.kind == TESSEL_OP_LINEAR || op.kind == TESSEL_OP_HEAD) && op.weight >= 0)
      TESSEL_TRY(product(x, op.weight, &f));
    else if (op.kind == TESSEL_OP_ATTENTION)
      f = 2.0 * (op.window && op.window < d->seq_len ? op.window : d->seq_len) * (double)d->dim[TESSEL_DIM_HEADS] *
          (double)d->dim[TESSEL_DIM_HEAD_SIZE];
    *per_token += f;
  }
  return TESSEL_OK;
}

tessel_status tessel_est_step_flops(const tessel_sdk *x, int first_unit, int last_unit, double *flops) {
  tessel_model_dims d = {.size = sizeof d};
  TESSEL_TRY(x->api->model->dims(x->host, &d));
  double tokens = (double)d.micro_batch * d.micro_steps * d.seq_len;
  *flops = 0;
  for (int u = first_unit; u <= last_unit; u++) {
    double f;
    TESSEL_TRY(unit_flops(x, &d, u, &f));
    *flops += 3.0 * f * tokens;
  }
  return TESSEL_OK;
}
