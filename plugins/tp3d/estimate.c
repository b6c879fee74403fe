/*
** plugins/tp3d/estimate.c — what a q×q×q cube (× dp) costs a rank, from the
** volumes of docs/tp3d.md.
**
** Per micro-batch, a linear [K → N] on r local rows moves six collectives
** over q ranks each: along its input axis an all-gather of X and a
** reduce-scatter of dX (r·K each), along its output axis a reduce-scatter
** of Y and an all-gather of dY (r·N each), along k an all-gather of W and a
** reduce-scatter of the fp32 dW (K·N/q² each). Linears into the heads or
** the MLP gather along i, those back to the hidden width along j; the tied
** head is a gather-i product with the table [V, C] as its weight. The
** embedding gathers the table along k and reduce-scatters its lookup along
** i, and mirrors both backward. A linear the core recomputes before
** backward gathers X and W and scatters Y again. Norms reduce row statistics along j, the
** cross-entropy along i; replicated gradients are summed once per step
** (tp_estimate.c). Every rank also keeps the gathered input and weight of
** each block linear from forward to backward.
*/
#include <stdio.h>
#include <string.h>

#include "tp3d.h"

enum { CALLS = 0, BYTES = 1 };

typedef struct cube_tally {
  uint64_t ag[TP3D_AXES][2], rs[TP3D_AXES][2]; /* [axis][calls, bytes] */
} cube_tally;

static void add(uint64_t c[2], uint64_t calls, uint64_t bytes) {
  c[CALLS] += calls;
  c[BYTES] += calls * bytes;
}

/* One product of x [r, K] (cut along `in`) with W [K, N] into y (cut along
** `out`) whose forward runs n times (recompute). */
static void product(cube_tally *t, int in, int out, uint64_t r, uint64_t K, uint64_t N, uint64_t q, uint64_t es,
                    uint64_t n) {
  add(t->ag[in], n, r * K * es);             /* X, forward */
  add(t->rs[in], 1, r * K * es);             /* dX */
  add(t->rs[out], n, r * N * es);            /* Y */
  add(t->ag[out], 1, r * N * es);            /* dY */
  add(t->ag[AX_K], n, K * N / (q * q) * es); /* W */
  add(t->rs[AX_K], 1, 4 * K * N / (q * q));  /* dW, fp32 */
}

static tessel_status traffic(tp3d *t, const tessel_plan_query *q) {
  const tessel_model_api *model = t->b.x.api->model;
  const tessel_model_dims *d = &t->b.dims;
  uint64_t es = tessel_dtype_size(d->act_dtype), r = (uint64_t)t->rows, Q = (uint64_t)t->q, m = (uint64_t)d->micro_steps;
  uint64_t C = (uint64_t)d->dim[TESSEL_DIM_HIDDEN], V = (uint64_t)d->dim[TESSEL_DIM_VOCAB];
  cube_tally tl;
  memset(&tl, 0, sizeof tl);
  for (int unit = 0; unit < d->units; unit++) {
    tessel_unit_info u = {.size = sizeof u};
    TESSEL_TRY(model->unit_info(t->b.x.host, unit, &u));
    for (int k = 0; k < u.n_ops; k++) {
      tessel_op op = {.size = sizeof op};
      tessel_param_info w = {.size = sizeof w};
      TESSEL_TRY(model->unit_op(t->b.x.host, unit, k, &op));
      if (op.kind == TESSEL_OP_EMBEDDING) { /* the table gathered along k, the lookup summed along i */
        add(tl.ag[AX_K], 1, V * C / (Q * Q) * es);
        add(tl.rs[AX_K], 1, 4 * V * C / (Q * Q));
        add(tl.rs[AX_I], 1, r * C * es);
        add(tl.ag[AX_I], 1, r * C * es);
      }
      if ((op.kind != TESSEL_OP_LINEAR && op.kind != TESSEL_OP_HEAD) || op.weight < 0) continue;
      TESSEL_TRY(model->param_info(t->b.x.host, op.weight, &w));
      uint64_t K = (uint64_t)w.shape[0], N = (uint64_t)w.shape[1], n;
      TESSEL_TRY(tessel_est_op_passes(&t->b.x, unit, k, &n));
      if (op.kind == TESSEL_OP_HEAD) product(&tl, AX_I, AX_J, r, N, K, Q, es, n); /* logits = x · tableᵀ */
      else if (w.role == TESSEL_ROLE_LINEAR_IN) product(&tl, AX_I, AX_J, r, K, N, Q, es, n);
      else product(&tl, AX_J, AX_I, r, K, N, Q, es, n);
    }
  }
  for (int a = AX_K; a < TP3D_AXES; a++) {
    TESSEL_TRY(tessel_est_traffic(&t->b.x, q, 1u << a, TESSEL_COLL_ALL_GATHER, TESSEL_OVERLAP_NONE, m * tl.ag[a][CALLS],
                                  m * tl.ag[a][BYTES]));
    TESSEL_TRY(tessel_est_traffic(&t->b.x, q, 1u << a, TESSEL_COLL_REDUCE_SCATTER, TESSEL_OVERLAP_NONE,
                                  m * tl.rs[a][CALLS], m * tl.rs[a][BYTES]));
  }
  return tp_est_stats(&t->b, q, 1u << AX_J, 1u << AX_I, t->rows);
}

tessel_status tp3d_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out) {
  tp3d at = *(tp3d *)inst;
  tessel_mesh_coords(&at.b.mesh, q->rank, at.b.coord);
  tp3d_at_coords(&at);
  tessel_geometry g = {.size = sizeof g};
  TESSEL_TRY(tp3d_geometry(&at, &g));
  TESSEL_TRY(tp_est_base(&at.b, q, tp3d_layout, &at, &g, out));
  uint64_t kept, bytes[TP3D_BUFFERS];
  TESSEL_TRY(tp3d_buffer_bytes(&at, &kept, bytes));
  out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_ACT] += tp_alloc_bytes(kept);
  for (int i = 0; i < TP3D_BUFFERS; i++) out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH] += tp_alloc_bytes(bytes[i]);
  TESSEL_TRY(traffic(&at, q));
  return tp_est_flops(&at.b, (double)at.q * at.q * at.q, out);
}

/* Every q³ (q ≥ 2) that divides the world, the rest data parallel. */
tessel_status tp3d_enumerate(void *inst, const tessel_plan_query *q) {
  tp3d *t = inst;
  const int64_t *dim = q->dims->dim;
  for (int qq = 2; qq * qq * qq <= q->world_size; qq++) {
    int tp = qq * qq * qq;
    if (q->world_size % tp || dim[TESSEL_DIM_HEADS] % qq || dim[TESSEL_DIM_KV_HEADS] % qq ||
        dim[TESSEL_DIM_FFN] % (qq * qq) || dim[TESSEL_DIM_HIDDEN] % (qq * qq) || dim[TESSEL_DIM_VOCAB] % (qq * qq))
      continue;
    char opts[64];
    snprintf(opts, sizeof opts, "tp: %d, dp: %d", tp, q->world_size / tp);
    TESSEL_TRY(q->option_set(t->b.x.host, opts));
  }
  return TESSEL_OK;
}
