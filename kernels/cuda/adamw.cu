/*
** kernels/cuda/adamw.cu — the AdamW update on fp32 master weights, writing
** the bf16 working copy in the same pass.
**
** With g = grad·grad_scale: m = b1·m + (1−b1)·g, v = b2·v + (1−b2)·g²,
** master −= lr·(m·c1/(√(v·c2) + eps) + weight_decay·master), where c1, c2
** are the bias corrections 1/(1 − b^step), computed on the host in double
** (1 − 0.999^step is tiny at step 1), as kernels/cpu/adamw.c does. Then
** work = bf16(master), rounded to nearest even, unless work is the master
** itself (or absent).
*/
#include <math.h>

#include "device.cuh"

template <bool WRITE_WORK>
static __global__ void adamw_kernel(float *master, bf16 *work, const float *grad, float *m, float *v, int64_t n,
                                    float lr, float beta1, float beta2, float eps, float weight_decay,
                                    float grad_scale, float c1, float c2) {
  TSL_GRID_LOOP(i, n) {
    const float g = grad[i] * grad_scale;
    const float mi = beta1 * m[i] + (1.0f - beta1) * g;
    const float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float p = master[i];
    p -= lr * ((mi * c1) / (sqrtf(vi * c2) + eps) + weight_decay * p);
    master[i] = p;
    if (WRITE_WORK) st_bf16(work + i, p);
  }
}

extern "C" int tsl_cuda_adamw(tsl_backend *be, tsl_stream *s, float *master, void *work, const float *grad, float *m,
                              float *v, int64_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                              float grad_scale, int64_t step) {
  if (n < 0 || step < 1)
    return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "adamw: bad arguments (n %lld, step %lld)", (long long)n, (long long)step);
  if (n == 0) return TESSEL_OK;
  const float c1 = (float)(1.0 / (1.0 - pow(beta1, (double)step)));
  const float c2 = (float)(1.0 / (1.0 - pow(beta2, (double)step)));
  cudaStream_t st = tsl_cuda_stream(be, s)->s;
  const unsigned blocks = tsl_blocks(n, TSL_THREADS);
  if (work && work != (void *)master)
    return TSL_CU((adamw_kernel<true><<<blocks, TSL_THREADS, 0, st>>>(master, (bf16 *)work, grad, m, v, n, lr, beta1,
                                                                       beta2, eps, weight_decay, grad_scale, c1, c2),
                   cudaGetLastError()));
  return TSL_CU((adamw_kernel<false><<<blocks, TSL_THREADS, 0, st>>>(master, NULL, grad, m, v, n, lr, beta1, beta2,
                                                                      eps, weight_decay, grad_scale, c1, c2),
                 cudaGetLastError()));
}
