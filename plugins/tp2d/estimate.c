/*
** plugins/tp2d/estimate.c — what a q×q grid (× depth × dp) costs a rank,
** from the volumes of docs/tp2d.md.
**
** Per micro-batch, a linear [K → N] on m local rows is SUMMA in q steps:
**   forward  q broadcasts of X blocks along the grid row (m·K in all) and
**            of W blocks along the grid column (K·N/q), twice when the core
**            recomputes the op before backward;
**   dX       W again along the column, q reduces of [m, K/q] along the row;
**   dW       X again along the row, q reduces of fp32 [K/q, N/q] along the
**            column.
** The tied head is the same three forms with the table [V, C] as the
** weight. The embedding reduce-scatters its lookup along the column and
** gathers the gradient back; norms and the cross-entropy reduce row
** statistics along the grid row; replicated gradients are summed once per
** step (tp_estimate.c). SUMMA's broadcasts of the next step are in flight
** during the current GEMM: they overlap compute.
*/
#include <stdio.h>

#include "tp2d.h"

/* One micro-batch of SUMMA traffic of a product with a weight [K, N] whose
** forward runs n times (recompute). */
static void summa(uint64_t tally[2][2][2], uint64_t m, uint64_t K, uint64_t N, uint64_t q, uint64_t es, uint64_t n) {
  enum { COL = 0, ROW = 1, BCAST = 0, REDUCE = 1, CALLS = 0, BYTES = 1 };
  tally[COL][BCAST][CALLS] += (n + 1) * q;
  tally[COL][BCAST][BYTES] += (n + 1) * m * K * es;
  tally[COL][REDUCE][CALLS] += q;
  tally[COL][REDUCE][BYTES] += m * K * es;
  tally[ROW][BCAST][CALLS] += (n + 1) * q;
  tally[ROW][BCAST][BYTES] += (n + 1) * K * N / q * es;
  tally[ROW][REDUCE][CALLS] += q;
  tally[ROW][REDUCE][BYTES] += 4 * K * N / q;
}

static tessel_status traffic(tp2d *t, const tessel_plan_query *q) {
  const tessel_model_api *model = t->b.x.api->model;
  const tessel_model_dims *d = &t->b.dims;
  uint64_t es = tessel_dtype_size(d->act_dtype), m = (uint64_t)t->m, Q = (uint64_t)t->q, steps = (uint64_t)d->micro_steps;
  uint64_t tally[2][2][2] = {{{0}}}, embed = 0, n;
  for (int unit = 0; unit < d->units; unit++) {
    tessel_unit_info u = {.size = sizeof u};
    TESSEL_TRY(model->unit_info(t->b.x.host, unit, &u));
    for (int k = 0; k < u.n_ops; k++) {
      tessel_op op = {.size = sizeof op};
      tessel_param_info w = {.size = sizeof w};
      TESSEL_TRY(model->unit_op(t->b.x.host, unit, k, &op));
      if (op.kind == TESSEL_OP_EMBEDDING) embed += 2 * m * (uint64_t)d->dim[TESSEL_DIM_HIDDEN] * es;
      if ((op.kind != TESSEL_OP_LINEAR && op.kind != TESSEL_OP_HEAD) || op.weight < 0) continue;
      TESSEL_TRY(model->param_info(t->b.x.host, op.weight, &w));
      TESSEL_TRY(tessel_est_op_passes(&t->b.x, unit, k, &n));
      summa(tally, m, (uint64_t)w.shape[0], (uint64_t)w.shape[1], Q, es, n);
    }
  }
  static const uint32_t axes[2] = {1u << AX_COL, 1u << AX_ROW};
  for (int a = 0; a < 2; a++) {
    TESSEL_TRY(tessel_est_traffic(&t->b.x, q, axes[a], TESSEL_COLL_BROADCAST, TESSEL_OVERLAP_COMPUTE,
                                  steps * tally[a][0][0], steps * tally[a][0][1]));
    TESSEL_TRY(tessel_est_traffic(&t->b.x, q, axes[a], TESSEL_COLL_REDUCE, TESSEL_OVERLAP_COMPUTE,
                                  steps * tally[a][1][0], steps * tally[a][1][1]));
  }
  /* the embedding: a reduce-scatter forward, an all-gather backward */
  TESSEL_TRY(tessel_est_traffic(&t->b.x, q, 1u << AX_ROW, TESSEL_COLL_REDUCE_SCATTER, TESSEL_OVERLAP_NONE,
                                embed ? steps : 0, steps * embed / 2));
  TESSEL_TRY(tessel_est_traffic(&t->b.x, q, 1u << AX_ROW, TESSEL_COLL_ALL_GATHER, TESSEL_OVERLAP_NONE,
                                embed ? steps : 0, steps * embed / 2));
  return tp_est_stats(&t->b, q, 1u << AX_COL, 1u << AX_COL, t->m);
}

tessel_status tp2d_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out) {
  tp2d at = *(tp2d *)inst;
  tessel_mesh_coords(&at.b.mesh, q->rank, at.b.coord);
  tp2d_at_coords(&at);
  tessel_geometry g = {.size = sizeof g};
  TESSEL_TRY(tp2d_geometry(&at, &g));
  TESSEL_TRY(tp_est_base(&at.b, q, tp2d_layout, &at, &g, out));
  uint64_t bytes[TP2D_BUFFERS];
  tp2d_buffer_bytes(&at, bytes);
  for (int i = 0; i < TP2D_BUFFERS; i++)
    out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH] += (i < 4 ? 2 : 1) * tp_alloc_bytes(bytes[i]);
  TESSEL_TRY(traffic(&at, q));
  return tp_est_flops(&at.b, (double)at.depth * at.q * at.q, out);
}

/* Every depth · q² (q ≥ 2) that divides the world, the rest data parallel. */
tessel_status tp2d_enumerate(void *inst, const tessel_plan_query *q) {
  tp2d *t = inst;
  const int64_t *dim = q->dims->dim;
  for (int qq = 2; qq * qq <= q->world_size; qq++) {
    if (dim[TESSEL_DIM_HEADS] % qq || dim[TESSEL_DIM_KV_HEADS] % qq || dim[TESSEL_DIM_HIDDEN] % qq ||
        dim[TESSEL_DIM_FFN] % qq || dim[TESSEL_DIM_VOCAB] % qq)
      continue;
    for (int depth = 1; depth * qq * qq <= q->world_size; depth++) {
      int tp = depth * qq * qq;
      if (q->world_size % tp) continue;
      char opts[96];
      snprintf(opts, sizeof opts, "tp: %d, depth: %d, dp: %d", tp, depth, q->world_size / tp);
      TESSEL_TRY(q->option_set(t->b.x.host, opts));
    }
  }
  return TESSEL_OK;
}
