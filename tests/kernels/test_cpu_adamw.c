/*
** tests/kernels/test_cpu_adamw.c — AdamW and the squared-norm reduction
** against double references.
*/
#include "cpu/cpu.h"
#include "kernel_test.h"

typedef struct adam_hp {
  float lr, b1, b2, eps, wd, grad_scale;
} adam_hp;

/* The double trajectory and, beside it, the magnitudes that bound fp32's
** deviation from it: m_mag runs m's recurrence on |g| (m itself can cancel
** to near 0), and p_mag adds each step's |update| computed from m_mag to
** |p|. The hyperparameters are the fp32 values the kernel gets. */
typedef struct adam_ref {
  double *p, *m, *v, *m_mag, *p_mag;
} adam_ref;

static void ref_step(adam_ref *r, const float *grad, int64_t n, adam_hp h, int64_t step) {
  double b1 = h.b1, b2 = h.b2, lr = h.lr, eps = h.eps, wd = h.wd;
  double c1 = 1.0 - pow(b1, (double)step), c2 = 1.0 - pow(b2, (double)step);
  for (int64_t i = 0; i < n; i++) {
    double g = (double)grad[i] * h.grad_scale;
    r->m[i] = b1 * r->m[i] + (1 - b1) * g;
    r->m_mag[i] = b1 * r->m_mag[i] + (1 - b1) * fabs(g);
    r->v[i] = b2 * r->v[i] + (1 - b2) * g * g;
    double denom = sqrt(r->v[i] / c2) + eps;
    r->p_mag[i] += lr * (r->m_mag[i] / c1 / denom + wd * fabs(r->p[i]));
    r->p[i] -= lr * ((r->m[i] / c1) / denom + wd * r->p[i]);
  }
}

/* Three steps (the bias corrections differ at each), a separate work copy
** on steps 1 and 3 (it must equal master) and work == master on step 2,
** n odd and past the parallel cut-off. Each step rounds m and v about 4
** times and the update about 10 times, relative to the magnitudes above;
** over three steps that is under 40 roundings: checked at 48·u·mag (v is
** a sum of positive terms, its own magnitude). */
static void test_adamw_steps(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 61;
  const int64_t sizes[] = {1001, TSL_CPU_PARALLEL_MIN + 3};
  const adam_hp h = {1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f};
  for (size_t c = 0; c < 2; c++) {
    const int64_t n = sizes[c];
    float *p = kt_random(&rng, n, -1, 1), *m = kt_floats(n), *v = kt_floats(n);
    float *work = kt_floats(n);
    adam_ref r = {kt_widen(p, n), kt_doubles(n), kt_doubles(n), kt_doubles(n), kt_doubles(n)};
    for (int64_t step = 1; step <= 3; step++) {
      float *grad = kt_random(&rng, n, -2, 2);
      ref_step(&r, grad, n, h, step);
      kt_fill(work, n, NAN);
      void *w = step == 2 ? (void *)p : (void *)work;
      CHECK_EQ_INT(be->adamw(be, NULL, p, w, grad, m, v, n, h.lr, h.b1, h.b2, h.eps, h.wd,
                             h.grad_scale, step),
                   0);
      if (w == work) CHECK_ARRAY_EQ(work, p, n);
      free(grad);
    }
    for (int64_t i = 0; i < n; i++) r.p_mag[i] += fabs(r.p[i]);
    CHECK_ARRAY_BOUND(m, r.m, r.m_mag, n, 48 * KT_U);
    CHECK_ARRAY_BOUND(v, r.v, r.v, n, 48 * KT_U);
    CHECK_ARRAY_BOUND(p, r.p, r.p_mag, n, 48 * KT_U);
    free(p), free(m), free(v), free(work), free(r.p), free(r.m), free(r.v), free(r.m_mag),
        free(r.p_mag);
  }
}

/* *out += Σ x² in double: starting from 1.5, the result is within a few
** double roundings (1e-12 relative is far above them and far below an
** fp32 accumulation's 1e-4) */
static void test_sumsq(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 62;
  const int64_t sizes[] = {0, 13, 3 * TSL_CPU_PARALLEL_MIN + 1};
  for (size_t c = 0; c < 3; c++) {
    const int64_t n = sizes[c];
    float *x = kt_random(&rng, n, -3, 3);
    double want = 1.5, out = 1.5;
    for (int64_t i = 0; i < n; i++) want += (double)x[i] * x[i];
    CHECK_EQ_INT(be->sumsq(be, NULL, &out, x, n), 0);
    CHECK_CLOSE(out, want, 0.0, 1e-12);
    free(x);
  }
}

int main(void) {
  RUN(test_adamw_steps);
  RUN(test_sumsq);
  return HARNESS_EXIT();
}
