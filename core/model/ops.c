/* core/model/ops.c — the core's local versions of the five layer primitives.
**
** These are what a run without tensor parallelism uses, and what a
** strategy's own primitives fall back on for the local part of the math. */
#include "compute/compute.h"
#include "model/gpt.h"

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

tsl_status tsl_op_layernorm_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_layernorm_args *a) {
  return tsl_layernorm_forward(m->rt, (tsl_stream *)c->stream, NULL, a->out, a->mean, a->rstd, a->inp,
                               a->w->data, a->b->data, a->rows, a->cols, a->cols);
}

tsl_status tsl_op_layernorm_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_layernorm_args *a) {
  return tsl_layernorm_backward(m->rt, (tsl_stream *)c->stream, NULL, a->dinp, a->w->grad, a->b->grad, a->dout,
                                a->inp, a->w->data, a->mean, a->rstd, a->rows, a->cols, a->cols);
}

tsl_status tsl_op_attention_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_attention_args *a) {
  return tsl_attention_forward(m->rt, (tsl_stream *)c->stream, a);
}

tsl_status tsl_op_attention_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_attention_args *a) {
  return tsl_attention_backward(m->rt, (tsl_stream *)c->stream, a);
}

tsl_status tsl_op_embedding_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  return tsl_embedding_forward(m->rt, (tsl_stream *)c->stream, NULL, a->out, a->tokens, a->wte->data,
                               a->wpe->data, a->batch, a->seq, m->dims.channels, 0, m->dims.vocab_size);
}

tsl_status tsl_op_embedding_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_embedding_args *a) {
  return tsl_embedding_backward(m->rt, (tsl_stream *)c->stream, a->wte->grad, a->wpe->grad, a->dout, a->tokens,
                                a->batch, a->seq, m->dims.channels, 0, m->dims.vocab_size);
}

/* logits = inp · wteᵀ; cross-entropy; in training dinp = dlogits · wte and
** dwte += dlogitsᵀ · inp, with dlogits written over the logits. */
tsl_status tsl_op_head(tsl_model *m, const tessel_op_ctx *c, const tessel_head_args *a) {
  tsl_status st;
  tsl_backend *be = &m->rt->be;
  tsl_stream *s = (tsl_stream *)c->stream;
  int64_t V = m->dims.vocab_size, C = a->width, R = a->rows;
  TSL_TRY(st, be_status(be->gemm(be, s, 0, 1, R, V, C, 1.0f, a->inp, C, a->wte->data, C, 0.0f, a->logits, V,
                                 be->act_dtype), "head logits"));
  TSL_TRY(st, tsl_cross_entropy(m->rt, s, NULL, a->losses, a->logits, a->targets, R, 0, V, a->dinp ? a->dloss : 0.0f));
  if (!a->dinp) return TESSEL_OK;
  TSL_TRY(st, be_status(be->gemm(be, s, 0, 0, R, C, V, 1.0f, a->logits, V, a->wte->data, C, 0.0f, a->dinp, C,
                                 be->act_dtype), "head input gradient"));
  TSL_TRY(st, be_status(be->gemm(be, s, 1, 0, V, C, R, 1.0f, a->logits, V, a->inp, C, 1.0f, a->wte->grad, C,
                                 TESSEL_F32), "head weight gradient"));
  return TESSEL_OK;
fail:
  return st;
}
