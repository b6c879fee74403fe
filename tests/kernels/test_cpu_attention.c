/*
** tests/kernels/test_cpu_attention.c — causal multi-head attention against
** a double reference and against central differences.
**
** Tolerances come from running each formula on absolute values ("mag"):
** an fp32 evaluation with at most N roundings along any path is within
** about N·u·mag of exact. A score is a dot product over hs terms, so its
** absolute error is ~(hs + 2)·u·|s|mag; softmax turns an absolute score
** error δ into a relative probability error of ~2δ, plus (T + 6)·u from
** exp (2 ulp), the row sum and the division. The output sums T products
** more. The backward chains dp (hs terms), the row dot (T terms) and the
** gradient sums (T terms): (hs + 2T + 10)·u·mag. Everything is checked at
** twice those bounds.
*/
#include "kernel_test.h"

typedef struct attn_shape {
  int64_t B, T, NH, hs;
} attn_shape;

/* odd sizes, the model's, and lengths that cut into query blocks of each
** size the kernel picks (16, 32, 64 rows) with a partial last block */
static const attn_shape shapes[] = {{2, 5, 3, 3},   {1, 1, 1, 1},   {3, 17, 2, 8},
                                    {1, 70, 2, 16}, {1, 300, 1, 8}, {4, 64, 4, 64}};

#define QKV(x, s, b, t) ((x) + ((b) * (s).T + (t)) * 3 * (s).NH * (s).hs)

/* out [B,T,C], att [B,NH,T,T] in double, with their bounds' magnitudes */
static void ref_forward(double *out, double *mag_out, double *att, double *mag_att,
                        const double *qkv, attn_shape s) {
  const int64_t C = s.NH * s.hs;
  const double scale = 1.0 / sqrt((double)s.hs);
  double *sc = kt_doubles(s.T), *sc_mag = kt_doubles(s.T);
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t h = 0; h < s.NH; h++)
      for (int64_t t = 0; t < s.T; t++) {
        const double *q = QKV(qkv, s, b, t) + h * s.hs;
        double mx = -INFINITY, worst_mag = 0.0, sum = 0.0;
        for (int64_t j = 0; j <= t; j++) {
          const double *k = QKV(qkv, s, b, j) + C + h * s.hs;
          sc[j] = sc_mag[j] = 0.0;
          for (int64_t i = 0; i < s.hs; i++) sc[j] += q[i] * k[i], sc_mag[j] += fabs(q[i] * k[i]);
          sc[j] *= scale;
          mx = fmax(mx, sc[j]);
          worst_mag = fmax(worst_mag, sc_mag[j] * scale);
        }
        double *p = att + ((b * s.NH + h) * s.T + t) * s.T;
        for (int64_t j = 0; j < s.T; j++) p[j] = j <= t ? exp(sc[j] - mx) : 0.0;
        for (int64_t j = 0; j <= t; j++) sum += p[j];
        for (int64_t j = 0; j <= t; j++) p[j] /= sum;
        /* relative error of each p, in units of u */
        const double p_err = 2.0 * (s.hs + 2) * worst_mag + (s.T + 6);
        for (int64_t j = 0; j < s.T; j++)
          mag_att[((b * s.NH + h) * s.T + t) * s.T + j] = p_err * p[j];
        for (int64_t i = 0; i < s.hs; i++) {
          double o = 0.0, m = 0.0;
          for (int64_t j = 0; j <= t; j++) {
            double v = QKV(qkv, s, b, j)[2 * C + h * s.hs + i];
            o += p[j] * v, m += p[j] * fabs(v);
          }
          out[(b * s.T + t) * C + h * s.hs + i] = o;
          mag_out[(b * s.T + t) * C + h * s.hs + i] = (p_err + s.T + 2) * m;
        }
      }
  free(sc), free(sc_mag);
}

/* dqkv and its mag in double from the kernel's att (taken as exact) */
static void ref_backward(double *dqkv, double *mag, const double *dout, const double *qkv,
                         const float *att, attn_shape s) {
  const int64_t C = s.NH * s.hs;
  const double scale = 1.0 / sqrt((double)s.hs);
  memset(dqkv, 0, (size_t)(s.B * s.T * 3 * C) * sizeof(double));
  memset(mag, 0, (size_t)(s.B * s.T * 3 * C) * sizeof(double));
  double *dp = kt_doubles(s.T), *dp_mag = kt_doubles(s.T);
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t h = 0; h < s.NH; h++)
      for (int64_t t = 0; t < s.T; t++) {
        const float *p = att + ((b * s.NH + h) * s.T + t) * s.T;
        const double *dot = dout + (b * s.T + t) * C + h * s.hs, *q = QKV(qkv, s, b, t) + h * s.hs;
        double dsum = 0.0, dsum_mag = 0.0;
        for (int64_t j = 0; j <= t; j++) {
          const double *v = QKV(qkv, s, b, j) + 2 * C + h * s.hs;
          dp[j] = dp_mag[j] = 0.0;
          for (int64_t i = 0; i < s.hs; i++)
            dp[j] += dot[i] * v[i], dp_mag[j] += fabs(dot[i] * v[i]);
          dsum += p[j] * dp[j], dsum_mag += p[j] * dp_mag[j];
        }
        double *dq = QKV(dqkv, s, b, t) + h * s.hs, *mq = QKV(mag, s, b, t) + h * s.hs;
        for (int64_t j = 0; j <= t; j++) {
          double ds = p[j] * (dp[j] - dsum) * scale, ds_mag = p[j] * (dp_mag[j] + dsum_mag) * scale;
          const double *k = QKV(qkv, s, b, j) + C + h * s.hs;
          double *dk = QKV(dqkv, s, b, j) + C + h * s.hs, *mk = QKV(mag, s, b, j) + C + h * s.hs;
          double *dv = dk + C, *mv = mk + C;
          for (int64_t i = 0; i < s.hs; i++) {
            dq[i] += ds * k[i], mq[i] += ds_mag * fabs(k[i]);
            dk[i] += ds * q[i], mk[i] += ds_mag * fabs(q[i]);
            dv[i] += p[j] * dot[i], mv[i] += p[j] * fabs(dot[i]);
          }
        }
      }
  free(dp), free(dp_mag);
}

static int64_t qkv_count(attn_shape s) { return s.B * s.T * 3 * s.NH * s.hs; }
static int64_t out_count(attn_shape s) { return s.B * s.T * s.NH * s.hs; }
static int64_t att_count(attn_shape s) { return s.B * s.NH * s.T * s.T; }

/* out and att against the reference; att above the diagonal exactly 0 (it
** starts as NaN) and each row a distribution summing to 1 */
static void test_forward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 21;
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    attn_shape s = shapes[c];
    float *qkv = kt_random(&rng, qkv_count(s), -2, 2), *out = kt_floats(out_count(s));
    float *att = kt_floats(att_count(s));
    double *wide = kt_widen(qkv, qkv_count(s)), *ref = kt_doubles(out_count(s));
    double *mag = kt_doubles(out_count(s)), *ref_att = kt_doubles(att_count(s));
    double *mag_att = kt_doubles(att_count(s));
    ref_forward(ref, mag, ref_att, mag_att, wide, s);
    kt_fill(out, out_count(s), NAN), kt_fill(att, att_count(s), NAN);
    CHECK_EQ_INT(be->attention_forward(be, NULL, out, att, qkv, s.B, s.T, s.NH, s.hs), 0);
    CHECK_ARRAY_BOUND(out, ref, mag, out_count(s), 2 * KT_U);
    CHECK_ARRAY_BOUND(att, ref_att, mag_att, att_count(s), 2 * KT_U);
    int64_t above_nonzero = 0, worst_row = 0;
    double worst = 0.0;
    for (int64_t row = 0; row < s.B * s.NH * s.T; row++) {
      int64_t t = row % s.T;
      double sum = 0.0;
      for (int64_t j = 0; j < s.T; j++) {
        float p = att[row * s.T + j];
        if (j > t)
          above_nonzero += !(p == 0.0f);
        else
          sum += p;
      }
      if (fabs(sum - 1.0) > worst) worst = fabs(sum - 1.0), worst_row = row;
    }
    CHECK_EQ_INT(above_nonzero, 0);
    /* Σp = 1 up to each p's rounding and the sum's: (2T + 8)·u */
    if (worst > (2.0 * s.T + 8) * KT_U) fprintf(stderr, "  row %lld\n", (long long)worst_row);
    CHECK_CLOSE(worst, 0.0, (2.0 * s.T + 8) * KT_U, 0.0);
    free(qkv), free(out), free(att), free(wide), free(ref), free(mag), free(ref_att), free(mag_att);
  }
}

/* dqkv (prefilled with NaN: it must be overwritten, in all three blocks)
** against the reference */
static void test_backward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 22;
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    attn_shape s = shapes[c];
    float *qkv = kt_random(&rng, qkv_count(s), -2, 2), *out = kt_floats(out_count(s));
    float *att = kt_floats(att_count(s)), *dout = kt_random(&rng, out_count(s), -1, 1);
    float *dqkv = kt_floats(qkv_count(s));
    CHECK_EQ_INT(be->attention_forward(be, NULL, out, att, qkv, s.B, s.T, s.NH, s.hs), 0);
    double *wide = kt_widen(qkv, qkv_count(s)), *wide_dout = kt_widen(dout, out_count(s));
    double *ref = kt_doubles(qkv_count(s)), *mag = kt_doubles(qkv_count(s));
    ref_backward(ref, mag, wide_dout, wide, att, s);
    for (int call = 0; call < 2; call++) {
      kt_fill(dqkv, qkv_count(s), NAN);
      CHECK_EQ_INT(be->attention_backward(be, NULL, dqkv, dout, qkv, att, s.B, s.T, s.NH, s.hs), 0);
      CHECK_ARRAY_BOUND(dqkv, ref, mag, qkv_count(s), 2.0 * (s.hs + 2 * s.T + 10) * KT_U);
    }
    free(qkv), free(out), free(att), free(dout), free(dqkv), free(wide), free(wide_dout), free(ref),
        free(mag);
  }
}

/* L = Σ dout·attention(qkv) in double */
static double ref_loss(const double *qkv, const double *dout, attn_shape s) {
  double *out = kt_doubles(out_count(s)), *mag = kt_doubles(out_count(s));
  double *att = kt_doubles(att_count(s)), *mag_att = kt_doubles(att_count(s)), loss = 0.0;
  ref_forward(out, mag, att, mag_att, qkv, s);
  for (int64_t i = 0; i < out_count(s); i++) loss += dout[i] * out[i];
  free(out), free(mag), free(att), free(mag_att);
  return loss;
}

/* The backward against numerical derivatives of the forward, so that the
** gradient formula is checked independently of ref_backward. The kernel
** is fp32 (error ~1e-6 here), the central difference errs by ~1e-10; a
** wrong term is off by O(0.1). */
static void test_backward_matches_finite_differences(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 23;
  const attn_shape s = {2, 4, 2, 3};
  const int64_t n = qkv_count(s);
  float *qkv = kt_random(&rng, n, -2, 2), *out = kt_floats(out_count(s));
  float *att = kt_floats(att_count(s)), *dout = kt_random(&rng, out_count(s), -1, 1);
  float *dqkv = kt_floats(n);
  CHECK_EQ_INT(be->attention_forward(be, NULL, out, att, qkv, s.B, s.T, s.NH, s.hs), 0);
  CHECK_EQ_INT(be->attention_backward(be, NULL, dqkv, dout, qkv, att, s.B, s.T, s.NH, s.hs), 0);
  double *x = kt_widen(qkv, n), *d = kt_widen(dout, out_count(s)), *fd = kt_doubles(n);
  const double h = 1e-6;
  for (int64_t i = 0; i < n; i++) {
    double keep = x[i];
    x[i] = keep + h;
    double up = ref_loss(x, d, s);
    x[i] = keep - h;
    double down = ref_loss(x, d, s);
    x[i] = keep;
    fd[i] = (up - down) / (2 * h);
  }
  CHECK_ARRAY_CLOSE(dqkv, fd, n, 1e-5, 1e-4);
  free(qkv), free(out), free(att), free(dout), free(dqkv), free(x), free(d), free(fd);
}

/* batch = 0 or T = 0: nothing to do, and nothing written */
static void test_empty(void) {
  tsl_backend *be = kt_backend();
  float sentinel[4] = {7, 7, 7, 7};
  CHECK_EQ_INT(be->attention_forward(be, NULL, sentinel, sentinel, sentinel, 0, 4, 2, 2), 0);
  CHECK_EQ_INT(be->attention_backward(be, NULL, sentinel, sentinel, sentinel, sentinel, 2, 0, 2, 2),
               0);
  CHECK(sentinel[0] == 7.0f && sentinel[3] == 7.0f);
}

int main(void) {
  RUN(test_forward);
  RUN(test_backward);
  RUN(test_backward_matches_finite_differences);
  RUN(test_empty);
  return HARNESS_EXIT();
}
