/* plugins/tp3d/ops.c — the layer primitives on the cube.
**
** linear     the 3D product (cube.c): c_attn and c_fc gather along i and
**            scatter along j, attn.c_proj and mlp.c_proj the other way round;
**            the bias (a block of the output axis) is added to each rank's
**            own rows;
** layernorm  the core kernel with its statistics summed along j (the
**            residual stream's channels are cut along j);
** attention  the core's, local: after c_attn a rank holds whole sequences
**            (rows block k, sub-block j) and whole heads (block i);
** embedding  wte is all-gathered along k into vocabulary block i × channel
**            block j; every rank looks up the tokens of rows block k in its
**            vocabulary range, and a reduce-scatter along i sums the ranges
**            and cuts the rows into the residual stream's sub-blocks;
** head       logits = x·wteᵀ as a gather-i product with wte as the weight
**            stored transposed: rank (k,i,j) gets the logits of rows (k, j)
**            for vocabulary block i, and the vocabulary-split cross-entropy
**            reduces along i; its backward is the product's backward. */
#include <stdlib.h>

#include "tp3d.h"

/* The four linears of a block, in the order their saved operands are kept. */
static int linear_index(tessel_block_weight which) {
  switch (which) {
    case TESSEL_W_QKV: return 0;
    case TESSEL_W_ATTN_PROJ: return 1;
    case TESSEL_W_FC: return 2;
    default: return 3;
  }
}

/* K and N of each linear, in channels. */
static const int k_of[4] = {1, 1, 1, 4}, n_of[4] = {3, 1, 4, 1};

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

tessel_status tp3d_alloc_buffers(tp3d *t) {
  tp_base *b = &t->b;
  int64_t C = b->dims.channels, V = b->dims.vocab_size, q = t->q, L = b->dims.layers, rows = t->rows;
  uint64_t es = b->es;
  /* kept per block: the gathered input (rows·K) and weight (K·N/q²) of each linear */
  uint64_t per_layer = 0;
  for (int l = 0; l < 4; l++) per_layer += (uint64_t)(rows * k_of[l] * C + k_of[l] * n_of[l] * C * C / (q * q)) * es;
  tessel_status st = tp_alloc(b, TESSEL_MEM_ACT, per_layer * (uint64_t)L, "gathered operands kept for backward",
                              &t->saved_arena);
  if (st >= 0 && !(t->saved = calloc((size_t)(L * 4), sizeof *t->saved)))
    st = b->api->set_error(b->host, TESSEL_E_NOMEM, "tp3d: out of host memory");
  char *at = t->saved_arena;
  for (int64_t i = 0; st >= 0 && i < L * 4; i++) {
    int l = (int)(i % 4);
    t->saved[i].xg = at;
    at += (uint64_t)(rows * k_of[l] * C) * es;
    t->saved[i].wg = at;
    at += (uint64_t)(k_of[l] * n_of[l] * C * C / (q * q)) * es;
  }
  uint64_t wide = (uint64_t)(rows * max64(4 * C, V)), wmax = (uint64_t)(max64(4 * C * C, V * C) / (q * q));
  if (st >= 0) st = tp_alloc(b, TESSEL_MEM_SCRATCH, (uint64_t)(rows * C) * es, "gathered head input", &t->xg);
  if (st >= 0) st = tp_alloc(b, TESSEL_MEM_SCRATCH, (uint64_t)(V * C / (q * q)) * es, "gathered wte", &t->wg);
  if (st >= 0) st = tp_alloc(b, TESSEL_MEM_SCRATCH, wide * es, "partial products", &t->ypart);
  if (st >= 0) st = tp_alloc(b, TESSEL_MEM_SCRATCH, wide * es, "gathered output gradients", &t->dyg);
  if (st >= 0) st = tp_alloc(b, TESSEL_MEM_SCRATCH, (uint64_t)(rows * 4 * C) * es, "input-gradient partials", &t->dxpart);
  if (st >= 0)
    st = tp_alloc(b, TESSEL_MEM_SCRATCH, wmax * sizeof(float), "weight-gradient partials", (void **)&t->dwpart);
  if (st >= 0)
    st = tp_alloc(b, TESSEL_MEM_SCRATCH, wmax / (uint64_t)q * sizeof(float), "weight-gradient shares",
                  (void **)&t->dwshare);
  return st;
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
}

/* The product of one block linear, with its kept operands. */
static tessel_status linear_mm(tp3d *t, const tessel_op_ctx *c, const tessel_linear_args *a, tp3d_mm *mm) {
  int idx = linear_index(a->which), gather_i = idx == 0 || idx == 2;
  if (c->layer < 0 || c->layer >= t->b.dims.layers || a->w->local_shape[0] * t->q != a->inp_cols ||
      a->w->local_shape[1] != a->out_cols)
    return t->b.api->set_error(t->b.host, TESSEL_E_INTERNAL,
                               "tp3d: linear of layer %d with a %lldx%lld weight piece for %lld -> %lld columns", c->layer,
                               (long long)a->w->local_shape[0], (long long)a->w->local_shape[1],
                               (long long)a->inp_cols, (long long)a->out_cols);
  const tp3d_saved *kept = &t->saved[c->layer * 4 + idx];
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

static tessel_status layernorm_forward(void *inst, const tessel_op_ctx *c, const tessel_layernorm_args *a) {
  tp3d *t = inst;
  return tp_layernorm_forward(&t->b, t->g_j, t->q, c, a);
}

static tessel_status layernorm_backward(void *inst, const tessel_op_ctx *c, const tessel_layernorm_args *a) {
  tp3d *t = inst;
  return tp_layernorm_backward(&t->b, t->g_j, t->q, c, a);
}

/* Tokens of rows block k: the core hands every rank the whole micro-batch. */
static const int32_t *block_tokens(const tp3d *t, const int32_t *tokens) {
  return tokens + (int64_t)t->ck * t->q * t->rows;
}

static tessel_status embedding_forward(void *inst, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  tp3d *t = inst;
  const tessel_host_api *api = t->b.api;
  int64_t q = t->q, width = t->b.dims.channels / q, vocab = t->b.dims.vocab_size / q;
  tessel_status st = api->comm->all_gather(t->b.host, t->g_k, a->wte->data, t->wg, (uint64_t)(vocab * width / q),
                                           t->b.act, NULL);
  /* wpe is added once per rows block: by i = 0, before the sum */
  if (st >= 0)
    st = api->kernels->embedding_forward(t->b.host, c->stream, NULL, t->ypart, block_tokens(t, a->tokens), t->wg,
                                         t->ci == 0 ? a->wpe->data : NULL, a->batch / q, a->seq, width, t->ci * vocab,
                                         vocab);
  if (st < 0) return st;
  return api->comm->reduce_scatter(t->b.host, t->g_i, t->ypart, a->out, (uint64_t)(t->rows * width), t->b.act,
                                   TESSEL_SUM, NULL);
}

static tessel_status embedding_backward(void *inst, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  tp3d *t = inst;
  const tessel_host_api *api = t->b.api;
  int64_t q = t->q, width = t->b.dims.channels / q, vocab = t->b.dims.vocab_size / q, share = vocab * width / q;
  tessel_stream *s = c->stream;
  tessel_status st = api->comm->all_gather(t->b.host, t->g_i, a->dout, t->dyg, (uint64_t)(t->rows * width), t->b.act,
                                           NULL);
  /* the gathered gradient covers rows block k: one dwpe per block, from i = 0 */
  if (st >= 0) st = api->kernels->scale(t->b.host, s, TESSEL_F32, t->dwpart, 0.0f, vocab * width);
  if (st >= 0)
    st = api->kernels->embedding_backward(t->b.host, s, t->dwpart, t->ci == 0 ? a->wpe->grad : NULL, t->dyg,
                                          block_tokens(t, a->tokens), a->batch / q, a->seq, width, t->ci * vocab, vocab);
  if (st >= 0)
    st = api->comm->reduce_scatter(t->b.host, t->g_k, t->dwpart, t->dwshare, (uint64_t)share, TESSEL_F32, TESSEL_SUM,
                                   NULL);
  if (st < 0) return st;
  return api->kernels->axpy(t->b.host, s, TESSEL_F32, a->wte->grad, 1.0f, t->dwshare, share);
}

static tessel_status head(void *inst, const tessel_op_ctx *c, const tessel_head_args *a) {
  tp3d *t = inst;
  const tessel_host_api *api = t->b.api;
  int64_t vocab = t->b.dims.vocab_size / t->q;
  tp3d_mm mm = {.in = t->g_i, .out = t->g_j, .rows = a->rows, .k = a->width, .n = vocab, .wt = 1, .xg = t->xg,
                .wg = t->wg};
  const int32_t *targets = a->targets + (int64_t)(t->ck * t->q + t->cj) * a->rows;
  tessel_status st = tp3d_mm_forward(t, c->stream, &mm, a->inp, a->wte->data, a->logits);
  if (st >= 0)
    st = api->kernels->cross_entropy(t->b.host, c->stream, t->g_i, a->losses, a->logits, targets, a->rows,
                                     t->ci * vocab, vocab, a->dinp ? a->dloss : 0.0f);
  if (st < 0 || !a->dinp) return st;
  /* the logits now hold dlogits */
  return tp3d_mm_backward(t, c->stream, &mm, a->logits, a->dinp, a->wte->grad);
}

const tessel_layer_ops tp3d_layer_ops = {
    .size = sizeof(tessel_layer_ops),
    .linear_forward = linear_forward,
    .linear_backward = linear_backward,
    .layernorm_forward = layernorm_forward,
    .layernorm_backward = layernorm_backward,
    .embedding_forward = embedding_forward,
    .embedding_backward = embedding_backward,
    .head = head,
};
