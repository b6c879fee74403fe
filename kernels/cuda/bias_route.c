/* kernels/cuda/bias_route.c — which path adds a bias (see bias_route.h). */
#include "bias_route.h"

tsl_cuda_bias_path tsl_cuda_bias_route(const void *bias, int64_t batch, int64_t ldc, int64_t n, float beta) {
  if (!bias) return TSL_BIAS_NONE;
  /* the bias is the linear layer's: one product that overwrites C */
  if (batch > 1 || beta != 0.0f) return TSL_BIAS_INVALID;
  if ((uintptr_t)bias % TSL_CUDA_BIAS_ALIGN == 0) return TSL_BIAS_EPILOGUE;
  return ldc == n ? TSL_BIAS_BROADCAST : TSL_BIAS_INVALID;
}
