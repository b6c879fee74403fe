/*
** tests/kernels/test_cpu_fusions.c — each fused CPU kernel against the
** kernels it fuses, run one after the other on the same inputs.
**
** The parts are tested against double references in their own files; here
** the question is only whether a fusion computes what its parts compute.
** Where the fusion runs the parts' own per-element code it must agree bit
** for bit: linear + GELU (both outputs; a GELU recomputed alone must equal
** the fused one), GELU backward + bias gradient (the input gradient, and the
** column sums, taken in the same order), residual add + layer norm, and the
** one-pass cross-entropy. The layer-norm backward that adds in place may
** contract its final multiply and add into one FMA where the parts round
** twice (a scratch row, then y += x), so it is checked to within one
** rounding of the result: |got − parts| <= 2u·|parts| + 2u·|dinp before|.
** Shapes are odd-sized so that vector remainders and thread splits are
** exercised.
*/
#include "kernel_test.h"

enum { R = 67, IC = 29, OC = 611 }; /* R·OC above TSL_CPU_PARALLEL_MIN: the team splits the work */

static void test_linear_gelu_is_linear_then_gelu(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 1;
  float *x = kt_random(&rng, R * IC, -2, 2), *w = kt_random(&rng, IC * OC, -0.5f, 0.5f);
  float *b = kt_random(&rng, OC, -1, 1);
  float *pre = kt_floats(R * OC), *out = kt_floats(R * OC), *pre2 = kt_floats(R * OC), *out2 = kt_floats(R * OC);
  REQUIRE(be->linear_gelu_forward(be, NULL, pre, out, x, w, b, R, IC, OC) == 0);
  REQUIRE(be->linear_forward(be, NULL, pre2, x, w, b, R, IC, OC) == 0);
  REQUIRE(be->gelu_forward(be, NULL, out2, pre2, R * OC) == 0);
  CHECK_ARRAY_EQ(pre, pre2, R * OC);
  CHECK_ARRAY_EQ(out, out2, R * OC);
  /* a one-row product is split by columns: the GELU then runs per column block */
  REQUIRE(be->linear_gelu_forward(be, NULL, pre, out, x, w, NULL, 1, IC, OC) == 0);
  REQUIRE(be->linear_forward(be, NULL, pre2, x, w, NULL, 1, IC, OC) == 0);
  REQUIRE(be->gelu_forward(be, NULL, out2, pre2, OC) == 0);
  CHECK_ARRAY_EQ(pre, pre2, OC);
  CHECK_ARRAY_EQ(out, out2, OC);
  free(x), free(w), free(b), free(pre), free(out), free(pre2), free(out2);
}

static void test_gelu_backward_bias_is_gelu_backward_then_column_sums(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 2;
  float *x = kt_random(&rng, R * OC, -4, 4), *d = kt_random(&rng, R * OC, -1, 1);
  float *di = kt_floats(R * OC), *di2 = kt_floats(R * OC), *db = kt_random(&rng, OC, -1, 1), *db2 = kt_floats(OC);
  memcpy(db2, db, OC * sizeof(float));
  float *w = kt_floats(1 * OC), *dw = kt_floats(OC);
  REQUIRE(be->gelu_backward_bias(be, NULL, di, db, x, d, R, OC) == 0);
  REQUIRE(be->gelu_backward(be, NULL, di2, x, d, R * OC) == 0);
  /* the bias gradient as linear_backward takes it: its column sums, with a
  ** zero-width input so that only db is touched */
  REQUIRE(be->linear_backward(be, NULL, NULL, dw, db2, di2, w, w, R, 0, OC) == 0);
  CHECK_ARRAY_EQ(di, di2, R * OC);
  CHECK_ARRAY_EQ(db, db2, OC);
  free(x), free(d), free(di), free(di2), free(db), free(db2), free(w), free(dw);
}

/* at an epsilon far from the default, so that both must pass it on */
static void test_add_layernorm_is_add_then_layernorm(void) {
  const float eps = 0.25f;
  tsl_backend *be = kt_backend();
  uint64_t rng = 3;
  float *a = kt_random(&rng, R * OC, -2, 2), *b = kt_random(&rng, R * OC, -2, 2);
  float *w = kt_random(&rng, OC, 0.5f, 1.5f), *bias = kt_random(&rng, OC, -1, 1);
  float *sum = kt_floats(R * OC), *out = kt_floats(R * OC), *sum2 = kt_floats(R * OC), *out2 = kt_floats(R * OC);
  float *mean = kt_floats(R), *rstd = kt_floats(R), *mean2 = kt_floats(R), *rstd2 = kt_floats(R);
  REQUIRE(be->add_layernorm_forward(be, NULL, sum, out, mean, rstd, a, b, w, bias, R, OC, eps) == 0);
  REQUIRE(be->add(be, NULL, sum2, a, b, R * OC) == 0);
  REQUIRE(be->layernorm_forward(be, NULL, out2, mean2, rstd2, sum2, w, bias, R, OC, eps) == 0);
  CHECK_ARRAY_EQ(sum, sum2, R * OC);
  CHECK_ARRAY_EQ(out, out2, R * OC);
  CHECK_ARRAY_EQ(mean, mean2, R);
  CHECK_ARRAY_EQ(rstd, rstd2, R);
  free(a), free(b), free(w), free(bias), free(sum), free(out), free(sum2), free(out2);
  free(mean), free(rstd), free(mean2), free(rstd2);
}

static void test_layernorm_backward_add_is_backward_then_add(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 4;
  float *x = kt_random(&rng, R * OC, -2, 2), *d = kt_random(&rng, R * OC, -1, 1);
  float *w = kt_random(&rng, OC, 0.5f, 1.5f), *bias = kt_random(&rng, OC, -1, 1);
  float *mean = kt_floats(R), *rstd = kt_floats(R), *out = kt_floats(R * OC);
  float *acc = kt_random(&rng, R * OC, -1, 1), *before = kt_floats(R * OC), *tmp = kt_floats(R * OC);
  float *dw = kt_floats(OC), *db = kt_floats(OC), *dw2 = kt_floats(OC), *db2 = kt_floats(OC);
  memcpy(before, acc, R * OC * sizeof(float));
  REQUIRE(be->layernorm_forward(be, NULL, out, mean, rstd, x, w, bias, R, OC, 1e-5f) == 0);
  REQUIRE(be->layernorm_backward_add(be, NULL, acc, dw, db, d, x, w, mean, rstd, R, OC) == 0);
  REQUIRE(be->layernorm_backward(be, NULL, tmp, dw2, db2, d, x, w, mean, rstd, R, OC) == 0);
  REQUIRE(be->axpy(be, NULL, TESSEL_F32, before, 1.0f, tmp, R * OC) == 0);
  double *want = kt_widen(before, R * OC), *mag = kt_doubles(R * OC);
  for (int64_t i = 0; i < R * OC; i++) mag[i] = fabs((double)before[i]) + fabs((double)tmp[i]);
  CHECK_ARRAY_BOUND(acc, want, mag, R * OC, 2 * KT_U);
  CHECK_ARRAY_EQ(dw, dw2, OC);
  CHECK_ARRAY_EQ(db, db2, OC);
  free(x), free(d), free(w), free(bias), free(mean), free(rstd), free(out), free(acc), free(before), free(tmp);
  free(dw), free(db), free(dw2), free(db2), free(want), free(mag);
}

static void test_ce_fused_is_the_three_phases(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 5;
  const int64_t V = 301, valid = 290;
  float *l = kt_random(&rng, R * V, -6, 6), *l2 = kt_floats(R * V);
  memcpy(l2, l, R * V * sizeof(float));
  int32_t targets[R];
  for (int r = 0; r < R; r++) targets[r] = kt_int(&rng, (int32_t)valid);
  float *loss = kt_floats(R), *loss2 = kt_floats(R), *rowmax = kt_floats(R);
  double *sums = kt_doubles(2 * R);
  REQUIRE(be->ce_fused(be, NULL, loss, l, targets, R, V, valid, 0.25f) == 0);
  REQUIRE(be->ce_rowmax(be, NULL, rowmax, l2, R, V, valid) == 0);
  REQUIRE(be->ce_sums(be, NULL, sums, l2, rowmax, targets, R, 0, V, valid) == 0);
  REQUIRE(be->ce_finish(be, NULL, loss2, l2, rowmax, sums, targets, R, 0, V, valid, 0.25f) == 0);
  CHECK_ARRAY_EQ(loss, loss2, R);
  CHECK_ARRAY_EQ(l, l2, R * V);
  free(l), free(l2), free(loss), free(loss2), free(rowmax), free(sums);
}

int main(void) {
  RUN(test_linear_gelu_is_linear_then_gelu);
  RUN(test_gelu_backward_bias_is_gelu_backward_then_column_sums);
  RUN(test_add_layernorm_is_add_then_layernorm);
  RUN(test_layernorm_backward_add_is_backward_then_add);
  RUN(test_ce_fused_is_the_three_phases);
  return HARNESS_EXIT();
}
