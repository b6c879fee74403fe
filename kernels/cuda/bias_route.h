/*
** kernels/cuda/bias_route.h — how a product with a bias runs: a host-side
** decision made before any cuBLASLt plan is chosen, kept free of CUDA
** headers so that its unit test (tests/cuda/test_bias_route.c) runs on
** machines without a GPU or a toolkit.
**
** cuBLASLt's bias epilogue reads the bias vector with wide loads, but its
** alignment preferences cover A, B, C and D only: the heuristic returns an
** algorithm for a bias at any address, and a bias that is not 16-byte
** aligned then faults with a misaligned address inside the kernel, which
** poisons the context for everything after it. So only a 16-byte aligned
** bias goes to the epilogue; any other is broadcast into C first and the
** product accumulated onto it (C must then be dense: ldc = n).
*/
#ifndef TSL_CUDA_BIAS_ROUTE_H
#define TSL_CUDA_BIAS_ROUTE_H

#include <stdint.h>

#define TSL_CUDA_BIAS_ALIGN 16

typedef enum {
  TSL_BIAS_NONE = 0,  /* no bias: the plain product                          */
  TSL_BIAS_EPILOGUE,  /* CUBLASLT_EPILOGUE_BIAS                              */
  TSL_BIAS_BROADCAST, /* bias broadcast into C, then C += A·B                */
  TSL_BIAS_INVALID    /* a bias on a batched product or with beta != 0, or an
                         unaligned bias on a strided C: no path adds it     */
} tsl_cuda_bias_path;

/* The path for a product of `batch` matrices with output row stride ldc
** and n columns, scaling C by beta, with `bias` (NULL: none). */
tsl_cuda_bias_path tsl_cuda_bias_route(const void *bias, int64_t batch, int64_t ldc, int64_t n, float beta);

#endif
