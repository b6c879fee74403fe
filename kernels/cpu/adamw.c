/*
** kernels/cpu/adamw.c — the AdamW update and the squared-norm reduction
** used for gradient clipping.
*/
#include "cpu.h"

/* With g = grad·grad_scale: m = b1·m + (1−b1)·g, v = b2·v + (1−b2)·g²,
** m̂ = m/(1−b1^step), v̂ = v/(1−b2^step),
** master −= lr·(m̂/(√v̂ + eps) + weight_decay·master) (decoupled decay);
** then work = master unless they are the same buffer (on the CPU the act
** dtype is fp32, so that is a copy). step is 1-based. */
int tsl_cpu_adamw(tsl_backend *be, tsl_stream *s, float *master, void *work, const float *grad,
                  float *m, float *v, int64_t n, float lr, float beta1, float beta2, float eps,
                  float weight_decay, float grad_scale, int64_t step) {
  if (n < 0 || step < 1) return TESSEL_E_INTERNAL;
  /* the bias corrections in double: 1 − 0.999^step is tiny at step 1 */
  const float c1 = (float)(1.0 / (1.0 - pow(beta1, (double)step)));
  const float c2 = (float)(1.0 / (1.0 - pow(beta2, (double)step)));
  /* When work is master the second store repeats the first; an
  ** unconditional store keeps the loop a single vectorised one. */
  float *out = work;
#pragma omp parallel for simd schedule(static) if (n >= TSL_CPU_PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) {
    float g = grad[i] * grad_scale;
    float mi = beta1 * m[i] + (1.0f - beta1) * g;
    float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float p = master[i];
    p -= lr * ((mi * c1) / (sqrtf(vi * c2) + eps) + weight_decay * p);
    master[i] = p;
    out[i] = p;
  }
  return TESSEL_OK;
}

/* *out += Σ x², accumulated in double */
int tsl_cpu_sumsq(tsl_backend *be, tsl_stream *s, double *out, const float *x, int64_t n) {
  if (n < 0) return TESSEL_E_INTERNAL;
  double sum = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : sum) if (n >= TSL_CPU_PARALLEL_MIN)
  for (int64_t i = 0; i < n; i++) sum += (double)x[i] * x[i];
  *out += sum;
  return TESSEL_OK;
}
