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

tsl_status tsl_layernorm_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, void *out, float *mean,
                                 float *rstd, const void *inp, const void *w, const void *b, int64_t rows,
                                 int64_t cols, int64_t total_cols) {
  tsl_status st;
  double *sums;
  if (!g || tsl_group_size(g) == 1) {
    KCALL(st, rt, layernorm_forward, s, out, mean, rstd, inp, w, b, rows, cols);
    return TESSEL_OK;
  }
  TSL_TRY(st, tsl_scratch(rt, sizeof(double) * 2 * (uint64_t)rows, (void **)&sums));
  KCALL(st, rt, layernorm_stats, s, sums, inp, rows, cols);
  TSL_TRY(st, group_sum(rt, g, sums, 2 * (uint64_t)rows, TESSEL_F64, TESSEL_SUM));
  KCALL(st, rt, layernorm_apply, s, out, mean, rstd, sums, inp, w, b, rows, cols, total_cols);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_layernorm_backward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, void *dinp, float *dw,
                                  float *db, const void *dout, const void *inp, const void *w,
                                  const float *mean, const float *rstd, int64_t rows, int64_t cols,
                                  int64_t total_cols) {
  tsl_status st;
  double *sums;
  if (!g || tsl_group_size(g) == 1) {
    KCALL(st, rt, layernorm_backward, s, dinp, dw, db, dout, inp, w, mean, rstd, rows, cols);
    return TESSEL_OK;
  }
  TSL_TRY(st, tsl_scratch(rt, sizeof(double) * 2 * (uint64_t)rows, (void **)&sums));
  KCALL(st, rt, layernorm_backward_stats, s, sums, dw, db, dout, inp, w, mean, rstd, rows, cols);
  TSL_TRY(st, group_sum(rt, g, sums, 2 * (uint64_t)rows, TESSEL_F64, TESSEL_SUM));
  KCALL(st, rt, layernorm_backward_apply, s, dinp, sums, dout, inp, w, mean, rstd, rows, cols, total_cols);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_embedding_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, void *out,
                                 const int32_t *tokens, const void *wte, const void *wpe, int64_t batch,
                                 int64_t seq, int64_t width, int64_t vocab_begin, int64_t vocab) {
  tsl_status st;
  int64_t rows = batch * seq;
  KCALL(st, rt, embed_tokens_forward, s, out, tokens, wte, rows, width, vocab_begin, vocab);
  if (g && tsl_group_size(g) > 1)
    TSL_TRY(st, group_sum(rt, g, out, (uint64_t)(rows * width), rt->be.act_dtype, TESSEL_SUM));
  if (wpe) KCALL(st, rt, embed_positions_forward, s, out, wpe, batch, seq, width);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_embedding_backward(tsl_runtime *rt, tsl_stream *s, float *dwte, float *dwpe, const void *dout,
                                  const int32_t *tokens, int64_t batch, int64_t seq, int64_t width,
                                  int64_t vocab_begin, int64_t vocab) {
  tsl_status st;
  KCALL(st, rt, embed_tokens_backward, s, dwte, dout, tokens, batch * seq, width, vocab_begin, vocab);
  if (dwpe) KCALL(st, rt, embed_positions_backward, s, dwpe, dout, batch, seq, width);
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
  KCALL(st, rt, ce_rowmax, s, rowmax, logits, rows, vocab);
  if (split) TSL_TRY(st, group_sum(rt, g, rowmax, (uint64_t)rows, TESSEL_F32, TESSEL_MAX));
  KCALL(st, rt, ce_sums, s, sums, logits, rowmax, targets, rows, vocab_begin, vocab);
  if (split) TSL_TRY(st, group_sum(rt, g, sums, 2 * (uint64_t)rows, TESSEL_F64, TESSEL_SUM));
  KCALL(st, rt, ce_finish, s, losses, logits, rowmax, sums, targets, rows, vocab_begin, vocab, dlogits_scale);
  return TESSEL_OK;
fail:
  return st;
}

/* The fused c_attn output qkv [batch·T, 3C] (C = heads·hs on this rank) as
** the backend's q, k, v: three C-wide column blocks of rows 3C apart. */
static tsl_attn_shape fused_qkv_shape(const tessel_attention_args *a) {
  const int64_t C = a->heads * a->head_size;
  tsl_attn_shape sh = {.batch = a->batch, .seq = a->seq, .heads = a->heads, .kv_heads = a->heads,
                       .head_size = a->head_size, .ldq = 3 * C, .ldk = 3 * C, .ldv = 3 * C};
  return sh;
}

static uint64_t act_bytes(const tsl_runtime *rt) { return rt->be.act_dtype == TESSEL_F32 ? 4 : 2; }

tsl_status tsl_attention_forward(tsl_runtime *rt, tsl_stream *s, const tessel_attention_args *a) {
  tsl_status st;
  const tsl_attn_shape sh = fused_qkv_shape(a);
  const char *q = a->qkv;
  const uint64_t C = (uint64_t)sh.heads * (uint64_t)sh.head_size * act_bytes(rt);
  KCALL(st, rt, attention_forward, s, a->out, a->lse, q, q + C, q + 2 * C, &sh);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_attention_backward(tsl_runtime *rt, tsl_stream *s, const tessel_attention_args *a) {
  tsl_status st;
  const tsl_attn_shape sh = fused_qkv_shape(a);
  const char *q = a->qkv;
  char *dq = a->dqkv;
  const uint64_t C = (uint64_t)sh.heads * (uint64_t)sh.head_size * act_bytes(rt);
  KCALL(st, rt, attention_backward, s, dq, dq + C, dq + 2 * C, a->dout, a->out, a->lse, q, q + C, q + 2 * C,
        &sh);
  return TESSEL_OK;
fail:
  return st;
}
