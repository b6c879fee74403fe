/*
** kernels/cpu/rmsnorm.c — RMS norm over the last dimension (Llama's
** LlamaRMSNorm: out = x·rstd·w, rstd = 1/√(mean(x²) + eps)), whole or with
** the hidden dimension cut across ranks.
**
** Built like layernorm.c: the one-pass kernels are the split ones' per-row
** helpers run back to back, so both forms do the same arithmetic. Row sums
** are in double, so that a sum over a split dimension adds up to the same
** value whichever way the ranks cut it.
**
** Backward: with g = dout·w, dx_j = rstd·(g_j − x_j·rstd²·Σ_i g_i·x_i / N)
** over the N = total columns of the row; dw_j += Σ_rows dout_j·x_j·rstd.
*/
#include "cpu.h"

/* Σx² over one row's n local columns */
static double row_sumsq(const float *x, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; i++) s += (double)x[i] * x[i];
  return s;
}

/* rstd from the row's Σx² over `total` columns, then out = x·rstd·w over the
** n local columns (in that order, as transformers does) */
static void row_apply(float *out, float *rstd, double sumsq, const float *x, const float *w,
                      int64_t n, int64_t total, float eps) {
  const float rs = (float)(1.0 / sqrt(sumsq / (double)total + (double)eps));
#pragma omp simd
  for (int64_t i = 0; i < n; i++) out[i] = (x[i] * rs) * w[i];
  *rstd = rs;
}

/* Σ dout·w·x over one row's n local columns */
static double row_backward_sum(const float *dout, const float *x, const float *w, int64_t n) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; i++) s += (double)(dout[i] * w[i]) * x[i];
  return s;
}

/* dinp = rstd·(g − x·rstd²·Σgx/total) over one row's n local columns */
static void row_backward_apply(float *dinp, double sum_gx, const float *dout, const float *x,
                               const float *w, float rstd, int64_t n, int64_t total) {
  const float c = (float)(sum_gx / (double)total * (double)rstd * (double)rstd);
#pragma omp simd
  for (int64_t i = 0; i < n; i++) dinp[i] = rstd * (dout[i] * w[i] - x[i] * c);
}

/* dw[cols] += Σ_rows dout·x·rstd, parallel over blocks of columns (see
** tsl_cpu_column_sums): no races, the same result for any thread count. */
static void weight_grad(float *dw, const float *dout, const float *x, const float *rstd,
                        int64_t rows, int64_t cols) {
#pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; c0 < cols; c0 += TSL_CPU_COLUMN_BLOCK) {
    int64_t width = TSL_MIN(TSL_CPU_COLUMN_BLOCK, cols - c0);
    float acc[TSL_CPU_COLUMN_BLOCK] = {0};
    for (int64_t r = 0; r < rows; r++) {
      const float *d = dout + r * cols + c0, *xr = x + r * cols + c0;
      const float rs = rstd[r];
#pragma omp simd
      for (int64_t j = 0; j < width; j++) acc[j] += d[j] * (xr[j] * rs);
    }
    for (int64_t j = 0; j < width; j++) dw[c0 + j] += acc[j];
  }
}

static int bad_shape(int64_t rows, int64_t cols, int64_t total) {
  return rows < 0 || cols < 0 || total < cols || total <= 0;
}

/* out[rows,cols] = inp·rstd·w; rstd [rows] saved for backward */
int tsl_cpu_rmsnorm_forward(tsl_backend *be, tsl_stream *s, void *out, float *rstd,
                            const void *inp, const void *w, int64_t rows, int64_t cols, float eps) {
  if (bad_shape(rows, cols, cols) || !(eps >= 0.0f)) return TESSEL_E_INTERNAL;
  const float *x = inp;
  float *o = out;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    row_apply(o + r * cols, rstd + r, row_sumsq(x + r * cols, cols), x + r * cols, w, cols, cols,
              eps);
  return TESSEL_OK;
}

/* dinp[rows,cols] (overwrite), dw[cols] += */
int tsl_cpu_rmsnorm_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw,
                             const void *dout, const void *inp, const void *w, const float *rstd,
                             int64_t rows, int64_t cols) {
  if (bad_shape(rows, cols, cols)) return TESSEL_E_INTERNAL;
  const float *d = dout, *x = inp;
  float *di = dinp;
  weight_grad(dw, d, x, rstd, rows, cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    const float *dr = d + r * cols, *xr = x + r * cols;
    row_backward_apply(di + r * cols, row_backward_sum(dr, xr, w, cols), dr, xr, w, rstd[r], cols,
                       cols);
  }
  return TESSEL_OK;
}

/* sums[rows] = Σx² over this rank's cols */
int tsl_cpu_rmsnorm_stats(tsl_backend *be, tsl_stream *s, double *sums, const void *inp,
                          int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) return TESSEL_E_INTERNAL;
  const float *x = inp;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) sums[r] = row_sumsq(x + r * cols, cols);
  return TESSEL_OK;
}

/* rstd = 1/√(Σx²/total_cols + eps) from sums reduced over ranks; normalises
** this rank's cols of each row */
int tsl_cpu_rmsnorm_apply(tsl_backend *be, tsl_stream *s, void *out, float *rstd,
                          const double *sums, const void *inp, const void *w, int64_t rows,
                          int64_t cols, int64_t total_cols, float eps) {
  if (bad_shape(rows, cols, total_cols) || !(eps >= 0.0f)) return TESSEL_E_INTERNAL;
  const float *x = inp;
  float *o = out;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    row_apply(o + r * cols, rstd + r, sums[r], x + r * cols, w, cols, total_cols, eps);
  return TESSEL_OK;
}

/* sums[rows] = Σ dout·w·x over this rank's cols; dw += over them */
int tsl_cpu_rmsnorm_backward_stats(tsl_backend *be, tsl_stream *s, double *sums, float *dw,
                                   const void *dout, const void *inp, const void *w,
                                   const float *rstd, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) return TESSEL_E_INTERNAL;
  const float *d = dout, *x = inp;
  weight_grad(dw, d, x, rstd, rows, cols);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) sums[r] = row_backward_sum(d + r * cols, x + r * cols, w, cols);
  return TESSEL_OK;
}

/* dinp over this rank's cols (overwrite) from sums reduced over ranks */
int tsl_cpu_rmsnorm_backward_apply(tsl_backend *be, tsl_stream *s, void *dinp, const double *sums,
                                   const void *dout, const void *inp, const void *w,
                                   const float *rstd, int64_t rows, int64_t cols,
                                   int64_t total_cols) {
  if (bad_shape(rows, cols, total_cols)) return TESSEL_E_INTERNAL;
  const float *d = dout, *x = inp;
  float *di = dinp;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    row_backward_apply(di + r * cols, sums[r], d + r * cols, x + r * cols, w, rstd[r], cols,
                       total_cols);
  return TESSEL_OK;
}
