/*
** kernels/cuda/linear.c — the linear layer, weights [in, out] (the Hugging
** Face Conv1D layout), as cuBLASLt products plus a column sum for the bias
** gradient.
*/
#include "tsl_cuda.h"

/* out[rows,oc] = inp[rows,ic] · w[ic,oc] + bias[oc]; all bf16, the bias
** added in cuBLASLt's epilogue (matmul.c). */
int tsl_cuda_linear_forward(tsl_backend *be, tsl_stream *s, void *out, const void *inp, const void *w,
                            const void *bias, int64_t rows, int64_t ic, int64_t oc) {
  if (rows < 0 || ic < 0 || oc < 0)
    return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "linear forward: negative size (%lld x %lld -> %lld)", (long long)rows,
                         (long long)ic, (long long)oc);
  if (rows == 0 || oc == 0) return TESSEL_OK;
  if (ic == 0) {
    /* an empty product: out is the bias alone, or zero */
    if (bias) return tsl_cuda_broadcast_rows(be, s, out, bias, rows, oc);
    return tsl_cuda_scale_matrix(be, s, out, TESSEL_BF16, rows, oc, oc, 0.0f);
  }
  tsl_cuda_mm mm = {.m = rows, .n = oc, .k = ic, .alpha = 1.0f, .beta = 0.0f, .a = inp, .lda = ic, .b = w,
                    .ldb = oc, .c = out, .ldc = oc, .batch = 1, .c_dtype = TESSEL_BF16, .bias = bias};
  return tsl_cuda_matmul(be, s, &mm);
}

/* dinp[rows,ic] = dout · wᵀ (bf16, overwritten; skipped if NULL);
** dw[ic,oc] += inpᵀ · dout (fp32, beta 1); db[oc] += Σ_rows dout (fp32,
** skipped if NULL). */
int tsl_cuda_linear_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db, const void *dout,
                             const void *inp, const void *w, int64_t rows, int64_t ic, int64_t oc) {
  int st;
  if (dinp && (st = tsl_cuda_gemm(be, s, 0, 1, rows, ic, oc, 1.0f, dout, oc, w, oc, 0.0f, dinp, ic, TESSEL_BF16)) < 0)
    return st;
  if ((st = tsl_cuda_gemm(be, s, 1, 0, ic, oc, rows, 1.0f, inp, ic, dout, oc, 1.0f, dw, oc, TESSEL_F32)) < 0)
    return st;
  return db ? tsl_cuda_column_sums(be, s, db, dout, rows, oc) : TESSEL_OK;
}
