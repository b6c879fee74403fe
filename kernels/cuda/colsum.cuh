/*
** kernels/cuda/colsum.cuh — deterministic sums down the columns of a
** row-major [rows, cols] matrix, for the gradients that add over rows:
** biases (Σ dout), layer-norm weights (Σ dout·x̂ and Σ dout), positions.
**
** Two passes instead of atomics, so the result does not depend on timing:
**   1. blocks of 32 columns × a chunk of rows; 8 lanes of threads walk the
**      chunk's rows and are added in lane order: one partial sum per
**      (chunk, output, column);
**   2. one warp per (output, column) adds the chunks' partials, lane i
**      taking chunks i, i + 32, ... in order and a fixed shuffle tree
**      adding the lanes, and accumulates (+=) into the fp32 outputs. (One
**      thread per column walking all the chunks left a few blocks each
**      waiting out a thousand loads in turn: 0.2-0.4 ms per call on an
**      H200, more than the partial sums took.)
** The chunking depends only on `rows`. A Term is a functor
** term(r, c, acc[NOUT]) that adds row r's contribution for column c.
*/
#ifndef TSL_CUDA_COLSUM_CUH
#define TSL_CUDA_COLSUM_CUH

#include "device.cuh"

enum { COLSUM_COLS = 32, COLSUM_LANES = 8, COLSUM_MAX_CHUNKS = 1024, COLSUM_MIN_ROWS = 32 };

template <int NOUT>
struct colsum_out {
  float *p[NOUT];
};

/* partial[chunk, k, c] = Σ over the chunk's rows of term k at column c */
template <int NOUT, class Term>
static __global__ void colsum_partial_kernel(float *partial, Term term, int64_t rows, int64_t cols,
                                             int64_t chunk_rows) {
  __shared__ float sm[NOUT][COLSUM_LANES][COLSUM_COLS];
  const int64_t c = (int64_t)blockIdx.x * COLSUM_COLS + threadIdx.x;
  const int64_t r0 = (int64_t)blockIdx.y * chunk_rows;
  const int64_t r1 = r0 + chunk_rows < rows ? r0 + chunk_rows : rows;
  float acc[NOUT];
  for (int k = 0; k < NOUT; k++) acc[k] = 0.0f;
  if (c < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += COLSUM_LANES) term(r, c, acc);
  for (int k = 0; k < NOUT; k++) sm[k][threadIdx.y][threadIdx.x] = acc[k];
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    for (int k = 0; k < NOUT; k++) {
      float t = 0.0f;
      for (int j = 0; j < COLSUM_LANES; j++) t += sm[k][j][threadIdx.x];
      partial[((int64_t)blockIdx.y * NOUT + k) * cols + c] = t;
    }
  }
}

/* out.p[k][c] += Σ_chunk partial[chunk, k, c], one warp per (k, c) */
template <int NOUT>
static __global__ void colsum_finish_kernel(colsum_out<NOUT> out, const float *partial, int64_t chunks,
                                            int64_t cols) {
  TSL_WARP_ROW(kc, lane, NOUT * cols);
  const int k = (int)(kc / cols);
  const int64_t c = kc % cols;
  float t = 0.0f;
  for (int64_t ch = lane; ch < chunks; ch += 32) t += partial[(ch * NOUT + k) * cols + c];
  t = warp_sum(t);
  if (lane == 0) out.p[k][c] += t;
}

/* Accumulate the column sums of term over [rows, cols] into out (fp32). */
template <int NOUT, class Term>
static int tsl_cuda_colsum(tsl_backend *be, tsl_stream *s, colsum_out<NOUT> out, Term term, int64_t rows,
                           int64_t cols) {
  if (rows <= 0 || cols <= 0) return TESSEL_OK;
  struct tsl_stream *st = tsl_cuda_stream(be, s);
  int64_t per = (rows + COLSUM_MAX_CHUNKS - 1) / COLSUM_MAX_CHUNKS;
  if (per < COLSUM_MIN_ROWS) per = COLSUM_MIN_ROWS;
  const int64_t chunks = (rows + per - 1) / per;
  float *partial;
  int rc = tsl_cuda_scratch(be, st, (size_t)(chunks * NOUT * cols) * sizeof(float), (void **)&partial);
  if (rc < 0) return rc;
  dim3 grid((unsigned)((cols + COLSUM_COLS - 1) / COLSUM_COLS), (unsigned)chunks), block(COLSUM_COLS, COLSUM_LANES);
  rc = TSL_CU((colsum_partial_kernel<NOUT, Term><<<grid, block, 0, st->s>>>(partial, term, rows, cols, per),
               cudaGetLastError()));
  if (rc < 0) return rc;
  return TSL_ROW_LAUNCH(colsum_finish_kernel<NOUT>, NOUT * cols, s, out, partial, chunks, cols);
}

#endif
