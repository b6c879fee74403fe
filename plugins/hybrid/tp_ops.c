/*
** plugins/hybrid/tp_ops.c — the layer primitives under 1D tensor parallelism.
**
** Megatron's f and g, by the weight's role: a column-parallel linear
** (TESSEL_ROLE_LINEAR_IN: q/k/v or a fused q|k|v, the MLP's up, gate or
** fc) needs its whole input and makes a slice of the output columns, so
** forward is local and backward all-reduces the input gradient; a
** row-parallel linear (TESSEL_ROLE_LINEAR_OUT: the attention output and the
** MLP's down projection) takes that slice and makes a partial sum of the
** whole output, so forward all-reduces and backward is local. A GPT-2 block
** has two of each kind: two all-reduces of B·T×C in forward and two in
** backward. Linears that share an input (Llama's q, k and v) each reduce
** their own input gradient.
**
** With sequence parallelism the residual stream, its layer norms and the
** residual adds hold a contiguous row shard of the B·T tokens: each
** all-reduce becomes an all-gather of the input before a column-parallel
** linear and a reduce-scatter of the output after a row-parallel one, and
** backward gathers a column-parallel layer's input again for its weight
** gradient (Megatron's choice: memory over an extra gather). Attention runs
** on whole sequences, between the gather and the scatter.
**
** The embedding looks up this rank's vocabulary slice and sums over the
** group (a reduce-scatter onto row shards under sequence parallelism). The
** head computes this rank's vocabulary slice of the logits and the
** cross-entropy reduces only per-row maxima and sums over the group: the
** logits are never gathered. Under sequence parallelism the head gathers
** its input rows first and scatters its input gradient back.
**
** A replicated bias of a row-parallel layer is added by tensor rank 0 only,
** before the reduction, so the sum holds it once; every rank computes its
** whole gradient from the whole output gradient.
*/
#include "hybrid.h"

static tessel_group *tp_group(const hybrid *h) { return h->tp > 1 ? h->g_tp : NULL; }

static tessel_status all_reduce(hybrid *h, void *buf, int64_t n) {
  if (h->tp == 1) return TESSEL_OK;
  return h->x.api->comm->all_reduce(h->x.host, h->g_tp, buf, buf, (uint64_t)n, h->dims.act_dtype, TESSEL_SUM, NULL);
}

/* shard [rows, C] of every rank -> whole [tp·rows, C] */
static tessel_status gather_rows(hybrid *h, const void *shard, void *whole, int64_t shard_n) {
  return h->x.api->comm->all_gather(h->x.host, h->g_tp, shard, whole, (uint64_t)shard_n, h->dims.act_dtype, NULL);
}

/* partial sums [tp·rows, C] -> this rank's rows of their sum */
static tessel_status scatter_rows(hybrid *h, const void *whole, void *shard, int64_t shard_n) {
  return h->x.api->comm->reduce_scatter(h->x.host, h->g_tp, whole, shard, (uint64_t)shard_n, h->dims.act_dtype, TESSEL_SUM,
                                      NULL);
}

static int column_parallel(const tessel_linear_args *a) { return a->role == TESSEL_ROLE_LINEAR_IN; }

static tessel_status linear_forward(void *inst, const tessel_op_ctx *c, const tessel_linear_args *a) {
  hybrid *h = inst;
  const tessel_kernel_api *k = h->x.api->kernels;
  tessel_status st;
  const void *bias = a->b ? a->b->data : NULL;
  if (column_parallel(a)) {
    const void *inp = a->inp;
    if (h->sp) {
      if ((st = gather_rows(h, a->inp, h->gathered, a->inp_rows * a->inp_cols)) < 0) return st;
      inp = h->gathered;
    }
    return k->linear_forward(h->x.host, c->stream, a->out, inp, a->w->data, bias, a->out_rows, a->inp_cols, a->out_cols);
  }
  void *out = h->sp ? h->partial : a->out;
  if ((st = k->linear_forward(h->x.host, c->stream, out, a->inp, a->w->data, h->tp_rank == 0 ? bias : NULL, a->inp_rows,
                              a->inp_cols, a->out_cols)) < 0)
    return st;
  return h->sp ? scatter_rows(h, h->partial, a->out, a->out_rows * a->out_cols)
               : all_reduce(h, a->out, a->out_rows * a->out_cols);
}

static tessel_status linear_backward(void *inst, const tessel_op_ctx *c, const tessel_linear_args *a) {
  hybrid *h = inst;
  const tessel_kernel_api *k = h->x.api->kernels;
  tessel_status st;
  float *db = a->b ? a->b->grad : NULL;
  if (column_parallel(a)) {
    const void *inp = a->inp;
    void *dinp = a->dinp;
    if (h->sp) {
      if ((st = gather_rows(h, a->inp, h->gathered, a->inp_rows * a->inp_cols)) < 0) return st;
      inp = h->gathered;
      dinp = h->partial;
    }
    if ((st = k->linear_backward(h->x.host, c->stream, dinp, a->w->grad, db, a->dout, inp, a->w->data, a->out_rows,
                                 a->inp_cols, a->out_cols)) < 0)
      return st;
    return h->sp ? scatter_rows(h, h->partial, a->dinp, a->inp_rows * a->inp_cols)
                 : all_reduce(h, a->dinp, a->inp_rows * a->inp_cols);
  }
  const void *dout = a->dout;
  if (h->sp) {
    if ((st = gather_rows(h, a->dout, h->gathered, a->out_rows * a->out_cols)) < 0) return st;
    dout = h->gathered;
  }
  return k->linear_backward(h->x.host, c->stream, a->dinp, a->w->grad, db, dout, a->inp, a->w->data, a->inp_rows,
                            a->inp_cols, a->out_cols);
}

static tessel_status embedding_forward(void *inst, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  hybrid *h = inst;
  const tessel_kernel_api *k = h->x.api->kernels;
  int64_t C = h->dims.dim[TESSEL_DIM_HIDDEN];
  const void *positions = a->positions ? a->positions->data : NULL;
  if (!h->sp)
    return k->embedding_forward(h->x.host, c->stream, tp_group(h), a->out, a->tokens, a->table->data, positions, a->batch,
                                a->seq, C, h->vocab_begin, h->vocab);
  /* positions added once, by rank 0, before the sum: the other ranks'
  ** token rows are exact zeros there, so the result is the plain lookup */
  tessel_status st = k->embedding_forward(h->x.host, c->stream, NULL, h->partial, a->tokens, a->table->data,
                                          h->tp_rank == 0 ? positions : NULL, a->batch, a->seq, C, h->vocab_begin,
                                          h->vocab);
  return st < 0 ? st : scatter_rows(h, h->partial, a->out, h->rows * C);
}

static tessel_status embedding_backward(void *inst, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  hybrid *h = inst;
  int64_t C = h->dims.dim[TESSEL_DIM_HIDDEN];
  const void *dout = a->dout;
  if (h->sp) {
    tessel_status st = gather_rows(h, a->dout, h->gathered, h->rows * C);
    if (st < 0) return st;
    dout = h->gathered;
  }
  return h->x.api->kernels->embedding_backward(h->x.host, c->stream, a->table->grad,
                                               a->positions ? a->positions->grad : NULL, dout, a->tokens, a->batch,
                                               a->seq, C, h->vocab_begin, h->vocab);
}

/* logits = inp · W_sliceᵀ (W the LM head, or the tied table), the
** vocabulary-parallel cross-entropy, and in training dinp = dlogits ·
** W_slice (summed over the group) and dW_slice += dlogitsᵀ · inp. */
static tessel_status head(void *inst, const tessel_op_ctx *c, const tessel_head_args *a) {
  hybrid *h = inst;
  const tessel_kernel_api *k = h->x.api->kernels;
  tessel_status st;
  int64_t C = a->width, V = h->vocab, R = a->rows;
  const void *inp = a->inp;
  void *logits = a->logits, *dinp = a->dinp;
  float *losses = a->losses;
  if (h->sp) {
    if ((st = gather_rows(h, a->inp, h->gathered, a->rows * C)) < 0) return st;
    inp = h->gathered;
    R = a->rows * h->tp;
    logits = h->head_logits;
    losses = h->head_losses;
    dinp = a->dinp ? h->partial : NULL;
  }
  tessel_dtype act = h->dims.act_dtype;
  if ((st = k->gemm(h->x.host, c->stream, 0, 1, R, V, C, 1.0f, inp, a->weight->data, 0.0f, logits, act)) < 0 ||
      (st = k->cross_entropy(h->x.host, c->stream, tp_group(h), losses, logits, a->targets, R, h->vocab_begin, V,
                             a->dinp ? a->dloss : 0.0f)) < 0)
    return st;
  /* each rank owns the losses of its own rows */
  if (h->sp && (st = h->x.api->mem->copy(h->x.host, TESSEL_TIER_DEVICE, a->losses, 0, TESSEL_TIER_DEVICE, h->head_losses,
                                       (uint64_t)(h->tp_rank * a->rows) * sizeof(float),
                                       (uint64_t)a->rows * sizeof(float), c->stream)) < 0)
    return st;
  if (!a->dinp) return TESSEL_OK;
  if ((st = k->gemm(h->x.host, c->stream, 0, 0, R, C, V, 1.0f, logits, a->weight->data, 0.0f, dinp, act)) < 0 ||
      (st = k->gemm(h->x.host, c->stream, 1, 0, V, C, R, 1.0f, logits, inp, 1.0f, a->weight->grad, TESSEL_F32)) < 0)
    return st;
  return h->sp ? scatter_rows(h, h->partial, a->dinp, a->rows * C) : all_reduce(h, a->dinp, R * C);
}

/* Norms, rotary positions and attention are the core's: a norm is per row,
** so it works on row shards as on whole rows, and attention sees whole
** sequences of this rank's query and key/value heads. */
const tessel_layer_ops hybrid_layer_ops = {
    .size = sizeof(tessel_layer_ops),
    .linear_forward = linear_forward,
    .linear_backward = linear_backward,
    .embedding_forward = embedding_forward,
    .embedding_backward = embedding_backward,
    .head = head,
};
