/* plugins/tp2d/ops.c — the layer primitives on the grid.
**
** linear     SUMMA (summa.c), bias added on every rank's own rows;
** norm       the core kernel (layer or RMS norm) with its statistics summed
**            along the grid row (the hidden dimension is split over the
**            columns);
** attention  the core's, local (rotary positions too): a rank holds whole
**            sequences and whole query and key/value heads;
** embedding  the table is split by vocabulary over the rows and by channel over
**            the columns: each rank looks up its vocabulary range for every
**            token of its depth layer, and a reduce-scatter along the grid
**            column sums the ranges and leaves each row its sequences;
** head       logits = x·Wᵀ by SUMMA with the LM head (or the tied table) as
**            the weight, giving each
**            rank the logits of its rows for vocabulary block `col`; the
**            cross-entropy over that split vocabulary reduces along the grid
**            row; its backward is the other two SUMMA forms. */
#include "tp2d.h"

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

void tp2d_buffer_bytes(const tp2d *t, uint64_t bytes[TP2D_BUFFERS]) {
  const tp_base *b = &t->b;
  const int64_t *dim = b->dims.dim;
  int64_t C = dim[TESSEL_DIM_HIDDEN], V = dim[TESSEL_DIM_VOCAB], q = t->q;
  int64_t qkv = (dim[TESSEL_DIM_HEADS] + 2 * dim[TESSEL_DIM_KV_HEADS]) * dim[TESSEL_DIM_HEAD_SIZE];
  uint64_t es = tessel_dtype_size(b->dims.act_dtype);
  /* widest operands: the MLP, a fused q|k|v or the vocabulary */
  int64_t widest = max64(max64(dim[TESSEL_DIM_FFN], qkv), max64(V, C));
  uint64_t a_elems = (uint64_t)(t->m * widest / q), b_elems = (uint64_t)(C * widest / (q * q));
  bytes[0] = a_elems * es;           /* activation blocks, two */
  bytes[1] = b_elems * es;           /* weight blocks, two */
  bytes[2] = a_elems * es;           /* partial products, two */
  bytes[3] = b_elems * sizeof(float); /* weight-gradient partials, two */
  bytes[4] = (uint64_t)(t->m * q * (C / q)) * es; /* the embedding's partial sums, one */
}

tessel_status tp2d_alloc_buffers(tp2d *t) {
  tp_base *b = &t->b;
  uint64_t bytes[TP2D_BUFFERS];
  tp2d_buffer_bytes(t, bytes);
  tessel_status st = TESSEL_OK;
  for (int i = 0; i < 2 && st >= 0; i++) {
    st = tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[0], "SUMMA activation blocks", &t->abuf[i]);
    if (st >= 0) st = tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[1], "SUMMA weight blocks", &t->bbuf[i]);
    if (st >= 0) st = tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[2], "SUMMA partial products", &t->pact[i]);
    if (st >= 0)
      st = tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[3], "SUMMA weight-gradient partials", (void **)&t->pf32[i]);
  }
  if (st >= 0) st = tp_alloc(b, TESSEL_MEM_SCRATCH, bytes[4], "embedding partial sums", &t->embed);
  return st;
}

void tp2d_free_buffers(tp2d *t) {
  for (int i = 0; i < 2; i++) {
    tp_free(&t->b, t->abuf[i]);
    tp_free(&t->b, t->bbuf[i]);
    tp_free(&t->b, t->pact[i]);
    tp_free(&t->b, t->pf32[i]);
  }
  tp_free(&t->b, t->embed);
}

/* The weight block must be [k, n] as SUMMA will read it. */
static tessel_status check_block(tp2d *t, const tessel_param_view *w, int64_t k, int64_t n) {
  if (w->local_shape[0] == k && w->local_shape[1] == n) return TESSEL_OK;
  return t->b.x.api->set_error(t->b.x.host, TESSEL_E_INTERNAL, "weight block is %lldx%lld, the grid expects %lldx%lld",
                             (long long)w->local_shape[0], (long long)w->local_shape[1], (long long)k, (long long)n);
}

static tessel_status linear_forward(void *inst, const tessel_op_ctx *c, const tessel_linear_args *a) {
  tp2d *t = inst;
  int64_t m = a->inp_rows, k = a->inp_cols, n = a->out_cols;
  tessel_status st = check_block(t, a->w, k, n);
  if (st >= 0) st = tp2d_summa_ab(t, c->stream, a->inp, a->w->data, a->out, m, k, n);
  if (st >= 0 && a->b) st = tp_bias_add(&t->b, c->stream, a->out, a->b->data, m, n);
  return st;
}

static tessel_status linear_backward(void *inst, const tessel_op_ctx *c, const tessel_linear_args *a) {
  tp2d *t = inst;
  int64_t m = a->inp_rows, k = a->inp_cols, n = a->out_cols;
  tessel_status st = check_block(t, a->w, k, n);
  /* dX = dY·Wᵀ, then dW += Xᵀ·dY, db += Σ_rows dY (summed over rows later) */
  if (st >= 0 && a->dinp) st = tp2d_summa_abt(t, c->stream, a->dout, a->w->data, a->dinp, m, n, k);
  if (st >= 0) st = tp2d_summa_atb(t, c->stream, a->inp, a->dout, a->w->grad, m, k, n);
  if (st >= 0 && a->b) st = tp_bias_grad(&t->b, c->stream, a->b->grad, a->dout, m, n);
  return st;
}

/* The tokens of this depth layer's sequences (every rank of a data replica
** is handed the whole micro-batch). */
static const int32_t *layer_tokens(const tp2d *t, const int32_t *tokens) {
  return tokens + (int64_t)t->dep * t->seqs * t->b.dims.seq_len;
}

static tessel_status embedding_forward(void *inst, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  tp2d *t = inst;
  const tessel_host_api *api = t->b.x.api;
  int64_t q = t->q, width = t->b.dims.dim[TESSEL_DIM_HIDDEN] / q, vocab = t->b.dims.dim[TESSEL_DIM_VOCAB] / q;
  /* positions are added once per column: by row 0, before the sum */
  tessel_status st = api->kernels->embedding_forward(t->b.x.host, c->stream, NULL, t->embed, layer_tokens(t, a->tokens),
                                                     a->table->data, t->row == 0 && a->positions ? a->positions->data : NULL, t->seqs, a->seq,
                                                     width, t->row * vocab, vocab);
  if (st < 0) return st;
  return api->comm->reduce_scatter(t->b.x.host, t->g_row, t->embed, a->out, (uint64_t)(t->m * width), t->b.act,
                                   TESSEL_SUM, NULL);
}

static tessel_status embedding_backward(void *inst, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  tp2d *t = inst;
  const tessel_host_api *api = t->b.x.api;
  int64_t q = t->q, width = t->b.dims.dim[TESSEL_DIM_HIDDEN] / q, vocab = t->b.dims.dim[TESSEL_DIM_VOCAB] / q;
  tessel_status st = api->comm->all_gather(t->b.x.host, t->g_row, a->dout, t->embed, (uint64_t)(t->m * width), t->b.act,
                                           NULL);
  if (st < 0) return st;
  /* the gathered gradient covers the column's sequences: one positions gradient per column */
  return api->kernels->embedding_backward(t->b.x.host, c->stream, a->table->grad,
                                          t->row == 0 && a->positions ? a->positions->grad : NULL,
                                          t->embed, layer_tokens(t, a->tokens), t->seqs, a->seq, width, t->row * vocab,
                                          vocab);
}

static tessel_status head(void *inst, const tessel_op_ctx *c, const tessel_head_args *a) {
  tp2d *t = inst;
  const tessel_host_api *api = t->b.x.api;
  int64_t m = a->rows, width = a->width, vocab = t->b.dims.dim[TESSEL_DIM_VOCAB] / t->q;
  const int32_t *targets = a->targets + (int64_t)(t->dep * t->q + t->row) * m;
  tessel_status st = tp2d_summa_abt(t, c->stream, a->inp, a->weight->data, a->logits, m, width, vocab);
  if (st >= 0)
    st = api->kernels->cross_entropy(t->b.x.host, c->stream, t->g_col, a->losses, a->logits, targets, m, t->col * vocab,
                                     vocab, a->dinp ? a->dloss : 0.0f);
  if (st < 0 || !a->dinp) return st;
  /* logits now hold dlogits: dx = dlogits·W, dW += dlogitsᵀ·x */
  st = tp2d_summa_ab(t, c->stream, a->logits, a->weight->data, a->dinp, m, vocab, width);
  if (st >= 0) st = tp2d_summa_atb(t, c->stream, a->logits, a->inp, a->weight->grad, m, vocab, width);
  return st;
}

const tessel_layer_ops tp2d_layer_ops = {
    .size = sizeof(tessel_layer_ops),
    .linear_forward = linear_forward,
    .linear_backward = linear_backward,
    .norm_forward = tp_norm_forward,
    .norm_backward = tp_norm_backward,
    .embedding_forward = embedding_forward,
    .embedding_backward = embedding_backward,
    .head = head,
};
