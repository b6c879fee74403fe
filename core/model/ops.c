/* core/model/ops.c — the core's local versions of the layer primitives.
**
** These are what a run without tensor parallelism uses, and what a
** strategy's own primitives leave to the core. */
#include "common/util.h"
#include "compute/compute.h"
#include "model/internal.h"

static tsl_status be_status(int rc, const char *what) {
  return rc < 0 ? tsl_error_wrap(rc, "%s", what) : TESSEL_OK;
}

tsl_status tsl_op_linear_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_linear_args *a) {
  tsl_backend *be = &m->rt->be;
  /* out[rows, oc] = inp[rows, ic] · w[ic, oc] + b */
  return be_status(be->linear_forward(be, (tsl_stream *)c->stream, a->out, a->inp, a->w->data,
                                      a->b ? a->b->data : NULL, a->inp_rows, a->inp_cols, a->out_cols),
                   "linear forward");
}

tsl_status tsl_op_linear_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_linear_args *a) {
  tsl_backend *be = &m->rt->be;
  return be_status(be->linear_backward(be, (tsl_stream *)c->stream, a->dinp, a->w->grad, a->b ? a->b->grad : NULL,
                                       a->dout, a->inp, a->w->data, a->inp_rows, a->inp_cols, a->out_cols),
                   "linear backward");
}

tsl_status tsl_op_norm_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_norm_args *a) {
  return tsl_norm_forward(m->rt, (tsl_stream *)c->stream, NULL, a, a->cols);
}

tsl_status tsl_op_norm_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_norm_args *a) {
  return tsl_norm_backward(m->rt, (tsl_stream *)c->stream, NULL, a, a->cols);
}

tsl_status tsl_op_attention_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_attention_args *a) {
  return tsl_attention_forward(m->rt, (tsl_stream *)c->stream, a);
}

tsl_status tsl_op_attention_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_attention_args *a) {
  return tsl_attention_backward(m->rt, (tsl_stream *)c->stream, a);
}

tsl_status tsl_op_embedding_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  return tsl_embedding_forward(m->rt, (tsl_stream *)c->stream, NULL, a->out, a->tokens, a->table->data,
                               a->positions ? a->positions->data : NULL, a->batch, a->seq, m->geo.width, 0,
                               m->dims.dim[TESSEL_DIM_VOCAB]);
}

tsl_status tsl_op_embedding_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  return tsl_embedding_backward(m->rt, (tsl_stream *)c->stream, a->table->grad, a->positions ? a->positions->grad : NULL,
                                a->dout, a->tokens, a->batch, a->seq, m->geo.width, 0, m->dims.dim[TESSEL_DIM_VOCAB]);
}

/* Rows of one block of the core's head: logits of at most 64 MiB on the CPU
** (1 GiB on a backend with memory of its own, where fewer, larger products
** and kernel launches matter more), at least 64 rows so that each block's
** products stay large, a multiple of 16. */
int64_t tsl_op_head_block_rows(const tsl_model *m) {
  uint64_t row = (uint64_t)m->geo.vocab * tessel_dtype_size(m->dims.act_dtype);
  uint64_t budget = m->rt->be.is_device_memory ? 1ull << 30 : 64ull << 20;
  int64_t block = (int64_t)(budget / (row ? row : 1)) & ~(int64_t)15;
  return TSL_MIN(m->geo.rows, TSL_MAX(block, 64));
}

/* logits = inp · Wᵀ; cross-entropy; in training dinp = dlogits · W and
** dW += dlogitsᵀ · inp, with dlogits written over the logits. Block by
** block of rows (fusion: the logits of a block are made, turned into
** their gradient and used while they are in cache, and never exist for
** all rows at once: GPT-2's 50 257-token vocabulary at T = 1024 would take
** 196 MiB). */
tsl_status tsl_op_head(tsl_model *m, const tessel_op_ctx *c, const tessel_head_args *a) {
  tsl_status st;
  tsl_backend *be = &m->rt->be;
  tsl_stream *s = (tsl_stream *)c->stream;
  int64_t V = m->dims.dim[TESSEL_DIM_VOCAB], C = a->width, R = a->rows, block = tsl_op_head_block_rows(m);
  uint64_t es = tessel_dtype_size(be->act_dtype);
  for (int64_t r0 = 0; r0 < R; r0 += block) {
    int64_t n = TSL_MIN(block, R - r0);
    const char *inp = (const char *)a->inp + (uint64_t)(r0 * C) * es;
    TSL_TRY(st, be_status(be->gemm(be, s, 0, 1, n, V, C, 1.0f, inp, C, a->weight->data, C, 0.0f, a->logits, V,
                                   be->act_dtype), "head logits"));
    TSL_TRY(st, tsl_cross_entropy(m->rt, s, NULL, a->losses + r0, a->logits, a->targets + r0, n, 0, V,
                                  a->dinp ? a->dloss : 0.0f));
    if (!a->dinp) continue;
    TSL_TRY(st, be_status(be->gemm(be, s, 0, 0, n, C, V, 1.0f, a->logits, V, a->weight->data, C, 0.0f,
                                   (char *)a->dinp + (uint64_t)(r0 * C) * es, C, be->act_dtype),
                          "head input gradient"));
    TSL_TRY(st, be_status(be->gemm(be, s, 1, 0, V, C, n, 1.0f, a->logits, V, inp, C, 1.0f, a->weight->grad, C,
                                   TESSEL_F32), "head weight gradient"));
  }
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_op_head_logits(tsl_model *m, const void *inp, const tessel_param_view *w, int64_t rows, void *out) {
  tsl_backend *be = &m->rt->be;
  int64_t V = m->dims.dim[TESSEL_DIM_VOCAB], C = m->geo.width;
  return be_status(be->gemm(be, m->rt->compute, 0, 1, rows, V, C, 1.0f, inp, C, w->data, C, 0.0f, out, V,
                            be->act_dtype), "head logits");
}
