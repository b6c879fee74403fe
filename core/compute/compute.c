/* core/compute/compute.c */
#include "compute.h"

#include "common/util.h"

/* Translate a backend's negative return into a status with a message. */
static tsl_status kernel_status(int rc, const char *kernel) {
  if (rc >= 0) return TESSEL_OK;
  const char *msg = tsl_error_message();
  if (msg[0]) return tsl_error_wrap(rc, "kernel %s", kernel);
  return tsl_error(rc, "kernel %s failed (%s)", kernel, tsl_status_name(rc));
}

#define KCALL(st, rt, fn, ...)                                                     \
  do {                                                                             \
    tsl_error_clear();                                                             \
    if (((st) = kernel_status((rt)->be.fn(&(rt)->be, __VA_ARGS__), #fn)) < 0) goto fail; \
  } while (0)

tsl_status tsl_scratch(tsl_runtime *rt, uint64_t bytes, void **out) {
  if (bytes > rt->scratch_bytes) {
    uint64_t grow = TSL_MAX(bytes, 2 * rt->scratch_bytes);
    void *p;
    tsl_status st = tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, grow, "reduction scratch", &p);
    if (st < 0) return st;
    tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, rt->scratch);
    rt->scratch = p;
    rt->scratch_bytes = grow;
  }
  *out = rt->scratch;
  return TESSEL_OK;
}

/* Reduce per-row statistics over a group (the comm front end orders it
** after the kernels that produced them). */
static tsl_status group_sum(tsl_runtime *rt, tessel_group *g, void *buf, uint64_t n, tessel_dtype dt,
                            tessel_redop op) {
  return tsl_all_reduce(rt->comm, g, buf, buf, n, dt, op, NULL);
}

static tsl_status layernorm_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, const tessel_norm_args *a,
                                    int64_t total) {
  tsl_status st;
  double *sums;
  const void *b = a->b ? a->b->data : NULL;
  if (!g || tsl_group_size(g) == 1) {
    KCALL(st, rt, layernorm_forward, s, a->out, a->mean, a->rstd, a->inp, a->w->data, b, a->rows, a->cols, a->eps);
    return TESSEL_OK;
  }
  TSL_TRY(st, tsl_scratch(rt, sizeof(double) * 2 * (uint64_t)a->rows, (void **)&sums));
  KCALL(st, rt, layernorm_stats, s, sums, a->inp, a->rows, a->cols);
  TSL_TRY(st, group_sum(rt, g, sums, 2 * (uint64_t)a->rows, TESSEL_F64, TESSEL_SUM));
  KCALL(st, rt, layernorm_apply, s, a->out, a->mean, a->rstd, sums, a->inp, a->w->data, b, a->rows, a->cols, total,
        a->eps);
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status layernorm_backward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, const tessel_norm_args *a,
                                     int64_t total) {
  tsl_status st;
  double *sums;
  float *db = a->b ? a->b->grad : NULL;
  if (!g || tsl_group_size(g) == 1) {
    KCALL(st, rt, layernorm_backward, s, a->dinp, a->w->grad, db, a->dout, a->inp, a->w->data, a->mean, a->rstd,
          a->rows, a->cols);
    return TESSEL_OK;
  }
  TSL_TRY(st, tsl_scratch(rt, sizeof(double) * 2 * (uint64_t)a->rows, (void **)&sums));
  KCALL(st, rt, layernorm_backward_stats, s, sums, a->w->grad, db, a->dout, a->inp, a->w->data, a->mean, a->rstd,
        a->rows, a->cols);
  TSL_TRY(st, group_sum(rt, g, sums, 2 * (uint64_t)a->rows, TESSEL_F64, TESSEL_SUM));
  KCALL(st, rt, layernorm_backward_apply, s, a->dinp, sums, a->dout, a->inp, a->w->data, a->mean, a->rstd, a->rows,
        a->cols, total);
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status rmsnorm_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, const tessel_norm_args *a,
                                  int64_t total) {
  tsl_status st;
  double *sums;
  if (!g || tsl_group_size(g) == 1) {
    KCALL(st, rt, rmsnorm_forward, s, a->out, a->rstd, a->inp, a->w->data, a->rows, a->cols, a->eps);
    return TESSEL_OK;
  }
  TSL_TRY(st, tsl_scratch(rt, sizeof(double) * (uint64_t)a->rows, (void **)&sums));
  KCALL(st, rt, rmsnorm_stats, s, sums, a->inp, a->rows, a->cols);
  TSL_TRY(st, group_sum(rt, g, sums, (uint64_t)a->rows, TESSEL_F64, TESSEL_SUM));
  KCALL(st, rt, rmsnorm_apply, s, a->out, a->rstd, sums, a->inp, a->w->data, a->rows, a->cols, total, a->eps);
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status rmsnorm_backward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, const tessel_norm_args *a,
                                   int64_t total) {
  tsl_status st;
  double *sums;
  if (!g || tsl_group_size(g) == 1) {
    KCALL(st, rt, rmsnorm_backward, s, a->dinp, a->w->grad, a->dout, a->inp, a->w->data, a->rstd, a->rows, a->cols);
    return TESSEL_OK;
  }
  TSL_TRY(st, tsl_scratch(rt, sizeof(double) * (uint64_t)a->rows, (void **)&sums));
  KCALL(st, rt, rmsnorm_backward_stats, s, sums, a->w->grad, a->dout, a->inp, a->w->data, a->rstd, a->rows, a->cols);
  TSL_TRY(st, group_sum(rt, g, sums, (uint64_t)a->rows, TESSEL_F64, TESSEL_SUM));
  KCALL(st, rt, rmsnorm_backward_apply, s, a->dinp, sums, a->dout, a->inp, a->w->data, a->rstd, a->rows, a->cols,
        total);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_norm_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, const tessel_norm_args *a,
                            int64_t total_cols) {
  return a->variant == TESSEL_NORM_RMS ? rmsnorm_forward(rt, s, g, a, total_cols)
                                       : layernorm_forward(rt, s, g, a, total_cols);
}

tsl_status tsl_norm_backward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, const tessel_norm_args *a,
                             int64_t total_cols) {
  return a->variant == TESSEL_NORM_RMS ? rmsnorm_backward(rt, s, g, a, total_cols)
                                       : layernorm_backward(rt, s, g, a, total_cols);
}

/* The kernels' shape of an attention call. Args from a plugin built before
** ABI 2.4 have no window; such a plugin's attention hooks are refused on a
** windowed model (model.c), so the none they read as is right. */
static tsl_attn_shape attn_shape(const tessel_attention_args *a) {
  const int64_t window = TESSEL_HAS(a, tessel_attention_args, window) ? a->window : 0;
  return (tsl_attn_shape){a->batch, a->seq, a->heads, a->kv_heads, a->head_size,
                          a->ldq, a->ldk, a->ldv, 0, 0, window};
}

tsl_status tsl_attention_forward(tsl_runtime *rt, tsl_stream *s, const tessel_attention_args *a) {
  tsl_status st;
  tsl_attn_shape sh = attn_shape(a);
  KCALL(st, rt, attention_forward, s, a->out, a->lse, a->q, a->k, a->v, &sh);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_attention_backward(tsl_runtime *rt, tsl_stream *s, const tessel_attention_args *a) {
  tsl_status st;
  tsl_attn_shape sh = attn_shape(a);
  KCALL(st, rt, attention_backward, s, a->dq, a->dk, a->dv, a->dout, a->out, a->lse, a->q, a->k, a->v, &sh);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_activation_forward(tsl_runtime *rt, tsl_stream *s, int variant, void *out, const void *a,
                                  const void *b, int64_t n) {
  tsl_status st;
  if (variant == TESSEL_ACT_SWIGLU)
    KCALL(st, rt, swiglu_forward, s, out, a, b, n);
  else
    KCALL(st, rt, gelu_forward, s, out, a, n);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_activation_backward(tsl_runtime *rt, tsl_stream *s, int variant, void *da, void *db,
                                   const void *dout, const void *a, const void *b, int64_t n) {
  tsl_status st;
  if (variant == TESSEL_ACT_SWIGLU)
    KCALL(st, rt, swiglu_backward, s, da, db, dout, a, b, n);
  else
    KCALL(st, rt, gelu_backward, s, da, a, dout, n);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_embedding_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, void *out,
                                 const int32_t *tokens, const void *table, const void *positions, int64_t batch,
                                 int64_t seq, int64_t width, int64_t vocab_begin, int64_t vocab) {
  tsl_status st;
  int64_t rows = batch * seq;
  KCALL(st, rt, embed_tokens_forward, s, out, tokens, table, rows, width, vocab_begin, vocab);
  if (g && tsl_group_size(g) > 1)
    TSL_TRY(st, group_sum(rt, g, out, (uint64_t)(rows * width), rt->be.act_dtype, TESSEL_SUM));
  if (positions) KCALL(st, rt, embed_positions_forward, s, out, positions, batch, seq, width);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_embedding_backward(tsl_runtime *rt, tsl_stream *s, float *dtable, float *dpositions,
                                  const void *dout, const int32_t *tokens, int64_t batch, int64_t seq,
                                  int64_t width, int64_t vocab_begin, int64_t vocab) {
  tsl_status st;
  KCALL(st, rt, embed_tokens_backward, s, dtable, dout, tokens, batch * seq, width, vocab_begin, vocab);
  if (dpositions) KCALL(st, rt, embed_positions_backward, s, dpositions, dout, batch, seq, width);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_cross_entropy(tsl_runtime *rt, tsl_stream *s, tessel_group *g, float *losses, void *logits,
                             const int32_t *targets, int64_t rows, int64_t vocab_begin, int64_t vocab,
                             float dlogits_scale) {
  tsl_status st;
  char *scratch;
  int split = g && tsl_group_size(g) > 1;
  /* rowmax [rows] fp32, padded to 8 bytes, then sums [rows, 2] fp64 */
  uint64_t max_bytes = ((uint64_t)rows * sizeof(float) + 7) & ~7ull;
  TSL_TRY(st, tsl_scratch(rt, max_bytes + 2 * sizeof(double) * (uint64_t)rows, (void **)&scratch));
  float *rowmax = (float *)scratch;
  double *sums = (double *)(scratch + max_bytes);
  /* columns of this slice at and past the real vocabulary are padding */
  int64_t limit = rt->vocab_valid ? rt->vocab_valid : vocab_begin + vocab;
  int64_t valid = TSL_MAX(0, TSL_MIN(vocab, limit - vocab_begin));
  if (!split && vocab_begin == 0 && rt->be.ce_fused) {
    KCALL(st, rt, ce_fused, s, losses, logits, targets, rows, vocab, valid, dlogits_scale);
    return TESSEL_OK;
  }
  KCALL(st, rt, ce_rowmax, s, rowmax, logits, rows, vocab, valid);
  if (split) TSL_TRY(st, group_sum(rt, g, rowmax, (uint64_t)rows, TESSEL_F32, TESSEL_MAX));
  KCALL(st, rt, ce_sums, s, sums, logits, rowmax, targets, rows, vocab_begin, vocab, valid);
  if (split) TSL_TRY(st, group_sum(rt, g, sums, 2 * (uint64_t)rows, TESSEL_F64, TESSEL_SUM));
  KCALL(st, rt, ce_finish, s, losses, logits, rowmax, sums, targets, rows, vocab_begin, vocab, valid, dlogits_scale);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_optim_update(tsl_runtime *rt, tsl_stream *s, const tessel_optim_update *u, const tessel_optim_step *hp) {
  const tsl_settings *cfg = &rt->settings;
  float wd = u->no_decay ? 0.0f : (float)cfg->optim.weight_decay;
  int rc = rt->be.adamw(&rt->be, s, u->master, u->work, u->grad, u->slots[0], u->slots[1], u->n, hp->lr,
                        (float)cfg->optim.beta1, (float)cfg->optim.beta2, (float)cfg->optim.eps, wd, hp->grad_scale,
                        hp->step);
  return rc < 0 ? tsl_error_wrap(rc, "AdamW") : TESSEL_OK;
}
