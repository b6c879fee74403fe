/*
** tests/gpu/test_cuda_matmul.c — cuBLASLt products and the linear layer
** against the CPU backend.
**
** Tolerances. Inputs are bf16 values, so both backends multiply the same
** numbers and accumulate in fp32; their sums of K products differ by the
** order of additions, within about K·2^-24·mag (mag = Σ|terms|, computed
** here). An fp32 output adds nothing more; a bf16 output is rounded once:
** half an ulp, 2^-9·|ref|. The checks allow GT_BF16·|ref| (bf16 output
** only) + 2·(K + 4)·2^-24·mag.
*/
#include "gpu_test.h"

#define SUM_BOUND(k) (2.0 * ((double)(k) + 4.0) * KT_U)

/* mag[m,n] = |alpha|·Σ|op(A)·op(B)| + |beta·C| (row-major, lds as stored) */
static double *magnitudes(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const float *a, int64_t lda,
                          const float *b, int64_t ldb, double beta, const float *c, int64_t ldc) {
  double *mag = kt_doubles(m * n);
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0.0;
      for (int64_t p = 0; p < k; p++)
        s += fabs((double)(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]));
      mag[i * n + j] = fabs(alpha) * s + (c ? fabs(beta * c[i * ldc + j]) : 0.0);
    }
  return mag;
}

/* the [m, n] block of a row-major matrix with row stride ld */
static float *block(const float *x, int64_t m, int64_t n, int64_t ld) {
  float *g = kt_floats(m * n);
  for (int64_t i = 0; i < m; i++) memcpy(g + i * n, x + i * ld, (size_t)n * 4);
  return g;
}

/* Every transpose pair on odd shapes, leading dimensions wider than the
** matrices, alpha and beta not 1, C in fp32 and in bf16. */
static void test_gemm(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 11;
  const int64_t shapes[][3] = {{7, 13, 5}, {1, 1, 1}, {33, 17, 64}, {97, 45, 70}, {130, 257, 300}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++)
        for (int bf = 0; bf < 2; bf++) {
          const int64_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
          const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
          const int64_t na = (ta ? k : m) * lda, nb = (tb ? n : k) * ldb, nc = m * ldc;
          float *a = gt_random(&rng, na, -1, 1), *b = gt_random(&rng, nb, -1, 1), *c = gt_random(&rng, nc, -1, 1);
          void *da = gt_up_bf16(a, na), *db = gt_up_bf16(b, nb);
          void *dc = bf ? gt_up_bf16(c, nc) : (void *)gt_up_f32(c, nc);
          double *mag = magnitudes(ta, tb, m, n, k, 0.5, a, lda, b, ldb, -1.5, c, ldc);
          float *ref = gt_clone(c, nc);
          CHECK_EQ_INT(cpu->gemm(cpu, NULL, ta, tb, m, n, k, 0.5f, a, lda, b, ldb, -1.5f, ref, ldc, TESSEL_F32), 0);
          GT_OK(be->gemm(be, gt_s, ta, tb, m, n, k, 0.5f, da, lda, db, ldb, -1.5f, dc, ldc,
                         bf ? TESSEL_BF16 : TESSEL_F32));
          float *all = bf ? gt_down_bf16(dc, nc) : gt_down_f32(dc, nc);
          float *got = block(all, m, n, ldc), *want = block(ref, m, n, ldc);
          gt_check("gemm", got, want, mag, m * n, 0.0, bf ? GT_BF16 : 0.0, SUM_BOUND(k));
          /* the padding between rows of C is untouched */
          for (int64_t i = 0; i < m; i++) CHECK(all[i * ldc + n] == c[i * ldc + n]);
          gt_free(da), gt_free(db), gt_free(dc);
          free(a), free(b), free(c), free(mag), free(ref), free(all), free(got), free(want);
        }
}

/* k = 0: C = beta·C, and beta 0 writes zeros. */
static void test_gemm_empty_product(void) {
  tsl_backend *be = gt_cuda();
  uint64_t rng = 12;
  const int64_t m = 5, n = 9;
  float *c = gt_random(&rng, m * n, -1, 1);
  float *dc = gt_up_f32(c, m * n);
  GT_OK(be->gemm(be, gt_s, 0, 0, m, n, 0, 1.0f, NULL, 0, NULL, n, 2.0f, dc, n, TESSEL_F32));
  float *got = gt_down_f32(dc, m * n);
  for (int64_t i = 0; i < m * n; i++) CHECK(got[i] == 2.0f * c[i]);
  GT_OK(be->gemm(be, gt_s, 0, 0, m, n, 0, 1.0f, NULL, 0, NULL, n, 0.0f, dc, n, TESSEL_F32));
  free(got);
  got = gt_down_f32(dc, m * n);
  for (int64_t i = 0; i < m * n; i++) CHECK(got[i] == 0.0f);
  gt_free(dc);
  free(c), free(got);
}

/* The linear layer, forward and backward, with and without bias, and with
** a bias that starts 2 bytes past an aligned address (as a parameter
** packed after an odd-sized one would, which goes through the broadcast
** path rather than cuBLASLt's epilogue: bias_route.h): both paths must
** give the same sums. Gradients of parameters
** accumulate onto what is there. */
static void test_linear(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 13;
  const int64_t shapes[][3] = {{6, 8, 12}, {64, 96, 288}, {37, 40, 72}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
    for (int variant = 0; variant < 3; variant++) { /* 0: no bias, 1: bias, 2: unaligned bias */
      const int64_t rows = shapes[sh][0], ic = shapes[sh][1], oc = shapes[sh][2];
      float *x = gt_random(&rng, rows * ic, -1, 1), *w = gt_random(&rng, ic * oc, -1, 1);
      float *bias = gt_random(&rng, oc + 1, -1, 1), *dy = gt_random(&rng, rows * oc, -1, 1);
      float *dw0 = kt_random(&rng, ic * oc, -1, 1), *db0 = kt_random(&rng, oc, -1, 1);
      const float *b = variant ? bias + (variant == 2) : NULL;
      void *dx = gt_up_bf16(x, rows * ic), *dwt = gt_up_bf16(w, ic * oc), *dbias = gt_up_bf16(bias, oc + 1);
      void *ddy = gt_up_bf16(dy, rows * oc), *dout = gt_alloc((uint64_t)(rows * oc) * 2);
      void *ddx = gt_alloc((uint64_t)(rows * ic) * 2);
      float *ddw = gt_up_f32(dw0, ic * oc), *ddb = gt_up_f32(db0, oc);
      const void *dbp = variant ? (const char *)dbias + 2 * (variant == 2) : NULL;

      float *out = kt_floats(rows * oc);
      CHECK_EQ_INT(cpu->linear_forward(cpu, NULL, out, x, w, b, rows, ic, oc), 0);
      GT_OK(be->linear_forward(be, gt_s, dout, dx, dwt, dbp, rows, ic, oc));
      double *mag = magnitudes(0, 0, rows, oc, ic, 1.0, x, ic, w, oc, 0.0, NULL, oc);
      for (int64_t i = 0; b && i < rows * oc; i++) mag[i] += fabs(b[i % oc]);
      float *got = gt_down_bf16(dout, rows * oc);
      static const char *const names[] = {"linear forward, no bias", "linear forward, bias in the epilogue",
                                          "linear forward, bias broadcast into C"};
      /* Without a bias: one rounding, of the result. With one, cuBLASLt
      ** may round the product to bf16 before it adds the bias (epilogue)
      ** or C (beta 1): on an H200 (cuBLASLt 13.1) both routes came out up
      ** to a full bf16 spacing from the fp32 reference, twice what one
      ** rounding can err by, in 3 of their 6 cases. So one more rounding of
      ** a value no larger than mag is allowed there; a wrong index or
      ** operand still misses by O(1). */
      gt_check(names[variant], got, out, mag, rows * oc, 0.0, GT_BF16, SUM_BOUND(ic) + (variant ? GT_BF16 : 0.0));

      float *dxr = kt_floats(rows * ic), *dwr = gt_clone(dw0, ic * oc), *dbr = gt_clone(db0, oc);
      CHECK_EQ_INT(cpu->linear_backward(cpu, NULL, dxr, dwr, dbr, dy, x, w, rows, ic, oc), 0);
      GT_OK(be->linear_backward(be, gt_s, ddx, ddw, ddb, ddy, dx, dwt, rows, ic, oc));
      double *mag_dx = magnitudes(0, 1, rows, ic, oc, 1.0, dy, oc, w, oc, 0.0, NULL, ic);
      double *mag_dw = magnitudes(1, 0, ic, oc, rows, 1.0, x, ic, dy, oc, 1.0, dw0, oc);
      double *mag_db = kt_doubles(oc);
      for (int64_t j = 0; j < oc; j++) {
        mag_db[j] = fabs(db0[j]);
        for (int64_t r = 0; r < rows; r++) mag_db[j] += fabs(dy[r * oc + j]);
      }
      float *gdx = gt_down_bf16(ddx, rows * ic), *gdw = gt_down_f32(ddw, ic * oc), *gdb = gt_down_f32(ddb, oc);
      gt_check("linear dinp", gdx, dxr, mag_dx, rows * ic, 0.0, GT_BF16, SUM_BOUND(oc));
      gt_check("linear dw", gdw, dwr, mag_dw, ic * oc, 0.0, 0.0, SUM_BOUND(rows));
      gt_check("linear db", gdb, dbr, mag_db, oc, 0.0, 0.0, SUM_BOUND(rows));

      /* no input gradient and no bias gradient: dw still accumulates */
      GT_OK(be->linear_backward(be, gt_s, NULL, ddw, NULL, ddy, dx, dwt, rows, ic, oc));
      CHECK_EQ_INT(cpu->linear_backward(cpu, NULL, NULL, dwr, NULL, dy, x, w, rows, ic, oc), 0);
      free(gdw);
      gdw = gt_down_f32(ddw, ic * oc);
      gt_check("linear dw twice", gdw, dwr, mag_dw, ic * oc, 0.0, 0.0, 2.0 * SUM_BOUND(rows));

      gt_free(dx), gt_free(dwt), gt_free(dbias), gt_free(ddy), gt_free(dout), gt_free(ddx), gt_free(ddw), gt_free(ddb);
      free(x), free(w), free(bias), free(dy), free(dw0), free(db0), free(out), free(mag), free(got);
      free(dxr), free(dwr), free(dbr), free(mag_dx), free(mag_dw), free(mag_db), free(gdx), free(gdw), free(gdb);
    }
}

int main(void) {
  gt_cuda();
  RUN(test_gemm);
  RUN(test_gemm_empty_product);
  RUN(test_linear);
  return HARNESS_EXIT();
}
