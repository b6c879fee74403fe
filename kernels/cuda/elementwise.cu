/*
** kernels/cuda/elementwise.cu — GELU, SwiGLU, add, axpy, scale, dtype
** conversion and the two matrix fills the products need, over flat arrays.
**
** bf16 in and out, arithmetic in fp32: each result is rounded once, to
** nearest even, when it is stored. Formulas follow kernels/cpu/elementwise.c
** so the two backends differ only by that rounding (and expf's last ulp).
*/
#include "device.cuh"

#define GELU_K 0.7978845608028654f /* √(2/π) */
#define GELU_C 0.044715f

/* x·σ(2u), u = √(2/π)(x + 0.044715x³): GELU's tanh form without the
** cancellation of 1 + tanh u (see the CPU version). */
struct gelu_forward_op {
  __device__ float operator()(float x, float) const {
    float u = GELU_K * (x + GELU_C * x * x * x);
    return x / (1.0f + expf(-2.0f * u));
  }
};

/* dinp = gelu'(x)·dout, x clamped to ±10 where the second term is below
** 1e-35 (keeps e·s² finite), and exactly 0 below −10, as on the CPU. The
** clamp compares rather than using fminf/fmaxf, which turn a NaN into the
** bound: a NaN must come out NaN. */
struct gelu_backward_op {
  __device__ float operator()(float in, float dout) const {
    float x = in > 10.0f ? 10.0f : (in < -10.0f ? -10.0f : in);
    float x2 = x * x;
    float u = GELU_K * (x + GELU_C * x2 * x);
    float du = GELU_K * (1.0f + 3.0f * GELU_C * x2);
    float e = expf(-2.0f * u);
    float sg = 1.0f / (1.0f + e);
    float grad = sg + 2.0f * x * (e * sg * sg) * du;
    return (in < -10.0f ? 0.0f : grad) * dout;
  }
};

struct add_op {
  __device__ float operator()(float a, float b) const { return a + b; }
};

/* out[i] = op(a[i], b[i]) (b: NULL reads 0), each result rounded once.
** `packs` groups of 8 from the start as 16-byte loads and stores (every
** pointer 16-byte aligned; 0 when one is not), then the rest one by one:
** the element kernels are memory-bound, and a 2-byte access per element
** leaves most of each memory transaction unused. */
template <class Op>
static __global__ void map_kernel(bf16 *out, const bf16 *a, const bf16 *b, int64_t n, int64_t packs, Op op) {
  TSL_GRID_LOOP(i, packs) {
    float x[8], y[8] = {0}, r[8];
    ld_bf16v<8>(x, a + 8 * i);
    if (b) ld_bf16v<8>(y, b + 8 * i);
#pragma unroll
    for (int k = 0; k < 8; k++) r[k] = op(x[k], y[k]);
    st_bf16v<8>(out + 8 * i, r);
  }
  TSL_GRID_LOOP(j, n - 8 * packs) {
    const int64_t i = 8 * packs + j;
    st_bf16(out + i, op(ld_bf16(a + i), b ? ld_bf16(b + i) : 0.0f));
  }
}

static __global__ void axpy_f32_kernel(float *y, float alpha, const float *x, int64_t n) {
  TSL_GRID_LOOP(i, n) y[i] += alpha * x[i];
}

static __global__ void axpy_bf16_kernel(bf16 *y, float alpha, const bf16 *x, int64_t n) {
  TSL_GRID_LOOP(i, n) st_bf16(y + i, ld_bf16(y + i) + alpha * ld_bf16(x + i));
}

static __global__ void scale_f32_kernel(float *x, float alpha, int64_t n) {
  TSL_GRID_LOOP(i, n) x[i] *= alpha;
}

static __global__ void scale_bf16_kernel(bf16 *x, float alpha, int64_t n) {
  TSL_GRID_LOOP(i, n) st_bf16(x + i, alpha * ld_bf16(x + i));
}

static __global__ void f32_to_bf16_kernel(bf16 *y, const float *x, int64_t n) {
  TSL_GRID_LOOP(i, n) st_bf16(y + i, x[i]);
}

static __global__ void bf16_to_f32_kernel(float *y, const bf16 *x, int64_t n) {
  TSL_GRID_LOOP(i, n) y[i] = ld_bf16(x + i);
}

/* out = silu(gate)·up, silu(x) = x/(1 + e^(−x)) (−0 where e^(−x) overflows) */
static __global__ void swiglu_forward_kernel(bf16 *out, const bf16 *gate, const bf16 *up, int64_t n) {
  TSL_GRID_LOOP(i, n) {
    const float g = ld_bf16(gate + i);
    st_bf16(out + i, g / (1.0f + expf(-g)) * ld_bf16(up + i));
  }
}

/* dgate = dout·up·silu'(gate), dup = dout·silu(gate); silu' = σ + x·e·σ²
** with x clamped at −80 by comparison, so that a NaN stays NaN (see the
** CPU version) */
static __global__ void swiglu_backward_kernel(bf16 *dgate, bf16 *dup, const bf16 *dout, const bf16 *gate,
                                              const bf16 *up, int64_t n) {
  TSL_GRID_LOOP(i, n) {
    const float g = ld_bf16(gate + i), x = g < -80.0f ? -80.0f : g, d = ld_bf16(dout + i);
    const float e = expf(-x), sg = 1.0f / (1.0f + e);
    st_bf16(dup + i, d * (g < -80.0f ? -0.0f : g * sg));
    st_bf16(dgate + i, d * ld_bf16(up + i) * (sg + x * (e * sg * sg)));
  }
}

/* c[r, j] = beta·c[r, j] over m rows of n (row stride ldc); beta 0 writes
** zeros, even over NaN, as BLAS does. */
template <typename T>
static __global__ void scale_matrix_kernel(T *c, int64_t m, int64_t n, int64_t ldc, float beta) {
  TSL_GRID_LOOP(i, m * n) {
    T *p = c + (i / n) * ldc + i % n;
    *p = beta == 0.0f ? T(0.0f) : T(beta * float(*p));
  }
}

/* out[r, j] = v[j] */
static __global__ void broadcast_rows_kernel(bf16 *out, const bf16 *v, int64_t rows, int64_t cols) {
  TSL_GRID_LOOP(i, rows * cols) out[i] = v[i % cols];
}

#define LAUNCH(kernel, n, s, ...) \
  TSL_CU((kernel<<<tsl_blocks((n), TSL_THREADS), TSL_THREADS, 0, (s)>>>(__VA_ARGS__), cudaGetLastError()))

static int bad_size(const char *what, int64_t n) {
  return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "%s: negative size %lld", what, (long long)n);
}

/* out = op(a, b) over n elements (b may be NULL), in packs of 8 where the
** pointers allow. */
template <class Op>
static int map(tsl_backend *be, tsl_stream *s, const char *what, void *out, const void *a, const void *b, int64_t n,
               Op op) {
  if (n <= 0) return n < 0 ? bad_size(what, n) : TESSEL_OK;
  const uintptr_t any = (uintptr_t)out | (uintptr_t)a | (uintptr_t)b;
  const int64_t packs = any % 16 ? 0 : n / 8;
  return LAUNCH(map_kernel<Op>, packs ? packs : n, tsl_cuda_stream(be, s)->s, (bf16 *)out, (const bf16 *)a,
                (const bf16 *)b, n, packs, op);
}

extern "C" int tsl_cuda_gelu_forward(tsl_backend *be, tsl_stream *s, void *out, const void *inp, int64_t n) {
  return map(be, s, "gelu forward", out, inp, NULL, n, gelu_forward_op());
}

extern "C" int tsl_cuda_gelu_backward(tsl_backend *be, tsl_stream *s, void *dinp, const void *inp, const void *dout,
                                      int64_t n) {
  return map(be, s, "gelu backward", dinp, inp, dout, n, gelu_backward_op());
}

extern "C" int tsl_cuda_add(tsl_backend *be, tsl_stream *s, void *out, const void *a, const void *b, int64_t n) {
  return map(be, s, "add", out, a, b, n, add_op());
}

/* y += alpha·x in fp32 (gradients, masters) or bf16 (the residual gradient) */
extern "C" int tsl_cuda_axpy(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *y, float alpha,
                             const void *x, int64_t n) {
  if (dtype != TESSEL_F32 && dtype != TESSEL_BF16)
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "axpy: dtype %d (fp32 or bf16 only)", (int)dtype);
  if (n <= 0) return n < 0 ? bad_size("axpy", n) : TESSEL_OK;
  cudaStream_t st = tsl_cuda_stream(be, s)->s;
  if (dtype == TESSEL_F32) return LAUNCH(axpy_f32_kernel, n, st, (float *)y, alpha, (const float *)x, n);
  return LAUNCH(axpy_bf16_kernel, n, st, (bf16 *)y, alpha, (const bf16 *)x, n);
}

extern "C" int tsl_cuda_scale(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *x, float alpha, int64_t n) {
  if (dtype != TESSEL_F32 && dtype != TESSEL_BF16)
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "scale: dtype %d (fp32 or bf16 only)", (int)dtype);
  if (n <= 0) return n < 0 ? bad_size("scale", n) : TESSEL_OK;
  cudaStream_t st = tsl_cuda_stream(be, s)->s;
  if (dtype == TESSEL_F32) return LAUNCH(scale_f32_kernel, n, st, (float *)x, alpha, n);
  return LAUNCH(scale_bf16_kernel, n, st, (bf16 *)x, alpha, n);
}

/* fp32 ↔ bf16 (round to nearest even; NaN stays NaN), or a copy when the
** dtypes agree. */
extern "C" int tsl_cuda_convert(tsl_backend *be, tsl_stream *s, void *dst, tessel_dtype dst_dtype, const void *src,
                                tessel_dtype src_dtype, int64_t n) {
  if (n < 0) return bad_size("convert", n);
  cudaStream_t st = tsl_cuda_stream(be, s)->s;
  if (src_dtype == dst_dtype && (src_dtype == TESSEL_F32 || src_dtype == TESSEL_BF16)) {
    size_t bytes = (size_t)n * (src_dtype == TESSEL_F32 ? 4 : 2);
    if (n == 0 || dst == src) return TESSEL_OK;
    return TSL_CU(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, st));
  }
  if (n == 0) return TESSEL_OK;
  if (src_dtype == TESSEL_F32 && dst_dtype == TESSEL_BF16)
    return LAUNCH(f32_to_bf16_kernel, n, st, (bf16 *)dst, (const float *)src, n);
  if (src_dtype == TESSEL_BF16 && dst_dtype == TESSEL_F32)
    return LAUNCH(bf16_to_f32_kernel, n, st, (float *)dst, (const bf16 *)src, n);
  return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "convert: dtype %d to %d (fp32 and bf16 only)", (int)src_dtype,
                       (int)dst_dtype);
}

extern "C" int tsl_cuda_swiglu_forward(tsl_backend *be, tsl_stream *s, void *out, const void *gate, const void *up,
                                       int64_t n) {
  if (n <= 0) return n < 0 ? bad_size("swiglu forward", n) : TESSEL_OK;
  return LAUNCH(swiglu_forward_kernel, n, tsl_cuda_stream(be, s)->s, (bf16 *)out, (const bf16 *)gate,
                (const bf16 *)up, n);
}

extern "C" int tsl_cuda_swiglu_backward(tsl_backend *be, tsl_stream *s, void *dgate, void *dup, const void *dout,
                                        const void *gate, const void *up, int64_t n) {
  if (n <= 0) return n < 0 ? bad_size("swiglu backward", n) : TESSEL_OK;
  return LAUNCH(swiglu_backward_kernel, n, tsl_cuda_stream(be, s)->s, (bf16 *)dgate, (bf16 *)dup, (const bf16 *)dout,
                (const bf16 *)gate, (const bf16 *)up, n);
}

extern "C" int tsl_cuda_scale_matrix(tsl_backend *be, tsl_stream *s, void *c, tessel_dtype c_dtype, int64_t m,
                                     int64_t n, int64_t ldc, float beta) {
  if (m <= 0 || n <= 0 || beta == 1.0f) return TESSEL_OK;
  cudaStream_t st = tsl_cuda_stream(be, s)->s;
  if (c_dtype == TESSEL_F32) return LAUNCH(scale_matrix_kernel<float>, m * n, st, (float *)c, m, n, ldc, beta);
  return LAUNCH(scale_matrix_kernel<bf16>, m * n, st, (bf16 *)c, m, n, ldc, beta);
}

extern "C" int tsl_cuda_broadcast_rows(tsl_backend *be, tsl_stream *s, void *out, const void *v, int64_t rows,
                                       int64_t cols) {
  if (rows <= 0 || cols <= 0) return TESSEL_OK;
  return LAUNCH(broadcast_rows_kernel, rows * cols, tsl_cuda_stream(be, s)->s, (bf16 *)out, (const bf16 *)v, rows,
                cols);
}
