/*
** tests/kernels/test_cpu_layernorm.c — layer norm, one-pass and split,
** against double references and central differences.
**
** Tolerances. The kernel forms mean and variance from double sums, so its
** mean and rstd are the exact ones rounded to float (relative u = 2^-24,
** a few u for rstd through the square root). Each output element then
** takes about six fp32 roundings ((x − mean), ·rstd, ·w, +b, and the float
** mean and rstd themselves), each relative to
**   mag = (|x| + |mean|)·rstd·|w| + |b|,
** so outputs are checked against 8·u·mag. Gradients sum over rows or
** columns; their bounds add (count + 4)·u of the matching magnitude.
*/
#include "kernel_test.h"

/* GPT-2's epsilon, and one large enough to move every output by far more
** than the bounds below, so a kernel that ignored the one it is given
** would fail */
#define EPS_GPT2 1e-5f
#define EPS_LARGE 0.25f

typedef struct ln_case {
  int64_t rows, cols;
  float *x, *w, *b, *dout;
  float eps;
} ln_case;

/* Inputs with a mean far from zero (3 ± 1) so that the variance formula is
** exercised, and one constant row (variance 0, rstd = 1/√eps). */
static ln_case make_case(uint64_t *rng, int64_t rows, int64_t cols, float eps) {
  ln_case c = {rows,
               cols,
               kt_random(rng, rows * cols, 2, 4),
               kt_random(rng, cols, 0.5f, 1.5f),
               kt_random(rng, cols, -1, 1),
               kt_random(rng, rows * cols, -1, 1),
               eps};
  kt_fill(c.x + (rows - 1) * cols, cols, 0.1f);
  return c;
}

static void free_case(ln_case *c) { free(c->x), free(c->w), free(c->b), free(c->dout); }

/* out, mean, rstd in double with a two-pass variance, and mag as in the
** header comment */
static void ref_forward(double *out, double *mag, double *mean, double *rstd, const ln_case *c) {
  for (int64_t r = 0; r < c->rows; r++) {
    const float *x = c->x + r * c->cols;
    double m = 0.0, v = 0.0;
    for (int64_t i = 0; i < c->cols; i++) m += x[i];
    m /= (double)c->cols;
    for (int64_t i = 0; i < c->cols; i++) v += (x[i] - m) * (x[i] - m);
    double rs = 1.0 / sqrt(v / (double)c->cols + c->eps);
    mean[r] = m;
    rstd[r] = rs;
    for (int64_t i = 0; i < c->cols; i++) {
      out[r * c->cols + i] = (x[i] - m) * rs * c->w[i] + c->b[i];
      mag[r * c->cols + i] = (fabs(x[i]) + fabs(m)) * rs * fabs(c->w[i]) + fabs(c->b[i]);
    }
  }
}

/* dinp, dw, db (dw, db from zero) in double from the kernel's saved float
** mean and rstd, with magnitudes for the bounds */
static void ref_backward(double *dinp, double *mag_dinp, double *dw, double *mag_dw, double *db,
                         double *mag_db, const ln_case *c, const float *mean, const float *rstd) {
  const int64_t n = c->cols;
  memset(dw, 0, (size_t)n * sizeof(double)), memset(mag_dw, 0, (size_t)n * sizeof(double));
  memset(db, 0, (size_t)n * sizeof(double)), memset(mag_db, 0, (size_t)n * sizeof(double));
  for (int64_t r = 0; r < c->rows; r++) {
    const float *x = c->x + r * n, *d = c->dout + r * n;
    double sg = 0.0, sgx = 0.0, ag = 0.0, agx = 0.0;
    for (int64_t i = 0; i < n; i++) {
      double g = (double)d[i] * c->w[i], xh = (x[i] - (double)mean[r]) * rstd[r];
      double axh = (fabs(x[i]) + fabs(mean[r])) * rstd[r];
      sg += g, sgx += g * xh, ag += fabs(g), agx += fabs(g) * axh;
      dw[i] += d[i] * xh, mag_dw[i] += fabs(d[i]) * axh;
      db[i] += d[i], mag_db[i] += fabs(d[i]);
    }
    for (int64_t i = 0; i < n; i++) {
      double g = (double)d[i] * c->w[i], xh = (x[i] - (double)mean[r]) * rstd[r];
      double axh = (fabs(x[i]) + fabs(mean[r])) * rstd[r];
      dinp[r * n + i] = rstd[r] * (g - sg / n - xh * sgx / n);
      mag_dinp[r * n + i] = rstd[r] * (fabs(g) + ag / n + axh * agx / n);
    }
  }
}

static void test_forward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 11;
  const int64_t shapes[][2] = {{7, 13}, {1, 1}, {3, 2}, {256, 256}, {64, 768}};
  for (size_t i = 0; i < 2 * sizeof shapes / sizeof shapes[0]; i++) {
    const size_t sh = i / 2;
    ln_case c = make_case(&rng, shapes[sh][0], shapes[sh][1], i % 2 ? EPS_LARGE : EPS_GPT2);
    const int64_t n = c.rows * c.cols;
    float *out = kt_floats(n), *mean = kt_floats(c.rows), *rstd = kt_floats(c.rows);
    double *ref = kt_doubles(n), *mag = kt_doubles(n);
    double *ref_mean = kt_doubles(c.rows), *ref_rstd = kt_doubles(c.rows);
    ref_forward(ref, mag, ref_mean, ref_rstd, &c);
    kt_fill(out, n, NAN);
    CHECK_EQ_INT(be->layernorm_forward(be, NULL, out, mean, rstd, c.x, c.w, c.b, c.rows, c.cols, c.eps),
                 0);
    CHECK_ARRAY_BOUND(out, ref, mag, n, 8 * KT_U);
    /* mean: the double mean rounded once; rstd: rounded once after a
    ** variance that E[x²] − mean² carries with ~1e-16·E[x²]/var relative
    ** error, which is below u for these inputs */
    CHECK_ARRAY_CLOSE(mean, ref_mean, c.rows, 0.0, 1.01 * KT_U);
    CHECK_ARRAY_CLOSE(rstd, ref_rstd, c.rows, 0.0, 2 * KT_U);
    free_case(&c), free(out), free(mean), free(rstd), free(ref), free(mag), free(ref_mean),
        free(ref_rstd);
  }
}

/* dinp is overwritten; dw, db accumulate (two calls from a random start
** add twice the reference) */
static void test_backward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 12;
  const int64_t shapes[][2] = {{7, 13}, {1, 1}, {256, 256}, {64, 768}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    ln_case c = make_case(&rng, shapes[sh][0], shapes[sh][1], EPS_GPT2);
    const int64_t n = c.rows * c.cols, cols = c.cols;
    float *out = kt_floats(n), *mean = kt_floats(c.rows), *rstd = kt_floats(c.rows);
    CHECK_EQ_INT(be->layernorm_forward(be, NULL, out, mean, rstd, c.x, c.w, c.b, c.rows, cols, c.eps), 0);
    float *dinp = kt_floats(n), *dw0 = kt_random(&rng, cols, -1, 1);
    float *db0 = kt_random(&rng, cols, -1, 1), *dw = kt_floats(cols), *db = kt_floats(cols);
    memcpy(dw, dw0, (size_t)cols * sizeof(float)), memcpy(db, db0, (size_t)cols * sizeof(float));
    double *rd = kt_doubles(n), *md = kt_doubles(n), *rw = kt_doubles(cols);
    double *mw = kt_doubles(cols), *rb = kt_doubles(cols), *mb = kt_doubles(cols);
    ref_backward(rd, md, rw, mw, rb, mb, &c, mean, rstd);
    for (int call = 0; call < 2; call++) {
      kt_fill(dinp, n, NAN);
      CHECK_EQ_INT(be->layernorm_backward(be, NULL, dinp, dw, db, c.dout, c.x, c.w, mean, rstd,
                                          c.rows, cols),
                   0);
      /* x̂, g and the two row means each round a few times: 12·u·mag */
      CHECK_ARRAY_BOUND(dinp, rd, md, n, 12 * KT_U);
    }
    for (int64_t i = 0; i < cols; i++) {
      rw[i] = dw0[i] + 2 * rw[i], mw[i] = 2 * mw[i] + fabs(dw0[i]);
      rb[i] = db0[i] + 2 * rb[i], mb[i] = 2 * mb[i] + fabs(db0[i]);
    }
    CHECK_ARRAY_BOUND(dw, rw, mw, cols, (c.rows + 6) * KT_U);
    CHECK_ARRAY_BOUND(db, rb, mb, cols, (c.rows + 4) * KT_U);
    free_case(&c), free(out), free(mean), free(rstd), free(dinp), free(dw0), free(db0), free(dw),
        free(db), free(rd), free(md), free(rw), free(mw), free(rb), free(mb);
  }
}

/* L = Σ dout·layernorm(x; w, b) in double */
static double ref_loss(const ln_case *c, const double *x, const double *w, const double *b) {
  double loss = 0.0;
  for (int64_t r = 0; r < c->rows; r++) {
    const double *xr = x + r * c->cols;
    double m = 0.0, v = 0.0;
    for (int64_t i = 0; i < c->cols; i++) m += xr[i];
    m /= (double)c->cols;
    for (int64_t i = 0; i < c->cols; i++) v += (xr[i] - m) * (xr[i] - m);
    double rs = 1.0 / sqrt(v / (double)c->cols + c->eps);
    for (int64_t i = 0; i < c->cols; i++)
      loss += c->dout[r * c->cols + i] * ((xr[i] - m) * rs * w[i] + b[i]);
  }
  return loss;
}

/* ∂L/∂p[i] by central differences, p being one of x, w, b (widened) */
static void finite_diff(double *grad, double *p, int64_t n, const ln_case *c, const double *x,
                        const double *w, const double *b) {
  const double h = 1e-6;
  for (int64_t i = 0; i < n; i++) {
    double keep = p[i];
    p[i] = keep + h;
    double up = ref_loss(c, x, w, b);
    p[i] = keep - h;
    double down = ref_loss(c, x, w, b);
    p[i] = keep;
    grad[i] = (up - down) / (2 * h);
  }
}

/* The backward against numerical derivatives of the forward, so that the
** gradient formula itself is checked, not only its implementation, at an
** epsilon comparable to the variance, where rstd depends on it most. The
** kernel is fp32 (error ~1e-6 here); the central difference errs by
** ~h² + 1e-16/h ≈ 1e-10; a wrong term would be off by O(0.1). */
static void test_backward_matches_finite_differences(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 13;
  ln_case c = {3,
               5,
               kt_random(&rng, 15, -2, 2),
               kt_random(&rng, 5, 0.5f, 1.5f),
               kt_random(&rng, 5, -1, 1),
               kt_random(&rng, 15, -1, 1),
               EPS_LARGE};
  float out[15], mean[3], rstd[3], dinp[15], dw[5] = {0}, db[5] = {0};
  CHECK_EQ_INT(be->layernorm_forward(be, NULL, out, mean, rstd, c.x, c.w, c.b, 3, 5, c.eps), 0);
  CHECK_EQ_INT(be->layernorm_backward(be, NULL, dinp, dw, db, c.dout, c.x, c.w, mean, rstd, 3, 5),
               0);
  double *x = kt_widen(c.x, 15), *w = kt_widen(c.w, 5), *b = kt_widen(c.b, 5);
  double gx[15], gw[5], gb[5];
  finite_diff(gx, x, 15, &c, x, w, b);
  finite_diff(gw, w, 5, &c, x, w, b);
  finite_diff(gb, b, 5, &c, x, w, b);
  CHECK_ARRAY_CLOSE(dinp, gx, 15, 1e-5, 1e-4);
  CHECK_ARRAY_CLOSE(dw, gw, 5, 1e-5, 1e-4);
  CHECK_ARRAY_CLOSE(db, gb, 5, 1e-5, 1e-4);
  free_case(&c), free(x), free(w), free(b);
}

/* columns [c0, c0 + n) of a [rows, cols] matrix, as a [rows, n] matrix */
static float *columns(const float *x, int64_t rows, int64_t cols, int64_t c0, int64_t n) {
  float *y = kt_floats(rows * n);
  for (int64_t r = 0; r < rows; r++)
    memcpy(y + r * n, x + r * cols + c0, (size_t)n * sizeof(float));
  return y;
}

/* The hidden dimension cut in two parts (as two ranks hold it), partial
** sums added between the phases, must give the one-pass results: forward
** outputs, mean and rstd, dinp, and the parts' dw and db. A single part
** covering all columns must also match the one-pass kernels. */
static void test_split_matches_one_pass(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 14;
  const int64_t shapes[][3] = {{7, 13, 6}, {256, 256, 128}, {5, 9, 9}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    ln_case c = make_case(&rng, shapes[sh][0], shapes[sh][1], sh == 0 ? EPS_LARGE : EPS_GPT2);
    const int64_t rows = c.rows, cols = c.cols, n = rows * cols;
    const int64_t part_c0[2] = {0, shapes[sh][2]};
    const int64_t part_n[2] = {shapes[sh][2], cols - shapes[sh][2]};
    float *out = kt_floats(n), *mean = kt_floats(rows), *rstd = kt_floats(rows);
    float *dinp = kt_floats(n), *dw = kt_floats(cols), *db = kt_floats(cols);
    CHECK_EQ_INT(be->layernorm_forward(be, NULL, out, mean, rstd, c.x, c.w, c.b, rows, cols, c.eps), 0);
    CHECK_EQ_INT(
        be->layernorm_backward(be, NULL, dinp, dw, db, c.dout, c.x, c.w, mean, rstd, rows, cols),
        0);
    double *mag = kt_doubles(n), *ref = kt_doubles(n), *rm = kt_doubles(rows);
    double *rr = kt_doubles(rows), *one_pass = kt_widen(out, n), *one_pass_d = kt_widen(dinp, n);
    double *one_mean = kt_widen(mean, rows), *one_rstd = kt_widen(rstd, rows);
    ref_forward(ref, mag, rm, rr, &c);

    double *sums = kt_doubles(2 * rows), *part_sums = kt_doubles(2 * rows);
    float *got = kt_floats(n), *got_d = kt_floats(n), *got_dw = kt_floats(cols);
    float *got_db = kt_floats(cols);
    float *pmean[2], *prstd[2];
    for (int p = 0; p < 2; p++) {
      if (part_n[p] == 0) continue;
      float *x = columns(c.x, rows, cols, part_c0[p], part_n[p]);
      CHECK_EQ_INT(be->layernorm_stats(be, NULL, part_sums, x, rows, part_n[p]), 0);
      for (int64_t i = 0; i < 2 * rows; i++) sums[i] += part_sums[i];
      free(x);
    }
    for (int p = 0; p < 2; p++) {
      pmean[p] = kt_floats(rows), prstd[p] = kt_floats(rows);
      if (part_n[p] == 0) continue;
      float *x = columns(c.x, rows, cols, part_c0[p], part_n[p]);
      float *o = kt_floats(rows * part_n[p]);
      CHECK_EQ_INT(be->layernorm_apply(be, NULL, o, pmean[p], prstd[p], sums, x, c.w + part_c0[p],
                                       c.b + part_c0[p], rows, part_n[p], cols, c.eps),
                   0);
      for (int64_t r = 0; r < rows; r++)
        memcpy(got + r * cols + part_c0[p], o + r * part_n[p], (size_t)part_n[p] * sizeof(float));
      free(x), free(o);
    }
    /* the split's double sums add in another order: mean and rstd agree to
    ** a rounding, outputs to a few roundings of mag */
    CHECK_ARRAY_CLOSE(pmean[0], one_mean, rows, 1e-30, 1.01 * KT_U);
    CHECK_ARRAY_CLOSE(prstd[0], one_rstd, rows, 0.0, 1.01 * KT_U);
    if (part_n[1]) CHECK_ARRAY_EQ(pmean[1], pmean[0], rows);
    CHECK_ARRAY_BOUND(got, one_pass, mag, n, 4 * KT_U);

    memset(sums, 0, (size_t)(2 * rows) * sizeof(double));
    for (int p = 0; p < 2; p++) {
      if (part_n[p] == 0) continue;
      float *x = columns(c.x, rows, cols, part_c0[p], part_n[p]);
      float *d = columns(c.dout, rows, cols, part_c0[p], part_n[p]);
      CHECK_EQ_INT(be->layernorm_backward_stats(be, NULL, part_sums, got_dw + part_c0[p],
                                                got_db + part_c0[p], d, x, c.w + part_c0[p], mean,
                                                rstd, rows, part_n[p]),
                   0);
      for (int64_t i = 0; i < 2 * rows; i++) sums[i] += part_sums[i];
      free(x), free(d);
    }
    for (int p = 0; p < 2; p++) {
      if (part_n[p] == 0) continue;
      float *x = columns(c.x, rows, cols, part_c0[p], part_n[p]);
      float *d = columns(c.dout, rows, cols, part_c0[p], part_n[p]);
      float *di = kt_floats(rows * part_n[p]);
      CHECK_EQ_INT(be->layernorm_backward_apply(be, NULL, di, sums, d, x, c.w + part_c0[p], mean,
                                                rstd, rows, part_n[p], cols),
                   0);
      for (int64_t r = 0; r < rows; r++)
        memcpy(got_d + r * cols + part_c0[p], di + r * part_n[p],
               (size_t)part_n[p] * sizeof(float));
      free(x), free(d), free(di);
    }
    /* dw, db: per column the same additions in the same order */
    CHECK_ARRAY_EQ(got_dw, dw, cols);
    CHECK_ARRAY_EQ(got_db, db, cols);
    /* dinp: only the double row sums differ in order, far below fp32 */
    double *mag_d = kt_doubles(n), *rw = kt_doubles(cols), *mw = kt_doubles(cols);
    double *rb = kt_doubles(cols), *mb = kt_doubles(cols), *rd = kt_doubles(n);
    ref_backward(rd, mag_d, rw, mw, rb, mb, &c, mean, rstd);
    CHECK_ARRAY_BOUND(got_d, one_pass_d, mag_d, n, 2 * KT_U);

    free_case(&c), free(out), free(mean), free(rstd), free(dinp), free(dw), free(db), free(mag),
        free(ref), free(rm), free(rr), free(one_pass), free(one_pass_d), free(one_mean),
        free(one_rstd), free(sums), free(part_sums), free(got), free(got_d), free(got_dw),
        free(got_db), free(mag_d), free(rw), free(mw), free(rb), free(mb), free(rd);
    for (int p = 0; p < 2; p++) free(pmean[p]), free(prstd[p]);
  }
}

int main(void) {
  RUN(test_forward);
  RUN(test_backward);
  RUN(test_backward_matches_finite_differences);
  RUN(test_split_matches_one_pass);
  return HARNESS_EXIT();
}
