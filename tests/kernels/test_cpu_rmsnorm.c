/*
** tests/kernels/test_cpu_rmsnorm.c — RMS norm, one-pass and split, against
** double references and central differences.
**
** Tolerances. The kernel sums x² in double, so rstd is the exact value
** rounded to float (u = 2^-24, plus u from the square root in double).
** An output x·rstd·w then takes two fp32 roundings: 4u of |x|·rstd·|w| in
** all. The input gradient rstd·(g − x·c), g = dout·w, c = rstd²·Σgx/N:
** one rounding each for g, c (from a double sum), x·c, the difference and
** the product, relative to mag = rstd·(|g| + |x·c|): 6u. dw sums rows
** terms: (rows + 3)·u of Σ|terms|. Each check is at twice its bound.
*/
#include "kernel_test.h"

#define EPS 1e-5f

typedef struct rms_case {
  int64_t rows, cols;
  float *x, *w, *dout;
} rms_case;

/* Inputs 3 ± 1 (a large mean, which an RMS norm keeps), one row of zeros
** (rstd = 1/√eps) and one of a constant. */
static rms_case make_case(uint64_t *rng, int64_t rows, int64_t cols) {
  rms_case c = {rows, cols, kt_random(rng, rows * cols, 2, 4), kt_random(rng, cols, 0.5f, 1.5f),
                kt_random(rng, rows * cols, -1, 1)};
  kt_fill(c.x + (rows - 1) * cols, cols, 0.0f);
  if (rows > 1) kt_fill(c.x, cols, -0.25f);
  return c;
}

static void free_case(rms_case *c) { free(c->x), free(c->w), free(c->dout); }

/* exact rstd of row r */
static double ref_rstd(const rms_case *c, int64_t r) {
  double s = 0.0;
  for (int64_t i = 0; i < c->cols; i++) s += (double)c->x[r * c->cols + i] * c->x[r * c->cols + i];
  return 1.0 / sqrt(s / (double)c->cols + EPS);
}

static void ref_forward(double *out, double *mag, double *rstd, const rms_case *c) {
  for (int64_t r = 0; r < c->rows; r++) {
    rstd[r] = ref_rstd(c, r);
    for (int64_t i = 0; i < c->cols; i++) {
      const int64_t e = r * c->cols + i;
      out[e] = c->x[e] * rstd[r] * c->w[i];
      mag[e] = fabs(out[e]);
    }
  }
}

/* dinp (with mag) and dw from zero (with mag), from the kernel's rstd */
static void ref_backward(double *dinp, double *mag, double *dw, double *mag_dw, const rms_case *c,
                         const float *rstd) {
  memset(dw, 0, (size_t)c->cols * sizeof(double));
  memset(mag_dw, 0, (size_t)c->cols * sizeof(double));
  for (int64_t r = 0; r < c->rows; r++) {
    const double rs = rstd[r];
    double sgx = 0.0;
    for (int64_t i = 0; i < c->cols; i++) {
      const int64_t e = r * c->cols + i;
      sgx += (double)c->dout[e] * c->w[i] * c->x[e];
    }
    const double cc = rs * rs * sgx / (double)c->cols;
    for (int64_t i = 0; i < c->cols; i++) {
      const int64_t e = r * c->cols + i;
      const double g = (double)c->dout[e] * c->w[i];
      dinp[e] = rs * (g - c->x[e] * cc);
      mag[e] = rs * (fabs(g) + fabs(c->x[e] * cc));
      dw[i] += (double)c->dout[e] * c->x[e] * rs;
      mag_dw[i] += fabs((double)c->dout[e] * c->x[e] * rs);
    }
  }
}

static const int64_t shapes[][2] = {{1, 1}, {7, 13}, {64, 256}, {5, 1000}};

static void test_forward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 41;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    rms_case c = make_case(&rng, shapes[s][0], shapes[s][1]);
    const int64_t n = c.rows * c.cols;
    float *out = kt_floats(n), *rstd = kt_floats(c.rows);
    double *ref = kt_doubles(n), *mag = kt_doubles(n), *rr = kt_doubles(c.rows);
    kt_fill(out, n, NAN);
    CHECK_EQ_INT(be->rmsnorm_forward(be, NULL, out, rstd, c.x, c.w, c.rows, c.cols, EPS), 0);
    ref_forward(ref, mag, rr, &c);
    CHECK_ARRAY_CLOSE(rstd, rr, c.rows, 0.0, 2 * 2 * KT_U);
    CHECK_ARRAY_BOUND(out, ref, mag, n, 2 * 4 * KT_U);
    free_case(&c), free(out), free(rstd), free(ref), free(mag), free(rr);
  }
}

/* dinp overwritten (NaN before), dw accumulated onto what it held */
static void test_backward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 42;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    rms_case c = make_case(&rng, shapes[s][0], shapes[s][1]);
    const int64_t n = c.rows * c.cols;
    float *out = kt_floats(n), *rstd = kt_floats(c.rows), *dinp = kt_floats(n);
    float *dw = kt_floats(c.cols);
    kt_fill(dinp, n, NAN), kt_fill(dw, c.cols, 0.5f);
    CHECK_EQ_INT(be->rmsnorm_forward(be, NULL, out, rstd, c.x, c.w, c.rows, c.cols, EPS), 0);
    CHECK_EQ_INT(be->rmsnorm_backward(be, NULL, dinp, dw, c.dout, c.x, c.w, rstd, c.rows, c.cols), 0);
    double *ref = kt_doubles(n), *mag = kt_doubles(n), *rdw = kt_doubles(c.cols);
    double *mdw = kt_doubles(c.cols);
    ref_backward(ref, mag, rdw, mdw, &c, rstd);
    for (int64_t i = 0; i < c.cols; i++) rdw[i] += 0.5, mdw[i] = (c.rows + 3) * (mdw[i] + 0.5);
    CHECK_ARRAY_BOUND(dinp, ref, mag, n, 2 * 6 * KT_U);
    CHECK_ARRAY_BOUND(dw, rdw, mdw, c.cols, 2 * KT_U);
    free_case(&c), free(out), free(rstd), free(dinp), free(dw), free(ref), free(mag), free(rdw), free(mdw);
  }
}

/* L = Σ dout·rmsnorm(x)·w in double */
static double ref_loss(const rms_case *c) {
  double loss = 0.0;
  for (int64_t r = 0; r < c->rows; r++) {
    const double rs = ref_rstd(c, r);
    for (int64_t i = 0; i < c->cols; i++)
      loss += (double)c->dout[r * c->cols + i] * c->x[r * c->cols + i] * rs * c->w[i];
  }
  return loss;
}

/* dinp and dw against central differences of the double forward, so the
** gradient formula is checked independently of ref_backward: each input
** moves by the fp32 steps nearest ±2^-12, the kernel errs by ~1e-6, the
** quotient by ~1e-7 (truncation), a wrong term by O(0.1). */
static void test_backward_matches_finite_differences(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 43;
  rms_case c = make_case(&rng, 4, 9);
  kt_fill(c.x + 3 * 9, 9, 0.3f); /* no zero row: rstd' is large there */
  const int64_t n = c.rows * c.cols;
  float *out = kt_floats(n), *rstd = kt_floats(c.rows), *dinp = kt_floats(n), *dw = kt_floats(c.cols);
  CHECK_EQ_INT(be->rmsnorm_forward(be, NULL, out, rstd, c.x, c.w, c.rows, c.cols, EPS), 0);
  CHECK_EQ_INT(be->rmsnorm_backward(be, NULL, dinp, dw, c.dout, c.x, c.w, rstd, c.rows, c.cols), 0);
  float *vars[2] = {c.x, c.w}, *grads[2] = {dinp, dw};
  const int64_t counts[2] = {n, c.cols};
  for (int v = 0; v < 2; v++)
    for (int64_t i = 0; i < counts[v]; i++) {
      const float keep = vars[v][i], hi = keep + 1.0f / 4096, lo = keep - 1.0f / 4096;
      vars[v][i] = hi;
      const double up = ref_loss(&c);
      vars[v][i] = lo;
      const double down = ref_loss(&c);
      vars[v][i] = keep;
      CHECK_CLOSE(grads[v][i], (up - down) / ((double)hi - lo), 1e-5, 1e-4);
    }
  free_case(&c), free(out), free(rstd), free(dinp), free(dw);
}

/* columns [c0, c0+n) of a [rows, cols] array, packed */
static float *columns(const float *x, int64_t rows, int64_t cols, int64_t c0, int64_t n) {
  float *out = kt_floats(rows * n);
  for (int64_t r = 0; r < rows; r++) memcpy(out + r * n, x + r * cols + c0, (size_t)n * sizeof(float));
  return out;
}

/* The hidden dimension cut in two parts (as two ranks hold it), the sums
** added between the phases as the core's all-reduce would: rstd within a
** rounding of the one-pass value (the double sums add in another order),
** outputs and input gradients within a rounding or two of their mags, dw
** bit for bit (each column does the same additions). */
static void test_split_matches_one_pass(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 44;
  const int64_t shapes3[][3] = {{7, 13, 6}, {64, 256, 128}, {5, 9, 9}};
  for (size_t s = 0; s < sizeof shapes3 / sizeof shapes3[0]; s++) {
    rms_case c = make_case(&rng, shapes3[s][0], shapes3[s][1]);
    const int64_t rows = c.rows, cols = c.cols, n = rows * cols;
    const int64_t c0[2] = {0, shapes3[s][2]}, cn[2] = {shapes3[s][2], cols - shapes3[s][2]};
    float *out = kt_floats(n), *rstd = kt_floats(rows), *dinp = kt_floats(n), *dw = kt_floats(cols);
    CHECK_EQ_INT(be->rmsnorm_forward(be, NULL, out, rstd, c.x, c.w, rows, cols, EPS), 0);
    CHECK_EQ_INT(be->rmsnorm_backward(be, NULL, dinp, dw, c.dout, c.x, c.w, rstd, rows, cols), 0);
    double *sums = kt_doubles(rows), *part = kt_doubles(rows), *mag = kt_doubles(n), *ref = kt_doubles(n);
    double *rr = kt_doubles(rows), *one = kt_widen(out, n), *one_d = kt_widen(dinp, n);
    double *one_rstd = kt_widen(rstd, rows);
    ref_forward(ref, mag, rr, &c);
    float *got = kt_floats(n), *got_d = kt_floats(n), *got_dw = kt_floats(cols), *prstd = kt_floats(rows);
    for (int p = 0; p < 2; p++) {
      if (!cn[p]) continue;
      float *x = columns(c.x, rows, cols, c0[p], cn[p]);
      CHECK_EQ_INT(be->rmsnorm_stats(be, NULL, part, x, rows, cn[p]), 0);
      for (int64_t i = 0; i < rows; i++) sums[i] += part[i];
      free(x);
    }
    for (int p = 0; p < 2; p++) {
      if (!cn[p]) continue;
      float *x = columns(c.x, rows, cols, c0[p], cn[p]), *o = kt_floats(rows * cn[p]);
      CHECK_EQ_INT(be->rmsnorm_apply(be, NULL, o, prstd, sums, x, c.w + c0[p], rows, cn[p], cols, EPS), 0);
      for (int64_t r = 0; r < rows; r++) memcpy(got + r * cols + c0[p], o + r * cn[p], (size_t)cn[p] * sizeof(float));
      free(x), free(o);
    }
    CHECK_ARRAY_CLOSE(prstd, one_rstd, rows, 0.0, 1.01 * KT_U);
    CHECK_ARRAY_BOUND(got, one, mag, n, 4 * KT_U);
    memset(sums, 0, (size_t)rows * sizeof(double));
    for (int p = 0; p < 2; p++) {
      if (!cn[p]) continue;
      float *x = columns(c.x, rows, cols, c0[p], cn[p]), *d = columns(c.dout, rows, cols, c0[p], cn[p]);
      CHECK_EQ_INT(be->rmsnorm_backward_stats(be, NULL, part, got_dw + c0[p], d, x, c.w + c0[p], rstd, rows,
                                              cn[p]), 0);
      for (int64_t i = 0; i < rows; i++) sums[i] += part[i];
      free(x), free(d);
    }
    for (int p = 0; p < 2; p++) {
      if (!cn[p]) continue;
      float *x = columns(c.x, rows, cols, c0[p], cn[p]), *d = columns(c.dout, rows, cols, c0[p], cn[p]);
      float *di = kt_floats(rows * cn[p]);
      CHECK_EQ_INT(be->rmsnorm_backward_apply(be, NULL, di, sums, d, x, c.w + c0[p], rstd, rows, cn[p], cols), 0);
      for (int64_t r = 0; r < rows; r++) memcpy(got_d + r * cols + c0[p], di + r * cn[p], (size_t)cn[p] * sizeof(float));
      free(x), free(d), free(di);
    }
    CHECK_ARRAY_EQ(got_dw, dw, cols);
    double *mag_d = kt_doubles(n), *rd = kt_doubles(n), *rw = kt_doubles(cols), *mw = kt_doubles(cols);
    ref_backward(rd, mag_d, rw, mw, &c, rstd);
    CHECK_ARRAY_BOUND(got_d, one_d, mag_d, n, 2 * KT_U);
    free_case(&c), free(out), free(rstd), free(dinp), free(dw), free(sums), free(part), free(mag), free(ref);
    free(rr), free(one), free(one_d), free(one_rstd), free(got), free(got_d), free(got_dw), free(prstd);
    free(mag_d), free(rd), free(rw), free(mw);
  }
}

/* rows = 0 does nothing; negative sizes, a split wider than its total and
** a negative eps are refused */
static void test_bad_shapes(void) {
  tsl_backend *be = kt_backend();
  float x[4] = {7, 7, 7, 7};
  double sums[2] = {1, 1};
  CHECK_EQ_INT(be->rmsnorm_forward(be, NULL, x, x, x, x, 0, 4, EPS), 0);
  CHECK(be->rmsnorm_forward(be, NULL, x, x, x, x, -1, 4, EPS) < 0);
  CHECK(be->rmsnorm_forward(be, NULL, x, x, x, x, 1, 4, -1.0f) < 0);
  CHECK(be->rmsnorm_apply(be, NULL, x, x, sums, x, x, 1, 4, 3, EPS) < 0);
  CHECK(be->rmsnorm_backward_apply(be, NULL, x, sums, x, x, x, x, 1, 4, 3) < 0);
  CHECK(x[0] == 7.0f && x[3] == 7.0f);
}

int main(void) {
  RUN(test_forward);
  RUN(test_backward);
  RUN(test_backward_matches_finite_differences);
  RUN(test_split_matches_one_pass);
  RUN(test_bad_shapes);
  return HARNESS_EXIT();
}
