/*
** tests/kernels/test_cpu_elementwise.c — the vectorisable exp, GELU, add,
** axpy, scale and dtype conversion against double references.
*/
#include <float.h>

#include "cpu/cpu.h"
#include "kernel_test.h"

#define GELU_K 0.7978845608028654 /* √(2/π) */
#define GELU_C 0.044715

/* Every float in [-86.5, 88.72] at a stride of 1e-5 (17.5M of them):
** within 2^-23 relative of exp (1 ulp; fp32 rounding alone is half that);
** below the range 0, above it inf, NaN stays NaN. */
static void test_expf(void) {
  double worst = 0.0, worst_x = 0.0;
  for (double x = -86.5; x <= 88.72; x += 1e-5) {
    float xf = (float)x;
    double ref = exp((double)xf), err = fabs(tsl_cpu_expf(xf) - ref) / ref;
    if (!(err <= worst)) worst = err, worst_x = xf;
  }
  if (worst > 1.0 / 8388608.0) fprintf(stderr, "  worst at x = %.9g\n", worst_x);
  CHECK_CLOSE(worst, 0.0, 1.0 / 8388608.0, 0.0);
  CHECK(tsl_cpu_expf(0.0f) == 1.0f);
  CHECK(tsl_cpu_expf(-87.0f) == 0.0f);
  CHECK(tsl_cpu_expf(-INFINITY) == 0.0f);
  CHECK(isinf(tsl_cpu_expf(88.73f)) && tsl_cpu_expf(88.73f) > 0);
  CHECK(isinf(tsl_cpu_expf(INFINITY)));
  CHECK(isnan(tsl_cpu_expf(NAN)));
  CHECK(tsl_cpu_expf(88.72283f) <= FLT_MAX);
}

/* σ(2u) = 0.5·(1 + tanh u), written so that double keeps its precision
** where 1 + tanh u would cancel (x < -5 already loses every digit) */
static double ref_sigmoid2(double x) {
  return 1.0 / (1.0 + exp(-2.0 * GELU_K * (x + GELU_C * x * x * x)));
}

/* 0.5·x·(1 + tanh u) */
static double ref_gelu(double x) { return x * ref_sigmoid2(x); }

/* the two terms of gelu'(x) = 0.5·(1 + tanh u) + 0.5·x·sech²(u)·u', with
** sech² u = 4·σ(2u)·σ(−2u) */
static void ref_gelu_grad_terms(double x, double *first, double *second) {
  double s = ref_sigmoid2(x), sn = ref_sigmoid2(-x);
  *first = s;
  *second = 2.0 * x * s * sn * GELU_K * (1.0 + 3.0 * GELU_C * x * x);
}

/* In units of u, the relative error of the kernel's GELU: ~6 roundings plus
** the absolute error of the exponent 2u(x), which exp turns into relative
** error: 5 roundings of magnitude 2K(|x| + C|x|³). */
static double gelu_rel_units(double x) {
  double ax = fabs(x);
  return 8.0 + 10.0 * GELU_K * (ax + GELU_C * ax * ax * ax);
}

/* x on a fine grid over [-12, 12] (where GELU is not yet 0 or x in fp32)
** plus random points. */
static float *gelu_inputs(int64_t *n) {
  uint64_t rng = 31;
  const int64_t grid = 24001, extra = 70001;
  float *x = kt_floats(grid + extra);
  for (int64_t i = 0; i < grid; i++) x[i] = (float)(-12.0 + i * 1e-3);
  for (int64_t i = 0; i < extra; i++) x[grid + i] = kt_uniform(&rng, -6, 6);
  *n = grid + extra;
  return x;
}

/* forward: |got − ref| <= 2·u·gelu_rel_units(x)·|ref|, plus 1e-37 where
** the result is near fp32's smallest normal */
static void test_gelu_forward(void) {
  tsl_backend *be = kt_backend();
  int64_t n;
  float *x = gelu_inputs(&n), *out = kt_floats(n);
  double *ref = kt_doubles(n), *mag = kt_doubles(n);
  for (int64_t i = 0; i < n; i++) {
    ref[i] = ref_gelu(x[i]);
    mag[i] = gelu_rel_units(x[i]) * fabs(ref[i]) + 1e-37 / (2 * KT_U);
  }
  kt_fill(out, n, NAN);
  CHECK_EQ_INT(be->gelu_forward(be, NULL, out, x, n), 0);
  CHECK_ARRAY_BOUND(out, ref, mag, n, 2 * KT_U);

  /* large |x|: x³ overflows in fp32, and GELU must still be x or 0 */
  float big[6] = {1e4f, -1e4f, 1e20f, -1e20f, 0.0f, NAN}, big_out[6];
  CHECK_EQ_INT(be->gelu_forward(be, NULL, big_out, big, 6), 0);
  CHECK(big_out[0] == 1e4f && big_out[1] == 0.0f);
  CHECK(big_out[2] == 1e20f && big_out[3] == 0.0f);
  CHECK(big_out[4] == 0.0f && isnan(big_out[5]));
  free(x), free(out), free(ref), free(mag);
}

/* backward: dinp = gelu'(x)·dout, overwriting dinp, with the forward's
** bound applied to both terms of gelu' */
static void test_gelu_backward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 32;
  int64_t n;
  float *x = gelu_inputs(&n), *dout = kt_random(&rng, n, -2, 2), *dinp = kt_floats(n);
  double *ref = kt_doubles(n), *mag = kt_doubles(n);
  for (int64_t i = 0; i < n; i++) {
    double xi = x[i], first, second;
    ref_gelu_grad_terms(xi, &first, &second);
    ref[i] = (first + second) * dout[i];
    mag[i] = gelu_rel_units(xi) * (fabs(first) + fabs(second)) * fabs(dout[i]) + 1e-35 / (2 * KT_U);
  }
  kt_fill(dinp, n, NAN);
  CHECK_EQ_INT(be->gelu_backward(be, NULL, dinp, x, dout, n), 0);
  CHECK_ARRAY_BOUND(dinp, ref, mag, n, 2 * KT_U);

  /* beyond the clamp the derivative is its limit, never inf·0 = NaN; below
  ** −10 exactly 0 (the true value is under 3e-36 and falling), so that no
  ** run of subnormals reaches the GEMM that consumes it */
  float big[7] = {1e4f, -1e4f, 1e20f, -1e20f, -INFINITY, -10.5f, -10.001f}, ones[7] = {1, 1, 1, 1, 1, 1, 1}, g[7];
  CHECK_EQ_INT(be->gelu_backward(be, NULL, g, big, ones, 7), 0);
  CHECK(g[0] == 1.0f && g[2] == 1.0f);
  CHECK(g[1] == 0.0f && g[3] == 0.0f && g[4] == 0.0f && g[5] == 0.0f && g[6] == 0.0f);
  /* a NaN input gives a NaN gradient, not the clamp's bound */
  float nan_x = NAN, nan_g = 0.0f;
  CHECK_EQ_INT(be->gelu_backward(be, NULL, &nan_g, &nan_x, ones, 1), 0);
  CHECK(isnan(nan_g));
  free(x), free(dout), free(dinp), free(ref), free(mag);
}

/* gelu' against central differences of the double GELU, so that the
** reference derivative (and the kernel) are checked independently: the
** kernel is fp32 (~1e-6), the difference errs by ~1e-10. */
static void test_gelu_grad_matches_finite_differences(void) {
  tsl_backend *be = kt_backend();
  float x[121], ones[121], g[121];
  double fd[121];
  for (int i = 0; i < 121; i++) {
    x[i] = (float)(-6.0 + 0.1 * i);
    ones[i] = 1.0f;
    fd[i] = (ref_gelu(x[i] + 1e-6) - ref_gelu(x[i] - 1e-6)) / 2e-6;
  }
  CHECK_EQ_INT(be->gelu_backward(be, NULL, g, x, ones, 121), 0);
  CHECK_ARRAY_CLOSE(g, fd, 121, 1e-6, 1e-5);
}

/* add, axpy, scale on a small odd n and on one past the parallel cut-off:
** one or two roundings of the exact result (2u of the terms' magnitudes) */
static void test_add_axpy_scale(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 33;
  const int64_t sizes[] = {13, TSL_CPU_PARALLEL_MIN + 7};
  for (size_t c = 0; c < 2; c++) {
    const int64_t n = sizes[c];
    float *a = kt_random(&rng, n, -4, 4), *b = kt_random(&rng, n, -4, 4), *out = kt_floats(n);
    double *ref = kt_doubles(n), *mag = kt_doubles(n);
    for (int64_t i = 0; i < n; i++) ref[i] = (double)a[i] + b[i], mag[i] = fabs(ref[i]);
    CHECK_EQ_INT(be->add(be, NULL, out, a, b, n), 0);
    CHECK_ARRAY_BOUND(out, ref, mag, n, 1.01 * KT_U);

    for (int64_t i = 0; i < n; i++)
      ref[i] = (double)b[i] - 0.75 * a[i], mag[i] = fabs(b[i]) + 0.75 * fabs(a[i]);
    CHECK_EQ_INT(be->axpy(be, NULL, TESSEL_F32, b, -0.75f, a, n), 0);
    CHECK_ARRAY_BOUND(b, ref, mag, n, 2 * KT_U);

    for (int64_t i = 0; i < n; i++) ref[i] = 3.3 * a[i], mag[i] = fabs(ref[i]);
    CHECK_EQ_INT(be->scale(be, NULL, TESSEL_F32, a, 3.3f, n), 0);
    /* 3.3f itself is 3.3 to within u */
    CHECK_ARRAY_BOUND(a, ref, mag, n, 2.01 * KT_U);
    free(a), free(b), free(out), free(ref), free(mag);
  }
}

static uint32_t bits_of(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static float float_of(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* fp32 → bf16 rounds to nearest, ties to even; NaN stays NaN; overflow
** rounds to inf; bf16 → fp32 is exact; fp32 → fp32 copies. */
static void test_convert(void) {
  tsl_backend *be = kt_backend();
  const uint32_t in[] = {0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f80ffffu,
                         0xbf808001u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x00000001u,
                         0x80000000u, 0x7fc00000u, 0x7f800001u};
  const uint16_t want[] = {0x3f80u, 0x3f80u, 0x3f82u, 0x3f81u, 0x3f81u, 0xbf81u, 0x7f80u,
                           0xff80u, 0x7f80u, 0x0000u, 0x8000u, 0x7fc0u, 0x7fc0u};
  const int n = (int)(sizeof in / sizeof in[0]);
  float src[13];
  uint16_t dst[13];
  for (int i = 0; i < n; i++) src[i] = float_of(in[i]);
  CHECK_EQ_INT(be->convert(be, NULL, dst, TESSEL_BF16, src, TESSEL_F32, n), 0);
  for (int i = 0; i < n; i++) {
    if (dst[i] != want[i]) fprintf(stderr, "  case %d: 0x%04x, want 0x%04x\n", i, dst[i], want[i]);
    CHECK(dst[i] == want[i]);
  }
  float back[13];
  CHECK_EQ_INT(be->convert(be, NULL, back, TESSEL_F32, dst, TESSEL_BF16, n), 0);
  for (int i = 0; i < n; i++) CHECK(bits_of(back[i]) == (uint32_t)dst[i] << 16);

  /* a large array (the parallel path): every bf16 survives a round trip */
  const int64_t big = TSL_CPU_PARALLEL_MIN + 65536;
  uint16_t *h = kt_xalloc((size_t)big * 2), *h2 = kt_xalloc((size_t)big * 2);
  float *f = kt_floats(big), *copy = kt_floats(big);
  for (int64_t i = 0; i < big; i++) {
    uint16_t v = (uint16_t)i;
    h[i] = (v & 0x7f80u) == 0x7f80u ? 0x3f80u : v; /* skip inf/NaN encodings */
  }
  CHECK_EQ_INT(be->convert(be, NULL, f, TESSEL_F32, h, TESSEL_BF16, big), 0);
  CHECK_EQ_INT(be->convert(be, NULL, copy, TESSEL_F32, f, TESSEL_F32, big), 0);
  CHECK_EQ_INT(be->convert(be, NULL, h2, TESSEL_BF16, copy, TESSEL_F32, big), 0);
  CHECK(memcmp(h, h2, (size_t)big * 2) == 0);
  free(h), free(h2), free(f), free(copy);
}

/* fp32 → fp16 rounds to nearest, ties to even, through the subnormals
** (2^-24 is the smallest; 2^-25 ties down to 0, a hair above rounds up);
** 65520 and beyond overflow to inf; NaN stays NaN. The expected bits are
** numpy's float32.astype(float16) for the same inputs. fp16 → fp32 is
** exact, so every finite fp16 survives a round trip. */
static void test_convert_f16(void) {
  tsl_backend *be = kt_backend();
  const uint32_t in[] = {0x3f800000u, 0xc0200000u, 0x477fe000u, 0x477ff000u, 0x477fefffu,
                         0x33800000u, 0x33000000u, 0x33000001u, 0x38800000u, 0x387fc000u,
                         0x7f800000u, 0x80000000u, 0x7fc00000u, 0x3f801000u, 0x3f803000u};
  const uint16_t want[] = {0x3c00u, 0xc100u, 0x7bffu, 0x7c00u, 0x7bffu, 0x0001u, 0x0000u, 0x0001u,
                           0x0400u, 0x03ffu, 0x7c00u, 0x8000u, 0x7e00u, 0x3c00u, 0x3c02u};
  enum { N = sizeof in / sizeof in[0] };
  float src[N];
  uint16_t dst[N];
  for (int i = 0; i < N; i++) src[i] = float_of(in[i]);
  CHECK_EQ_INT(be->convert(be, NULL, dst, TESSEL_F16, src, TESSEL_F32, N), 0);
  for (int i = 0; i < N; i++) {
    if (dst[i] != want[i]) fprintf(stderr, "  case %d: 0x%04x, want 0x%04x\n", i, dst[i], want[i]);
    CHECK(i == 12 ? (dst[i] & 0x7c00u) == 0x7c00u && (dst[i] & 0x3ffu) : dst[i] == want[i]);
  }

  uint16_t all[65536], again[65536];
  static float wide[65536];
  int64_t n = 0;
  for (uint32_t v = 0; v < 65536; v++)
    if ((v & 0x7c00u) != 0x7c00u) all[n++] = (uint16_t)v; /* finite encodings */
  CHECK_EQ_INT(be->convert(be, NULL, wide, TESSEL_F32, all, TESSEL_F16, n), 0);
  CHECK_EQ_INT(be->convert(be, NULL, again, TESSEL_F16, wide, TESSEL_F32, n), 0);
  CHECK(memcmp(all, again, (size_t)n * 2) == 0);
  CHECK(wide[1] == 0x1p-24f && all[1] == 1);
}

/* SwiGLU inputs: a grid over the range where silu bends, plus random
** points, with up in [-2, 2) */
static void swiglu_inputs(int64_t *n, float **gate, float **up) {
  uint64_t rng = 61;
  const int64_t grid = 4001, extra = 40001;
  *n = grid + extra;
  *gate = kt_floats(*n);
  for (int64_t i = 0; i < grid; i++) (*gate)[i] = (float)(-20.0 + i * 1e-2);
  for (int64_t i = 0; i < extra; i++) (*gate)[grid + i] = kt_uniform(&rng, -8, 8);
  *up = kt_random(&rng, *n, -2, 2);
}

/* silu(x) = x·σ(x), and σ */
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* forward: exp (1 ulp, whose relative error σ passes on at most whole),
** 1 + e, the division and the product by up: 5u of |ref|, checked at 2×;
** backward: σ + x·e·σ² takes a few more roundings on each term, 8u of
** (σ + |x|·e·σ²)·|dout·up| for dgate, 5u of |dout·silu| for dup */
static void test_swiglu(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 62;
  int64_t n;
  float *gate, *up;
  swiglu_inputs(&n, &gate, &up);
  float *dout = kt_random(&rng, n, -1, 1), *out = kt_floats(n), *dg = kt_floats(n), *du = kt_floats(n);
  double *ref = kt_doubles(n), *mag = kt_doubles(n), *rdg = kt_doubles(n), *mdg = kt_doubles(n);
  double *rdu = kt_doubles(n), *mdu = kt_doubles(n);
  for (int64_t i = 0; i < n; i++) {
    const double x = gate[i], s = ref_sigmoid(x), e = exp(-x);
    ref[i] = x * s * up[i], mag[i] = 5 * fabs(ref[i]) + 1e-37 / KT_U;
    rdu[i] = dout[i] * x * s, mdu[i] = 5 * fabs(rdu[i]) + 1e-37 / KT_U;
    rdg[i] = (double)dout[i] * up[i] * (s + x * e * s * s);
    mdg[i] = 8 * fabs((double)dout[i] * up[i]) * (s + fabs(x) * e * s * s) + 1e-37 / KT_U;
  }
  kt_fill(out, n, NAN), kt_fill(dg, n, NAN), kt_fill(du, n, NAN);
  CHECK_EQ_INT(be->swiglu_forward(be, NULL, out, gate, up, n), 0);
  CHECK_ARRAY_BOUND(out, ref, mag, n, 2 * KT_U);
  CHECK_EQ_INT(be->swiglu_backward(be, NULL, dg, du, dout, gate, up, n), 0);
  CHECK_ARRAY_BOUND(du, rdu, mdu, n, 2 * KT_U);
  CHECK_ARRAY_BOUND(dg, rdg, mdg, n, 2 * KT_U);

  /* large |x|: silu is x or −0, its derivative 1 or 0, never NaN */
  float big[5] = {1e4f, -1e4f, 1e20f, -1e20f, -INFINITY}, ones[5] = {1, 1, 1, 1, 1}, o[5], g[5], u[5];
  CHECK_EQ_INT(be->swiglu_forward(be, NULL, o, big, ones, 5), 0);
  CHECK(o[0] == 1e4f && o[1] == 0.0f && o[2] == 1e20f && o[3] == 0.0f);
  CHECK_EQ_INT(be->swiglu_backward(be, NULL, g, u, ones, big, ones, 5), 0);
  CHECK(g[0] == 1.0f && g[2] == 1.0f);
  CHECK(fabsf(g[1]) < 1e-30f && fabsf(g[3]) < 1e-30f && fabsf(g[4]) < 1e-30f);
  CHECK(u[0] == 1e4f && u[1] == 0.0f);
  /* a NaN gate gives NaN gradients (dup was −0: the comparison with −80
  ** failed and took the limit) */
  float nan_gate = NAN, dgn = 0.0f, dun = 0.0f;
  CHECK_EQ_INT(be->swiglu_backward(be, NULL, &dgn, &dun, ones, &nan_gate, ones, 1), 0);
  CHECK(isnan(dgn) && isnan(dun));
  free(gate), free(up), free(dout), free(out), free(dg), free(du), free(ref), free(mag), free(rdg),
      free(mdg), free(rdu), free(mdu);
}

/* silu' against central differences of the double silu, so the formula
** is checked independently of the reference above: the kernel errs by
** ~1e-7, the quotient by ~1e-10, a wrong term by O(0.1). */
static void test_swiglu_grad_matches_finite_differences(void) {
  tsl_backend *be = kt_backend();
  float x[161], ones[161], g[161], u[161];
  double fd[161];
  for (int i = 0; i < 161; i++) {
    x[i] = (float)(-8.0 + 0.1 * i);
    ones[i] = 1.0f;
    const double a = x[i] + 1e-6, b = x[i] - 1e-6;
    fd[i] = (a * ref_sigmoid(a) - b * ref_sigmoid(b)) / 2e-6;
  }
  CHECK_EQ_INT(be->swiglu_backward(be, NULL, g, u, ones, x, ones, 161), 0);
  CHECK_ARRAY_CLOSE(g, fd, 161, 1e-6, 1e-5);
}

int main(void) {
  RUN(test_expf);
  RUN(test_gelu_forward);
  RUN(test_gelu_backward);
  RUN(test_gelu_grad_matches_finite_differences);
  RUN(test_add_axpy_scale);
  RUN(test_convert);
  RUN(test_convert_f16);
  RUN(test_swiglu);
  RUN(test_swiglu_grad_matches_finite_differences);
  return HARNESS_EXIT();
}
