/*
** kernels/cuda/layernorm.cu — layer norm over the last dimension (biased
** variance, the model's eps), whole or with the hidden dimension cut across
** ranks.
**
** The structure of kernels/cpu/layernorm.c: per-row helpers for the sums
** and for the normalisation; the one-pass kernels call both, the split ones
** one each, with the caller's all-reduce in between. One warp owns a row
** (8 rows per block of 256 threads): lanes stride over the columns, a
** shuffle tree adds their sums. Row sums are fp64, as on the CPU, because
** the split form computes var = E[x²] − mean² and fp32 would lose it to
** cancellation. The weight and bias gradients are column sums over all
** rows (colsum.cuh: deterministic, no atomics), taken before the input
** gradient is written in case the caller made dinp alias dout.
**
** Shapes: inp, out, dout, dinp [rows, cols] bf16; w, b [cols] bf16;
** mean, rstd [rows] fp32; sums [rows, 2] fp64; dw, db [cols] fp32.
*/
#include "colsum.cuh"

/* The row helpers and kernels take VW, the columns a lane handles at once
** (tsl_vec_width: 8, one 16-byte access per row, where cols is a multiple
** of 8 and every row and vector is 16-byte aligned, else 1); the sums add
** the columns in a different order for each width, the rest is the same
** arithmetic. */

/* (Σx, Σx²) over one row's cols, in every lane */
template <int VW>
static __device__ double2 row_sums(const bf16 *x, int64_t cols, int lane) {
  double s1 = 0.0, s2 = 0.0;
  for (int64_t c = (int64_t)lane * VW; c < cols; c += 32 * VW) {
    float v[VW];
    ld_bf16v<VW>(v, x + c);
#pragma unroll
    for (int i = 0; i < VW; i++) {
      s1 += v[i];
      s2 += (double)v[i] * v[i];
    }
  }
  return make_double2(warp_sum(s1), warp_sum(s2));
}

/* mean, rstd = 1/√(var + eps) from the sums over `total` columns;
** out = (x − mean)·rstd·w + b */
template <int VW>
static __device__ void row_apply(bf16 *out, float *mean, float *rstd, double s1, double s2, const bf16 *x,
                                 const bf16 *w, const bf16 *b, int64_t cols, int64_t total, float eps, int lane) {
  double mu = s1 / (double)total;
  double var = s2 / (double)total - mu * mu;
  if (var < 0.0) var = 0.0; /* a constant row can round to just below zero */
  const float m = (float)mu, rs = (float)(1.0 / sqrt(var + (double)eps));
  for (int64_t c = (int64_t)lane * VW; c < cols; c += 32 * VW) {
    float xv[VW], wv[VW], bv[VW];
    ld_bf16v<VW>(xv, x + c), ld_bf16v<VW>(wv, w + c), ld_bf16v<VW>(bv, b + c);
#pragma unroll
    for (int i = 0; i < VW; i++) xv[i] = (xv[i] - m) * rs * wv[i] + bv[i];
    st_bf16v<VW>(out + c, xv);
  }
  if (lane == 0) {
    *mean = m;
    *rstd = rs;
  }
}

/* (Σg, Σg·x̂), g = dout·w, x̂ = (x − mean)·rstd, in every lane */
template <int VW>
static __device__ double2 row_backward_sums(const bf16 *dout, const bf16 *x, const bf16 *w, float mean, float rstd,
                                            int64_t cols, int lane) {
  double sg = 0.0, sgx = 0.0;
  for (int64_t c = (int64_t)lane * VW; c < cols; c += 32 * VW) {
    float dv[VW], xv[VW], wv[VW];
    ld_bf16v<VW>(dv, dout + c), ld_bf16v<VW>(xv, x + c), ld_bf16v<VW>(wv, w + c);
#pragma unroll
    for (int i = 0; i < VW; i++) {
      const float g = dv[i] * wv[i], xhat = (xv[i] - mean) * rstd;
      sg += g;
      sgx += (double)g * xhat;
    }
  }
  return make_double2(warp_sum(sg), warp_sum(sgx));
}

/* dinp = rstd·(g − Σg/total − x̂·Σ(g·x̂)/total) */
template <int VW>
static __device__ void row_backward_apply(bf16 *dinp, double sg, double sgx, const bf16 *dout, const bf16 *x,
                                          const bf16 *w, float mean, float rstd, int64_t cols, int64_t total,
                                          int lane) {
  const float mean_g = (float)(sg / (double)total), mean_gx = (float)(sgx / (double)total);
  for (int64_t c = (int64_t)lane * VW; c < cols; c += 32 * VW) {
    float dv[VW], xv[VW], wv[VW];
    ld_bf16v<VW>(dv, dout + c), ld_bf16v<VW>(xv, x + c), ld_bf16v<VW>(wv, w + c);
#pragma unroll
    for (int i = 0; i < VW; i++) {
      const float xhat = (xv[i] - mean) * rstd;
      dv[i] = rstd * (dv[i] * wv[i] - mean_g - xhat * mean_gx);
    }
    st_bf16v<VW>(dinp + c, dv);
  }
}

template <int VW>
static __global__ void ln_forward_kernel(bf16 *out, float *mean, float *rstd, const bf16 *inp, const bf16 *w,
                                         const bf16 *b, int64_t rows, int64_t cols, float eps) {
  TSL_WARP_ROW(row, lane, rows);
  const bf16 *x = inp + row * cols;
  double2 s = row_sums<VW>(x, cols, lane);
  row_apply<VW>(out + row * cols, mean + row, rstd + row, s.x, s.y, x, w, b, cols, cols, eps, lane);
}

template <int VW>
static __global__ void ln_stats_kernel(double *sums, const bf16 *inp, int64_t rows, int64_t cols) {
  TSL_WARP_ROW(row, lane, rows);
  double2 s = row_sums<VW>(inp + row * cols, cols, lane);
  if (lane == 0) {
    sums[2 * row] = s.x;
    sums[2 * row + 1] = s.y;
  }
}

template <int VW>
static __global__ void ln_apply_kernel(bf16 *out, float *mean, float *rstd, const double *sums, const bf16 *inp,
                                       const bf16 *w, const bf16 *b, int64_t rows, int64_t cols, int64_t total,
                                       float eps) {
  TSL_WARP_ROW(row, lane, rows);
  row_apply<VW>(out + row * cols, mean + row, rstd + row, sums[2 * row], sums[2 * row + 1], inp + row * cols, w, b,
                cols, total, eps, lane);
}

template <int VW>
static __global__ void ln_backward_kernel(bf16 *dinp, const bf16 *dout, const bf16 *inp, const bf16 *w,
                                          const float *mean, const float *rstd, int64_t rows, int64_t cols) {
  TSL_WARP_ROW(row, lane, rows);
  const int64_t o = row * cols;
  double2 s = row_backward_sums<VW>(dout + o, inp + o, w, mean[row], rstd[row], cols, lane);
  row_backward_apply<VW>(dinp + o, s.x, s.y, dout + o, inp + o, w, mean[row], rstd[row], cols, cols, lane);
}

template <int VW>
static __global__ void ln_backward_stats_kernel(double *sums, const bf16 *dout, const bf16 *inp, const bf16 *w,
                                                const float *mean, const float *rstd, int64_t rows, int64_t cols) {
  TSL_WARP_ROW(row, lane, rows);
  const int64_t o = row * cols;
  double2 s = row_backward_sums<VW>(dout + o, inp + o, w, mean[row], rstd[row], cols, lane);
  if (lane == 0) {
    sums[2 * row] = s.x;
    sums[2 * row + 1] = s.y;
  }
}

template <int VW>
static __global__ void ln_backward_apply_kernel(bf16 *dinp, const double *sums, const bf16 *dout, const bf16 *inp,
                                                const bf16 *w, const float *mean, const float *rstd, int64_t rows,
                                                int64_t cols, int64_t total) {
  TSL_WARP_ROW(row, lane, rows);
  const int64_t o = row * cols;
  row_backward_apply<VW>(dinp + o, sums[2 * row], sums[2 * row + 1], dout + o, inp + o, w, mean[row], rstd[row],
                         cols, total, lane);
}

/* dw[c] += Σ_r dout·x̂, db[c] += Σ_r dout */
struct ln_param_term {
  const bf16 *dout, *x;
  const float *mean, *rstd;
  int64_t cols;
  __device__ void operator()(int64_t r, int64_t c, float *acc) const {
    const float d = ld_bf16(dout + r * cols + c);
    acc[0] += d * ((ld_bf16(x + r * cols + c) - mean[r]) * rstd[r]);
    acc[1] += d;
  }
};

static int param_grads(tsl_backend *be, tsl_stream *s, float *dw, float *db, const void *dout, const void *inp,
                       const float *mean, const float *rstd, int64_t rows, int64_t cols) {
  colsum_out<2> out = {{dw, db}};
  ln_param_term term = {(const bf16 *)dout, (const bf16 *)inp, mean, rstd, cols};
  return tsl_cuda_colsum<2>(be, s, out, term, rows, cols);
}

static int bad_shape(const char *what, int64_t rows, int64_t cols, int64_t total) {
  return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "%s: bad shape (rows %lld, cols %lld, total cols %lld)", what,
                       (long long)rows, (long long)cols, (long long)total);
}

extern "C" int tsl_cuda_layernorm_forward(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                                          const void *inp, const void *w, const void *b, int64_t rows, int64_t cols,
                                          float eps) {
  if (rows < 0 || cols <= 0 || !(eps >= 0.0f)) return bad_shape("layernorm forward", rows, cols, cols);
  if (rows == 0) return TESSEL_OK;
  return TSL_ROW_LAUNCH_VW(ln_forward_kernel, tsl_vec_width(cols, out, inp, w, b), rows, s, (bf16 *)out, mean, rstd,
                           (const bf16 *)inp, (const bf16 *)w, (const bf16 *)b, rows, cols, eps);
}

extern "C" int tsl_cuda_layernorm_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                                           const void *dout, const void *inp, const void *w, const float *mean,
                                           const float *rstd, int64_t rows, int64_t cols) {
  if (rows < 0 || cols <= 0) return bad_shape("layernorm backward", rows, cols, cols);
  if (rows == 0) return TESSEL_OK;
  int rc = param_grads(be, s, dw, db, dout, inp, mean, rstd, rows, cols);
  if (rc < 0) return rc;
  return TSL_ROW_LAUNCH_VW(ln_backward_kernel, tsl_vec_width(cols, dinp, dout, inp, w), rows, s, (bf16 *)dinp,
                           (const bf16 *)dout, (const bf16 *)inp, (const bf16 *)w, mean, rstd, rows, cols);
}

extern "C" int tsl_cuda_layernorm_stats(tsl_backend *be, tsl_stream *s, double *sums, const void *inp, int64_t rows,
                                        int64_t cols) {
  if (rows < 0 || cols < 0) return bad_shape("layernorm stats", rows, cols, cols);
  if (rows == 0) return TESSEL_OK;
  return TSL_ROW_LAUNCH_VW(ln_stats_kernel, tsl_vec_width(cols, inp), rows, s, sums, (const bf16 *)inp, rows, cols);
}

extern "C" int tsl_cuda_layernorm_apply(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                                        const double *sums, const void *inp, const void *w, const void *b,
                                        int64_t rows, int64_t cols, int64_t total_cols, float eps) {
  if (rows < 0 || cols < 0 || total_cols < cols || total_cols <= 0 || !(eps >= 0.0f))
    return bad_shape("layernorm apply", rows, cols, total_cols);
  if (rows == 0) return TESSEL_OK;
  return TSL_ROW_LAUNCH_VW(ln_apply_kernel, tsl_vec_width(cols, out, inp, w, b), rows, s, (bf16 *)out, mean, rstd, sums,
                           (const bf16 *)inp, (const bf16 *)w, (const bf16 *)b, rows, cols, total_cols, eps);
}

extern "C" int tsl_cuda_layernorm_backward_stats(tsl_backend *be, tsl_stream *s, double *sums, float *dw, float *db,
                                                 const void *dout, const void *inp, const void *w, const float *mean,
                                                 const float *rstd, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) return bad_shape("layernorm backward stats", rows, cols, cols);
  if (rows == 0) return TESSEL_OK;
  int rc = param_grads(be, s, dw, db, dout, inp, mean, rstd, rows, cols);
  if (rc < 0) return rc;
  return TSL_ROW_LAUNCH_VW(ln_backward_stats_kernel, tsl_vec_width(cols, dout, inp, w), rows, s, sums,
                           (const bf16 *)dout, (const bf16 *)inp, (const bf16 *)w, mean, rstd, rows, cols);
}

extern "C" int tsl_cuda_layernorm_backward_apply(tsl_backend *be, tsl_stream *s, void *dinp, const double *sums,
                                                 const void *dout, const void *inp, const void *w, const float *mean,
                                                 const float *rstd, int64_t rows, int64_t cols, int64_t total_cols) {
  if (rows < 0 || cols < 0 || total_cols < cols || total_cols <= 0)
    return bad_shape("layernorm backward apply", rows, cols, total_cols);
  if (rows == 0) return TESSEL_OK;
  return TSL_ROW_LAUNCH_VW(ln_backward_apply_kernel, tsl_vec_width(cols, dinp, dout, inp, w), rows, s, (bf16 *)dinp,
                           sums, (const bf16 *)dout, (const bf16 *)inp, (const bf16 *)w, mean, rstd, rows, cols,
                           total_cols);
}
