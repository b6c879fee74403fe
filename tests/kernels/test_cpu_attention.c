/*
** tests/kernels/test_cpu_attention.c — causal grouped-query attention (the
** FlashAttention kernels) against a double-precision reference, against
** central differences, and for the properties the layout promises.
**
** Cases: heads 4 with kv_heads 4, 2 and 1 (MHA, GQA, MQA); q, k, v inside
** one fused row (GPT-2's c_attn output, generalised to GQA), in separate
** contiguous buffers, and in separate buffers with padded rows; lengths
** that end inside a query block and a key block, up to T = 1024 (with
** head size 16 there, so that the double reference stays fast under the
** sanitizers); and sliding windows (model.sliding_window) of one key, of
** a few, of a key block's length and of more, so that a window starts
** inside a key block and whole blocks fall out of it.
**
** Tolerances. Each check has two parts.
**  1. A bound derived from where fp32 rounds (u = 2^-24), relative to the
**     magnitude of the terms summed ("mag", computed by the reference):
**     a score is a dot product of hs terms, error (hs + 2)·u·smag; the
**     softmax turns a score error δ into a relative probability error 2δ,
**     plus T·u for the running sum and a few ulp per key block for exp and
**     the rescaling (T/64 + 8 u covers both block sizes); the output sums T
**     products more. The backward chains dp (hs terms), D = dO·O (hs terms)
**     and the gradient sums (T terms). Checked at twice the bound.
**  2. Issue #20's requirement: every element within 1e-5 of the magnitude
**     of its sum (|got − ref| <= 1e-5·mag, mag = Σ|terms|), and the array
**     as a whole within 1e-5 relative (‖got − ref‖₂ <= 1e-5·‖ref‖₂).
** The reference is double precision from the same fp32 inputs, so its own
** error (~T·2^-53) is negligible against both.
*/
#include <omp.h>

#include "kernel_test.h"

enum { FUSED, SEPARATE, PADDED };

typedef struct acase {
  int64_t B, T, H, KV, hs;
  int layout;
  int64_t W; /* sliding window; 0: none */
} acase;

static const acase cases[] = {
    {2, 5, 4, 1, 3, PADDED, 0},       {1, 1, 4, 2, 8, SEPARATE, 0},     {2, 37, 4, 2, 16, FUSED, 0},
    {3, 70, 4, 1, 8, PADDED, 0},      {1, 300, 4, 4, 32, FUSED, 0},     {2, 129, 4, 2, 64, SEPARATE, 0},
    {1, 200, 4, 1, 64, FUSED, 0},     {1, 1024, 4, 4, 16, FUSED, 0},    {1, 1024, 4, 2, 16, PADDED, 0},
    {1, 1024, 4, 1, 16, SEPARATE, 0}, {2, 37, 4, 2, 16, FUSED, 5},      {3, 70, 4, 1, 8, PADDED, 1},
    {1, 300, 4, 4, 32, FUSED, 100},   {2, 129, 4, 2, 64, SEPARATE, 64}, {1, 1024, 4, 2, 16, PADDED, 300},
};

/* q, k, v (or their gradients) in the case's layout */
typedef struct qkv {
  float *q, *k, *v, *store[3];
  int64_t ldq, ldk, ldv, count[3];
} qkv;

/* Storage for the case's layout, every element NaN (so that a kernel must
** overwrite what it owns, and padding that stays NaN was never written). */
static qkv qkv_alloc(const acase *c) {
  qkv x = {0};
  const int64_t rows = c->B * c->T, qw = c->H * c->hs, kw = c->KV * c->hs;
  if (c->layout == FUSED) {
    const int64_t w = qw + 2 * kw;
    x.count[0] = rows * w;
    x.store[0] = kt_floats(x.count[0]);
    x.q = x.store[0], x.k = x.q + qw, x.v = x.k + kw;
    x.ldq = x.ldk = x.ldv = w;
  } else {
    const int64_t pad = c->layout == PADDED;
    x.ldq = qw + 5 * pad, x.ldk = kw + 3 * pad, x.ldv = kw + 7 * pad;
    const int64_t ld[3] = {x.ldq, x.ldk, x.ldv};
    for (int i = 0; i < 3; i++) x.count[i] = rows * ld[i], x.store[i] = kt_floats(x.count[i]);
    x.q = x.store[0], x.k = x.store[1], x.v = x.store[2];
  }
  for (int i = 0; i < 3; i++) kt_fill(x.store[i], x.count[i], NAN);
  return x;
}

static void qkv_free(qkv *x) {
  for (int i = 0; i < 3; i++) free(x->store[i]);
}

static tsl_attn_shape shape_of(const acase *c, const qkv *x) {
  tsl_attn_shape sh = {c->B, c->T, c->H, c->KV, c->hs, x->ldq, x->ldk, x->ldv, 0, 0, c->W};
  return sh;
}

/* the first key that the query at step t sees */
static int64_t first_key(const acase *c, int64_t t) { return c->W && t >= c->W ? t - c->W + 1 : 0; }

/* element i of head h at (b, t) in a tensor whose rows are ld apart */
#define AT(p, ld, c, b, t, h, i) ((p)[((b) * (c)->T + (t)) * (ld) + (h) * (c)->hs + (i)])

/* q, k, v uniform in [-2, 2) at every position the layout uses */
static void qkv_random(qkv *x, const acase *c, uint64_t *rng) {
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t t = 0; t < c->T; t++)
      for (int64_t i = 0; i < c->hs; i++) {
        for (int64_t h = 0; h < c->H; h++) AT(x->q, x->ldq, c, b, t, h, i) = kt_uniform(rng, -2, 2);
        for (int64_t h = 0; h < c->KV; h++) {
          AT(x->k, x->ldk, c, b, t, h, i) = kt_uniform(rng, -2, 2);
          AT(x->v, x->ldv, c, b, t, h, i) = kt_uniform(rng, -2, 2);
        }
      }
}

/* The gradient part of a layout, gathered into dense [B, T, heads, hs]. */
static float *gather(const float *p, int64_t ld, const acase *c, int64_t heads) {
  float *d = kt_floats(c->B * c->T * heads * c->hs);
  for (int64_t r = 0; r < c->B * c->T; r++)
    memcpy(d + r * heads * c->hs, p + r * ld, (size_t)(heads * c->hs) * sizeof(float));
  return d;
}

/* number of NaNs left in positions a kernel must write (q, k, v parts) and
** of non-NaN values in padding it must not touch */
static int64_t layout_violations(const qkv *x, const acase *c) {
  int64_t bad = 0;
  const float *parts[3] = {x->q, x->k, x->v};
  const int64_t ld[3] = {x->ldq, x->ldk, x->ldv}, heads[3] = {c->H, c->KV, c->KV};
  for (int p = 0; p < 3; p++)
    for (int64_t r = 0; r < c->B * c->T; r++)
      for (int64_t j = 0; j < ld[p]; j++) {
        const int owned = j < heads[p] * c->hs;
        if (c->layout == FUSED && !owned) continue; /* the fused row's other parts */
        bad += owned ? isnan(parts[p][r * ld[p] + j]) : !isnan(parts[p][r * ld[p] + j]);
      }
  return bad;
}

/* Reference results: each value, the magnitude of the sum that forms it
** (Σ|terms|) and the derived bound on an fp32 kernel's error. */
typedef struct result {
  double *val, *mag, *bound;
  int64_t n;
} result;

static result result_alloc(int64_t n) {
  result r = {kt_doubles(n), kt_doubles(n), kt_doubles(n), n};
  return r;
}

static void result_free(result *r) { free(r->val), free(r->mag), free(r->bound); }

/* scaled scores of query (b, t, h) against the keys it sees into s, Σ|q·k|·scale
** into smag; returns the row max */
static double scores(double *s, double *smag, const qkv *x, const acase *c, int64_t b, int64_t t,
                     int64_t h) {
  const double scale = 1.0 / sqrt((double)c->hs);
  const int64_t kvh = h / (c->H / c->KV);
  double mx = -INFINITY;
  for (int64_t j = first_key(c, t); j <= t; j++) {
    double dot = 0.0, mag = 0.0;
    for (int64_t i = 0; i < c->hs; i++) {
      double qk = (double)AT(x->q, x->ldq, c, b, t, h, i) * AT(x->k, x->ldk, c, b, j, kvh, i);
      dot += qk, mag += fabs(qk);
    }
    s[j] = dot * scale, smag[j] = mag * scale;
    mx = fmax(mx, s[j]);
  }
  return mx;
}

/* Probabilities p[first_key..t] of query (b, t, h), its lse, the largest score
** magnitude, and the bound on a probability's relative error in units of
** u: twice the score error, the running sum, exp and rescaling per block. */
static double probabilities(double *p, double *smag, double *lse, double *worst, const qkv *x,
                            const acase *c, int64_t b, int64_t t, int64_t h) {
  const double mx = scores(p, smag, x, c, b, t, h);
  double sum = 0.0;
  *worst = 0.0;
  const int64_t j0 = first_key(c, t);
  for (int64_t j = j0; j <= t; j++) p[j] = exp(p[j] - mx), sum += p[j], *worst = fmax(*worst, smag[j]);
  for (int64_t j = j0; j <= t; j++) p[j] /= sum;
  *lse = mx + log(sum);
  return 2.0 * (c->hs + 2) * *worst + c->T + c->T / 16.0 + 8;
}

/* out [B, T, H·hs] and lse [B, H, T] */
static void ref_forward(result *out, result *lse, const qkv *x, const acase *c) {
  const int64_t C = c->H * c->hs, g = c->H / c->KV;
  double *p = kt_doubles(c->T), *smag = kt_doubles(c->T);
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t h = 0; h < c->H; h++)
      for (int64_t t = 0; t < c->T; t++) {
        double l, worst;
        const double p_err = probabilities(p, smag, &l, &worst, x, c, b, t, h);
        const int64_t row = (b * c->H + h) * c->T + t;
        lse->val[row] = l;
        lse->mag[row] = 1.0 + fabs(l);
        /* the max score's error, log of the sum (T terms), lse's rounding */
        lse->bound[row] = KT_U * ((c->hs + 2) * worst + c->T + 8 + fabs(l));
        for (int64_t i = 0; i < c->hs; i++) {
          double o = 0.0, m = 0.0;
          for (int64_t j = first_key(c, t); j <= t; j++) {
            const double v = AT(x->v, x->ldv, c, b, j, h / g, i);
            o += p[j] * v, m += p[j] * fabs(v);
          }
          const int64_t e = (b * c->T + t) * C + h * c->hs + i;
          out->val[e] = o, out->mag[e] = m, out->bound[e] = (p_err + c->T + 4) * KT_U * m;
        }
      }
  free(p), free(smag);
}

static void result_zero(result *r) {
  memset(r->val, 0, (size_t)r->n * sizeof(double));
  memset(r->mag, 0, (size_t)r->n * sizeof(double));
  memset(r->bound, 0, (size_t)r->n * sizeof(double));
}

/* Gradients of L = Σ dout·out in double, dense: dq [B, T, H, hs], dk and
** dv [B, T, KV, hs]. ds = p·(dp − D)/√hs; its magnitude counts the terms
** before dp − D cancels. */
static void ref_backward(result *dq, result *dk, result *dv, const qkv *x, const float *dout,
                         const acase *c) {
  const int64_t C = c->H * c->hs, g = c->H / c->KV, hs = c->hs;
  const double scale = 1.0 / sqrt((double)hs);
  result_zero(dq), result_zero(dk), result_zero(dv);
  double *p = kt_doubles(c->T), *smag = kt_doubles(c->T), *dp = kt_doubles(c->T);
  double *dp_mag = kt_doubles(c->T);
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t h = 0; h < c->H; h++)
      for (int64_t t = 0; t < c->T; t++) {
        double l, worst;
        /* p is recomputed from the saved lse, whose error joins the score's */
        const double p_err = probabilities(p, smag, &l, &worst, x, c, b, t, h) +
                             (c->hs + 2) * worst + c->T + fabs(l) + 12;
        const int64_t kvh = h / g;
        const float *d = dout + (b * c->T + t) * C + h * hs;
        double dsum = 0.0, dsum_mag = 0.0;
        for (int64_t j = first_key(c, t); j <= t; j++) {
          dp[j] = dp_mag[j] = 0.0;
          for (int64_t i = 0; i < hs; i++) {
            const double term = d[i] * (double)AT(x->v, x->ldv, c, b, j, kvh, i);
            dp[j] += term, dp_mag[j] += fabs(term);
          }
          dsum += p[j] * dp[j], dsum_mag += p[j] * dp_mag[j];
        }
        const int64_t qr = (b * c->T + t) * C + h * hs;
        for (int64_t j = first_key(c, t); j <= t; j++) {
          const double ds = p[j] * (dp[j] - dsum) * scale;
          const double ds_mag = p[j] * scale * (dp_mag[j] + dsum_mag);
          /* dp sums hs terms; D = dO·O sums hs terms of outputs that carry
          ** the forward's (p_err + T)·u */
          const double ds_err = p_err * fabs(ds) + p[j] * scale *
                                (((double)hs + 4) * dp_mag[j] + (2.0 * hs + p_err + c->T + 8) * dsum_mag);
          const int64_t kr = ((b * c->T + j) * c->KV + kvh) * hs;
          for (int64_t i = 0; i < hs; i++) {
            const double qi = AT(x->q, x->ldq, c, b, t, h, i), ki = AT(x->k, x->ldk, c, b, j, kvh, i);
            const double di = d[i];
            dq->val[qr + i] += ds * ki, dq->mag[qr + i] += ds_mag * fabs(ki);
            dq->bound[qr + i] += KT_U * (ds_err * fabs(ki) + (c->T + 2) * fabs(ds * ki));
            dk->val[kr + i] += ds * qi, dk->mag[kr + i] += ds_mag * fabs(qi);
            dk->bound[kr + i] += KT_U * (ds_err * fabs(qi) + (c->T * g + 2) * fabs(ds * qi));
            dv->val[kr + i] += p[j] * di, dv->mag[kr + i] += p[j] * fabs(di);
            dv->bound[kr + i] += KT_U * (p_err + c->T * g + 2) * p[j] * fabs(di);
          }
        }
      }
  free(p), free(smag), free(dp), free(dp_mag);
}

/* The three checks of the header: |got − ref| <= 2·bound, <= 1e-5·mag,
** and ‖got − ref‖₂ <= 1e-5·‖ref‖₂. */
static void check_result(const char *what, const acase *c, const float *got, const result *r) {
  const int before = harness_failures;
  CHECK_ARRAY_BOUND(got, r->val, r->bound, r->n, 2.0);
  CHECK_ARRAY_BOUND(got, r->val, r->mag, r->n, 1e-5);
  double err2 = 0.0, ref2 = 0.0;
  for (int64_t i = 0; i < r->n; i++) {
    const double e = (double)got[i] - r->val[i];
    err2 += e * e, ref2 += r->val[i] * r->val[i];
  }
  /* an identically zero result (dq, dk at T = 1) has only the elementwise checks */
  if (ref2 > 0.0) CHECK_CLOSE(sqrt(err2), 0.0, 1e-5 * sqrt(ref2), 0.0);
  if (harness_failures != before)
    fprintf(stderr, "  %s: B %lld T %lld H %lld KV %lld hs %lld layout %d window %lld\n", what, (long long)c->B,
            (long long)c->T, (long long)c->H, (long long)c->KV, (long long)c->hs, c->layout, (long long)c->W);
}

/* fresh inputs for the case, and the kernel's forward on them */
static qkv forward_case(const acase *c, uint64_t *rng, float **out, float **lse) {
  tsl_backend *be = kt_backend();
  qkv x = qkv_alloc(c);
  qkv_random(&x, c, rng);
  const tsl_attn_shape sh = shape_of(c, &x);
  const int64_t no = c->B * c->T * c->H * c->hs, nl = c->B * c->H * c->T;
  *out = kt_floats(no), *lse = kt_floats(nl);
  kt_fill(*out, no, NAN), kt_fill(*lse, nl, NAN);
  CHECK_EQ_INT(be->attention_forward(be, NULL, *out, *lse, x.q, x.k, x.v, &sh), 0);
  return x;
}

static void test_forward(void) {
  uint64_t rng = 21;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const acase *c = &cases[i];
    float *out, *lse;
    qkv x = forward_case(c, &rng, &out, &lse);
    result ro = result_alloc(c->B * c->T * c->H * c->hs), rl = result_alloc(c->B * c->H * c->T);
    ref_forward(&ro, &rl, &x, c);
    check_result("out", c, out, &ro);
    check_result("lse", c, lse, &rl);
    qkv_free(&x), free(out), free(lse), result_free(&ro), result_free(&rl);
  }
}

/* the kernel's dq, dk, dv on fresh NaN-filled storage */
static qkv backward_case(const acase *c, const qkv *x, const float *dout, const float *out,
                         const float *lse) {
  tsl_backend *be = kt_backend();
  qkv d = qkv_alloc(c);
  const tsl_attn_shape sh = shape_of(c, x);
  CHECK_EQ_INT(be->attention_backward(be, NULL, d.q, d.k, d.v, dout, out, lse, x->q, x->k, x->v, &sh), 0);
  return d;
}

/* dq, dk, dv against the reference, twice in a row (nothing accumulates);
** every element they own overwritten, padding never written */
static void test_backward(void) {
  uint64_t rng = 22;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const acase *c = &cases[i];
    const int64_t nq = c->B * c->T * c->H * c->hs, nk = c->B * c->T * c->KV * c->hs;
    float *out, *lse;
    qkv x = forward_case(c, &rng, &out, &lse);
    float *dout = kt_random(&rng, nq, -1, 1);
    result rq = result_alloc(nq), rk = result_alloc(nk), rv = result_alloc(nk);
    ref_backward(&rq, &rk, &rv, &x, dout, c);
    for (int call = 0; call < 2; call++) {
      qkv d = backward_case(c, &x, dout, out, lse);
      CHECK_EQ_INT(layout_violations(&d, c), 0);
      float *gq = gather(d.q, d.ldq, c, c->H), *gk = gather(d.k, d.ldk, c, c->KV);
      float *gv = gather(d.v, d.ldv, c, c->KV);
      check_result("dq", c, gq, &rq), check_result("dk", c, gk, &rk), check_result("dv", c, gv, &rv);
      free(gq), free(gk), free(gv), qkv_free(&d);
    }
    qkv_free(&x), free(out), free(lse), free(dout);
    result_free(&rq), result_free(&rk), result_free(&rv);
  }
}

/* L = Σ dout·attention(q, k, v) in double */
static double ref_loss(const qkv *x, const float *dout, const acase *c) {
  const int64_t n = c->B * c->T * c->H * c->hs;
  result out = result_alloc(n), lse = result_alloc(c->B * c->H * c->T);
  ref_forward(&out, &lse, x, c);
  double loss = 0.0;
  for (int64_t i = 0; i < n; i++) loss += dout[i] * out.val[i];
  result_free(&out), result_free(&lse);
  return loss;
}

/* One case of test_backward_matches_finite_differences. */
static void fd_case(const acase *c) {
  uint64_t rng = 23;
  float *out, *lse;
  qkv x = forward_case(c, &rng, &out, &lse);
  float *dout = kt_random(&rng, c->B * c->T * c->H * c->hs, -1, 1);
  qkv d = backward_case(c, &x, dout, out, lse);
  float *parts[3] = {x.q, x.k, x.v}, *grads[3] = {d.q, d.k, d.v};
  const int64_t ld[3] = {x.ldq, x.ldk, x.ldv}, heads[3] = {c->H, c->KV, c->KV};
  for (int p = 0; p < 3; p++)
    for (int64_t r = 0; r < c->B * c->T; r++)
      for (int64_t j = 0; j < heads[p] * c->hs; j++) {
        float *e = parts[p] + r * ld[p] + j, keep = *e;
        const float hi = keep + 1.0f / 1024, lo = keep - 1.0f / 1024;
        *e = hi;
        const double up = ref_loss(&x, dout, c);
        *e = lo;
        const double down = ref_loss(&x, dout, c);
        *e = keep;
        const double fd = (up - down) / ((double)hi - lo);
        CHECK_CLOSE(grads[p][r * ld[p] + j], fd, 1e-4, 1e-3);
      }
  qkv_free(&x), qkv_free(&d), free(out), free(lse), free(dout);
}

/* The backward against central differences of the double forward, so the
** gradient formula (the GQA sums over a kv head's query heads included)
** is checked independently of ref_backward. Each input moves by the fp32
** steps nearest ±2^-10 and the quotient divides by the step actually
** taken. Truncation error ~h²·|L'''| ≈ 1e-6, the kernel's fp32 error
** ~1e-6; a wrong term or head mapping is off by O(0.1). Without a window
** and with one of 2 keys. */
static void test_backward_matches_finite_differences(void) {
  for (int64_t w = 0; w <= 2; w += 2) fd_case(&(acase){2, 5, 4, 2, 3, PADDED, w});
}

/* Which rows of out and lse move when the keys and values at steps [from,
** to) are drawn anew: moved[b·T + t] is 1 where any element of step t of
** sequence b changed, bit for bit. */
static int *rows_moved(const acase *c, uint64_t rng, int64_t from, int64_t to) {
  tsl_backend *be = kt_backend();
  const int64_t C = c->H * c->hs;
  float *out, *lse, *out2 = kt_floats(c->B * c->T * C), *lse2 = kt_floats(c->B * c->H * c->T);
  int *moved = calloc((size_t)(c->B * c->T), sizeof *moved);
  REQUIRE(moved);
  qkv x = forward_case(c, &rng, &out, &lse);
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t t = from; t < to; t++)
      for (int64_t i = 0; i < c->KV * c->hs; i++) {
        x.k[(b * c->T + t) * x.ldk + i] = kt_uniform(&rng, -4, 4);
        x.v[(b * c->T + t) * x.ldv + i] = kt_uniform(&rng, -4, 4);
      }
  const tsl_attn_shape sh = shape_of(c, &x);
  CHECK_EQ_INT(be->attention_forward(be, NULL, out2, lse2, x.q, x.k, x.v, &sh), 0);
  for (int64_t b = 0; b < c->B; b++)
    for (int64_t t = 0; t < c->T; t++) {
      int *m = &moved[b * c->T + t];
      for (int64_t i = 0; i < C; i++) *m |= out[(b * c->T + t) * C + i] != out2[(b * c->T + t) * C + i];
      for (int64_t h = 0; h < c->H; h++) *m |= lse[(b * c->H + h) * c->T + t] != lse2[(b * c->H + h) * c->T + t];
    }
  qkv_free(&x), free(out), free(lse), free(out2), free(lse2);
  return moved;
}

/* Causality: changing the keys and values after step cut leaves every
** output and lse at steps <= cut bit for bit unchanged. */
static void test_causal_mask(void) {
  const acase c = {2, 150, 4, 2, 16, FUSED, 0};
  const int64_t cut = 77;
  int *moved = rows_moved(&c, 24, cut + 1, c.T);
  int64_t changed = 0;
  for (int64_t b = 0; b < c.B; b++)
    for (int64_t t = 0; t <= cut; t++) changed += moved[b * c.T + t];
  CHECK_EQ_INT(changed, 0);
  free(moved);
}

/* The window: changing the keys and values before step cut changes no
** output or lse at the steps the window keeps them from (t >= cut + W − 1),
** bit for bit, and every one at the steps that see them, over key blocks
** (T 600, W 200: rows from 299 on). */
static void test_window_mask(void) {
  const acase c = {2, 600, 4, 2, 16, SEPARATE, 200};
  const int64_t cut = 100;
  int *moved = rows_moved(&c, 26, 0, cut);
  int64_t changed = 0, seen = 0;
  for (int64_t b = 0; b < c.B; b++)
    for (int64_t t = 0; t < c.T; t++) {
      if (t >= cut + c.W - 1) changed += moved[b * c.T + t];
      else seen += moved[b * c.T + t];
    }
  CHECK_EQ_INT(changed, 0);
  CHECK_EQ_INT(seen, c.B * (cut + c.W - 1));
  free(moved);
}

/* The work split does not depend on the thread count, so 1 and 2 threads
** give the same bits, forward and backward. */
static void test_thread_count_invariant(void) {
  const acase c = {3, 97, 4, 2, 16, SEPARATE, 0};
  const int64_t nq = c.B * c.T * c.H * c.hs, nk = c.B * c.T * c.KV * c.hs;
  float *res[2][4];
  for (int run = 0; run < 2; run++) {
    uint64_t rng = 25;
    omp_set_num_threads(run + 1);
    float *out, *lse;
    qkv x = forward_case(&c, &rng, &out, &lse);
    float *dout = kt_random(&rng, nq, -1, 1);
    qkv d = backward_case(&c, &x, dout, out, lse);
    res[run][0] = out, res[run][1] = gather(d.q, d.ldq, &c, c.H);
    res[run][2] = gather(d.k, d.ldk, &c, c.KV), res[run][3] = gather(d.v, d.ldv, &c, c.KV);
    qkv_free(&x), qkv_free(&d), free(lse), free(dout);
  }
  omp_set_num_threads(2);
  const int64_t counts[4] = {nq, nq, nk, nk};
  for (int i = 0; i < 4; i++) {
    CHECK_ARRAY_EQ(res[0][i], res[1][i], counts[i]);
    free(res[0][i]), free(res[1][i]);
  }
}

/* Decoding over a cache of keys and values: the queries at positions
** P .. T − 1 alone (shape past P), with k and v in a cache of T + 3 rows
** per sequence whose rows past T are NaN, give the reference's rows for
** those positions, within the bounds of the full forward; with a past the
** caller may leave lse out. Splits: the last third of the sequence (a step
** after a prompt) and its last position (one drawn token), across key
** blocks at T = 300 and 1024. */
static void test_past(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 27;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int split = 0; split < 2; split++) {
      const acase *c = &cases[i];
      const int64_t n = split ? 1 : (c->T + 2) / 3, P = c->T - n, KT = c->T + 3;
      const int64_t qw = c->H * c->hs, kw = c->KV * c->hs;
      float *out, *lse;
      qkv x = forward_case(c, &rng, &out, &lse);
      result ro = result_alloc(c->B * c->T * qw), rl = result_alloc(c->B * c->H * c->T);
      ref_forward(&ro, &rl, &x, c);
      float *q = kt_floats(c->B * n * qw), *o = kt_floats(c->B * n * qw);
      float *k = kt_floats(c->B * KT * kw), *v = kt_floats(c->B * KT * kw);
      kt_fill(o, c->B * n * qw, NAN), kt_fill(k, c->B * KT * kw, NAN), kt_fill(v, c->B * KT * kw, NAN);
      result want = result_alloc(c->B * n * qw);
      for (int64_t b = 0; b < c->B; b++) {
        for (int64_t t = 0; t < c->T; t++) {
          memcpy(k + (b * KT + t) * kw, &AT(x.k, x.ldk, c, b, t, 0, 0), (size_t)kw * sizeof(float));
          memcpy(v + (b * KT + t) * kw, &AT(x.v, x.ldv, c, b, t, 0, 0), (size_t)kw * sizeof(float));
        }
        for (int64_t t = 0; t < n; t++) {
          memcpy(q + (b * n + t) * qw, &AT(x.q, x.ldq, c, b, P + t, 0, 0), (size_t)qw * sizeof(float));
          const int64_t from = (b * c->T + P + t) * qw, to = (b * n + t) * qw;
          memcpy(want.val + to, ro.val + from, (size_t)qw * sizeof(double));
          memcpy(want.mag + to, ro.mag + from, (size_t)qw * sizeof(double));
          memcpy(want.bound + to, ro.bound + from, (size_t)qw * sizeof(double));
        }
      }
      const tsl_attn_shape sh = {c->B, n, c->H, c->KV, c->hs, qw, kw, kw, P, KT, c->W};
      CHECK_EQ_INT(be->attention_forward(be, NULL, o, NULL, q, k, v, &sh), 0);
      check_result("out after a past", c, o, &want);
      qkv_free(&x), free(out), free(lse), result_free(&ro), result_free(&rl), result_free(&want);
      free(q), free(o), free(k), free(v);
    }
}

/* batch = 0 or T = 0: nothing to do and nothing written; inconsistent
** shapes are refused before anything is written */
static void test_empty_and_bad_shapes(void) {
  tsl_backend *be = kt_backend();
  float x[4] = {7, 7, 7, 7}, lse[4] = {7, 7, 7, 7};
  tsl_attn_shape sh = {0, 4, 2, 2, 2, 4, 4, 4, 0, 0, 0};
  CHECK_EQ_INT(be->attention_forward(be, NULL, x, lse, x, x, x, &sh), 0);
  sh.batch = 2, sh.seq = 0;
  CHECK_EQ_INT(be->attention_backward(be, NULL, x, x, x, x, x, lse, x, x, x, &sh), 0);
  const tsl_attn_shape bad[] = {
      {1, 1, 3, 2, 2, 6, 4, 4, 0, 0, 0}, /* kv_heads does not divide heads */
      {1, 1, 2, 0, 2, 4, 4, 4, 0, 0, 0}, /* no kv heads */
      {1, 1, 2, 1, 2, 3, 2, 2, 0, 0, 0}, /* q rows narrower than heads·hs */
      {1, 1, 2, 1, 2, 4, 1, 2, 0, 0, 0}, /* k rows narrower than kv_heads·hs */
      {1, 1, 2, 1, 0, 4, 2, 2, 0, 0, 0}, /* head size 0 */
      {1, 2, 2, 1, 2, 4, 2, 2, 2, 3, 0}, /* a cache of 3 rows for 2 past and 2 new positions */
      {1, 1, 2, 1, 2, 4, 2, 2, -1, 0, 0}, /* a negative past */
      {1, 1, 2, 1, 2, 4, 2, 2, 0, 0, -1}, /* a negative window */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    CHECK(be->attention_forward(be, NULL, x, lse, x, x, x, &bad[i]) < 0);
    CHECK(be->attention_backward(be, NULL, x, x, x, x, x, lse, x, x, x, &bad[i]) < 0);
  }
  /* no backward through a cache: training never has one */
  const tsl_attn_shape past = {1, 1, 2, 1, 2, 4, 2, 2, 1, 2, 0};
  CHECK(be->attention_backward(be, NULL, x, x, x, x, x, lse, x, x, x, &past) < 0);
  CHECK(x[0] == 7.0f && x[3] == 7.0f && lse[0] == 7.0f && lse[3] == 7.0f);
}

int main(void) {
  RUN(test_forward);
  RUN(test_backward);
  RUN(test_backward_matches_finite_differences);
  RUN(test_causal_mask);
  RUN(test_window_mask);
  RUN(test_thread_count_invariant);
  RUN(test_past);
  RUN(test_empty_and_bad_shapes);
  return HARNESS_EXIT();
}
