/*
** kernels/cpu/elementwise.c — GELU, add, axpy, scale, dtype conversion and
** SwiGLU over flat arrays of n elements.
*/
#include "bf16.h"
#include "cpu.h"

#define GELU_K 0.7978845608028654f /* √(2/π) */
#define GELU_C 0.044715f

/* GELU's tanh approximation 0.5·x·(1 + tanh u), u = √(2/π)(x + 0.044715x³),
** is evaluated as x·σ(2u) = x / (1 + e^(−2u)): the same function, without
** the cancellation of 1 + tanh u for negative x, and vectorisable through
** tsl_cpu_expf. For large |x|, x³ overflows to ±inf and e^(−2u) to inf or
** 0, giving exactly 0 or x. Never inlined: the kernel below and the fused
** linear + GELU (matmul.c) run this one copy of the loop, so the two give
** the same bits (a recomputed GELU must equal the one the forward made). */
__attribute__((noinline)) void tsl_cpu_gelu_span(float *o, const float *x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    float xi = x[i];
    float u = GELU_K * (xi + GELU_C * xi * xi * xi);
    o[i] = xi / (1.0f + tsl_cpu_expf(-2.0f * u));
  }
}

/* dinp = gelu'(x)·dout (overwrite). With s = σ(2u) and e = e^(−2u),
** gelu'(x) = s + 2x·s(1 − s)·u' and s(1 − s) = e·s², which keeps its
** precision where 1 − s would cancel. Beyond |x| = 10 the second term is
** below 1e-35, so x is clamped there (e·s² stays finite, never inf·0) and
** the derivative is its limit: 1 above, and exactly 0 below −10 (the true
** value there is under 3e-36 and falling), where the clamped formula would
** repeat −3e-36: times dout that is subnormal, and the GEMM that takes this
** gradient next slows down by tens of times on subnormal operands (the fc
** backward in bench_kernels: 52 ms instead of 1.9 ms with 19% of its
** gradient subnormal). One copy, as above. */
__attribute__((noinline)) void tsl_cpu_gelu_grad_span(float *di, const float *x, const float *d, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; i++) {
    float xi = x[i] > 10.0f ? 10.0f : (x[i] < -10.0f ? -10.0f : x[i]);
    float x2 = xi * xi;
    float u = GELU_K * (xi + GELU_C * x2 * xi);
    float du = GELU_K * (1.0f + 3.0f * GELU_C * x2);
    float e = tsl_cpu_expf(-2.0f * u);
    float sg = 1.0f / (1.0f + e);
    float grad = sg + 2.0f * xi * (e * sg * sg) * du;
    di[i] = (x[i] < -10.0f ? 0.0f : grad) * d[i];
  }
}

/* Elements per task of the elementwise kernels: a few pages, whole lines. */
enum { SPAN = 4096 };

int tsl_cpu_gelu_forward(tsl_backend *be, tsl_stream *s, void *out, const void *inp, int64_t n) {
  if (n < 0) return TESSEL_E_INTERNAL;
  float *o = out;
  const float *x = inp;
#pragma omp parallel for schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
  for (int64_t i0 = 0; i0 < n; i0 += SPAN) tsl_cpu_gelu_span(o + i0, x + i0, TSL_MIN(SPAN, n - i0));
  return TESSEL_OK;
}

int tsl_cpu_gelu_backward(tsl_backend *be, tsl_stream *s, void *dinp, const void *inp,
                          const void *dout, int64_t n) {
  if (n < 0) return TESSEL_E_INTERNAL;
  float *di = dinp;
  const float *x = inp, *d = dout;
#pragma omp parallel for schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
  for (int64_t i0 = 0; i0 < n; i0 += SPAN) tsl_cpu_gelu_grad_span(di + i0, x + i0, d + i0, TSL_MIN(SPAN, n - i0));
  return TESSEL_OK;
}

/* dinp[rows,cols] = gelu'(inp)·dout and db[cols] += Σ_rows dinp, in one
** pass (fusion: the bias gradient of the linear before the GELU is summed
** while its input gradient is made), walking rows over each thread's
** columns as tsl_cpu_column_sums does: the sums are those of the unfused
** pair and do not depend on the thread count. */
int tsl_cpu_gelu_backward_bias(tsl_backend *be, tsl_stream *s, void *dinp, float *db, const void *inp,
                               const void *dout, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) return TESSEL_E_INTERNAL;
  tsl_cpu_column_sums_gelu(db, dinp, inp, dout, rows, cols);
  return TESSEL_OK;
}

/* out = a + b */
int tsl_cpu_add(tsl_backend *be, tsl_stream *s, void *out, const void *a, const void *b,
                int64_t n) {
  if (n < 0) return TESSEL_E_INTERNAL;
  float *o = out;
  const float *x = a, *y = b;
#pragma omp parallel for simd schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) o[i] = x[i] + y[i];
  return TESSEL_OK;
}

/* y += alpha·x, fp32 only (the only dtype gradients and masters have) */
int tsl_cpu_axpy(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *y, float alpha,
                 const void *x, int64_t n) {
  if (dtype != TESSEL_F32) return TESSEL_E_UNSUPPORTED;
  if (n < 0) return TESSEL_E_INTERNAL;
  float *yv = y;
  const float *xv = x;
#pragma omp parallel for simd schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) yv[i] += alpha * xv[i];
  return TESSEL_OK;
}

/* x *= alpha, fp32 only */
int tsl_cpu_scale(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *x, float alpha,
                  int64_t n) {
  if (dtype != TESSEL_F32) return TESSEL_E_UNSUPPORTED;
  if (n < 0) return TESSEL_E_INTERNAL;
  float *xv = x;
#pragma omp parallel for simd schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) xv[i] *= alpha;
  return TESSEL_OK;
}

/* dst = src converted: fp32 → fp32 (a copy), fp32 ↔ bf16, fp32 ↔ fp16;
** anything else is TESSEL_E_UNSUPPORTED. */
int tsl_cpu_convert(tsl_backend *be, tsl_stream *s, void *dst, tessel_dtype dst_dtype,
                    const void *src, tessel_dtype src_dtype, int64_t n) {
  if (n < 0) return TESSEL_E_INTERNAL;
  if (src_dtype == TESSEL_F32 && dst_dtype == TESSEL_F32) {
    if (n && dst != src) memcpy(dst, src, (size_t)n * sizeof(float));
  } else if (src_dtype == TESSEL_F32 && dst_dtype == TESSEL_BF16) {
    const float *x = src;
    uint16_t *y = dst;
#pragma omp parallel for simd schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = tsl_f32_to_bf16(x[i]);
  } else if (src_dtype == TESSEL_BF16 && dst_dtype == TESSEL_F32) {
    const uint16_t *x = src;
    float *y = dst;
#pragma omp parallel for simd schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = tsl_bf16_to_f32(x[i]);
  } else if (src_dtype == TESSEL_F32 && dst_dtype == TESSEL_F16) {
    const float *x = src;
    uint16_t *y = dst;
#pragma omp parallel for schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = tsl_f32_to_f16(x[i]);
  } else if (src_dtype == TESSEL_F16 && dst_dtype == TESSEL_F32) {
    const uint16_t *x = src;
    float *y = dst;
#pragma omp parallel for schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
    for (int64_t i = 0; i < n; i++) y[i] = tsl_f16_to_f32(x[i]);
  } else {
    return TESSEL_E_UNSUPPORTED;
  }
  return TESSEL_OK;
}

/* out = silu(gate)·up, silu(x) = x·σ(x) = x / (1 + e^(−x)); for x below
** about −88 e^(−x) overflows to inf and silu is −0, its limit. */
int tsl_cpu_swiglu_forward(tsl_backend *be, tsl_stream *s, void *out, const void *gate,
                           const void *up, int64_t n) {
  if (n < 0) return TESSEL_E_INTERNAL;
  float *o = out;
  const float *g = gate, *u = up;
#pragma omp parallel for simd schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) o[i] = g[i] / (1.0f + tsl_cpu_expf(-g[i])) * u[i];
  return TESSEL_OK;
}

/* dgate = dout·up·silu'(gate), dup = dout·silu(gate) (both overwritten).
** With e = e^(−x) and σ = 1/(1 + e), silu'(x) = σ + x·σ(1 − σ) and
** σ(1 − σ) = e·σ², which keeps its precision where 1 − σ would cancel.
** Below x = −80 silu and its derivative are under 1e-33 in magnitude:
** x is clamped there to keep e·σ² finite (never inf·0), and silu is taken
** as its limit −0. */
int tsl_cpu_swiglu_backward(tsl_backend *be, tsl_stream *s, void *dgate, void *dup,
                            const void *dout, const void *gate, const void *up, int64_t n) {
  if (n < 0) return TESSEL_E_INTERNAL;
  float *dg = dgate, *du = dup;
  const float *d = dout, *g = gate, *u = up;
#pragma omp parallel for simd schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) {
    const float x = g[i] < -80.0f ? -80.0f : g[i];
    const float e = tsl_cpu_expf(-x), sg = 1.0f / (1.0f + e);
    const float di = d[i], ui = u[i];
    du[i] = di * (g[i] < -80.0f ? -0.0f : g[i] * sg); /* a NaN gate stays NaN */
    dg[i] = di * ui * (sg + x * (e * sg * sg));
  }
  return TESSEL_OK;
}
