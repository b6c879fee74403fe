/* plugins/tp3d/ops.c — the layer primitives on the cube.
**
** linear     the 3D product (cube.c): linears into the heads or the MLP
**            (TESSEL_ROLE_LINEAR_IN) gather along i and scatter along j, those
**            back to the hidden width the other way round;
**            the bias (a block of the output axis) is added to each rank's
**            own rows;
** norm       the core kernel with its statistics summed along j (the
**            residual stream's channels are cut along j);
** attention  the core's, local (rotary positions too): after the q, k, v
**            linears a rank holds whole sequences (rows block k, sub-block
**            j) and whole heads (block i);
** embedding  the table is all-gathered along k into vocabulary block i × channel
**            block j; every rank looks up the tokens of rows block k in its
**            vocabulary range, and a reduce-scatter along i sums the ranges
**            and cuts the rows into the residual stream's sub-blocks;
** head       logits = x·Wᵀ as a gather-i product with the LM head (or the
**            tied table) as the weight
**            stored transposed: rank (k,i,j) gets the logits of rows (k, j)
**            for vocabulary block i, and the vocabulary-split cross-entropy
**            reduces along i; its backward is the product's backward. */
#include <stdlib.h>

#include "tp3d.h"

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Bytes one block linear keeps from forward to backward: its gathered
** input [q·rows, K/q] and weight [K/q, N/q] for a global weight [K, N]. */
static uint64_t kept_bytes(const tp3d *t, const tessel_param_info *w) {
  int64_t q = t->q;
  return (uint64_t)(t->rows * w->shape[0] + w->shape[0] * w->shape[1] / (q * q)) *
         tessel_dtype_size(t->b.dims.act_dtype);
}

/* Each linear of a block (every block has the same ops): its weight's info,
** or -1 for an op that is not a linear; returns how many there are. */
static tessel_status block_linears(const tp3d *t, tessel_param_info *w, int *is_linear, int *n_ops) {
  const tessel_host_api *api = t->b.x.api;
  tessel_unit_info u = {.size = sizeof u};
  TESSEL_TRY(api->model->unit_info(t->b.x.host, 1, &u));
  if (u.n_ops > TP3D_MAX_OPS)
    return api->set_error(t->b.x.host, TESSEL_E_UNSUPPORTED, "a block of %d ops; the cube plans for at most %d",
                          u.n_ops, TP3D_MAX_OPS);
  *n_ops = u.n_ops;
  for (int k = 0; k < u.n_ops; k++) {
    tessel_op op = {.size = sizeof op};
    TESSEL_TRY(api->model->unit_op(t->b.x.host, 1, k, &op));
    is_linear[k] = op.kind == TESSEL_OP_LINEAR;
    w[k].size = sizeof w[k];
    if (is_linear[k]) TESSEL_TRY(api->model->param_info(t->b.x.host, op.weight, &w[k]));
  }
  return TESSEL_OK;
}

tessel_status tp3d_buffer_bytes(const tp3d *t, uint64_t *kept, uint64_t bytes[TP3D_BUFFERS]) {
  const int64_t *dim = t->b.dims.dim;
  int64_t C = dim[TESSEL_DIM_HIDDEN], V = dim[TESSEL_DIM_VOCAB], q = t->q, rows = t->rows;
  int64_t qkv = (dim[TESSEL_DIM_HEADS] + 2 * dim[TESSEL_DIM_KV_HEADS]) * dim[TESSEL_DIM_HEAD_SIZE];
  int64_t widest = max64(max64(dim[TESSEL_DIM_FFN], qkv), max64(V, C));
  uint64_t es = tessel_dtype_size(t->b.dims.act_dtype), wide = (uint64_t)(rows * widest);
  uint64_t wmax = (uint64_t)(C * widest / (q * q));
  tessel_param_info w[TP3D_MAX_OPS];
  int is_linear[TP3D_MAX_OPS], n_ops;
  TESSEL_TRY(block_linears(t, w, is_linear, &n_ops));
  *kept = 0;
  for (int k = 0; k < n_ops; k++)
    if (is_linear[k]) *kept += kept_bytes(t, &w[k]);
  *kept *= (uint64_t)t->b.dims.layers;
  bytes[0] = (uint64_t)(rows * C) * es;         /* gathered head input */
  bytes[1] = (uint64_t)(V * C / (q * q)) * es;  /* gathered table */
  bytes[2] = bytes[3] = bytes[4] = wide * es;  /* partial products, gathered output gradients, input-gradient partials */
  bytes[5] = wmax * sizeof(float);             /* weight-gradient partials */
  bytes[6] = wmax / (uint64_t)q * sizeof(float); /* their reduce-scattered shares */
  return TESSEL_OK;
}

/* Number the linears of a block, in op order. */
static tessel_status plan_saved(tp3d *t) {
  tessel_param_info w[TP3D_MAX_OPS];
  int is_linear[TP3D_MAX_OPS], n_ops;
  TESSEL_TRY(block_linears(t, w, is_linear, &n_ops));
  t->linear_slot = calloc((size_t)n_ops + 1, sizeof *t->linear_slot);
  if (!t->linear_slot) return t->b.x.api->set_error(t->b.x.host, TESSEL_E_NOMEM, "out of host memory");
  for (int k = 0; k < n_ops; k++) t->linear_slot[k] = is_linear[k] ? t->n_linears++ : -1;
  return TESSEL_OK;
}

/* Carve each layer's kept operands, linear after linear, from the arena. */
static tessel_status carve_saved(tp3d *t) {
  const tessel_host_api *api = t->b.x.api;
  int L = t->b.dims.layers;
  tessel_unit_info u = {.size = sizeof u};
  TESSEL_TRY(api->model->unit_info(t->b.x.host, 1, &u));
  t->saved = calloc((size_t)(L * t->n_linears) + 1, sizeof *t->saved);
  if (!t->saved) return api->set_error(t->b.x.host, TESSEL_E_NOMEM, "out of host memory");
  char *at = t->saved_arena;
  for (int l = 0; l < L; l++)
    for (int k = 0; k < u.n_ops; k++) {
      if (t->linear_slot[k] < 0) continue;
      tessel_op op = {.size = sizeof op};
      tessel_param_info w = {.size = sizeof w};
      TESSEL_TRY(api->model->unit_op(t->b.x.host, 1, k, &op));
      TESSEL_TRY(api->model->param_info(t->b.x.host, op.weight, &w));
      tp3d_saved *kept = &t->saved[l * t->n_linears + t->linear_slot[k]];
      kept->xg = at;
      kept->wg = at + (uint64_t)(t->rows * w.shape[0]) * t->b.es;
      at += kept_bytes(t, &w);
    }
  return TESSEL_OK;
}

tessel_status tp3d_alloc_buffers(tp3d *t) {
  tp_base *b = &t->b;
  uint64_t kept, bytes[TP3D_BUFFERS];
  TESSEL_TRY(tp3d_buffer_bytes(t, &kept, bytes));
  TESSEL_TRY(plan_saved(t));
  TESSEL_TRY(tp_alloc(b, TESSEL_MEM_ACT, kept, "gathered operands kept for backward", &t->saved_arena));
  TESSEL_TRY(carve_saved(t));
  TESSEL_TRY(tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[0], "gathered head input", &t->xg));
  TESSEL_TRY(tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[1], "gathered table", &t->wg));
  TESSEL_TRY(tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[2], "partial products", &t->ypart));
  TESSEL_TRY(tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[3], "gathered output gradients", &t->dyg));
  TESSEL_TRY(tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[4], "input-gradient partials", &t->dxpart));
  TESSEL_TRY(tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[5], "weight-gradient partials", (void **)&t->dwpart));
  return tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[6], "weight-gradient shares", (void **)&t->dwshare);
}

void tp3d_free_buffers(tp3d *t) {
  tp_free(&t->b, t->saved_arena);
  tp_free(&t->b, t->xg);
  tp_free(&t->b, t->wg);
  tp_free(&t->b, t->ypart);
  tp_free(&t->b, t->dyg);
  tp_free(&t->b, t->dxpart);
  tp_free(&t->b, t->dwpart);
  tp_free(&t->b, t->dwshare);
  free(t->saved);
  free(t->linear_slot);
}

/* The product of one block linear, with its kept operands. */
static tessel_status linear_mm(tp3d *t, const tessel_op_ctx *c, const tessel_linear_args *a, tp3d_mm *mm) {
  int layer = c->unit - 1, gather_i = a->role == TESSEL_ROLE_LINEAR_IN;
  if (layer < 0 || layer >= t->b.dims.layers || t->linear_slot[c->op->index] < 0 ||
      a->w->local_shape[0] * t->q != a->inp_cols || a->w->local_shape[1] != a->out_cols)
    return t->b.x.api->set_error(t->b.x.host, TESSEL_E_INTERNAL,
                                 "linear of unit %d with a %lldx%lld weight piece for %lld -> %lld columns", c->unit,
                                 (long long)a->w->local_shape[0], (long long)a->w->local_shape[1],
                                 (long long)a->inp_cols, (long long)a->out_cols);
  const tp3d_saved *kept = &t->saved[layer * t->n_linears + t->linear_slot[c->op->index]];
  *mm = (tp3d_mm){.in = gather_i ? t->g_i : t->g_j, .out = gather_i ? t->g_j : t->g_i, .rows = a->inp_rows,
                  .k = a->inp_cols, .n = a->out_cols, .xg = kept->xg, .wg = kept->wg};
  return TESSEL_OK;
}

static tessel_status linear_forward(void *inst, const tessel_op_ctx *c, const tessel_linear_args *a) {
  tp3d *t = inst;
  tp3d_mm mm;
  tessel_status st = linear_mm(t, c, a, &mm);
  if (st >= 0) st = tp3d_mm_forward(t, c->stream, &mm, a->inp, a->w->data, a->out);
  if (st >= 0 && a->b) st = tp_bias_add(&t->b, c->stream, a->out, a->b->data, mm.rows, mm.n);
  return st;
}

static tessel_status linear_backward(void *inst, const tessel_op_ctx *c, const tessel_linear_args *a) {
  tp3d *t = inst;
  tp3d_mm mm;
  tessel_status st = linear_mm(t, c, a, &mm);
  if (st >= 0) st = tp3d_mm_backward(t, c->stream, &mm, a->dout, a->dinp, a->w->grad);
  /* the rank's own rows; summed with the other rows' over k and the scatter axis */
  if (st >= 0 && a->b) st = tp_bias_grad(&t->b, c->stream, a->b->grad, a->dout, mm.rows, mm.n);
  return st;
}

/* Tokens of rows block k: the core hands every rank the whole micro-batch. */
static const int32_t *block_tokens(const tp3d *t, const int32_t *tokens) {
  return tokens + (int64_t)t->ck * t->q * t->rows;
}

static tessel_status embedding_forward(void *inst, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  tp3d *t = inst;
  const tessel_host_api *api = t->b.x.api;
  int64_t q = t->q, width = t->b.dims.dim[TESSEL_DIM_HIDDEN] / q, vocab = t->b.dims.dim[TESSEL_DIM_VOCAB] / q;
  tessel_status st = api->comm->all_gather(t->b.x.host, t->g_k, a->table->data, t->wg, (uint64_t)(vocab * width / q),
                                           t->b.act, NULL);
  /* positions are added once per rows block: by i = 0, before the sum */
  if (st >= 0)
    st = api->kernels->embedding_forward(t->b.x.host, c->stream, NULL, t->ypart, block_tokens(t, a->tokens), t->wg,
                                         t->ci == 0 && a->positions ? a->positions->data : NULL, a->batch / q, a->seq,
                                         width, t->ci * vocab, vocab);
  if (st < 0) return st;
  return api->comm->reduce_scatter(t->b.x.host, t->g_i, t->ypart, a->out, (uint64_t)(t->rows * width), t->b.act,
                                   TESSEL_SUM, NULL);
}

static tessel_status embedding_backward(void *inst, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  tp3d *t = inst;
  const tessel_host_api *api = t->b.x.api;
  int64_t q = t->q, width = t->b.dims.dim[TESSEL_DIM_HIDDEN] / q, vocab = t->b.dims.dim[TESSEL_DIM_VOCAB] / q, share = vocab * width / q;
  tessel_stream *s = c->stream;
  tessel_status st = api->comm->all_gather(t->b.x.host, t->g_i, a->dout, t->dyg, (uint64_t)(t->rows * width), t->b.act,
                                           NULL);
  /* the gathered gradient covers rows block k: one positions gradient per block, from i = 0 */
  if (st >= 0) st = api->kernels->scale(t->b.x.host, s, TESSEL_F32, t->dwpart, 0.0f, vocab * width);
  if (st >= 0)
    st = api->kernels->embedding_backward(t->b.x.host, s, t->dwpart, t->ci == 0 && a->positions ? a->positions->grad : NULL, t->dyg,
                                          block_tokens(t, a->tokens), a->batch / q, a->seq, width, t->ci * vocab, vocab);
  if (st >= 0)
    st = api->comm->reduce_scatter(t->b.x.host, t->g_k, t->dwpart, t->dwshare, (uint64_t)share, TESSEL_F32, TESSEL_SUM,
                                   NULL);
  if (st < 0) return st;
  return api->kernels->axpy(t->b.x.host, s, TESSEL_F32, a->table->grad, 1.0f, t->dwshare, share);
}

static tessel_status head(void *inst, const tessel_op_ctx *c, const tessel_head_args *a) {
  tp3d *t = inst;
  const tessel_host_api *api = t->b.x.api;
  int64_t vocab = t->b.dims.dim[TESSEL_DIM_VOCAB] / t->q;
  tp3d_mm mm = {.in = t->g_i, .out = t->g_j, .rows = a->rows, .k = a->width, .n = vocab, .wt = 1, .xg = t->xg,
                .wg = t->wg};
  const int32_t *targets = a->targets + (int64_t)(t->ck * t->q + t->cj) * a->rows;
  tessel_status st = tp3d_mm_forward(t, c->stream, &mm, a->inp, a->weight->data, a->logits);
  if (st >= 0)
    st = api->kernels->cross_entropy(t->b.x.host, c->stream, t->g_i, a->losses, a->logits, targets, a->rows,
                                     t->ci * vocab, vocab, a->dinp ? a->dloss : 0.0f);
  if (st < 0 || !a->dinp) return st;
  /* the logits now hold dlogits */
  return tp3d_mm_backward(t, c->stream, &mm, a->logits, a->dinp, a->weight->grad);
}

const tessel_layer_ops tp3d_layer_ops = {
    .size = sizeof(tessel_layer_ops),
    .linear_forward = linear_forward,
    .linear_backward = linear_backward,
    .norm_forward = tp_norm_forward,
    .norm_backward = tp_norm_backward,
    .embedding_forward = embedding_forward,
    .embedding_backward = embedding_backward,
    .head = head,
};
