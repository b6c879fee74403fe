/*
** kernels/cpu/matmul.c — dense products through OpenBLAS: the general gemm
** and the linear layer, whose weights are [in, out] (the Hugging Face Conv1D
** layout), so the forward is inp · w with no transpose.
**
** One thread pool. Debian's OpenBLAS is the pthread build: its threads and
** OpenMP's are two pools, and each spins for a while after its work ends.
** Training alternates sgemm with OpenMP kernels, so each pool's spinning
** threads steal the cores the other needs; measured on 2 cores, a 256×256
** ×768 sgemm after an OpenMP loop took 4.0 ms instead of 0.52 ms. So
** OpenBLAS runs single-threaded (backend_cpu.c) and every product is cut
** into one block of C per OpenMP thread, each block one sgemm call: 0.61 ms
** in the same alternation.
*/
#include <cblas.h>
#include <limits.h>
#include <omp.h>

#include "cpu.h"

/* cblas takes sizes as blasint, a 32-bit int in Debian's OpenBLAS. A
** negative size is a caller bug; one past INT_MAX cannot be expressed. */
static int blas_size(int64_t v) {
  if (v < 0) return TESSEL_E_INTERNAL;
  return v > INT_MAX ? TESSEL_E_UNSUPPORTED : TESSEL_OK;
}

/* C[m,n] = beta·C when the product is empty (k = 0): BLAS would reject the
** zero leading dimensions such a call usually carries. beta = 0 writes
** zeros even over NaN, as sgemm does. */
static void scale_c(float *c, int64_t m, int64_t n, int64_t ldc, float beta) {
  if (beta == 1.0f) return;
  for (int64_t i = 0; i < m; i++) {
    float *row = c + i * ldc;
    if (beta == 0.0f)
      memset(row, 0, (size_t)n * sizeof(float));
    else
      for (int64_t j = 0; j < n; j++) row[j] *= beta;
  }
}

/* Products below this many multiply-adds run on the calling thread: the
** team's wake-up would cost more than the split saves. */
#define SPLIT_MIN_MACS (64.0 * 64.0 * 64.0)

/* One sgemm on the calling thread; sizes already checked to fit blasint. */
void tsl_cpu_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc) {
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
              trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a, (int)lda, b,
              (int)ldb, beta, c, (int)ldc);
}

/* The sgemm on the [m,n] block of C at (r0, c0): the matching rows of
** op(A) and columns of op(B), whatever their storage order. */
static void sgemm_block(int trans_a, int trans_b, int64_t r0, int64_t m, int64_t c0, int64_t n,
                        int64_t k, float alpha, const float *a, int64_t lda, const float *b,
                        int64_t ldb, float beta, float *c, int64_t ldc) {
  const float *ab = trans_a ? a + r0 : a + r0 * lda;
  const float *bb = trans_b ? b + c0 * ldb : b + c0;
  tsl_cpu_sgemm(trans_a, trans_b, m, n, k, alpha, ab, lda, bb, ldb, beta, c + r0 * ldc + c0, ldc);
}

/* How C[m,n] of a product with inner size k is cut into one block per
** thread; returns the number of parts (1: no team). Each block's sgemm
** packs its own rows of op(A) and columns of op(B): a cut by rows packs
** all of op(B) [k,n] once per thread, a cut by columns all of op(A) [m,k].
** A plain product is cut along C's longer side, which repeats the smaller
** operand: measured at the models' shapes (2 threads, interleaved calls),
** the weight gradients [C, 3C or 4C] over B·T rows ran 5–15% faster by
** columns, products with more rows than columns faster by rows. A linear
** layer (rows_first) is cut by rows whenever it has enough of them: its
** bias broadcast and GELU then walk whole rows, measured as fast or faster
** than columns at the models' shapes even where columns pack less. Blocks
** start on multiples of 16, so that no two threads write the same cache
** line of C. */
static int team_parts(int64_t m, int64_t n, int64_t k, int rows_first, int *by_rows, int64_t *extent) {
  int parts = (double)m * (double)n * (double)k < SPLIT_MIN_MACS ? 1 : omp_get_max_threads();
  *by_rows = m >= n || (rows_first && m >= 16 * (int64_t)parts);
  *extent = *by_rows ? m : n;
  if ((*extent + 15) / 16 < parts) parts = (int)((*extent + 15) / 16);
  return parts < 1 ? 1 : parts;
}

void tsl_cpu_team_part(int64_t extent, int64_t align, int64_t *lo, int64_t *hi) {
  const int64_t nt = omp_get_num_threads(), per = ((extent + nt - 1) / nt + align - 1) / align * align;
  *lo = TSL_MIN(omp_get_thread_num() * per, extent);
  *hi = TSL_MIN(*lo + per, extent);
}

/* C = alpha·op(A)·op(B) + beta·C, with C cut into one block per thread. */
static void sgemm_team(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                       float *c, int64_t ldc) {
  int by_rows;
  int64_t extent;
  int parts = team_parts(m, n, k, 0, &by_rows, &extent);
  if (parts <= 1) {
    sgemm_block(trans_a, trans_b, 0, m, 0, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#pragma omp parallel num_threads(parts)
  {
    int64_t lo, hi;
    tsl_cpu_team_part(extent, 16, &lo, &hi);
    if (hi > lo) {
      if (by_rows)
        sgemm_block(trans_a, trans_b, lo, hi - lo, 0, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
      else
        sgemm_block(trans_a, trans_b, 0, m, lo, hi - lo, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
  }
}

/* One thread's block of a linear layer: rows [r0, r0+m) and columns
** [c0, c0+n) of out = inp·w + bias, and act = gelu(out) over the block
** when act is given — while the block is still in this core's cache. */
static void linear_block(float *out, float *act, const float *inp, const float *w, const float *bias,
                         int64_t r0, int64_t m, int64_t c0, int64_t n, int64_t ic, int64_t oc) {
  float *o = out + r0 * oc + c0;
  if (bias)
    for (int64_t r = 0; r < m; r++) memcpy(o + r * oc, bias + c0, (size_t)n * sizeof(float));
  tsl_cpu_sgemm(0, 0, m, n, ic, 1.0f, inp + r0 * ic, ic, w + c0, oc, bias ? 1.0f : 0.0f, o, oc);
  if (!act) return;
  if (n == oc) tsl_cpu_gelu_span(act + r0 * oc, o, m * oc);
  else
    for (int64_t r = 0; r < m; r++) tsl_cpu_gelu_span(act + (r0 + r) * oc + c0, o + r * oc, n);
}

/* out = inp·w + bias (and act = gelu(out)), cut as sgemm_team cuts C: the
** bias broadcast, the product and the activation of a block run on one
** thread, in one parallel region, with no pass over out in between. */
static int linear_team(float *out, float *act, const float *inp, const float *w, const float *bias, int64_t rows,
                       int64_t ic, int64_t oc) {
  const int64_t sizes[] = {rows, ic, oc};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    int st = blas_size(sizes[i]);
    if (st) return st;
  }
  if (rows == 0 || oc == 0) return TESSEL_OK;
  if (ic == 0) { /* no product: the bias alone */
    for (int64_t r = 0; r < rows; r++) {
      if (bias) memcpy(out + r * oc, bias, (size_t)oc * sizeof(float));
      else memset(out + r * oc, 0, (size_t)oc * sizeof(float));
      if (act) tsl_cpu_gelu_span(act + r * oc, out + r * oc, oc);
    }
    return TESSEL_OK;
  }
  int by_rows;
  int64_t extent;
  int parts = team_parts(rows, oc, ic, 1, &by_rows, &extent);
#pragma omp parallel num_threads(parts) if (parts > 1)
  {
    int64_t lo, hi;
    tsl_cpu_team_part(extent, 16, &lo, &hi);
    if (hi > lo) {
      if (by_rows) linear_block(out, act, inp, w, bias, lo, hi - lo, 0, oc, ic, oc);
      else linear_block(out, act, inp, w, bias, 0, rows, lo, hi - lo, ic, oc);
    }
  }
  return TESSEL_OK;
}

/* C[m,n] = alpha·op(A)·op(B) + beta·C, all fp32 row-major; op(A) is [m,k],
** op(B) is [k,n]. Leading dimensions are checked here so that a bad call
** returns TESSEL_E_INTERNAL instead of OpenBLAS printing and doing nothing. */
int tsl_cpu_gemm(tsl_backend *be, tsl_stream *s, int trans_a, int trans_b, int64_t m, int64_t n,
                 int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                 float beta, void *c, int64_t ldc, tessel_dtype c_dtype) {
  if (c_dtype != TESSEL_F32) return TESSEL_E_UNSUPPORTED;
  const int64_t sizes[] = {m, n, k, lda, ldb, ldc};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    int st = blas_size(sizes[i]);
    if (st) return st;
  }
  if (m == 0 || n == 0) return TESSEL_OK;
  if (ldc < n) return TESSEL_E_INTERNAL;
  if (k == 0) {
    scale_c(c, m, n, ldc, beta);
    return TESSEL_OK;
  }
  if (lda < (trans_a ? m : k) || ldb < (trans_b ? k : n)) return TESSEL_E_INTERNAL;
  sgemm_team(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  return TESSEL_OK;
}

/* out[rows,oc] = inp[rows,ic] · w[ic,oc] + bias[oc]. Each thread
** broadcasts the bias into its block of out and adds its product onto it
** (beta = 1): no second pass over out. */
int tsl_cpu_linear_forward(tsl_backend *be, tsl_stream *s, void *out, const void *inp,
                           const void *w, const void *bias, int64_t rows, int64_t ic, int64_t oc) {
  if (rows < 0 || oc < 0) return TESSEL_E_INTERNAL;
  return linear_team(out, NULL, inp, w, bias, rows, ic, oc);
}

/* pre = inp·w + bias and out = gelu(pre), block by block (fusion: the GELU
** reads each block of pre while it is in cache). */
int tsl_cpu_linear_gelu_forward(tsl_backend *be, tsl_stream *s, void *pre, void *out, const void *inp,
                                const void *w, const void *bias, int64_t rows, int64_t ic, int64_t oc) {
  if (rows < 0 || oc < 0) return TESSEL_E_INTERNAL;
  return linear_team(pre, out, inp, w, bias, rows, ic, oc);
}

/* dinp[rows,ic] = dout[rows,oc] · wᵀ (overwrite, skipped if NULL);
** dw[ic,oc] += inpᵀ · dout; db[oc] += Σ_rows dout (skipped if NULL). */
int tsl_cpu_linear_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                            const void *dout, const void *inp, const void *w, int64_t rows,
                            int64_t ic, int64_t oc) {
  int st;
  if (dinp && (st = tsl_cpu_gemm(be, s, 0, 1, rows, ic, oc, 1.0f, dout, oc, w, oc, 0.0f, dinp, ic,
                                 TESSEL_F32)))
    return st;
  if ((st = tsl_cpu_gemm(be, s, 1, 0, ic, oc, rows, 1.0f, inp, ic, dout, oc, 1.0f, dw, oc,
                         TESSEL_F32)))
    return st;
  if (db) tsl_cpu_column_sums(db, dout, rows, oc);
  return TESSEL_OK;
}

/* Each thread owns a contiguous range of columns and walks every row over
** it, a chunk of columns at a time: reads stay contiguous within a row,
** nothing is shared, and each column is summed from row 0 up (hence the
** same result for any thread count). With gelu_x, each row's chunk of x is
** first written as gelu'(gelu_x)·gelu_d, then summed while in cache. */
void tsl_cpu_column_sums_gelu(float *db, float *x, const float *gelu_x, const float *gelu_d, int64_t rows,
                              int64_t cols) {
#pragma omp parallel if (rows * cols >= TSL_CPU_PARALLEL_MIN)
  {
    int64_t lo, hi;
    tsl_cpu_team_part(cols, 16, &lo, &hi);
    for (int64_t c0 = lo; c0 < hi; c0 += TSL_CPU_COLUMN_CHUNK) {
      int64_t width = TSL_MIN(TSL_CPU_COLUMN_CHUNK, hi - c0);
      float acc[TSL_CPU_COLUMN_CHUNK];
      memset(acc, 0, (size_t)width * sizeof *acc);
      for (int64_t r = 0; r < rows; r++) {
        float *row = x + r * cols + c0;
        if (gelu_x) tsl_cpu_gelu_grad_span(row, gelu_x + r * cols + c0, gelu_d + r * cols + c0, width);
#pragma omp simd
        for (int64_t j = 0; j < width; j++) acc[j] += row[j];
      }
      for (int64_t j = 0; j < width; j++) db[c0 + j] += acc[j];
    }
  }
}

/* x is only read when no GELU is given. */
void tsl_cpu_column_sums(float *db, const float *x, int64_t rows, int64_t cols) {
  tsl_cpu_column_sums_gelu(db, (float *)x, NULL, NULL, rows, cols);
}
