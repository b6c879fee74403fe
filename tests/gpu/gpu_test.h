/*
** tests/gpu/gpu_test.h — shared pieces of the CUDA backend tests: loading
** the backend the way the core does, moving arrays to and from the GPU in
** fp32 or bf16, and the tolerances that bf16 storage calls for.
**
** Skipping. Every test calls gt_cuda() first; on a machine without a GPU
** (or driver) it exits with GT_SKIP, which CMake registers as the test's
** SKIP_RETURN_CODE, so ctest reports "Not Run (skipped)", never "Passed".
**
** Inputs. Every input is drawn in fp32 and rounded to bf16 before either
** backend sees it, so the CPU backend (fp32 everywhere) and the CUDA
** backend (bf16 activations and weights) start from identical values; the
** CPU's output is the reference.
**
** Tolerances. bf16 keeps 8 significant bits: one unit in the last place is
** 2^-8 ≈ 3.9e-3 of the value, and rounding to nearest errs by at most half
** of that. A CUDA result stored in bf16 therefore differs from the CPU's
** fp32 value by up to 2^-9·|ref| from that final rounding, plus whatever
** intermediate bf16 roundings the kernel has (stated in each test), plus
** fp32 differences: products accumulate in fp32 on both sides, in
** different orders, so a sum of K terms may differ by about K·2^-24 times
** the sum of the terms' magnitudes ("mag", computed by the test). Checks
** allow one full ulp (GT_BF16 = 2^-8) per rounding, twice the bound, so
** that a correct kernel passes with margin while a wrong index, transpose
** or mask (an O(1) error) fails by orders of magnitude.
*/
#ifndef TSL_GPU_TEST_H
#define TSL_GPU_TEST_H

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "kernels/kernel_test.h"

#define GT_SKIP 77
#define GT_BF16 (1.0 / 256.0) /* 2^-8: one bf16 ulp, relative */

/* x[i] := the bf16 value nearest x[i] */
static inline void gt_round(float *x, int64_t n) {
  for (int64_t i = 0; i < n; i++) x[i] = tsl_bf16_to_f32(tsl_f32_to_bf16(x[i]));
}

/* n random bf16-representable values in [lo, hi) */
static inline float *gt_random(uint64_t *rng, int64_t n, float lo, float hi) {
  float *x = kt_random(rng, n, lo, hi);
  gt_round(x, n);
  return x;
}

static tsl_backend gt_be;
static tsl_stream *gt_s;

/* The CUDA backend, loaded from the built library and started on GPU 0
** with one stream; exits with GT_SKIP when no GPU is usable. */
static inline tsl_backend *gt_cuda(void) {
  static int ready = 0;
  if (ready) return &gt_be;
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    fprintf(stderr, "skipped: no CUDA device here (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    exit(GT_SKIP);
  }
  void *h = dlopen(TESSEL_CUDA_LIBRARY, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "cannot load %s: %s\n", TESSEL_CUDA_LIBRARY, dlerror());
    exit(1);
  }
  tsl_backend_entry_fn entry = (tsl_backend_entry_fn)dlsym(h, TSL_BACKEND_ENTRY_NAME);
  const tsl_backend *table = entry ? entry(TSL_BACKEND_VERSION) : NULL;
  if (!table) {
    fprintf(stderr, "%s has no backend table for interface %d\n", TESSEL_CUDA_LIBRARY, TSL_BACKEND_VERSION);
    exit(1);
  }
  memcpy(&gt_be, table, table->size < sizeof gt_be ? table->size : sizeof gt_be);
  tsl_backend_opts opts = {.size = sizeof opts, .device_index = 0, .rank = 0};
  if (gt_be.init(&gt_be, &opts) < 0 || gt_be.stream_create(&gt_be, &gt_s) < 0) {
    fprintf(stderr, "cuda backend: %s\n", gt_be.last_error(&gt_be));
    exit(1);
  }
  fprintf(stderr, "%s\n", gt_be.describe(&gt_be));
  ready = 1;
  return &gt_be;
}

/* Stop the test on a failed backend call, with the backend's message. */
#define GT_OK(call)                                                                            \
  do {                                                                                         \
    int rc_ = (call);                                                                          \
    if (rc_ < 0) fprintf(stderr, "%s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #call, rc_,      \
                         gt_be.last_error(&gt_be));                                            \
    REQUIRE(rc_ >= 0);                                                                         \
  } while (0)

static inline void *gt_alloc(uint64_t bytes) {
  void *p = NULL;
  if (gt_be.device_alloc(&gt_be, bytes, &p) < 0) {
    fprintf(stderr, "device allocation of %llu bytes failed: %s\n", (unsigned long long)bytes,
            gt_be.last_error(&gt_be));
    exit(1);
  }
  return p;
}

static inline void gt_free(void *p) { gt_be.device_free(&gt_be, p); }

static inline void gt_sync(void) {
  if (gt_be.stream_sync(&gt_be, gt_s) < 0) {
    fprintf(stderr, "stream sync failed: %s\n", gt_be.last_error(&gt_be));
    exit(1);
  }
}

static inline void gt_copy(void *dst, const void *src, uint64_t bytes, tsl_copy_kind kind) {
  if (gt_be.copy(&gt_be, dst, src, bytes, kind, gt_s) < 0) {
    fprintf(stderr, "copy failed: %s\n", gt_be.last_error(&gt_be));
    exit(1);
  }
  gt_sync();
}

/* Device copies of host arrays: fp32 as is, bf16 rounded, int32 as is. */
static inline float *gt_up_f32(const float *x, int64_t n) {
  float *d = gt_alloc((uint64_t)n * 4);
  gt_copy(d, x, (uint64_t)n * 4, TSL_COPY_H2D);
  return d;
}

static inline void *gt_up_bf16(const float *x, int64_t n) {
  uint16_t *h = kt_xalloc((size_t)n * 2);
  for (int64_t i = 0; i < n; i++) h[i] = tsl_f32_to_bf16(x[i]);
  void *d = gt_alloc((uint64_t)n * 2);
  gt_copy(d, h, (uint64_t)n * 2, TSL_COPY_H2D);
  free(h);
  return d;
}

static inline int32_t *gt_up_i32(const int32_t *x, int64_t n) {
  int32_t *d = gt_alloc((uint64_t)n * 4);
  gt_copy(d, x, (uint64_t)n * 4, TSL_COPY_H2D);
  return d;
}

/* Host copies of device arrays, widened to fp32 (callers free them). */
static inline float *gt_down_f32(const void *d, int64_t n) {
  float *h = kt_floats(n);
  gt_copy(h, d, (uint64_t)n * 4, TSL_COPY_D2H);
  return h;
}

static inline float *gt_down_bf16(const void *d, int64_t n) {
  uint16_t *raw = kt_xalloc((size_t)n * 2);
  gt_copy(raw, d, (uint64_t)n * 2, TSL_COPY_D2H);
  float *h = kt_floats(n);
  for (int64_t i = 0; i < n; i++) h[i] = tsl_bf16_to_f32(raw[i]);
  free(raw);
  return h;
}

static inline double *gt_down_f64(const void *d, int64_t n) {
  double *h = kt_doubles(n);
  gt_copy(h, d, (uint64_t)n * 8, TSL_COPY_D2H);
  return h;
}

/* a copy of n floats */
static inline float *gt_clone(const float *x, int64_t n) {
  float *y = kt_floats(n);
  memcpy(y, x, (size_t)n * sizeof(float));
  return y;
}

/* |got − ref| <= rtol·|ref| + factor·mag[i] (+ atol) for all i, with the
** CPU's fp32 result as the reference. */
static inline void gt_check(const char *what, const float *got, const float *ref, const double *mag, int64_t n,
                            double atol, double rtol, double factor) {
  double *r = kt_widen(ref, n);
  int64_t i = kt_worst(got, r, mag, n, atol, rtol, factor);
  double allowed = atol + rtol * fabs(r[i]) + (mag ? factor * mag[i] : 0.0);
  if (!(fabs((double)got[i] - r[i]) <= allowed)) {
    fprintf(stderr, "  %s: worst element %lld of %lld: got %.9g, cpu %.9g, allowed %.3g\n", what, (long long)i,
            (long long)n, (double)got[i], r[i], allowed);
    harness_failures++;
  }
  free(r);
}

#endif
