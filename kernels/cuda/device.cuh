/*
** kernels/cuda/device.cuh — what the .cu files share: bf16 conversions,
** deterministic warp and block reductions, and launch geometry.
**
** Determinism: every reduction here combines values in a fixed order (a
** shuffle tree, then a fixed walk over warps), so a kernel gives the same
** bits on every run with the same sizes. No floating-point atomics anywhere
** in this backend.
*/
#ifndef TSL_CUDA_DEVICE_CUH
#define TSL_CUDA_DEVICE_CUH

#include <cuda_bf16.h>
#include <math_constants.h>
#include <stdint.h>

#include "tsl_cuda.h"

typedef __nv_bfloat16 bf16;

__device__ __forceinline__ float ld_bf16(const bf16 *p) { return __bfloat162float(*p); }
__device__ __forceinline__ void st_bf16(bf16 *p, float v) { *p = __float2bfloat16_rn(v); }

/* VW consecutive bf16 from p as floats, and back (rounded to nearest even,
** as st_bf16): one 16-byte access for VW = 8, which needs p 16-byte
** aligned; see tsl_vec_width. */
template <int VW>
__device__ __forceinline__ void ld_bf16v(float (&v)[VW], const bf16 *p) {
  if constexpr (VW == 8) {
    const uint4 u = *(const uint4 *)p;
    const __nv_bfloat162 *h = (const __nv_bfloat162 *)&u;
#pragma unroll
    for (int i = 0; i < 4; i++) {
      const float2 f = __bfloat1622float2(h[i]);
      v[2 * i] = f.x, v[2 * i + 1] = f.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < VW; i++) v[i] = ld_bf16(p + i);
  }
}

template <int VW>
__device__ __forceinline__ void st_bf16v(bf16 *p, const float (&v)[VW]) {
  if constexpr (VW == 8) {
    uint4 u;
    __nv_bfloat162 *h = (__nv_bfloat162 *)&u;
#pragma unroll
    for (int i = 0; i < 4; i++) h[i] = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
    *(uint4 *)p = u;
  } else {
#pragma unroll
    for (int i = 0; i < VW; i++) st_bf16(p + i, v[i]);
  }
}

/* The width for kernels that walk rows of n bf16 starting at each pointer
** given (NULL ones ignored) and n apart: 8 when every row start is 16-byte
** aligned and a row holds whole groups of 8, else 1. */
static inline int tsl_vec_width(int64_t n, const void *a, const void *b = NULL, const void *c = NULL,
                                const void *d = NULL) {
  const uintptr_t any = (uintptr_t)a | (uintptr_t)b | (uintptr_t)c | (uintptr_t)d;
  return n % 8 == 0 && (any & 15) == 0 ? 8 : 1;
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every
** thread gets the total. `shared` holds 32 values. */
template <typename T>
__device__ T block_sum(T v, T *shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads(); /* shared may still be read from a previous call */
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : T(0);
  return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v, float *shared) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  v = lane < warps ? shared[lane] : -CUDART_INF_F;
  return warp_max(v);
}

/* Flat element loops: 256 threads, grid-stride, at most this many blocks
** (enough to fill any GPU; the loop covers the rest). */
enum { TSL_THREADS = 256, TSL_MAX_BLOCKS = 65536 };

static inline unsigned tsl_blocks(int64_t n, int64_t per_block) {
  const int64_t most = TSL_MAX_BLOCKS, b = (n + per_block - 1) / per_block;
  return (unsigned)(b < 1 ? 1 : b > most ? most : b);
}

/* Row kernels with one warp per row, TSL_WARP_ROWS rows per block: the row
** of this warp and its lane; a warp past the last row leaves, all lanes
** alike. */
enum { TSL_WARP_ROWS = TSL_THREADS / 32 };
#define TSL_WARP_ROW(row, lane, rows)                                                \
  const int64_t row = (int64_t)blockIdx.x * TSL_WARP_ROWS + (threadIdx.x >> 5);     \
  const int lane = threadIdx.x & 31;                                                \
  if (row >= (rows)) return

/* Launch a one-warp-per-row kernel over `rows` rows on tsl_stream s,
** checked; needs `be` in scope. */
#define TSL_ROW_LAUNCH(kernel, rows, s, ...)                                                \
  TSL_CU((kernel<<<(unsigned)(((rows) + TSL_WARP_ROWS - 1) / TSL_WARP_ROWS), TSL_THREADS, 0, \
                   tsl_cuda_stream(be, s)->s>>>(__VA_ARGS__),                                \
          cudaGetLastError()))

/* The same for a kernel template over the vector width vw (1 or 8, from
** tsl_vec_width). */
#define TSL_ROW_LAUNCH_VW(kernel, vw, rows, s, ...)                                               \
  ((vw) == 8 ? TSL_ROW_LAUNCH(kernel<8>, rows, s, __VA_ARGS__) : TSL_ROW_LAUNCH(kernel<1>, rows, s, __VA_ARGS__))

/* for (i = first index of this thread; i < n; i += all threads) */
#define TSL_GRID_LOOP(i, n)                                                          \
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);         \
       i += (int64_t)gridDim.x * blockDim.x)

#endif
