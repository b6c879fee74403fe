/* core/compute/host_kernels.c — tessel_kernel_api: the kernels a plugin
** composes its layer primitives from. Thin: each entry checks that devices
** exist and forwards to the backend or to compute.c. */
#include <stdarg.h>
#include <stdio.h>

#include "ckpt/safetensors.h"
#include "common/util.h"
#include "compute/compute.h"

#define BE(h) (&(h)->rt->be)
#define S(s) ((tsl_stream *)(s))

static tsl_status ready(tessel_host *h) {
  if (h->rt->be_ready) return TESSEL_OK;
  return tsl_error(TESSEL_E_UNSUPPORTED, "kernels are not available before the run has built its devices");
}

#define READY(h)                               \
  do {                                         \
    tsl_status ready_st_ = ready(h);           \
    if (ready_st_ < 0) return ready_st_;       \
  } while (0)

/* The arguments of an elementwise kernel: a dtype of the enum, a count ≥ 0. */
static tsl_status check_span(const char *kernel, tessel_dtype dt, int64_t n) {
  if (!tessel_dtype_size(dt))
    return tsl_error(TESSEL_E_INTERNAL, "kernels->%s: dtype %d is not a tessel_dtype", kernel, (int)dt);
  if (n < 0)
    return tsl_error(TESSEL_E_INTERNAL, "kernels->%s: the element count %lld is negative", kernel, (long long)n);
  return TESSEL_OK;
}

/* A backend kernel's status, named: the backends return bare statuses, so
** the failure says which kernel with what (`fmt`: the call and its
** arguments) on which backend. A message the backend left is kept. */
static tsl_status named(tessel_host *h, tsl_status st, const char *fmt, ...) TSL_PRINTF(3, 4);
static tsl_status named(tessel_host *h, tsl_status st, const char *fmt, ...) {
  char call[256];
  va_list ap;
  if (st >= 0) return st;
  va_start(ap, fmt);
  vsnprintf(call, sizeof call, fmt, ap);
  va_end(ap);
  if (tsl_error_message()[0]) return tsl_error_wrap(st, "kernels->%s", call);
  if (st == TESSEL_E_UNSUPPORTED)
    return tsl_error(st, "kernels->%s: the %s backend does not support this kernel in these dtypes", call, BE(h)->name);
  return tsl_error(st, "kernels->%s failed on the %s backend: %s", call, BE(h)->name, tsl_status_name(st));
}

/* A backend call, named when it fails: the error is cleared first, so a
** message after it is the backend's own. */
#define NAMED(h, status, ...) (tsl_error_clear(), named((h), (status), __VA_ARGS__))

static tsl_status k_gemm(tessel_host *h, tessel_stream *s, int ta, int tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const void *a, const void *b, float beta, void *c, tessel_dtype c_dtype) {
  READY(h);
  /* packed row-major operands: the leading dimension is the stored row length */
  return NAMED(h, BE(h)->gemm(BE(h), S(s), ta, tb, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, c, n, c_dtype),
               "gemm(%lld × %lld × %lld into %s)", (long long)m, (long long)n, (long long)k, tsl_dtype_name(c_dtype));
}

static tsl_status k_linear_forward(tessel_host *h, tessel_stream *s, void *out, const void *inp, const void *w,
                                   const void *bias, int64_t rows, int64_t ic, int64_t oc) {
  READY(h);
  return NAMED(h, BE(h)->linear_forward(BE(h), S(s), out, inp, w, bias, rows, ic, oc),
               "linear_forward(%lld rows, %lld → %lld)", (long long)rows, (long long)ic, (long long)oc);
}

static tsl_status k_linear_backward(tessel_host *h, tessel_stream *s, void *dinp, float *dw, float *db,
                                    const void *dout, const void *inp, const void *w, int64_t rows, int64_t ic,
                                    int64_t oc) {
  READY(h);
  return NAMED(h, BE(h)->linear_backward(BE(h), S(s), dinp, dw, db, dout, inp, w, rows, ic, oc),
               "linear_backward(%lld rows, %lld → %lld)", (long long)rows, (long long)ic, (long long)oc);
}

static tsl_status k_norm_forward(tessel_host *h, tessel_stream *s, tessel_group *g, const tessel_norm_args *a,
                                 int64_t total_cols) {
  READY(h);
  return tsl_norm_forward(h->rt, S(s), g, a, total_cols);
}

static tsl_status k_norm_backward(tessel_host *h, tessel_stream *s, tessel_group *g, const tessel_norm_args *a,
                                  int64_t total_cols) {
  READY(h);
  return tsl_norm_backward(h->rt, S(s), g, a, total_cols);
}

static tsl_status k_attention_forward(tessel_host *h, tessel_stream *s, const tessel_attention_args *a) {
  READY(h);
  return tsl_attention_forward(h->rt, S(s), a);
}

static tsl_status k_attention_backward(tessel_host *h, tessel_stream *s, const tessel_attention_args *a) {
  READY(h);
  return tsl_attention_backward(h->rt, S(s), a);
}

static tsl_status k_rotary(tessel_host *h, tessel_stream *s, void *x, int64_t batch, int64_t seq, int64_t heads,
                           int64_t head_size, int64_t ld, int64_t pos_offset, float theta, int inverse) {
  READY(h);
  return BE(h)->rope(BE(h), S(s), x, batch, seq, heads, head_size, ld, pos_offset, (tsl_rope_freqs){.theta = theta},
                     inverse);
}

static tsl_status k_activation_forward(tessel_host *h, tessel_stream *s, int variant, void *out, const void *a,
                                       const void *b, int64_t n) {
  READY(h);
  return tsl_activation_forward(h->rt, S(s), variant, out, a, b, n);
}

static tsl_status k_activation_backward(tessel_host *h, tessel_stream *s, int variant, void *da, void *db,
                                        const void *dout, const void *a, const void *b, int64_t n) {
  READY(h);
  return tsl_activation_backward(h->rt, S(s), variant, da, db, dout, a, b, n);
}

static tsl_status k_add(tessel_host *h, tessel_stream *s, void *out, const void *a, const void *b, int64_t n) {
  READY(h);
  return NAMED(h, BE(h)->add(BE(h), S(s), out, a, b, n), "add(%lld elements)", (long long)n);
}

static tsl_status k_axpy(tessel_host *h, tessel_stream *s, tessel_dtype dt, void *y, float alpha, const void *x,
                         int64_t n) {
  READY(h);
  tsl_status st = check_span("axpy", dt, n);
  if (st < 0) return st;
  return NAMED(h, BE(h)->axpy(BE(h), S(s), dt, y, alpha, x, n), "axpy(%s, %lld elements)", tsl_dtype_name(dt),
               (long long)n);
}

static tsl_status k_scale(tessel_host *h, tessel_stream *s, tessel_dtype dt, void *x, float alpha, int64_t n) {
  READY(h);
  tsl_status st = check_span("scale", dt, n);
  if (st < 0) return st;
  return NAMED(h, BE(h)->scale(BE(h), S(s), dt, x, alpha, n), "scale(%s, %lld elements)", tsl_dtype_name(dt),
               (long long)n);
}

static tsl_status k_convert(tessel_host *h, tessel_stream *s, void *dst, tessel_dtype dst_dtype, const void *src,
                            tessel_dtype src_dtype, int64_t n) {
  READY(h);
  tsl_status st = check_span("convert", dst_dtype, n);
  if (st < 0 || (st = check_span("convert", src_dtype, n)) < 0) return st;
  return NAMED(h, BE(h)->convert(BE(h), S(s), dst, dst_dtype, src, src_dtype, n), "convert(%s to %s, %lld elements)",
               tsl_dtype_name(src_dtype), tsl_dtype_name(dst_dtype), (long long)n);
}

static tsl_status k_embedding_forward(tessel_host *h, tessel_stream *s, tessel_group *g, void *out,
                                      const int32_t *tokens, const void *table, const void *positions, int64_t batch,
                                      int64_t seq, int64_t width, int64_t vocab_begin, int64_t vocab) {
  READY(h);
  return tsl_embedding_forward(h->rt, S(s), g, out, tokens, table, positions, batch, seq, width, vocab_begin, vocab);
}

static tsl_status k_embedding_backward(tessel_host *h, tessel_stream *s, float *dtable, float *dpositions,
                                       const void *dout, const int32_t *tokens, int64_t batch, int64_t seq,
                                       int64_t width, int64_t vocab_begin, int64_t vocab) {
  READY(h);
  return tsl_embedding_backward(h->rt, S(s), dtable, dpositions, dout, tokens, batch, seq, width, vocab_begin, vocab);
}

static tsl_status k_cross_entropy(tessel_host *h, tessel_stream *s, tessel_group *g, float *losses, void *logits,
                                  const int32_t *targets, int64_t rows, int64_t vocab_begin, int64_t vocab,
                                  float dlogits_scale) {
  READY(h);
  return tsl_cross_entropy(h->rt, S(s), g, losses, logits, targets, rows, vocab_begin, vocab, dlogits_scale);
}

static tsl_status k_optimizer_update(tessel_host *h, tessel_stream *s, const tessel_optim_update *u,
                                     const tessel_optim_step *hp) {
  READY(h);
  tessel_optim_update uu;
  tessel_optim_step hh;
  tsl_copy_in(&uu, sizeof uu, u);
  tsl_copy_in(&hh, sizeof hh, hp);
  if (!uu.work) uu.work = uu.master;
  return tsl_optim_update(h->rt, S(s), &uu, &hh);
}

static tsl_status k_sumsq(tessel_host *h, tessel_stream *s, double *out, const float *x, int64_t n) {
  READY(h);
  return NAMED(h, BE(h)->sumsq(BE(h), S(s), out, x, n), "sumsq(%lld elements)", (long long)n);
}

const tessel_kernel_api *tsl_host_kernels(void) {
  static const tessel_kernel_api api = {.size = sizeof(tessel_kernel_api),
                                        .gemm = k_gemm,
                                        .linear_forward = k_linear_forward,
                                        .linear_backward = k_linear_backward,
                                        .norm_forward = k_norm_forward,
                                        .norm_backward = k_norm_backward,
                                        .attention_forward = k_attention_forward,
                                        .attention_backward = k_attention_backward,
                                        .rotary = k_rotary,
                                        .activation_forward = k_activation_forward,
                                        .activation_backward = k_activation_backward,
                                        .add = k_add,
                                        .axpy = k_axpy,
                                        .scale = k_scale,
                                        .convert = k_convert,
                                        .embedding_forward = k_embedding_forward,
                                        .embedding_backward = k_embedding_backward,
                                        .cross_entropy = k_cross_entropy,
                                        .optimizer_update = k_optimizer_update,
                                        .sumsq = k_sumsq};
  return &api;
}
