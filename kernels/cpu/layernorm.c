/*
** kernels/cpu/layernorm.c — layer norm over the last dimension (biased
** variance, the model's eps), whole or with the hidden dimension cut across
** ranks.
**
** Every kernel is assembled from the same per-row helpers: the one-pass
** forward is row_sums then row_apply over all columns, the split one runs
** them as two kernels with the caller's all-reduce in between. So the
** one-pass kernels and the split ones run in one part do the same
** arithmetic and agree to float rounding. Row
** statistics are summed in double because the split form needs
** var = E[x²] − mean², which loses float's bits to cancellation.
*/
#include "cpu.h"

/* out = (Σx, Σx²) over one row's n local columns */
static void row_sums(double out[2], const float *x, int64_t n) {
  double s1 = 0.0, s2 = 0.0;
#pragma omp simd reduction(+ : s1, s2)
  for (int64_t i = 0; i < n; i++) {
    double v = x[i];
    s1 += v;
    s2 += v * v;
  }
  out[0] = s1;
  out[1] = s2;
}

/* mean and rstd = 1/√(var + eps) from a row's sums over `total` columns,
** then out[i] = (x[i] − mean)·rstd·w[i] + b[i] over the n local columns. */
static void row_apply(float *out, float *mean, float *rstd, const double sums[2], const float *x,
                      const float *w, const float *b, int64_t n, int64_t total, float eps) {
  double mu = sums[0] / (double)total;
  double var = sums[1] / (double)total - mu * mu;
  if (var < 0.0) var = 0.0; /* a constant row can round to just below zero */
  float m = (float)mu, rs = (float)(1.0 / sqrt(var + (double)eps));
#pragma omp simd
  for (int64_t i = 0; i < n; i++) out[i] = (x[i] - m) * rs * w[i] + b[i];
  *mean = m;
  *rstd = rs;
}

/* out = (Σg, Σg·x̂) over one row's n local columns, g = dout·w,
** x̂ = (x − mean)·rstd */
static void row_backward_sums(double out[2], const float *dout, const float *x, const float *w,
                              float mean, float rstd, int64_t n) {
  double sg = 0.0, sgx = 0.0;
#pragma omp simd reduction(+ : sg, sgx)
  for (int64_t i = 0; i < n; i++) {
    float g = dout[i] * w[i];
    float xhat = (x[i] - mean) * rstd;
    sg += g;
    sgx += (double)g * xhat;
  }
  out[0] = sg;
  out[1] = sgx;
}

/* dinp = rstd·(g − Σg/total − x̂·Σ(g·x̂)/total) over one row's n local
** columns (overwrite, or added to dinp when `add`) */
static void row_backward_apply(float *dinp, const double sums[2], const float *dout, const float *x,
                               const float *w, float mean, float rstd, int64_t n, int64_t total, int add) {
  float mean_g = (float)(sums[0] / (double)total);
  float mean_gx = (float)(sums[1] / (double)total);
  if (add) {
#pragma omp simd
    for (int64_t i = 0; i < n; i++) {
      float xhat = (x[i] - mean) * rstd;
      dinp[i] += rstd * (dout[i] * w[i] - mean_g - xhat * mean_gx);
    }
    return;
  }
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    float xhat = (x[i] - mean) * rstd;
    dinp[i] = rstd * (dout[i] * w[i] - mean_g - xhat * mean_gx);
  }
}

/* dw[cols] += Σ_rows dout·x̂, db[cols] += Σ_rows dout. Parallel over blocks
** of columns (see tsl_cpu_column_sums): no races, and a result that does
** not depend on the thread count. */
static void param_grads(float *dw, float *db, const float *dout, const float *x, const float *mean,
                        const float *rstd, int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; c0 < cols; c0 += TSL_CPU_COLUMN_BLOCK) {
    int64_t width = TSL_MIN(TSL_CPU_COLUMN_BLOCK, cols - c0);
    float acc_w[TSL_CPU_COLUMN_BLOCK] = {0}, acc_b[TSL_CPU_COLUMN_BLOCK] = {0};
    for (int64_t r = 0; r < rows; r++) {
      const float *d = dout + r * cols + c0, *xr = x + r * cols + c0;
      float m = mean[r], rs = rstd[r];
#pragma omp simd
      for (int64_t j = 0; j < width; j++) {
        acc_w[j] += d[j] * ((xr[j] - m) * rs);
        acc_b[j] += d[j];
      }
    }
    for (int64_t j = 0; j < width; j++) {
      dw[c0 + j] += acc_w[j];
      db[c0 + j] += acc_b[j];
    }
  }
}

/* out[rows,cols] = layernorm(inp)·w + b; mean, rstd: [rows] (saved for
** backward) */
int tsl_cpu_layernorm_forward(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                              const void *inp, const void *w, const void *b, int64_t rows,
                              int64_t cols, float eps) {
  if (rows < 0 || cols <= 0 || !(eps >= 0.0f)) return TESSEL_E_INTERNAL;
  const float *x = inp;
  float *o = out;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    double sums[2];
    row_sums(sums, x + r * cols, cols);
    row_apply(o + r * cols, mean + r, rstd + r, sums, x + r * cols, w, b, cols, cols, eps);
  }
  return TESSEL_OK;
}

/* sum = a + b, then out = layernorm(sum)·w + bias, row by row: the norm
** reads each row of the sum while it is in cache (fusion of the residual
** add and the norm after it; the same per-row arithmetic as the pair). */
int tsl_cpu_add_layernorm_forward(tsl_backend *be, tsl_stream *s, void *sum, void *out, float *mean, float *rstd,
                                  const void *a, const void *b, const void *w, const void *bias, int64_t rows,
                                  int64_t cols, float eps) {
  if (rows < 0 || cols <= 0 || !(eps >= 0.0f)) return TESSEL_E_INTERNAL;
  const float *x = a, *y = b;
  float *sm = sum, *o = out;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    float *sr = sm + r * cols;
    const float *xr = x + r * cols, *yr = y + r * cols;
#pragma omp simd
    for (int64_t i = 0; i < cols; i++) sr[i] = xr[i] + yr[i];
    double sums[2];
    row_sums(sums, sr, cols);
    row_apply(o + r * cols, mean + r, rstd + r, sums, sr, w, bias, cols, cols, eps);
  }
  return TESSEL_OK;
}

static int backward(float *di, float *dw, float *db, const float *d, const float *x, const float *w,
                    const float *mean, const float *rstd, int64_t rows, int64_t cols, int add) {
  if (rows < 0 || cols <= 0) return TESSEL_E_INTERNAL;
  param_grads(dw, db, d, x, mean, rstd, rows, cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    double sums[2];
    const float *dr = d + r * cols, *xr = x + r * cols;
    row_backward_sums(sums, dr, xr, w, mean[r], rstd[r], cols);
    row_backward_apply(di + r * cols, sums, dr, xr, w, mean[r], rstd[r], cols, cols, add);
  }
  return TESSEL_OK;
}

/* dinp[rows,cols] (overwrite), dw[cols] +=, db[cols] += */
int tsl_cpu_layernorm_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                               const void *dout, const void *inp, const void *w, const float *mean,
                               const float *rstd, int64_t rows, int64_t cols) {
  return backward(dinp, dw, db, dout, inp, w, mean, rstd, rows, cols, 0);
}

/* The same with dinp += (fusion: the residual stream's gradient takes the
** norm's input gradient without a scratch buffer and a second pass). */
int tsl_cpu_layernorm_backward_add(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                                   const void *dout, const void *inp, const void *w, const float *mean,
                                   const float *rstd, int64_t rows, int64_t cols) {
  return backward(dinp, dw, db, dout, inp, w, mean, rstd, rows, cols, 1);
}

/* sums[rows,2] = (Σx, Σx²) over this rank's cols */
int tsl_cpu_layernorm_stats(tsl_backend *be, tsl_stream *s, double *sums, const void *inp,
                            int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) return TESSEL_E_INTERNAL;
  const float *x = inp;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) row_sums(sums + 2 * r, x + r * cols, cols);
  return TESSEL_OK;
}

/* mean = Σx/total_cols, var = Σx²/total_cols − mean², from sums reduced over
** ranks; normalises this rank's cols of each row */
int tsl_cpu_layernorm_apply(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                            const double *sums, const void *inp, const void *w, const void *b,
                            int64_t rows, int64_t cols, int64_t total_cols, float eps) {
  if (rows < 0 || cols < 0 || total_cols < cols || total_cols <= 0 || !(eps >= 0.0f)) return TESSEL_E_INTERNAL;
  const float *x = inp;
  float *o = out;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    row_apply(o + r * cols, mean + r, rstd + r, sums + 2 * r, x + r * cols, w, b, cols, total_cols, eps);
  return TESSEL_OK;
}

/* sums[rows,2] = (Σg, Σg·x̂) over this rank's cols; dw, db += over them */
int tsl_cpu_layernorm_backward_stats(tsl_backend *be, tsl_stream *s, double *sums, float *dw,
                                     float *db, const void *dout, const void *inp, const void *w,
                                     const float *mean, const float *rstd, int64_t rows,
                                     int64_t cols) {
  if (rows < 0 || cols < 0) return TESSEL_E_INTERNAL;
  const float *d = dout, *x = inp;
  param_grads(dw, db, d, x, mean, rstd, rows, cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    row_backward_sums(sums + 2 * r, d + r * cols, x + r * cols, w, mean[r], rstd[r], cols);
  return TESSEL_OK;
}

/* dinp over this rank's cols (overwrite) from sums reduced over ranks */
int tsl_cpu_layernorm_backward_apply(tsl_backend *be, tsl_stream *s, void *dinp, const double *sums,
                                     const void *dout, const void *inp, const void *w,
                                     const float *mean, const float *rstd, int64_t rows,
                                     int64_t cols, int64_t total_cols) {
  if (rows < 0 || cols < 0 || total_cols < cols || total_cols <= 0) return TESSEL_E_INTERNAL;
  const float *d = dout, *x = inp;
  float *di = dinp;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    row_backward_apply(di + r * cols, sums + 2 * r, d + r * cols, x + r * cols, w, mean[r], rstd[r],
                       cols, total_cols, 0);
  return TESSEL_OK;
}
