/*
** tests/gpu/test_cuda_attention.c — the CUDA FlashAttention kernels
** (causal, grouped-query, strided q/k/v) against the CPU backend, with
** error bounds derived from where the CUDA kernels round to bf16.
**
** Both backends get the same bf16-representable inputs; the CPU result
** (fp32 throughout, itself checked against double in
** tests/kernels/test_cpu_attention.c) is the reference.
**
** Forward. Scores are fp32 sums of exact bf16 products on both sides. The
** CUDA kernel rounds P to bf16 before P·v (half an ulp, 2^-9·p) and the
** output once: |Δout| <= 2^-9·(Σ p·|v| + |out|) plus fp32 order
** (SUM_BOUND(T)·Σ p·|v|). Checked with one full ulp per rounding (GT_BF16
** = 2^-8, twice the bound). lse is fp32 on both sides: the score sums
** (hs terms) and the running sum (T terms) in another order,
** SUM_BOUND(hs + T)·(max score magnitude + |lse| + 1).
**
** Backward. Both backends get the same out (the CPU's, rounded to bf16, as
** the CUDA forward would store it) and the same lse. The CUDA kernels
** recompute P in fp32, round P to bf16 for dv = Pᵀ·dO and dS = P(dP − D)
** to bf16 for dq = dS·k and dk = dSᵀ·q, and round each output:
**   |Δdq| <= 2^-9·(Σ_j |dS_j|·|k_j| + |dq|),  |Δdk| likewise with q,
**   |Δdv| <= 2^-9·(Σ_t p·|dO| + |dv|),
** plus fp32 order on the sums (their terms' magnitudes carry the error of
** dP − D, whose terms sum hs products). Checked at one ulp per rounding.
**
** Also: every element of dq, dk, dv overwritten and the padding of strided
** rows never written; two backward runs give the same bits (no atomics).
*/
#include "gpu_test.h"

#define SUM_BOUND(k) (2.0 * ((double)(k) + 4.0) * KT_U)

typedef struct gcase {
  int64_t B, T, H, KV, hs;
  int fused; /* q, k, v in one row; else three regions with padded rows */
} gcase;

/* head sizes 8..128 (each padded width the kernels use, and 24 and 80
** padded up), T across one and several 64-row tiles and partial ones,
** MHA, GQA and MQA */
static const gcase cases[] = {
    {2, 37, 4, 2, 16, 1}, {1, 130, 4, 1, 64, 0}, {3, 5, 4, 4, 8, 1},    {1, 1, 2, 1, 8, 0},
    {1, 200, 2, 2, 128, 0}, {2, 64, 4, 2, 24, 1}, {1, 100, 4, 1, 80, 0},
};

/* the storage of q, k, v (or their gradients) in the case's layout */
typedef struct layout {
  int64_t ld[3], off[3], n;
} layout;

static layout layout_of(const gcase *c) {
  layout l;
  const int64_t rows = c->B * c->T, qw = c->H * c->hs, kw = c->KV * c->hs;
  if (c->fused) {
    const int64_t w = qw + 2 * kw;
    l.ld[0] = l.ld[1] = l.ld[2] = w;
    l.off[0] = 0, l.off[1] = qw, l.off[2] = qw + kw;
    l.n = rows * w;
  } else {
    l.ld[0] = qw + 3, l.ld[1] = kw + 5, l.ld[2] = kw + 1;
    l.off[0] = 0, l.off[1] = rows * l.ld[0], l.off[2] = l.off[1] + rows * l.ld[1];
    l.n = l.off[2] + rows * l.ld[2];
  }
  return l;
}

static tsl_attn_shape shape_of(const gcase *c, const layout *l) {
  tsl_attn_shape sh = {c->B, c->T, c->H, c->KV, c->hs, l->ld[0], l->ld[1], l->ld[2], 0, 0, 0};
  return sh;
}

/* element i of head h at (b, t) of part p (0 q, 1 k, 2 v) */
static int64_t at(const gcase *c, const layout *l, int p, int64_t b, int64_t t, int64_t h, int64_t i) {
  return l->off[p] + (b * c->T + t) * l->ld[p] + h * c->hs + i;
}

/* 1 where part p owns the element (a kernel writes it), 0 for padding and
** for the fused row's other parts */
static int owned(const gcase *c, const layout *l, int p, int64_t e) {
  const int64_t width = (p == 0 ? c->H : c->KV) * c->hs;
  if (e < l->off[p] || e >= l->off[p] + c->B * c->T * l->ld[p]) return 0;
  return (e - l->off[p]) % l->ld[p] < width;
}

/* inputs: bf16-representable in [-1, 1) where owned, NaN elsewhere */
static float *make_inputs(const gcase *c, const layout *l, uint64_t *rng) {
  float *x = gt_random(rng, l->n, -1, 1);
  for (int64_t e = 0; e < l->n; e++)
    if (!owned(c, l, 0, e) && !owned(c, l, 1, e) && !owned(c, l, 2, e)) x[e] = NAN;
  return x;
}

static const float *part(const float *x, const layout *l, int p) { return x + l->off[p]; }

/* scaled score of query (b, t, h) and key j, and Σ|q·k|·scale */
static double score(const float *x, const gcase *c, const layout *l, int64_t b, int64_t t, int64_t h, int64_t j,
                    double *mag) {
  const int64_t kvh = h / (c->H / c->KV);
  double s = 0.0, m = 0.0;
  for (int64_t i = 0; i < c->hs; i++) {
    const double qk = (double)x[at(c, l, 0, b, t, h, i)] * x[at(c, l, 1, b, j, kvh, i)];
    s += qk, m += fabs(qk);
  }
  const double scale = 1.0 / sqrt((double)c->hs);
  *mag = m * scale;
  return s * scale;
}

static void check_forward(const gcase *c, uint64_t *rng) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  const layout l = layout_of(c);
  const tsl_attn_shape sh = shape_of(c, &l);
  const int64_t no = c->B * c->T * c->H * c->hs, nl = c->B * c->H * c->T;
  float *x = make_inputs(c, &l, rng), *out = kt_floats(no), *lse = kt_floats(nl);
  CHECK_EQ_INT(cpu->attention_forward(cpu, NULL, out, lse, part(x, &l, 0), part(x, &l, 1), part(x, &l, 2), &sh), 0);
  char *dx = gt_up_bf16(x, l.n);
  void *dout = gt_alloc((uint64_t)no * 2);
  float *dlse = gt_alloc((uint64_t)nl * 4);
  GT_OK(be->attention_forward(be, gt_s, dout, dlse, dx + 2 * l.off[0], dx + 2 * l.off[1], dx + 2 * l.off[2], &sh));
  float *gout = gt_down_bf16(dout, no), *glse = gt_down_f32(dlse, nl);
  double *out_mag = kt_doubles(no), *lse_mag = kt_doubles(nl);
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t h = 0; h < c->H; h++)
      for (int64_t t = 0; t < c->T; t++) {
        const int64_t row = (b * c->H + h) * c->T + t;
        double smax = 0.0, m;
        for (int64_t j = 0; j <= t; j++) score(x, c, &l, b, t, h, j, &m), smax = fmax(smax, m);
        lse_mag[row] = SUM_BOUND(c->hs + c->T) * (smax + fabs(lse[row]) + 1.0);
        for (int64_t i = 0; i < c->hs; i++) {
          double pv = 0.0;
          for (int64_t j = 0; j <= t; j++) {
            const double p = exp(score(x, c, &l, b, t, h, j, &m) - lse[row]);
            pv += p * fabs(x[at(c, &l, 2, b, j, h / (c->H / c->KV), i)]);
          }
          const int64_t e = (b * c->T + t) * c->H * c->hs + h * c->hs + i;
          out_mag[e] = pv * (GT_BF16 + SUM_BOUND(c->T));
        }
      }
  gt_check("attention out", gout, out, out_mag, no, 1e-7, GT_BF16, 1.0);
  gt_check("attention lse", glse, lse, lse_mag, nl, 1e-7, 0.0, 1.0);
  gt_free(dx), gt_free(dout), gt_free(dlse);
  free(x), free(out), free(lse), free(gout), free(glse), free(out_mag), free(lse_mag);
}

/* the bounds of the header for dq, dk, dv, by recomputing P and dS in
** double from the inputs both backends saw */
static double *backward_bounds(const gcase *c, const layout *l, const float *x, const float *dy, const float *out,
                               const float *lse) {
  double *mag = kt_doubles(l->n);
  const int64_t g = c->H / c->KV, C = c->H * c->hs;
  const double scale = 1.0 / sqrt((double)c->hs);
  double *p = kt_doubles(c->T), *ds = kt_doubles(c->T), *ds_mag = kt_doubles(c->T);
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t h = 0; h < c->H; h++)
      for (int64_t t = 0; t < c->T; t++) {
        const int64_t row = (b * c->H + h) * c->T + t, kvh = h / g;
        const float *d = dy + (b * c->T + t) * C + h * c->hs, *o = out + (b * c->T + t) * C + h * c->hs;
        double D = 0.0, m;
        for (int64_t i = 0; i < c->hs; i++) D += (double)d[i] * o[i];
        for (int64_t j = 0; j <= t; j++) {
          double dp = 0.0, dp_mag = 0.0;
          p[j] = exp(score(x, c, l, b, t, h, j, &m) - lse[row]);
          for (int64_t i = 0; i < c->hs; i++) {
            const double term = (double)d[i] * x[at(c, l, 2, b, j, kvh, i)];
            dp += term, dp_mag += fabs(term);
          }
          ds[j] = p[j] * (dp - D) * scale;
          /* the dS rounding, plus fp32 order on dP and D */
          ds_mag[j] = fabs(ds[j]) * GT_BF16 + p[j] * scale * SUM_BOUND(c->hs) * (dp_mag + fabs(D) + 1.0);
        }
        for (int64_t j = 0; j <= t; j++)
          for (int64_t i = 0; i < c->hs; i++) {
            const double kj = fabs(x[at(c, l, 1, b, j, kvh, i)]), qt = fabs(x[at(c, l, 0, b, t, h, i)]);
            mag[at(c, l, 0, b, t, h, i)] += ds_mag[j] * kj + SUM_BOUND(c->T) * fabs(ds[j]) * kj;
            mag[at(c, l, 1, b, j, kvh, i)] += ds_mag[j] * qt + SUM_BOUND(c->T * g) * fabs(ds[j]) * qt;
            mag[at(c, l, 2, b, j, kvh, i)] += p[j] * fabs(d[i]) * (GT_BF16 + SUM_BOUND(c->T * g));
          }
      }
  free(p), free(ds), free(ds_mag);
  return mag;
}

static void check_backward(const gcase *c, uint64_t *rng) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  const layout l = layout_of(c);
  const tsl_attn_shape sh = shape_of(c, &l);
  const int64_t no = c->B * c->T * c->H * c->hs, nl = c->B * c->H * c->T;
  float *x = make_inputs(c, &l, rng), *dy = gt_random(rng, no, -1, 1), *out = kt_floats(no), *lse = kt_floats(nl);
  float *grad = kt_floats(l.n);
  CHECK_EQ_INT(cpu->attention_forward(cpu, NULL, out, lse, part(x, &l, 0), part(x, &l, 1), part(x, &l, 2), &sh), 0);
  gt_round(out, no); /* what the CUDA forward would have stored */
  kt_fill(grad, l.n, NAN);
  CHECK_EQ_INT(cpu->attention_backward(cpu, NULL, grad + l.off[0], grad + l.off[1], grad + l.off[2], dy, out, lse,
                                       part(x, &l, 0), part(x, &l, 1), part(x, &l, 2), &sh),
               0);
  char *dx = gt_up_bf16(x, l.n), *ddy = gt_up_bf16(dy, no), *dout = gt_up_bf16(out, no);
  float *dlse = gt_up_f32(lse, nl), *nan = kt_floats(l.n);
  kt_fill(nan, l.n, NAN);
  float *runs[2];
  for (int run = 0; run < 2; run++) {
    char *dg = gt_up_bf16(nan, l.n);
    GT_OK(be->attention_backward(be, gt_s, dg + 2 * l.off[0], dg + 2 * l.off[1], dg + 2 * l.off[2], ddy, dout, dlse,
                                 dx + 2 * l.off[0], dx + 2 * l.off[1], dx + 2 * l.off[2], &sh));
    runs[run] = gt_down_bf16(dg, l.n);
    gt_free(dg);
  }
  int64_t layout_bad = 0, differ = 0;
  for (int64_t e = 0; e < l.n; e++) {
    const int own = owned(c, &l, 0, e) || owned(c, &l, 1, e) || owned(c, &l, 2, e);
    layout_bad += own ? isnan(runs[0][e]) : !isnan(runs[0][e]);
    differ += !(runs[0][e] == runs[1][e]) && !(isnan(runs[0][e]) && isnan(runs[1][e]));
    if (!own) runs[0][e] = grad[e] = 0.0f; /* padding: nothing to compare */
  }
  CHECK_EQ_INT(layout_bad, 0);
  CHECK_EQ_INT(differ, 0);
  double *mag = backward_bounds(c, &l, x, dy, out, lse);
  gt_check("attention dq/dk/dv", runs[0], grad, mag, l.n, 1e-7, GT_BF16, 1.0);
  gt_free(dx), gt_free(ddy), gt_free(dout), gt_free(dlse);
  free(x), free(dy), free(out), free(lse), free(grad), free(nan), free(runs[0]), free(runs[1]), free(mag);
}

static void test_forward(void) {
  uint64_t rng = 31;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_forward(&cases[i], &rng);
}

static void test_backward(void) {
  uint64_t rng = 32;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_backward(&cases[i], &rng);
}

/* shapes the kernels refuse: a head wider than 128, kv_heads not dividing
** heads, a key/value cache (a past) and a sliding window (the CPU
** backend's alone) */
static void test_refused(void) {
  tsl_backend *be = gt_cuda();
  void *buf = gt_alloc(1 << 16);
  const tsl_attn_shape wide = {1, 4, 1, 1, 136, 136, 136, 136, 0, 0, 0}, bad = {1, 4, 3, 2, 8, 24, 16, 16, 0, 0, 0};
  const tsl_attn_shape past = {1, 1, 1, 1, 8, 8, 8, 8, 3, 4, 0}, window = {1, 4, 1, 1, 8, 8, 8, 8, 0, 0, 2};
  CHECK_EQ_INT(be->attention_forward(be, gt_s, buf, buf, buf, buf, buf, &wide), TESSEL_E_UNSUPPORTED);
  CHECK_EQ_INT(be->attention_forward(be, gt_s, buf, buf, buf, buf, buf, &past), TESSEL_E_UNSUPPORTED);
  CHECK_EQ_INT(be->attention_forward(be, gt_s, buf, buf, buf, buf, buf, &window), TESSEL_E_UNSUPPORTED);
  CHECK_EQ_INT(be->attention_backward(be, gt_s, buf, buf, buf, buf, buf, buf, buf, buf, buf, &window),
               TESSEL_E_UNSUPPORTED);
  CHECK(!be->attention_past && !be->attention_window);
  CHECK(be->attention_forward(be, gt_s, buf, buf, buf, buf, buf, &bad) < 0);
  gt_free(buf);
}

int main(void) {
  gt_cuda();
  RUN(test_forward);
  RUN(test_backward);
  RUN(test_refused);
  return HARNESS_EXIT();
}
