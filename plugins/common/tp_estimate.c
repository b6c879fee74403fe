/* plugins/common/tp_estimate.c — what the 2D and 3D plugins' estimates share:
** the rank's parts and the core's storage for them, the ones vector, the
** sums of replicated gradients, and the statistics of split norms and of
** the vocabulary-split cross-entropy. */
#include "tp_common.h"

tessel_status tp_est_base(tp_base *at, const tessel_plan_query *q, tessel_layout_fn layout, void *inst,
                          const tessel_geometry *g, tessel_estimate *out) {
  tessel_parts parts;
  tessel_buckets bs;
  TESSEL_TRY(tessel_parts_of(&at->x, layout, inst, &parts));
  tessel_status st = tessel_est_core(&at->x, q, g, parts.core_numel, out);
  uint64_t es = tessel_dtype_size(at->dims.act_dtype);
  out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH] += tp_alloc_bytes((uint64_t)g->rows * es); /* ones */
  if (st >= 0) st = tessel_buckets_plan_parts(&bs, &at->x, UINT64_MAX, tp_grads_key, at, parts.offset, parts.numel);
  tessel_parts_free(&parts);
  if (st < 0) return st;
  out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH] += 4 * bs.staged;
  for (int i = 0; i < bs.n && st >= 0; i++)
    st = tessel_est_traffic(&at->x, q, (uint32_t)bs.b[i].key & 0xffu, TESSEL_COLL_ALL_REDUCE, TESSEL_OVERLAP_BACKWARD,
                            1, 4 * bs.b[i].count);
  tessel_buckets_free(&bs);
  return st;
}

tessel_status tp_est_stats(tp_base *at, const tessel_plan_query *q, uint32_t norm_axes, uint32_t loss_axes,
                           int64_t rows) {
  const tessel_model_api *model = at->x.api->model;
  uint64_t m = (uint64_t)at->dims.micro_steps, r = (uint64_t)rows, norm_calls = 0, norm_bytes = 0, loss_calls = 0,
           loss_bytes = 0;
  for (int unit = 0; unit < at->dims.units; unit++) {
    tessel_unit_info u = {.size = sizeof u};
    TESSEL_TRY(model->unit_info(at->x.host, unit, &u));
    for (int k = 0; k < u.n_ops; k++) {
      tessel_op op = {.size = sizeof op};
      TESSEL_TRY(model->unit_op(at->x.host, unit, k, &op));
      /* each forward and the backward: Σx, Σx² (RMS: Σx²) per row, as doubles; a per-head norm is local */
      if (op.kind == TESSEL_OP_NORM && op.variant != TESSEL_NORM_RMS_HEADS) {
        uint64_t n;
        TESSEL_TRY(tessel_est_op_passes(&at->x, unit, k, &n));
        norm_calls += n + 1;
        norm_bytes += (n + 1) * (op.variant == TESSEL_NORM_LAYER ? 16 : 8) * r;
      } else if (op.kind == TESSEL_OP_HEAD) { /* a row maximum (fp32), then two row sums (fp64) */
        loss_calls += 2;
        loss_bytes += (4 + 16) * r;
      }
    }
  }
  if (tessel_mesh_real_axes(&at->mesh, norm_axes))
    TESSEL_TRY(tessel_est_traffic(&at->x, q, norm_axes, TESSEL_COLL_ALL_REDUCE, TESSEL_OVERLAP_NONE, m * norm_calls,
                                  m * norm_bytes));
  if (tessel_mesh_real_axes(&at->mesh, loss_axes))
    TESSEL_TRY(tessel_est_traffic(&at->x, q, loss_axes, TESSEL_COLL_ALL_REDUCE, TESSEL_OVERLAP_NONE, m * loss_calls,
                                  m * loss_bytes));
  return TESSEL_OK;
}

tessel_status tp_est_flops(tp_base *at, double parts, tessel_estimate *out) {
  TESSEL_TRY(tessel_est_step_flops(&at->x, 0, at->dims.units - 1, &out->flops));
  out->flops /= parts;
  return TESSEL_OK;
}
