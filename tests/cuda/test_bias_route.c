/*
** tests/cuda/test_bias_route.c — which path the CUDA backend takes to add a
** linear layer's bias (kernels/cuda/bias_route.h), decided on the host
** before any cuBLASLt plan: runs without a GPU.
**
** The property: the epilogue sees only biases at 16-byte aligned addresses
** (an 8-, 4- or 2-byte aligned one would fault inside cuBLASLt's kernel),
** every other bias on a dense output takes the broadcast path, and the
** shapes no path can serve are refused instead of computed wrongly.
*/
#include "../../kernels/cuda/bias_route.h"
#include "harness.h"

static _Alignas(256) unsigned char buf[1024];

static void test_no_bias(void) {
  CHECK_EQ_INT(tsl_cuda_bias_route(NULL, 1, 768, 768, 0.0f), TSL_BIAS_NONE);
  /* no bias: batched products and beta != 0 are ordinary products */
  CHECK_EQ_INT(tsl_cuda_bias_route(NULL, 12, 64, 64, 1.0f), TSL_BIAS_NONE);
}

/* every 16-byte multiple goes to the epilogue, on dense or strided C */
static void test_aligned_bias_uses_epilogue(void) {
  for (int off = 0; off < 512; off += 16) {
    CHECK_EQ_INT(tsl_cuda_bias_route(buf + off, 1, 2304, 2304, 0.0f), TSL_BIAS_EPILOGUE);
    CHECK_EQ_INT(tsl_cuda_bias_route(buf + off, 1, 4096, 2304, 0.0f), TSL_BIAS_EPILOGUE);
  }
}

/* bf16 biases packed after odd-sized parameters sit at any even address:
** 2, 4 and 8 bytes past an alignment all take the broadcast path */
static void test_unaligned_bias_is_broadcast(void) {
  for (int off = 1; off < 512; off++) {
    if (off % 16 == 0) continue;
    CHECK_EQ_INT(tsl_cuda_bias_route(buf + off, 1, 768, 768, 0.0f), TSL_BIAS_BROADCAST);
    CHECK_EQ_INT(tsl_cuda_bias_route(buf + off, 0, 768, 768, 0.0f), TSL_BIAS_BROADCAST); /* batch 0 means 1 */
  }
}

/* the broadcast writes dense rows, so a strided C cannot take it; a bias
** belongs to one product that overwrites C */
static void test_refused_shapes(void) {
  CHECK_EQ_INT(tsl_cuda_bias_route(buf + 2, 1, 800, 768, 0.0f), TSL_BIAS_INVALID);
  CHECK_EQ_INT(tsl_cuda_bias_route(buf, 2, 768, 768, 0.0f), TSL_BIAS_INVALID);
  CHECK_EQ_INT(tsl_cuda_bias_route(buf + 2, 2, 768, 768, 0.0f), TSL_BIAS_INVALID);
  CHECK_EQ_INT(tsl_cuda_bias_route(buf, 1, 768, 768, 1.0f), TSL_BIAS_INVALID);
  CHECK_EQ_INT(tsl_cuda_bias_route(buf + 8, 1, 768, 768, 0.5f), TSL_BIAS_INVALID);
}

int main(void) {
  RUN(test_no_bias);
  RUN(test_aligned_bias_uses_epilogue);
  RUN(test_unaligned_bias_is_broadcast);
  RUN(test_refused_shapes);
  return HARNESS_EXIT();
}
