/*
** kernels/cuda/crossentropy.cu — softmax cross-entropy over a vocabulary
** that may be split by columns across ranks, in the three phases of
** kernels/backend.h (rowmax, sums, finish) so a split needs only two small
** all-reduces between them.
**
** One block of 256 threads per row: threads stride over the row's vocab
** columns, then a fixed shuffle-and-shared-memory tree combines them. The
** exponentials are fp32 and their sum fp64 (as on the CPU), so adding the
** ranks' partial sums loses nothing. The gradient is written over the bf16
** logits in the same pass that reads them.
**
** Shapes: logits [rows, vocab] bf16 holding global columns
** [vocab_begin, vocab_begin + vocab); targets [rows] int32 (global ids);
** rowmax, losses [rows] fp32; sums [rows, 2] fp64. Only the first `valid`
** columns are vocabulary: the rest pad the table, are left out of the
** softmax and get a zero gradient.
*/
#include "device.cuh"

/* Every kernel walks its row VW columns at a time (tsl_vec_width: 8 where
** the rows allow 16-byte loads, with vocab a multiple of 8 so that a group
** never crosses the row's end; columns past `valid` are skipped by
** index). */

/* rowmax[r] = max_{j < valid} logits[r, j] */
template <int VW>
static __global__ void rowmax_kernel(float *rowmax, const bf16 *logits, int64_t vocab, int64_t valid) {
  __shared__ float shared[32];
  const bf16 *row = logits + (int64_t)blockIdx.x * vocab;
  float mx = -CUDART_INF_F;
  for (int64_t j = (int64_t)threadIdx.x * VW; j < valid; j += (int64_t)blockDim.x * VW) {
    float v[VW];
    ld_bf16v<VW>(v, row + j);
#pragma unroll
    for (int i = 0; i < VW; i++)
      if (j + i < valid) mx = fmaxf(mx, v[i]);
  }
  mx = block_max(mx, shared);
  if (threadIdx.x == 0) rowmax[blockIdx.x] = mx;
}

/* sums[r] = (Σ_{j<valid} exp(l − rowmax), l[target − v0] if in range else 0) */
template <int VW>
static __global__ void sums_kernel(double *sums, const bf16 *logits, const float *rowmax, const int32_t *targets,
                                   int64_t v0, int64_t vocab, int64_t valid) {
  __shared__ double shared[32];
  const int64_t r = blockIdx.x;
  const bf16 *row = logits + r * vocab;
  const float mx = rowmax[r];
  double acc = 0.0;
  for (int64_t j = (int64_t)threadIdx.x * VW; j < valid; j += (int64_t)blockDim.x * VW) {
    float v[VW];
    ld_bf16v<VW>(v, row + j);
#pragma unroll
    for (int i = 0; i < VW; i++)
      if (j + i < valid) acc += expf(v[i] - mx);
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) {
    const int64_t t = (int64_t)targets[r] - v0;
    sums[2 * r] = acc;
    sums[2 * r + 1] = t >= 0 && t < valid ? (double)ld_bf16(row + t) : 0.0;
  }
}

/* losses[r] = log Σ + rowmax − l_target; with dscale != 0 the row becomes
** (softmax − onehot)·dscale, each element rounded once. */
template <int VW>
static __global__ void finish_kernel(float *losses, bf16 *logits, const float *rowmax, const double *sums,
                                     const int32_t *targets, int64_t v0, int64_t vocab, int64_t valid,
                                     float dscale) {
  const int64_t r = blockIdx.x;
  const double sum = sums[2 * r];
  const float mx = rowmax[r];
  if (threadIdx.x == 0) losses[r] = (float)(log(sum) + (double)mx - sums[2 * r + 1]);
  if (dscale == 0.0f) return;
  bf16 *row = logits + r * vocab;
  const float k = (float)((double)dscale / sum);
  const int64_t t = (int64_t)targets[r] - v0;
  for (int64_t j = (int64_t)threadIdx.x * VW; j < vocab; j += (int64_t)blockDim.x * VW) {
    float v[VW];
    ld_bf16v<VW>(v, row + j);
#pragma unroll
    for (int i = 0; i < VW; i++)
      v[i] = j + i < valid ? expf(v[i] - mx) * k - (j + i == t ? dscale : 0.0f) : 0.0f;
    st_bf16v<VW>(row + j, v);
  }
}

/* Launch kernel<vw> with one block per row, checked (needs be, s). */
#define CE_LAUNCH(kernel, vw, rows, ...)                                                                      \
  TSL_CU((((vw) == 8 ? kernel<8><<<(unsigned)(rows), TSL_THREADS, 0, tsl_cuda_stream(be, s)->s>>>(__VA_ARGS__) \
                     : kernel<1><<<(unsigned)(rows), TSL_THREADS, 0, tsl_cuda_stream(be, s)->s>>>(__VA_ARGS__)), \
           cudaGetLastError()))

/* One block per row: gridDim.x holds up to 2^31 − 1 of them. */
static int check_rows(const char *what, int64_t rows, int64_t vocab, int64_t valid) {
  if (rows < 0 || vocab < 0 || valid < 0 || valid > vocab)
    return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "%s: bad shape (rows %lld, vocab %lld)", what, (long long)rows,
                         (long long)vocab);
  if (rows > INT32_MAX) return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "%s: %lld rows", what, (long long)rows);
  return TESSEL_OK;
}

extern "C" int tsl_cuda_ce_rowmax(tsl_backend *be, tsl_stream *s, float *rowmax, const void *logits, int64_t rows,
                                  int64_t vocab, int64_t valid) {
  int rc = check_rows("cross-entropy rowmax", rows, vocab, valid);
  if (rc < 0 || rows == 0) return rc;
  return CE_LAUNCH(rowmax_kernel, tsl_vec_width(vocab, logits), rows, rowmax, (const bf16 *)logits, vocab, valid);
}

extern "C" int tsl_cuda_ce_sums(tsl_backend *be, tsl_stream *s, double *sums, const void *logits,
                                const float *rowmax, const int32_t *targets, int64_t rows, int64_t vocab_begin,
                                int64_t vocab, int64_t valid) {
  int rc = check_rows("cross-entropy sums", rows, vocab, valid);
  if (rc < 0 || rows == 0) return rc;
  return CE_LAUNCH(sums_kernel, tsl_vec_width(vocab, logits), rows, sums, (const bf16 *)logits, rowmax, targets,
                   vocab_begin, vocab, valid);
}

extern "C" int tsl_cuda_ce_finish(tsl_backend *be, tsl_stream *s, float *losses, void *logits, const float *rowmax,
                                  const double *sums, const int32_t *targets, int64_t rows, int64_t vocab_begin,
                                  int64_t vocab, int64_t valid, float dscale) {
  int rc = check_rows("cross-entropy finish", rows, vocab, valid);
  if (rc < 0 || rows == 0) return rc;
  return CE_LAUNCH(finish_kernel, tsl_vec_width(vocab, logits), rows, losses, (bf16 *)logits, rowmax, sums,
                   targets, vocab_begin, vocab, valid, dscale);
}
