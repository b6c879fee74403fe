/*
** tests/kernels/kernel_test.h — shared pieces of the CPU kernel tests: the
** backend, a seeded generator, buffers, and array checks that report only
** the worst element (with the caller's file and line).
**
** Tolerances. fp32 rounding has unit roundoff u = 2^-24; a sum of K
** products computed in fp32 is within about K·u·Σ|terms| of the exact
** value (the classic bound γ_K). The references are double precision, so
** their own error is negligible against that. Where a kernel's result is a
** sum, the reference also computes Σ|terms| ("mag") and the check is
** |got − ref| <= factor·mag with the factor derived in the test.
*/
#ifndef TSL_KERNEL_TEST_H
#define TSL_KERNEL_TEST_H

#include <stdint.h>
#include <stdlib.h>

#include "backend.h"
#include "harness.h"

#define KT_U (1.0 / 16777216.0) /* 2^-24, fp32 unit roundoff */

/* The CPU backend, initialised once with default threads (ctest sets
** OMP_NUM_THREADS=2). */
static inline tsl_backend *kt_backend(void) {
  static tsl_backend be;
  static int ready = 0;
  if (!ready) {
    be = *tsl_cpu_backend();
    tsl_backend_opts opts = {.size = sizeof opts, .threads = 0};
    if (be.init(&be, &opts) != 0) {
      fprintf(stderr, "cpu backend init failed\n");
      exit(2);
    }
    ready = 1;
  }
  return &be;
}

/* splitmix64: reproducible across platforms, unlike rand() */
static inline uint64_t kt_next(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline float kt_uniform(uint64_t *state, float lo, float hi) {
  return lo + (hi - lo) * (float)((kt_next(state) >> 40) * (1.0 / 16777216.0));
}

static inline int32_t kt_int(uint64_t *state, int32_t n) {
  return (int32_t)(kt_next(state) % (uint64_t)n);
}

static inline void *kt_xalloc(size_t bytes) {
  void *p = calloc(bytes ? bytes : 1, 1);
  if (!p) {
    fprintf(stderr, "test out of memory\n");
    exit(2);
  }
  return p;
}

static inline float *kt_floats(int64_t n) { return kt_xalloc((size_t)n * sizeof(float)); }
static inline double *kt_doubles(int64_t n) { return kt_xalloc((size_t)n * sizeof(double)); }

/* n floats uniform in [lo, hi) */
static inline float *kt_random(uint64_t *state, int64_t n, float lo, float hi) {
  float *x = kt_floats(n);
  for (int64_t i = 0; i < n; i++) x[i] = kt_uniform(state, lo, hi);
  return x;
}

static inline void kt_fill(float *x, int64_t n, float value) {
  for (int64_t i = 0; i < n; i++) x[i] = value;
}

/* Index of the element furthest beyond |got − ref| <= atol + rtol·|ref| +
** factor·mag (mag may be NULL); a NaN counts as furthest. */
static inline int64_t kt_worst(const float *got, const double *ref, const double *mag, int64_t n,
                               double atol, double rtol, double factor) {
  int64_t worst = 0;
  double worst_excess = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double allowed = atol + rtol * fabs(ref[i]) + (mag ? factor * mag[i] : 0.0);
    double excess = fabs((double)got[i] - ref[i]) - allowed;
    if (isnan(excess)) return i;
    if (excess > worst_excess) {
      worst_excess = excess;
      worst = i;
    }
  }
  return worst;
}

/* |got[i] − ref[i]| <= atol + rtol·|ref[i]| for all i < n */
#define CHECK_ARRAY_CLOSE(got, ref, n, atol, rtol)                                       \
  do {                                                                                   \
    int64_t n_ = (n);                                                                    \
    if (n_ > 0) {                                                                        \
      int64_t i_ = kt_worst((got), (ref), NULL, n_, (atol), (rtol), 0.0);                \
      if (!(fabs((double)(got)[i_] - (ref)[i_]) <= (atol) + (rtol)*fabs((ref)[i_])))     \
        fprintf(stderr, "  worst element %lld of %lld\n", (long long)i_, (long long)n_); \
      CHECK_CLOSE((got)[i_], (ref)[i_], (atol), (rtol));                                 \
    }                                                                                    \
  } while (0)

/* |got[i] − ref[i]| <= factor·mag[i] + tiny for all i < n */
#define CHECK_ARRAY_BOUND(got, ref, mag, n, factor)                                              \
  do {                                                                                           \
    int64_t n_ = (n);                                                                            \
    if (n_ > 0) {                                                                                \
      int64_t i_ = kt_worst((got), (ref), (mag), n_, 1e-30, 0.0, (factor));                      \
      double allowed_ = 1e-30 + (factor) * (mag)[i_];                                            \
      if (!(fabs((double)(got)[i_] - (ref)[i_]) <= allowed_))                                    \
        fprintf(stderr, "  worst element %lld of %lld (mag %g)\n", (long long)i_, (long long)n_, \
                (mag)[i_]);                                                                      \
      CHECK_CLOSE((got)[i_], (ref)[i_], allowed_, 0.0);                                          \
    }                                                                                            \
  } while (0)

/* every element of got equals want exactly */
#define CHECK_ARRAY_EQ(got, want, n)                                                 \
  do {                                                                               \
    int64_t n_ = (n), bad_ = -1;                                                     \
    for (int64_t i_ = 0; i_ < n_ && bad_ < 0; i_++)                                  \
      if (!((got)[i_] == (want)[i_])) bad_ = i_;                                     \
    if (bad_ >= 0)                                                                   \
      fprintf(stderr, "  first difference at %lld: %.9g vs %.9g\n", (long long)bad_, \
              (double)(got)[bad_], (double)(want)[bad_]);                            \
    CHECK(bad_ < 0);                                                                 \
  } while (0)

static inline double *kt_widen(const float *x, int64_t n) {
  double *d = kt_doubles(n);
  for (int64_t i = 0; i < n; i++) d[i] = x[i];
  return d;
}

#endif
