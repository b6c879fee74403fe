/*
** tests/kernels/test_cpu_matmul.c — gemm and the linear layer against
** double-precision references.
**
** Tolerance for every product: a dot product of K fp32 terms, summed in any
** order, is within γ_K·Σ|a·b| ≈ K·u·Σ|a·b| of exact (u = 2^-24); alpha,
** beta and the bias add a few roundings more. The checks allow twice
** (K + 4)·u·mag, mag being the sum of the magnitudes of every term. A
** wrong index or transpose errs by O(mag), thousands of times more.
*/
#include "kernel_test.h"

#define BOUND(k) (2.0 * ((double)(k) + 4.0) * KT_U)

/* ref[m,n] = alpha·op(A)·op(B) + beta·C and mag[m,n] the matching sum of
** |terms|; C may be NULL (beta ignored). */
static void ref_gemm(double *ref, double *mag, int ta, int tb, int64_t m, int64_t n, int64_t k,
                     double alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                     double beta, const float *c, int64_t ldc) {
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double sum = 0.0, abs_sum = 0.0;
      for (int64_t p = 0; p < k; p++) {
        double av = ta ? a[p * lda + i] : a[i * lda + p];
        double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        sum += av * bv;
        abs_sum += fabs(av * bv);
      }
      double cv = c ? beta * c[i * ldc + j] : 0.0;
      ref[i * n + j] = alpha * sum + cv;
      mag[i * n + j] = fabs(alpha) * abs_sum + fabs(cv);
    }
}

/* the [m, n] block of a matrix with row stride ld */
static float *gather(const float *x, int64_t m, int64_t n, int64_t ld) {
  float *g = kt_floats(m * n);
  for (int64_t i = 0; i < m; i++) memcpy(g + i * n, x + i * ld, (size_t)n * sizeof(float));
  return g;
}

/* All four transpose combinations on odd shapes, with leading dimensions
** wider than the matrices (the padding must stay untouched), beta ≠ 0, and
** beta = 0 over a C full of NaN (which must be ignored, as BLAS does). The
** last two shapes are large enough to be split over the threads, by rows
** and (few rows, many columns) by columns. */
static void test_gemm_transposes(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 1;
  const int64_t shapes[][3] = {{7, 13, 5},  {1, 1, 1},    {33, 17, 64},
                               {5, 3, 129}, {97, 45, 70}, {9, 2001, 100}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    const int64_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
    for (int ta = 0; ta < 2; ta++)
      for (int tb = 0; tb < 2; tb++) {
        const int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
        float *a = kt_random(&rng, (ta ? k : m) * lda, -1, 1);
        float *b = kt_random(&rng, (tb ? n : k) * ldb, -1, 1);
        float *c = kt_random(&rng, m * ldc, -1, 1);
        double *ref = kt_doubles(m * n), *mag = kt_doubles(m * n);
        ref_gemm(ref, mag, ta, tb, m, n, k, 0.5, a, lda, b, ldb, -1.5, c, ldc);
        float pad = c[ldc - 1];
        CHECK_EQ_INT(
            be->gemm(be, NULL, ta, tb, m, n, k, 0.5f, a, lda, b, ldb, -1.5f, c, ldc, TESSEL_F32),
            0);
        float *got = gather(c, m, n, ldc);
        CHECK_ARRAY_BOUND(got, ref, mag, m * n, BOUND(k));
        CHECK(c[ldc - 1] == pad);

        kt_fill(c, m * ldc, NAN);
        ref_gemm(ref, mag, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, NULL, ldc);
        CHECK_EQ_INT(
            be->gemm(be, NULL, ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc, TESSEL_F32), 0);
        free(got);
        got = gather(c, m, n, ldc);
        CHECK_ARRAY_BOUND(got, ref, mag, m * n, BOUND(k));
        free(a), free(b), free(c), free(ref), free(mag), free(got);
      }
  }
}

/* k = 0: the product is empty and C = beta·C (zeros for beta = 0). */
static void test_gemm_empty_product(void) {
  tsl_backend *be = kt_backend();
  float c[6] = {1, 2, 3, 4, 5, 6};
  CHECK_EQ_INT(be->gemm(be, NULL, 0, 0, 2, 3, 0, 1.0f, NULL, 0, NULL, 0, 2.0f, c, 3, TESSEL_F32),
               0);
  CHECK(c[0] == 2.0f && c[5] == 12.0f);
  CHECK_EQ_INT(be->gemm(be, NULL, 0, 0, 2, 3, 0, 1.0f, NULL, 0, NULL, 0, 0.0f, c, 3, TESSEL_F32),
               0);
  CHECK(c[0] == 0.0f && c[5] == 0.0f);
}

/* out = inp·w + bias, overwriting out, on odd and model shapes */
static void test_linear_forward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 2;
  const int64_t shapes[][3] = {{7, 13, 11}, {1, 1, 1}, {256, 256, 768}, {256, 1024, 256}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    const int64_t rows = shapes[sh][0], ic = shapes[sh][1], oc = shapes[sh][2];
    float *inp = kt_random(&rng, rows * ic, -1, 1), *w = kt_random(&rng, ic * oc, -1, 1);
    float *bias = kt_random(&rng, oc, -1, 1), *out = kt_floats(rows * oc);
    double *ref = kt_doubles(rows * oc), *mag = kt_doubles(rows * oc);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
      ref_gemm(ref, mag, 0, 0, rows, oc, ic, 1.0, inp, ic, w, oc, 0.0, NULL, oc);
      if (with_bias)
        for (int64_t i = 0; i < rows * oc; i++) {
          ref[i] += bias[i % oc];
          mag[i] += fabs(bias[i % oc]);
        }
      kt_fill(out, rows * oc, NAN);
      CHECK_EQ_INT(be->linear_forward(be, NULL, out, inp, w, with_bias ? bias : NULL, rows, ic, oc),
                   0);
      CHECK_ARRAY_BOUND(out, ref, mag, rows * oc, BOUND(ic));
    }
    free(inp), free(w), free(bias), free(out), free(ref), free(mag);
  }
}

/* dinp = dout·wᵀ is overwritten; dw += inpᵀ·dout and db += Σ dout
** accumulate: starting from random gradients, two calls must add twice the
** reference. NULL dinp and db are skipped. */
static void test_linear_backward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 3;
  const int64_t shapes[][3] = {{7, 13, 11}, {1, 1, 1}, {256, 256, 768}, {256, 1024, 256}};
  for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
    const int64_t rows = shapes[sh][0], ic = shapes[sh][1], oc = shapes[sh][2];
    float *inp = kt_random(&rng, rows * ic, -1, 1), *w = kt_random(&rng, ic * oc, -1, 1);
    float *dout = kt_random(&rng, rows * oc, -1, 1), *dinp = kt_floats(rows * ic);
    float *dw0 = kt_random(&rng, ic * oc, -1, 1), *db0 = kt_random(&rng, oc, -1, 1);
    float *dw = kt_floats(ic * oc), *db = kt_floats(oc);
    memcpy(dw, dw0, (size_t)(ic * oc) * sizeof(float));
    memcpy(db, db0, (size_t)oc * sizeof(float));

    double *ref_dinp = kt_doubles(rows * ic), *mag_dinp = kt_doubles(rows * ic);
    double *ref_dw = kt_doubles(ic * oc), *mag_dw = kt_doubles(ic * oc);
    double *ref_db = kt_doubles(oc), *mag_db = kt_doubles(oc);
    ref_gemm(ref_dinp, mag_dinp, 0, 1, rows, ic, oc, 1.0, dout, oc, w, oc, 0.0, NULL, ic);
    ref_gemm(ref_dw, mag_dw, 1, 0, ic, oc, rows, 1.0, inp, ic, dout, oc, 0.0, NULL, oc);
    for (int64_t j = 0; j < oc; j++) {
      for (int64_t r = 0; r < rows; r++) {
        ref_db[j] += dout[r * oc + j];
        mag_db[j] += fabs(dout[r * oc + j]);
      }
    }
    /* after two calls: base + 2·ref, each call erring by up to γ_rows·mag
    ** and each accumulation rounding once more against the running value */
    for (int64_t i = 0; i < ic * oc; i++) {
      ref_dw[i] = dw0[i] + 2.0 * ref_dw[i];
      mag_dw[i] = 2.0 * mag_dw[i] + fabs(dw0[i]);
    }
    for (int64_t j = 0; j < oc; j++) {
      ref_db[j] = db0[j] + 2.0 * ref_db[j];
      mag_db[j] = 2.0 * mag_db[j] + fabs(db0[j]);
    }
    for (int call = 0; call < 2; call++) {
      kt_fill(dinp, rows * ic, NAN);
      CHECK_EQ_INT(be->linear_backward(be, NULL, dinp, dw, db, dout, inp, w, rows, ic, oc), 0);
      CHECK_ARRAY_BOUND(dinp, ref_dinp, mag_dinp, rows * ic, BOUND(oc));
    }
    CHECK_ARRAY_BOUND(dw, ref_dw, mag_dw, ic * oc, BOUND(rows));
    CHECK_ARRAY_BOUND(db, ref_db, mag_db, oc, BOUND(rows));

    /* NULL dinp and db: dw still accumulates (a third time), db is left */
    float db_before = db[0];
    CHECK_EQ_INT(be->linear_backward(be, NULL, NULL, dw, NULL, dout, inp, w, rows, ic, oc), 0);
    CHECK(db[0] == db_before);
    for (int64_t i = 0; i < ic * oc; i++) {
      ref_dw[i] += (ref_dw[i] - dw0[i]) / 2.0;
      mag_dw[i] *= 1.5;
    }
    CHECK_ARRAY_BOUND(dw, ref_dw, mag_dw, ic * oc, BOUND(rows));

    free(inp), free(w), free(dout), free(dinp), free(dw0), free(db0), free(dw), free(db);
    free(ref_dinp), free(mag_dinp), free(ref_dw), free(mag_dw), free(ref_db), free(mag_db);
  }
}

int main(void) {
  RUN(test_gemm_transposes);
  RUN(test_gemm_empty_product);
  RUN(test_linear_forward);
  RUN(test_linear_backward);
  return HARNESS_EXIT();
}
