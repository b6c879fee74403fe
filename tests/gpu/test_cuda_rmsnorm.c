/*
** tests/gpu/test_cuda_rmsnorm.c — RMS norm, whole and split over two
** "ranks" (column halves, their row sums added here as the all-reduce
** would), against the CPU backend's whole-row kernels.
**
** Tolerances. Both backends take the same bf16 inputs, sum rows in fp64 and
** normalise in fp32, so rstd agrees to a few fp32 ulps (rtol 1e-5).
** Outputs: one bf16 rounding (GT_BF16·|ref|) plus fp32 ulps of the terms
** (1e-5 of mag = |x|·rstd·|w| forward, rstd·(|g| + |x·c|) backward, where
** the backward's cancellation shows). dw is an fp32 sum over rows:
** 2·(rows + 8)·2^-24 of the sum of its terms' magnitudes.
*/
#include "gpu_test.h"

#define EPS 1e-5f
#define SUMS(rows) (2.0 * ((double)(rows) + 8.0) * KT_U)

typedef struct rms_case {
  int64_t rows, cols;
  float *x, *w, *dy, *dw0;
} rms_case;

static rms_case make_case(uint64_t *rng, int64_t rows, int64_t cols) {
  rms_case c = {rows, cols, gt_random(rng, rows * cols, -2, 3), gt_random(rng, cols, 0.5f, 1.5f),
                gt_random(rng, rows * cols, -1, 1), kt_random(rng, cols, -1, 1)};
  return c;
}

static void free_case(rms_case *c) { free(c->x), free(c->w), free(c->dy), free(c->dw0); }

static float *columns(const float *x, int64_t rows, int64_t cols, int64_t c0, int64_t n) {
  float *y = kt_floats(rows * n);
  for (int64_t r = 0; r < rows; r++) memcpy(y + r * n, x + r * cols + c0, (size_t)n * 4);
  return y;
}

/* forward and backward magnitudes of the header, and dw's */
static void mags(const rms_case *c, const float *rstd, double *fwd, double *bwd, double *mdw) {
  for (int64_t j = 0; j < c->cols; j++) mdw[j] = fabs(c->dw0[j]);
  for (int64_t r = 0; r < c->rows; r++) {
    double sgx = 0.0, sgx_mag = 0.0;
    for (int64_t j = 0; j < c->cols; j++) {
      const double t = (double)c->dy[r * c->cols + j] * c->w[j] * c->x[r * c->cols + j];
      sgx += t, sgx_mag += fabs(t);
    }
    const double k = (double)rstd[r] * rstd[r] * sgx_mag / (double)c->cols;
    for (int64_t j = 0; j < c->cols; j++) {
      const int64_t e = r * c->cols + j;
      fwd[e] = fabs(c->x[e] * rstd[r] * c->w[j]);
      bwd[e] = rstd[r] * (fabs((double)c->dy[e] * c->w[j]) + fabs(c->x[e]) * k);
      mdw[j] += fabs((double)c->dy[e] * c->x[e] * rstd[r]);
    }
  }
}

static void test_whole(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 71;
  const int64_t shapes[][2] = {{1, 1}, {5, 7}, {33, 768}, {300, 100}, {1025, 64}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    rms_case c = make_case(&rng, shapes[sh][0], shapes[sh][1]);
    const int64_t R = c.rows, C = c.cols, n = R * C;
    float *out = kt_floats(n), *rstd = kt_floats(R), *dinp = kt_floats(n), *gw = gt_clone(c.dw0, C);
    CHECK_EQ_INT(cpu->rmsnorm_forward(cpu, NULL, out, rstd, c.x, c.w, R, C, EPS), 0);
    CHECK_EQ_INT(cpu->rmsnorm_backward(cpu, NULL, dinp, gw, c.dy, c.x, c.w, rstd, R, C), 0);
    void *dx = gt_up_bf16(c.x, n), *dw = gt_up_bf16(c.w, C), *dout = gt_alloc((uint64_t)n * 2);
    void *ddy = gt_up_bf16(c.dy, n), *ddinp = gt_alloc((uint64_t)n * 2);
    float *drstd = gt_alloc((uint64_t)R * 4), *crstd = gt_up_f32(rstd, R), *ddw = gt_up_f32(c.dw0, C);
    GT_OK(be->rmsnorm_forward(be, gt_s, dout, drstd, dx, dw, R, C, EPS));
    /* backward from the CPU's rstd, so both use the same one */
    GT_OK(be->rmsnorm_backward(be, gt_s, ddinp, ddw, ddy, dx, dw, crstd, R, C));
    float *got = gt_down_bf16(dout, n), *gr = gt_down_f32(drstd, R), *gd = gt_down_bf16(ddinp, n);
    float *gdw = gt_down_f32(ddw, C);
    double *fwd = kt_doubles(n), *bwd = kt_doubles(n), *mdw = kt_doubles(C);
    mags(&c, rstd, fwd, bwd, mdw);
    gt_check("rms out", got, out, fwd, n, 0.0, GT_BF16, 1e-5);
    gt_check("rms rstd", gr, rstd, NULL, R, 0.0, 1e-5, 0.0);
    gt_check("rms dinp", gd, dinp, bwd, n, 0.0, GT_BF16, 1e-5);
    gt_check("rms dw", gdw, gw, mdw, C, 0.0, 0.0, SUMS(R));
    gt_free(dx), gt_free(dw), gt_free(dout), gt_free(ddy), gt_free(ddinp), gt_free(drstd), gt_free(crstd);
    gt_free(ddw);
    free(out), free(rstd), free(dinp), free(gw), free(got), free(gr), free(gd), free(gdw), free(fwd), free(bwd);
    free(mdw);
    free_case(&c);
  }
}

/* The split kernels on two column halves, the row sums added on the host
** in between, give the whole-row results. */
static void test_split(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 72;
  const int64_t R = 77, C = 96, half[2] = {40, 56};
  rms_case c = make_case(&rng, R, C);
  float *out = kt_floats(R * C), *rstd = kt_floats(R), *dinp = kt_floats(R * C), *gw = gt_clone(c.dw0, C);
  CHECK_EQ_INT(cpu->rmsnorm_forward(cpu, NULL, out, rstd, c.x, c.w, R, C, EPS), 0);
  CHECK_EQ_INT(cpu->rmsnorm_backward(cpu, NULL, dinp, gw, c.dy, c.x, c.w, rstd, R, C), 0);
  double *fwd = kt_doubles(R * C), *bwd = kt_doubles(R * C), *mdw = kt_doubles(C);
  mags(&c, rstd, fwd, bwd, mdw);
  double *sums = kt_doubles(R), *bsums = kt_doubles(R), *dsums = gt_alloc((uint64_t)R * 8);
  double *dall = gt_alloc((uint64_t)R * 8);
  float *drstd = gt_alloc((uint64_t)R * 4), *crstd = gt_up_f32(rstd, R);
  void *px[2], *pdy[2], *pw[2];
  float *pdw[2];
  for (int p = 0; p < 2; p++) {
    const int64_t c0 = p ? half[0] : 0, n = half[p];
    float *x = columns(c.x, R, C, c0, n), *dy = columns(c.dy, R, C, c0, n);
    px[p] = gt_up_bf16(x, R * n), pdy[p] = gt_up_bf16(dy, R * n), pw[p] = gt_up_bf16(c.w + c0, n);
    pdw[p] = gt_up_f32(c.dw0 + c0, n);
    GT_OK(be->rmsnorm_stats(be, gt_s, dsums, px[p], R, n));
    double *s = gt_down_f64(dsums, R);
    for (int64_t i = 0; i < R; i++) sums[i] += s[i];
    GT_OK(be->rmsnorm_backward_stats(be, gt_s, dsums, pdw[p], pdy[p], px[p], pw[p], crstd, R, n));
    s = (free(s), gt_down_f64(dsums, R));
    for (int64_t i = 0; i < R; i++) bsums[i] += s[i];
    free(x), free(dy), free(s);
  }
  for (int pass = 0; pass < 2; pass++) {
    gt_copy(dall, pass ? bsums : sums, (uint64_t)R * 8, TSL_COPY_H2D);
    for (int p = 0; p < 2; p++) {
      const int64_t c0 = p ? half[0] : 0, n = half[p];
      void *d = gt_alloc((uint64_t)(R * n) * 2);
      if (pass == 0)
        GT_OK(be->rmsnorm_apply(be, gt_s, d, drstd, dall, px[p], pw[p], R, n, C, EPS));
      else
        GT_OK(be->rmsnorm_backward_apply(be, gt_s, d, dall, pdy[p], px[p], pw[p], crstd, R, n, C));
      float *got = gt_down_bf16(d, R * n), *want = columns(pass ? dinp : out, R, C, c0, n);
      double *mag = kt_doubles(R * n);
      for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < n; j++) mag[r * n + j] = (pass ? bwd : fwd)[r * C + c0 + j];
      gt_check(pass ? "split rms dinp" : "split rms out", got, want, mag, R * n, 0.0, GT_BF16, 1e-5);
      gt_free(d);
      free(got), free(want), free(mag);
    }
  }
  float *gr = gt_down_f32(drstd, R);
  gt_check("split rms rstd", gr, rstd, NULL, R, 0.0, 1e-5, 0.0);
  for (int p = 0; p < 2; p++) {
    const int64_t c0 = p ? half[0] : 0, n = half[p];
    float *gdw = gt_down_f32(pdw[p], n);
    gt_check("split rms dw", gdw, gw + c0, mdw + c0, n, 0.0, 0.0, SUMS(R));
    gt_free(px[p]), gt_free(pdy[p]), gt_free(pw[p]), gt_free(pdw[p]);
    free(gdw);
  }
  gt_free(dsums), gt_free(dall), gt_free(drstd), gt_free(crstd);
  free(out), free(rstd), free(dinp), free(gw), free(fwd), free(bwd), free(mdw), free(sums), free(bsums), free(gr);
  free_case(&c);
}

int main(void) {
  gt_cuda();
  RUN(test_whole);
  RUN(test_split);
  return HARNESS_EXIT();
}
