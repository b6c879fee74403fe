/*
** tests/gpu/test_cuda_elementwise.c — GELU, SwiGLU, add, axpy, scale and
** dtype conversion against the CPU backend.
**
** Tolerances. Each bf16 result is computed in fp32 from the same bf16
** inputs and rounded once: within 2^-9·|ref| of the CPU's fp32 value, plus
** the last ulps of expf (both backends are within 1-2 fp32 ulps of exp),
** hence GT_BF16·|ref| + 1e-6·|ref| + a 1e-7 floor for results near zero.
** fp32 results (axpy, scale in fp32) differ by at most an fp32 rounding of
** a fused versus separate multiply-add: 2^-23 relative to |y| + |alpha·x|.
** Conversions are exact (bf16 → fp32) or both round to nearest even
** (fp32 → bf16), so they must agree bit for bit.
*/
#include "gpu_test.h"

static const int64_t sizes[] = {1, 31, 1000, 300007};

/* inputs spread over GELU's interesting range, with a few huge values */
static float *gelu_inputs(uint64_t *rng, int64_t n) {
  float *x = gt_random(rng, n, -8, 8);
  if (n > 4) x[0] = 30.0f, x[1] = -30.0f, x[2] = 1e30f, x[3] = -1e30f;
  gt_round(x, n);
  return x;
}

static void test_gelu(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 41;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    const int64_t n = sizes[i];
    float *x = gelu_inputs(&rng, n), *dy = gt_random(&rng, n, -1, 1);
    float *y = kt_floats(n), *dx = kt_floats(n);
    CHECK_EQ_INT(cpu->gelu_forward(cpu, NULL, y, x, n), 0);
    CHECK_EQ_INT(cpu->gelu_backward(cpu, NULL, dx, x, dy, n), 0);
    void *d_x = gt_up_bf16(x, n), *d_dy = gt_up_bf16(dy, n), *d_y = gt_alloc((uint64_t)n * 2);
    void *d_dx = gt_alloc((uint64_t)n * 2);
    GT_OK(be->gelu_forward(be, gt_s, d_y, d_x, n));
    GT_OK(be->gelu_backward(be, gt_s, d_dx, d_x, d_dy, n));
    float *gy = gt_down_bf16(d_y, n), *gdx = gt_down_bf16(d_dx, n);
    gt_check("gelu", gy, y, NULL, n, 1e-7, GT_BF16 + 1e-6, 0.0);
    /* gelu' is a sum of two O(1) terms that cancel near x = -0.75 */
    gt_check("gelu backward", gdx, dx, NULL, n, 1e-6, GT_BF16 + 1e-6, 0.0);
    gt_free(d_x), gt_free(d_dy), gt_free(d_y), gt_free(d_dx);
    free(x), free(dy), free(y), free(dx), free(gy), free(gdx);
  }
}

/* SwiGLU: out = silu(gate)·up, and both gradients; each result one bf16
** rounding of an fp32 formula on the same inputs (the header's tolerance).
** dgate's silu' = σ + x·e·σ² has terms that cancel near x = −1.28, so its
** floor is 1e-6 of |dout·up| as for GELU. */
static void test_swiglu(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 44;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    const int64_t n = sizes[i];
    float *g = gelu_inputs(&rng, n), *u = gt_random(&rng, n, -2, 2), *dy = gt_random(&rng, n, -1, 1);
    float *y = kt_floats(n), *dg = kt_floats(n), *du = kt_floats(n);
    CHECK_EQ_INT(cpu->swiglu_forward(cpu, NULL, y, g, u, n), 0);
    CHECK_EQ_INT(cpu->swiglu_backward(cpu, NULL, dg, du, dy, g, u, n), 0);
    void *d_g = gt_up_bf16(g, n), *d_u = gt_up_bf16(u, n), *d_dy = gt_up_bf16(dy, n);
    void *d_y = gt_alloc((uint64_t)n * 2), *d_dg = gt_alloc((uint64_t)n * 2), *d_du = gt_alloc((uint64_t)n * 2);
    GT_OK(be->swiglu_forward(be, gt_s, d_y, d_g, d_u, n));
    GT_OK(be->swiglu_backward(be, gt_s, d_dg, d_du, d_dy, d_g, d_u, n));
    float *gy = gt_down_bf16(d_y, n), *gdg = gt_down_bf16(d_dg, n), *gdu = gt_down_bf16(d_du, n);
    gt_check("swiglu", gy, y, NULL, n, 1e-7, GT_BF16 + 1e-6, 0.0);
    gt_check("swiglu dup", gdu, du, NULL, n, 1e-7, GT_BF16 + 1e-6, 0.0);
    gt_check("swiglu dgate", gdg, dg, NULL, n, 4e-6, GT_BF16 + 1e-6, 0.0);
    gt_free(d_g), gt_free(d_u), gt_free(d_dy), gt_free(d_y), gt_free(d_dg), gt_free(d_du);
    free(g), free(u), free(dy), free(y), free(dg), free(du), free(gy), free(gdg), free(gdu);
  }
}

/* The edges where the clamps act, as the CPU has them: below x = −10
** GELU's derivative is exactly 0, and a NaN input stays NaN in every
** gradient (fminf/fmaxf turned it into the bound). */
static void test_clamp_edges(void) {
  tsl_backend *be = gt_cuda();
  float x[4] = {NAN, -20.0f, -10.5f, -100.0f}, ones[4] = {1, 1, 1, 1};
  void *d_x = gt_up_bf16(x, 4), *d_one = gt_up_bf16(ones, 4), *d_a = gt_alloc(8), *d_b = gt_alloc(8);
  GT_OK(be->gelu_backward(be, gt_s, d_a, d_x, d_one, 4));
  float *gelu = gt_down_bf16(d_a, 4);
  CHECK(isnan(gelu[0]) && gelu[1] == 0.0f && gelu[2] == 0.0f && gelu[3] == 0.0f);
  GT_OK(be->swiglu_backward(be, gt_s, d_a, d_b, d_one, d_x, d_one, 4));
  float *dgate = gt_down_bf16(d_a, 4), *dup = gt_down_bf16(d_b, 4);
  CHECK(isnan(dgate[0]) && isnan(dup[0]));
  CHECK(fabsf(dgate[3]) < 1e-30f && dup[3] == 0.0f);
  gt_free(d_x), gt_free(d_one), gt_free(d_a), gt_free(d_b);
  free(gelu), free(dgate), free(dup);
}

static void test_add_axpy_scale(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 42;
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    const int64_t n = sizes[i];
    float *a = gt_random(&rng, n, -3, 3), *b = gt_random(&rng, n, -3, 3);
    /* add (bf16 only: the residual stream) */
    float *sum = kt_floats(n);
    CHECK_EQ_INT(cpu->add(cpu, NULL, sum, a, b, n), 0);
    void *da = gt_up_bf16(a, n), *db = gt_up_bf16(b, n), *dsum = gt_alloc((uint64_t)n * 2);
    GT_OK(be->add(be, gt_s, dsum, da, db, n));
    float *got = gt_down_bf16(dsum, n);
    gt_check("add", got, sum, NULL, n, 1e-7, GT_BF16, 0.0);
    free(got);
    /* views one element in (2-byte aligned): the element path, not 16-byte packs */
    if (n > 1) {
      GT_OK(be->add(be, gt_s, (uint16_t *)dsum + 1, (const uint16_t *)da + 1, (const uint16_t *)db + 1, n - 1));
      got = gt_down_bf16(dsum, n);
      gt_check("add, unaligned", got + 1, sum + 1, NULL, n - 1, 1e-7, GT_BF16, 0.0);
      free(got);
    }
    /* axpy and scale in fp32 (the CPU's only dtype) */
    double *mag = kt_doubles(n);
    for (int64_t k = 0; k < n; k++) mag[k] = fabs(a[k]) + fabs(0.75 * b[k]);
    float *y = gt_clone(a, n), *fy = gt_up_f32(a, n), *fx = gt_up_f32(b, n);
    CHECK_EQ_INT(cpu->axpy(cpu, NULL, TESSEL_F32, y, 0.75f, b, n), 0);
    GT_OK(be->axpy(be, gt_s, TESSEL_F32, fy, 0.75f, fx, n));
    got = gt_down_f32(fy, n);
    gt_check("axpy fp32", got, y, mag, n, 0.0, 0.0, 2.0 / 8388608.0);
    free(got);
    CHECK_EQ_INT(cpu->scale(cpu, NULL, TESSEL_F32, y, -1.25f, n), 0);
    GT_OK(be->scale(be, gt_s, TESSEL_F32, fy, -1.25f, n));
    got = gt_down_f32(fy, n);
    for (int64_t k = 0; k < n; k++) mag[k] *= 1.25;
    gt_check("scale fp32", got, y, mag, n, 0.0, 0.0, 4.0 / 8388608.0);
    free(got);
    /* the same in bf16 (the residual gradient), against fp32 on the CPU */
    float *y2 = gt_clone(a, n);
    CHECK_EQ_INT(cpu->axpy(cpu, NULL, TESSEL_F32, y2, 0.75f, b, n), 0);
    GT_OK(be->axpy(be, gt_s, TESSEL_BF16, da, 0.75f, db, n));
    got = gt_down_bf16(da, n);
    gt_check("axpy bf16", got, y2, NULL, n, 1e-7, GT_BF16, 0.0);
    free(got);
    /* y as the GPU holds it may sit one bf16 ulp from round(y2) (fused versus
    ** separate multiply-add before the rounding): one ulp more */
    gt_round(y2, n);
    CHECK_EQ_INT(cpu->scale(cpu, NULL, TESSEL_F32, y2, -1.25f, n), 0);
    GT_OK(be->scale(be, gt_s, TESSEL_BF16, da, -1.25f, n));
    got = gt_down_bf16(da, n);
    gt_check("scale bf16", got, y2, NULL, n, 1e-7, 2 * GT_BF16, 0.0);
    gt_free(da), gt_free(db), gt_free(dsum), gt_free(fy), gt_free(fx);
    free(a), free(b), free(sum), free(mag), free(y), free(y2), free(got);
  }
}

static void test_convert(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 43;
  const int64_t n = 100003;
  float *x = kt_random(&rng, n, -100, 100); /* not bf16-representable: rounding is tested */
  x[0] = NAN, x[1] = INFINITY, x[2] = -0.0f, x[3] = 3.4e38f;
  uint16_t *want = kt_xalloc((size_t)n * 2), *got = kt_xalloc((size_t)n * 2);
  CHECK_EQ_INT(cpu->convert(cpu, NULL, want, TESSEL_BF16, x, TESSEL_F32, n), 0);
  float *dx = gt_up_f32(x, n);
  void *dh = gt_alloc((uint64_t)n * 2);
  GT_OK(be->convert(be, gt_s, dh, TESSEL_BF16, dx, TESSEL_F32, n));
  gt_copy(got, dh, (uint64_t)n * 2, TSL_COPY_D2H);
  CHECK((got[0] & 0x7fff) > 0x7f80); /* NaN stays NaN (payloads may differ) */
  int64_t bad = -1;
  for (int64_t i = 1; i < n && bad < 0; i++)
    if (got[i] != want[i]) bad = i;
  if (bad >= 0) fprintf(stderr, "  fp32 -> bf16 differs at %lld: %04x vs %04x\n", (long long)bad, got[bad], want[bad]);
  CHECK(bad < 0);
  /* back to fp32: exact */
  float *back = kt_floats(n), *wback = kt_floats(n);
  float *dback = gt_alloc((uint64_t)n * 4);
  GT_OK(be->convert(be, gt_s, dback, TESSEL_F32, dh, TESSEL_BF16, n));
  gt_copy(back, dback, (uint64_t)n * 4, TSL_COPY_D2H);
  CHECK_EQ_INT(cpu->convert(cpu, NULL, wback, TESSEL_F32, want, TESSEL_BF16, n), 0);
  CHECK(isnan(back[0]));
  CHECK_ARRAY_EQ(back + 1, wback + 1, n - 1);
  /* same dtype: a copy */
  GT_OK(be->convert(be, gt_s, dback, TESSEL_F32, dx, TESSEL_F32, n));
  float *copy = gt_down_f32(dback, n);
  CHECK(memcmp(copy, x, (size_t)n * 4) == 0);
  gt_free(dx), gt_free(dh), gt_free(dback);
  free(x), free(want), free(got), free(back), free(wback), free(copy);
}

int main(void) {
  gt_cuda();
  RUN(test_gelu);
  RUN(test_swiglu);
  RUN(test_clamp_edges);
  RUN(test_add_axpy_scale);
  RUN(test_convert);
  return HARNESS_EXIT();
}
