/*
** kernels/cuda/rmsnorm.cu — RMS norm over the last dimension (out =
** x·rstd·w, rstd = 1/√(mean(x²) + eps)), whole or with the hidden dimension
** cut across ranks.
**
** The structure of kernels/cpu/rmsnorm.c and of layernorm.cu beside it:
** per-row helpers run by one warp per row; the one-pass kernels call both,
** the split ones one each with the caller's all-reduce in between. Row
** sums are fp64 so that a split dimension adds up to the same sums however
** the ranks cut it. The weight gradient is a column sum (colsum.cuh:
** deterministic, no atomics), taken before dinp is written in case the
** caller made dinp alias dout.
**
** Shapes: inp, out, dout, dinp [rows, cols] bf16; w [cols] bf16; rstd
** [rows] fp32; sums [rows] fp64; dw [cols] fp32.
*/
#include "colsum.cuh"

/* Σx² over one row's cols, in every lane */
static __device__ double row_sumsq(const bf16 *x, int64_t cols, int lane) {
  double s = 0.0;
  for (int64_t c = lane; c < cols; c += 32) {
    const double v = ld_bf16(x + c);
    s += v * v;
  }
  return warp_sum(s);
}

/* rstd from Σx² over `total` columns; out = (x·rstd)·w */
static __device__ void row_apply(bf16 *out, float *rstd, double sumsq, const bf16 *x, const bf16 *w, int64_t cols,
                                 int64_t total, float eps, int lane) {
  const float rs = (float)(1.0 / sqrt(sumsq / (double)total + (double)eps));
  for (int64_t c = lane; c < cols; c += 32) st_bf16(out + c, (ld_bf16(x + c) * rs) * ld_bf16(w + c));
  if (lane == 0) *rstd = rs;
}

/* Σ dout·w·x over one row's cols, in every lane */
static __device__ double row_backward_sum(const bf16 *dout, const bf16 *x, const bf16 *w, int64_t cols, int lane) {
  double s = 0.0;
  for (int64_t c = lane; c < cols; c += 32) s += (double)(ld_bf16(dout + c) * ld_bf16(w + c)) * ld_bf16(x + c);
  return warp_sum(s);
}

/* dinp = rstd·(dout·w − x·rstd²·Σgx/total) */
static __device__ void row_backward_apply(bf16 *dinp, double sum_gx, const bf16 *dout, const bf16 *x, const bf16 *w,
                                          float rstd, int64_t cols, int64_t total, int lane) {
  const float k = (float)(sum_gx / (double)total * (double)rstd * (double)rstd);
  for (int64_t c = lane; c < cols; c += 32)
    st_bf16(dinp + c, rstd * (ld_bf16(dout + c) * ld_bf16(w + c) - ld_bf16(x + c) * k));
}

static __global__ void rms_forward_kernel(bf16 *out, float *rstd, const bf16 *inp, const bf16 *w, int64_t rows,
                                          int64_t cols, float eps) {
  TSL_WARP_ROW(row, lane, rows);
  const bf16 *x = inp + row * cols;
  row_apply(out + row * cols, rstd + row, row_sumsq(x, cols, lane), x, w, cols, cols, eps, lane);
}

static __global__ void rms_stats_kernel(double *sums, const bf16 *inp, int64_t rows, int64_t cols) {
  TSL_WARP_ROW(row, lane, rows);
  const double s = row_sumsq(inp + row * cols, cols, lane);
  if (lane == 0) sums[row] = s;
}

static __global__ void rms_apply_kernel(bf16 *out, float *rstd, const double *sums, const bf16 *inp, const bf16 *w,
                                        int64_t rows, int64_t cols, int64_t total, float eps) {
  TSL_WARP_ROW(row, lane, rows);
  row_apply(out + row * cols, rstd + row, sums[row], inp + row * cols, w, cols, total, eps, lane);
}

static __global__ void rms_backward_kernel(bf16 *dinp, const bf16 *dout, const bf16 *inp, const bf16 *w,
                                           const float *rstd, int64_t rows, int64_t cols) {
  TSL_WARP_ROW(row, lane, rows);
  const int64_t o = row * cols;
  const double s = row_backward_sum(dout + o, inp + o, w, cols, lane);
  row_backward_apply(dinp + o, s, dout + o, inp + o, w, rstd[row], cols, cols, lane);
}

static __global__ void rms_backward_stats_kernel(double *sums, const bf16 *dout, const bf16 *inp, const bf16 *w,
                                                 int64_t rows, int64_t cols) {
  TSL_WARP_ROW(row, lane, rows);
  const double s = row_backward_sum(dout + row * cols, inp + row * cols, w, cols, lane);
  if (lane == 0) sums[row] = s;
}

static __global__ void rms_backward_apply_kernel(bf16 *dinp, const double *sums, const bf16 *dout, const bf16 *inp,
                                                 const bf16 *w, const float *rstd, int64_t rows, int64_t cols,
                                                 int64_t total) {
  TSL_WARP_ROW(row, lane, rows);
  const int64_t o = row * cols;
  row_backward_apply(dinp + o, sums[row], dout + o, inp + o, w, rstd[row], cols, total, lane);
}

/* dw[c] += Σ_r dout·x·rstd */
struct rms_weight_term {
  const bf16 *dout, *x;
  const float *rstd;
  int64_t cols;
  __device__ void operator()(int64_t r, int64_t c, float *acc) const {
    acc[0] += ld_bf16(dout + r * cols + c) * (ld_bf16(x + r * cols + c) * rstd[r]);
  }
};

static int weight_grad(tsl_backend *be, tsl_stream *s, float *dw, const void *dout, const void *inp,
                       const float *rstd, int64_t rows, int64_t cols) {
  colsum_out<1> out = {{dw}};
  rms_weight_term term = {(const bf16 *)dout, (const bf16 *)inp, rstd, cols};
  return tsl_cuda_colsum<1>(be, s, out, term, rows, cols);
}

static int bad_shape(const char *what, int64_t rows, int64_t cols, int64_t total, float eps) {
  return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "%s: bad shape (rows %lld, cols %lld, total cols %lld, eps %g)", what,
                       (long long)rows, (long long)cols, (long long)total, (double)eps);
}

static bool shape_ok(int64_t rows, int64_t cols, int64_t total) {
  return rows >= 0 && cols >= 0 && total >= cols && total > 0;
}

extern "C" int tsl_cuda_rmsnorm_forward(tsl_backend *be, tsl_stream *s, void *out, float *rstd, const void *inp,
                                        const void *w, int64_t rows, int64_t cols, float eps) {
  if (!shape_ok(rows, cols, cols) || !(eps >= 0.0f)) return bad_shape("rmsnorm forward", rows, cols, cols, eps);
  if (rows == 0) return TESSEL_OK;
  return TSL_ROW_LAUNCH(rms_forward_kernel, rows, s, (bf16 *)out, rstd, (const bf16 *)inp, (const bf16 *)w, rows,
                        cols, eps);
}

extern "C" int tsl_cuda_rmsnorm_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, const void *dout,
                                         const void *inp, const void *w, const float *rstd, int64_t rows,
                                         int64_t cols) {
  if (!shape_ok(rows, cols, cols)) return bad_shape("rmsnorm backward", rows, cols, cols, 0.0f);
  if (rows == 0) return TESSEL_OK;
  int rc = weight_grad(be, s, dw, dout, inp, rstd, rows, cols);
  if (rc < 0) return rc;
  return TSL_ROW_LAUNCH(rms_backward_kernel, rows, s, (bf16 *)dinp, (const bf16 *)dout, (const bf16 *)inp,
                        (const bf16 *)w, rstd, rows, cols);
}

extern "C" int tsl_cuda_rmsnorm_stats(tsl_backend *be, tsl_stream *s, double *sums, const void *inp, int64_t rows,
                                      int64_t cols) {
  if (rows < 0 || cols < 0) return bad_shape("rmsnorm stats", rows, cols, cols, 0.0f);
  if (rows == 0) return TESSEL_OK;
  return TSL_ROW_LAUNCH(rms_stats_kernel, rows, s, sums, (const bf16 *)inp, rows, cols);
}

extern "C" int tsl_cuda_rmsnorm_apply(tsl_backend *be, tsl_stream *s, void *out, float *rstd, const double *sums,
                                      const void *inp, const void *w, int64_t rows, int64_t cols, int64_t total_cols,
                                      float eps) {
  if (!shape_ok(rows, cols, total_cols) || !(eps >= 0.0f))
    return bad_shape("rmsnorm apply", rows, cols, total_cols, eps);
  if (rows == 0) return TESSEL_OK;
  return TSL_ROW_LAUNCH(rms_apply_kernel, rows, s, (bf16 *)out, rstd, sums, (const bf16 *)inp, (const bf16 *)w, rows,
                        cols, total_cols, eps);
}

extern "C" int tsl_cuda_rmsnorm_backward_stats(tsl_backend *be, tsl_stream *s, double *sums, float *dw,
                                               const void *dout, const void *inp, const void *w, const float *rstd,
                                               int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) return bad_shape("rmsnorm backward stats", rows, cols, cols, 0.0f);
  if (rows == 0) return TESSEL_OK;
  int rc = weight_grad(be, s, dw, dout, inp, rstd, rows, cols);
  if (rc < 0) return rc;
  return TSL_ROW_LAUNCH(rms_backward_stats_kernel, rows, s, sums, (const bf16 *)dout, (const bf16 *)inp,
                        (const bf16 *)w, rows, cols);
}

extern "C" int tsl_cuda_rmsnorm_backward_apply(tsl_backend *be, tsl_stream *s, void *dinp, const double *sums,
                                               const void *dout, const void *inp, const void *w, const float *rstd,
                                               int64_t rows, int64_t cols, int64_t total_cols) {
  if (!shape_ok(rows, cols, total_cols)) return bad_shape("rmsnorm backward apply", rows, cols, total_cols, 0.0f);
  if (rows == 0) return TESSEL_OK;
  return TSL_ROW_LAUNCH(rms_backward_apply_kernel, rows, s, (bf16 *)dinp, sums, (const bf16 *)dout,
                        (const bf16 *)inp, (const bf16 *)w, rstd, rows, cols, total_cols);
}
