/*
** tests/gpu/test_cuda_adamw.c — the AdamW update and the squared-norm
** reduction against the CPU backend.
**
** Tolerances. AdamW is fp32 arithmetic on fp32 state on both sides, with
** IEEE division and square root; only fused versus separate multiply-adds
** differ, a few fp32 roundings: 8·2^-24 of the magnitudes of the terms
** (|b1·m| + |(1−b1)·g| for m, likewise for v, |p| + lr·(|update| + wd·|p|)
** for the master). The bf16 working copy must be exactly the master
** rounded to nearest even. The squared norm is an fp64 sum of n terms in
** two orders: within n·2^-53 relative; 1e-9 is checked, and two runs must
** give the same bits.
*/
#include "gpu_test.h"

static void test_adamw(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 71;
  const int64_t n = 100003;
  const float lr = 1e-3f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f, wd = 0.1f, gs = 0.5f;
  const int64_t step = 3;
  float *p = kt_random(&rng, n, -1, 1), *g = kt_random(&rng, n, -2, 2);
  float *m = kt_random(&rng, n, -0.1f, 0.1f), *v = kt_random(&rng, n, 0, 0.01f);
  double *mag_m = kt_doubles(n), *mag_v = kt_doubles(n), *mag_p = kt_doubles(n);
  const double c1 = 1.0 / (1.0 - pow(b1, step)), c2 = 1.0 / (1.0 - pow(b2, step));
  for (int64_t i = 0; i < n; i++) {
    double gi = (double)g[i] * gs, mi = b1 * m[i] + (1 - b1) * gi, vi = b2 * v[i] + (1 - b2) * gi * gi;
    mag_m[i] = fabs(b1 * m[i]) + fabs((1 - b1) * gi);
    mag_v[i] = fabs(b2 * v[i]) + fabs((1 - b2) * gi * gi);
    mag_p[i] = fabs(p[i]) + lr * (fabs(mi * c1) / (sqrt(vi * c2) + eps) + wd * fabs(p[i]));
  }
  float *dp = gt_up_f32(p, n), *dg = gt_up_f32(g, n), *dm = gt_up_f32(m, n), *dv = gt_up_f32(v, n);
  void *dwork = gt_alloc((uint64_t)n * 2);
  float *cp = gt_clone(p, n), *cm = gt_clone(m, n), *cv = gt_clone(v, n), *cwork = kt_floats(n);
  CHECK_EQ_INT(cpu->adamw(cpu, NULL, cp, cwork, g, cm, cv, n, lr, b1, b2, eps, wd, gs, step), 0);
  GT_OK(be->adamw(be, gt_s, dp, dwork, dg, dm, dv, n, lr, b1, b2, eps, wd, gs, step));
  float *gp = gt_down_f32(dp, n), *gm = gt_down_f32(dm, n), *gv = gt_down_f32(dv, n);
  const double f = 8.0 * KT_U;
  gt_check("adamw master", gp, cp, mag_p, n, 0.0, 0.0, f);
  gt_check("adamw m", gm, cm, mag_m, n, 0.0, 0.0, f);
  gt_check("adamw v", gv, cv, mag_v, n, 0.0, 0.0, f);
  uint16_t *work = kt_xalloc((size_t)n * 2);
  gt_copy(work, dwork, (uint64_t)n * 2, TSL_COPY_D2H);
  int64_t bad = -1;
  for (int64_t i = 0; i < n && bad < 0; i++)
    if (work[i] != tsl_f32_to_bf16(gp[i])) bad = i;
  CHECK(bad < 0);
  /* work == master: no working copy to write, the master still updates */
  GT_OK(be->adamw(be, gt_s, dp, dp, dg, dm, dv, n, lr, b1, b2, eps, wd, gs, step + 1));
  CHECK_EQ_INT(cpu->adamw(cpu, NULL, cp, cp, g, cm, cv, n, lr, b1, b2, eps, wd, gs, step + 1), 0);
  free(gp);
  gp = gt_down_f32(dp, n);
  gt_check("adamw master in place", gp, cp, mag_p, n, 0.0, 0.0, 2.0 * f);
  gt_free(dp), gt_free(dg), gt_free(dm), gt_free(dv), gt_free(dwork);
  free(p), free(g), free(m), free(v), free(mag_m), free(mag_v), free(mag_p), free(cp), free(cm), free(cv);
  free(cwork), free(gp), free(gm), free(gv), free(work);
}

static void test_sumsq(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 72;
  const int64_t sizes[] = {1, 5, 2048, 1000003, 3 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    const int64_t n = sizes[k];
    float *x = kt_random(&rng, n, -3, 3);
    double want = 1.5, got[2];
    CHECK_EQ_INT(cpu->sumsq(cpu, NULL, &want, x, n), 0);
    float *dx = gt_up_f32(x, n);
    double *dout = gt_alloc(8);
    for (int run = 0; run < 2; run++) {
      const double start = 1.5;
      gt_copy(dout, &start, 8, TSL_COPY_H2D);
      GT_OK(be->sumsq(be, gt_s, dout, dx, n));
      gt_copy(&got[run], dout, 8, TSL_COPY_D2H);
    }
    CHECK_CLOSE(got[0], want, 0.0, 1e-9);
    CHECK(memcmp(&got[0], &got[1], sizeof got[0]) == 0);
    gt_free(dx), gt_free(dout);
    free(x);
  }
}

int main(void) {
  gt_cuda();
  RUN(test_adamw);
  RUN(test_sumsq);
  return HARNESS_EXIT();
}
