/*
** tests/gpu/test_cuda_layernorm.c — layer norm, whole and split over two
** "ranks" (column halves, their row sums added here as the all-reduce
** would), against the CPU backend's whole-row kernels.
**
** Tolerances. Both backends take the same bf16 inputs, sum rows in fp64
** and normalise in fp32, so mean and rstd agree to a few fp32 ulps
** (rtol 1e-5). Outputs: bf16 rounding (GT_BF16·|ref|) plus a few fp32 ulps
** of the terms that make them (factor 1e-5 on mag = |x̂·w| + |b| forward,
** rstd·(|g| + |mean g| + |x̂·mean g·x̂|) backward, which is where the
** backward's cancellation shows). Weight and bias gradients are fp32 sums
** over rows: 2·(rows + 8)·2^-24 of the sum of magnitudes, the 8 for x̂'s own
** rounding.
*/
#include "gpu_test.h"

/* an epsilon beside GPT-2's 1e-5 that moves every output far past the
** tolerances, so a kernel that dropped the one it is given would fail */
#define LARGE_EPS 0.25f

typedef struct ln_case {
  int64_t rows, cols;
  float *x, *w, *b, *dy, *dw0, *db0;
} ln_case;

static ln_case make_case(uint64_t *rng, int64_t rows, int64_t cols) {
  ln_case c = {rows, cols, NULL, NULL, NULL, NULL, NULL, NULL};
  c.x = gt_random(rng, rows * cols, -2, 3); /* an offset mean, as residual streams have */
  c.w = gt_random(rng, cols, 0.5f, 1.5f);
  c.b = gt_random(rng, cols, -0.5f, 0.5f);
  c.dy = gt_random(rng, rows * cols, -1, 1);
  c.dw0 = kt_random(rng, cols, -1, 1);
  c.db0 = kt_random(rng, cols, -1, 1);
  return c;
}

static void free_case(ln_case *c) { free(c->x), free(c->w), free(c->b), free(c->dy), free(c->dw0), free(c->db0); }

/* columns [c0, c0 + n) of a [rows, cols] matrix */
static float *columns(const float *x, int64_t rows, int64_t cols, int64_t c0, int64_t n) {
  float *y = kt_floats(rows * n);
  for (int64_t r = 0; r < rows; r++) memcpy(y + r * n, x + r * cols + c0, (size_t)n * 4);
  return y;
}

/* The magnitudes the tolerances scale with (see the top of the file). */
static double *forward_mag(const ln_case *c, const float *mean, const float *rstd) {
  double *mag = kt_doubles(c->rows * c->cols);
  for (int64_t r = 0; r < c->rows; r++)
    for (int64_t j = 0; j < c->cols; j++)
      mag[r * c->cols + j] = fabs((c->x[r * c->cols + j] - mean[r]) * rstd[r] * c->w[j]) + fabs(c->b[j]);
  return mag;
}

static double *backward_mag(const ln_case *c, const float *mean, const float *rstd) {
  double *mag = kt_doubles(c->rows * c->cols);
  for (int64_t r = 0; r < c->rows; r++) {
    double sg = 0, sgx = 0;
    for (int64_t j = 0; j < c->cols; j++) {
      double g = c->dy[r * c->cols + j] * c->w[j], xh = (c->x[r * c->cols + j] - mean[r]) * rstd[r];
      sg += fabs(g);
      sgx += fabs(g * xh);
    }
    for (int64_t j = 0; j < c->cols; j++) {
      double g = c->dy[r * c->cols + j] * c->w[j], xh = (c->x[r * c->cols + j] - mean[r]) * rstd[r];
      mag[r * c->cols + j] = rstd[r] * (fabs(g) + sg / c->cols + fabs(xh) * sgx / c->cols);
    }
  }
  return mag;
}

/* mag_dw[j] = |dw0| + Σ_r |dy·x̂|, mag_db[j] = |db0| + Σ_r |dy| */
static void param_mags(const ln_case *c, const float *mean, const float *rstd, double *mag_dw, double *mag_db) {
  for (int64_t j = 0; j < c->cols; j++) {
    mag_dw[j] = fabs(c->dw0[j]);
    mag_db[j] = fabs(c->db0[j]);
    for (int64_t r = 0; r < c->rows; r++) {
      double d = c->dy[r * c->cols + j];
      mag_dw[j] += fabs(d * (c->x[r * c->cols + j] - mean[r]) * rstd[r]);
      mag_db[j] += fabs(d);
    }
  }
}

#define SUMS(rows) (2.0 * ((double)(rows) + 8.0) * KT_U)

static void test_whole(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 21;
  const int64_t shapes[][2] = {{1, 1}, {5, 7}, {33, 768}, {300, 100}, {1025, 64}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    ln_case c = make_case(&rng, shapes[sh][0], shapes[sh][1]);
    const int64_t R = c.rows, C = c.cols, n = R * C;
    const float eps = sh % 2 ? LARGE_EPS : 1e-5f;
    float *out = kt_floats(n), *mean = kt_floats(R), *rstd = kt_floats(R);
    CHECK_EQ_INT(cpu->layernorm_forward(cpu, NULL, out, mean, rstd, c.x, c.w, c.b, R, C, eps), 0);
    void *dx = gt_up_bf16(c.x, n), *dw = gt_up_bf16(c.w, C), *db = gt_up_bf16(c.b, C), *dout = gt_alloc((uint64_t)n * 2);
    float *dmean = gt_alloc((uint64_t)R * 4), *drstd = gt_alloc((uint64_t)R * 4);
    GT_OK(be->layernorm_forward(be, gt_s, dout, dmean, drstd, dx, dw, db, R, C, eps));
    float *got = gt_down_bf16(dout, n), *gm = gt_down_f32(dmean, R), *gr = gt_down_f32(drstd, R);
    double *mag = forward_mag(&c, mean, rstd);
    gt_check("ln out", got, out, mag, n, 0.0, GT_BF16, 1e-5);
    gt_check("ln mean", gm, mean, NULL, R, 1e-6, 1e-5, 0.0);
    gt_check("ln rstd", gr, rstd, NULL, R, 0.0, 1e-5, 0.0);

    /* backward from the CPU's statistics, so both use the same ones */
    float *dinp = kt_floats(n), *gw = gt_clone(c.dw0, C), *gb = gt_clone(c.db0, C);
    CHECK_EQ_INT(cpu->layernorm_backward(cpu, NULL, dinp, gw, gb, c.dy, c.x, c.w, mean, rstd, R, C), 0);
    void *ddy = gt_up_bf16(c.dy, n), *ddinp = gt_alloc((uint64_t)n * 2);
    float *cm = gt_up_f32(mean, R), *cr = gt_up_f32(rstd, R), *ddw = gt_up_f32(c.dw0, C), *ddb = gt_up_f32(c.db0, C);
    GT_OK(be->layernorm_backward(be, gt_s, ddinp, ddw, ddb, ddy, dx, dw, cm, cr, R, C));
    float *gdinp = gt_down_bf16(ddinp, n), *gdw = gt_down_f32(ddw, C), *gdb = gt_down_f32(ddb, C);
    double *bmag = backward_mag(&c, mean, rstd), *mag_dw = kt_doubles(C), *mag_db = kt_doubles(C);
    param_mags(&c, mean, rstd, mag_dw, mag_db);
    gt_check("ln dinp", gdinp, dinp, bmag, n, 0.0, GT_BF16, 1e-5);
    gt_check("ln dw", gdw, gw, mag_dw, C, 0.0, 0.0, SUMS(R));
    gt_check("ln db", gdb, gb, mag_db, C, 0.0, 0.0, SUMS(R));

    gt_free(dx), gt_free(dw), gt_free(db), gt_free(dout), gt_free(dmean), gt_free(drstd), gt_free(ddy);
    gt_free(ddinp), gt_free(cm), gt_free(cr), gt_free(ddw), gt_free(ddb);
    free(out), free(mean), free(rstd), free(got), free(gm), free(gr), free(mag), free(dinp), free(gw), free(gb);
    free(gdinp), free(gdw), free(gdb), free(bmag), free(mag_dw), free(mag_db);
    free_case(&c);
  }
}

/* The split kernels on two column halves, with the row sums added on the
** host in between, give the whole-row results. */
static void test_split(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 22;
  const int64_t R = 77, C = 96, half[2] = {40, 56};
  ln_case c = make_case(&rng, R, C);
  float *out = kt_floats(R * C), *mean = kt_floats(R), *rstd = kt_floats(R);
  float *dinp = kt_floats(R * C), *gw = gt_clone(c.dw0, C), *gb = gt_clone(c.db0, C);
  CHECK_EQ_INT(cpu->layernorm_forward(cpu, NULL, out, mean, rstd, c.x, c.w, c.b, R, C, LARGE_EPS), 0);
  CHECK_EQ_INT(cpu->layernorm_backward(cpu, NULL, dinp, gw, gb, c.dy, c.x, c.w, mean, rstd, R, C), 0);
  double *sums = kt_doubles(2 * R), *bsums = kt_doubles(2 * R);
  void *part_x[2], *part_dy[2], *part_w[2], *part_b[2];
  float *part_dw[2], *part_db[2];
  double *dsums = gt_alloc((uint64_t)R * 16);
  float *dmean = gt_alloc((uint64_t)R * 4), *drstd = gt_alloc((uint64_t)R * 4);
  for (int p = 0; p < 2; p++) {
    const int64_t c0 = p ? half[0] : 0, n = half[p];
    float *x = columns(c.x, R, C, c0, n), *dy = columns(c.dy, R, C, c0, n);
    part_x[p] = gt_up_bf16(x, R * n);
    part_dy[p] = gt_up_bf16(dy, R * n);
    part_w[p] = gt_up_bf16(c.w + c0, n);
    part_b[p] = gt_up_bf16(c.b + c0, n);
    part_dw[p] = gt_up_f32(c.dw0 + c0, n);
    part_db[p] = gt_up_f32(c.db0 + c0, n);
    GT_OK(be->layernorm_stats(be, gt_s, dsums, part_x[p], R, n));
    double *s = gt_down_f64(dsums, 2 * R);
    for (int64_t i = 0; i < 2 * R; i++) sums[i] += s[i];
    free(x), free(dy), free(s);
  }
  double *dall = gt_alloc((uint64_t)R * 16);
  gt_copy(dall, sums, (uint64_t)R * 16, TSL_COPY_H2D);
  for (int p = 0; p < 2; p++) {
    const int64_t c0 = p ? half[0] : 0, n = half[p];
    void *dout = gt_alloc((uint64_t)(R * n) * 2);
    GT_OK(be->layernorm_apply(be, gt_s, dout, dmean, drstd, dall, part_x[p], part_w[p], part_b[p], R, n, C, LARGE_EPS));
    float *got = gt_down_bf16(dout, R * n), *want = columns(out, R, C, c0, n);
    double *mag_all = forward_mag(&c, mean, rstd), *mag = kt_doubles(R * n);
    for (int64_t r = 0; r < R; r++)
      for (int64_t j = 0; j < n; j++) mag[r * n + j] = mag_all[r * C + c0 + j];
    gt_check("split ln out", got, want, mag, R * n, 0.0, GT_BF16, 1e-5);
    gt_free(dout);
    free(got), free(want), free(mag_all), free(mag);
  }
  float *gm = gt_down_f32(dmean, R), *gr = gt_down_f32(drstd, R);
  gt_check("split ln mean", gm, mean, NULL, R, 1e-6, 1e-5, 0.0);
  gt_check("split ln rstd", gr, rstd, NULL, R, 0.0, 1e-5, 0.0);

  /* backward: CPU statistics on the device, partial sums added here */
  float *cm = gt_up_f32(mean, R), *cr = gt_up_f32(rstd, R);
  for (int p = 0; p < 2; p++) {
    GT_OK(be->layernorm_backward_stats(be, gt_s, dsums, part_dw[p], part_db[p], part_dy[p], part_x[p], part_w[p], cm,
                                       cr, R, half[p]));
    double *s = gt_down_f64(dsums, 2 * R);
    for (int64_t i = 0; i < 2 * R; i++) bsums[i] += s[i];
    free(s);
  }
  gt_copy(dall, bsums, (uint64_t)R * 16, TSL_COPY_H2D);
  double *bmag = backward_mag(&c, mean, rstd), *mag_dw = kt_doubles(C), *mag_db = kt_doubles(C);
  param_mags(&c, mean, rstd, mag_dw, mag_db);
  for (int p = 0; p < 2; p++) {
    const int64_t c0 = p ? half[0] : 0, n = half[p];
    void *ddinp = gt_alloc((uint64_t)(R * n) * 2);
    GT_OK(be->layernorm_backward_apply(be, gt_s, ddinp, dall, part_dy[p], part_x[p], part_w[p], cm, cr, R, n, C));
    float *got = gt_down_bf16(ddinp, R * n), *want = columns(dinp, R, C, c0, n);
    double *mag = kt_doubles(R * n);
    for (int64_t r = 0; r < R; r++)
      for (int64_t j = 0; j < n; j++) mag[r * n + j] = bmag[r * C + c0 + j];
    gt_check("split ln dinp", got, want, mag, R * n, 0.0, GT_BF16, 1e-5);
    float *gdw = gt_down_f32(part_dw[p], n), *gdb = gt_down_f32(part_db[p], n);
    gt_check("split ln dw", gdw, gw + c0, mag_dw + c0, n, 0.0, 0.0, SUMS(R));
    gt_check("split ln db", gdb, gb + c0, mag_db + c0, n, 0.0, 0.0, SUMS(R));
    gt_free(ddinp);
    free(got), free(want), free(mag), free(gdw), free(gdb);
  }
  for (int p = 0; p < 2; p++) {
    gt_free(part_x[p]), gt_free(part_dy[p]), gt_free(part_w[p]), gt_free(part_b[p]);
    gt_free(part_dw[p]), gt_free(part_db[p]);
  }
  gt_free(dsums), gt_free(dall), gt_free(dmean), gt_free(drstd), gt_free(cm), gt_free(cr);
  free(out), free(mean), free(rstd), free(dinp), free(gw), free(gb), free(sums), free(bsums), free(gm), free(gr);
  free(bmag), free(mag_dw), free(mag_db);
  free_case(&c);
}

int main(void) {
  gt_cuda();
  RUN(test_whole);
  RUN(test_split);
  return HARNESS_EXIT();
}
