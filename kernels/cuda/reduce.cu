/*
** kernels/cuda/reduce.cu — plain reductions: column sums of a bf16 matrix
** (bias and position gradients) and the squared norm for clipping.
*/
#include "colsum.cuh"

/* row r, column c of a bf16 [rows, cols] matrix */
struct bf16_term {
  const bf16 *x;
  int64_t cols;
  __device__ void operator()(int64_t r, int64_t c, float *acc) const { acc[0] += ld_bf16(x + r * cols + c); }
};

extern "C" int tsl_cuda_column_sums(tsl_backend *be, tsl_stream *s, float *db, const void *x, int64_t rows,
                                    int64_t cols) {
  if (rows < 0 || cols < 0)
    return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "column sums: negative size %lld x %lld", (long long)rows,
                         (long long)cols);
  colsum_out<1> out = {{db}};
  return tsl_cuda_colsum<1>(be, s, out, bf16_term{(const bf16 *)x, cols}, rows, cols);
}

/* Squared norm in two passes, both in fp64: a fixed number of blocks
** (a function of n alone) each sum a grid-strided share of x, then one
** block adds those partials in order. */
enum { SUMSQ_MAX_BLOCKS = 1024, SUMSQ_PER_THREAD = 8 };

static __global__ void sumsq_partial_kernel(double *partial, const float *x, int64_t n) {
  __shared__ double shared[32];
  double acc = 0.0;
  TSL_GRID_LOOP(i, n) {
    double v = x[i];
    acc += v * v;
  }
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

static __global__ void sumsq_finish_kernel(double *out, const double *partial, int parts) {
  __shared__ double shared[32];
  double acc = 0.0;
  for (int i = threadIdx.x; i < parts; i += blockDim.x) acc += partial[i];
  acc = block_sum(acc, shared);
  if (threadIdx.x == 0) *out += acc;
}

/* *out += Σ x² (out: one double in device memory) */
extern "C" int tsl_cuda_sumsq(tsl_backend *be, tsl_stream *s, double *out, const float *x, int64_t n) {
  if (n < 0) return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "sumsq: negative size %lld", (long long)n);
  if (n == 0) return TESSEL_OK;
  struct tsl_stream *st = tsl_cuda_stream(be, s);
  int64_t blocks = (n + TSL_THREADS * SUMSQ_PER_THREAD - 1) / (TSL_THREADS * SUMSQ_PER_THREAD);
  if (blocks > SUMSQ_MAX_BLOCKS) blocks = SUMSQ_MAX_BLOCKS;
  double *partial;
  int rc = tsl_cuda_scratch(be, st, (size_t)blocks * sizeof(double), (void **)&partial);
  if (rc < 0) return rc;
  rc = TSL_CU((sumsq_partial_kernel<<<(unsigned)blocks, TSL_THREADS, 0, st->s>>>(partial, x, n), cudaGetLastError()));
  if (rc < 0) return rc;
  return TSL_CU((sumsq_finish_kernel<<<1, TSL_THREADS, 0, st->s>>>(out, partial, (int)blocks), cudaGetLastError()));
}
