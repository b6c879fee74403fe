/*
** tests/gpu/test_cuda_rope.c — rotary position embedding and its inverse
** against the CPU backend, on strided rows, at positions up to 10^5, with
** plain, Llama 3's and YaRN's scaled frequencies (one formula,
** kernels/rope_freq.h, compiled for both; YaRN's scale of cos and sin
** too).
**
** Tolerance. Both backends form the same fp32 angle (transformers' way)
** and its cos and sin (libm and libdevice, each within 2 fp32 ulps); the
** CUDA kernel rotates in fp32 and rounds once to bf16: GT_BF16·|ref| plus
** 1e-5 of mag = |x|·|cos| + |y|·|sin| for the fp32 differences. Padding
** between rows is never written.
*/
#include "gpu_test.h"

typedef struct rcase {
  int64_t B, T, heads, hs, ld, pos_offset, rotary; /* rotary: the elements of each head turned; 0: all */
  int scaled; /* 0: plain theta 10000, 1: Llama 3.2's scaling, 2: YaRN's (Qwen's long-context setting), 3: linear, 4: LongRoPE's (a
                 ** sequence of 12 takes the short factors, one of 10 + 20 the long ones) */
} rcase;

static const rcase cases[] = {{2, 7, 3, 8, 24, 0, 0, 0},         {1, 33, 4, 64, 256 + 8, 5, 0, 0},
                              {1, 20, 2, 128, 256, 100000, 0, 0}, {3, 129, 2, 16, 40, 17, 0, 0},
                              {2, 40, 3, 64, 200, 8170, 0, 1},    {1, 24, 2, 128, 256, 40000, 0, 2},
                              {2, 16, 2, 128, 256, 12000, 0, 3}, {2, 12, 2, 16, 40, 0, 0, 4},
                              {2, 20, 2, 16, 40, 10, 0, 4},       {2, 9, 3, 128, 400, 1000, 96, 1}};
static const double SHORT[] = {1.0, 1.1, 1.25, 1.5, 2.0, 2.5, 3.0, 3.3};
static const double LONG[] = {1.0, 1.7, 2.9, 4.1, 6.0, 9.3, 12.0, 16.7};
static const tsl_rope_freqs FREQS[] = {
    {.theta = 10000.0f},
    {.theta = 500000.0f, .factor = 32, .low_freq_factor = 1, .high_freq_factor = 4, .original_positions = 8192},
    {.theta = 1e6f, .factor = 4, .original_positions = 32768, .kind = TSL_ROPE_YARN, .beta_fast = 32, .beta_slow = 1,
     .attention_factor = 1.1386294361119891},
    {.theta = 10000.0f, .factor = 4, .kind = TSL_ROPE_LINEAR},
    {.theta = 10000.0f, .factor = 4, .original_positions = 16, .kind = TSL_ROPE_LONGROPE,
     .attention_factor = 1.224744871391589, .short_factor = SHORT, .long_factor = LONG, .pairs = 8}};

static void test_rope(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 81;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const rcase *c = &cases[k];
    const int64_t n = c->B * c->T * c->ld, turned = c->rotary ? c->rotary : c->hs, half = turned / 2;
    const int64_t w = c->heads * c->hs;
    tsl_rope_freqs f = FREQS[c->scaled];
    f.rotary = c->rotary;
    for (int inverse = 0; inverse < 2; inverse++) {
      float *x = gt_random(&rng, n, -2, 2);
      for (int64_t r = 0; r < c->B * c->T; r++) kt_fill(x + r * c->ld + w, c->ld - w, NAN);
      float *want = gt_clone(x, n);
      CHECK_EQ_INT(cpu->rope(cpu, NULL, want, c->B, c->T, c->heads, c->hs, c->ld, c->pos_offset, f, inverse), 0);
      void *d = gt_up_bf16(x, n);
      GT_OK(be->rope(be, gt_s, d, c->B, c->T, c->heads, c->hs, c->ld, c->pos_offset, f, inverse));
      float *got = gt_down_bf16(d, n);
      double *mag = kt_doubles(n);
      int64_t touched = 0;
      for (int64_t r = 0; r < c->B * c->T; r++) {
        for (int64_t j = w; j < c->ld; j++) {
          touched += !isnan(got[r * c->ld + j]);
          got[r * c->ld + j] = want[r * c->ld + j] = 0.0f;
        }
        for (int64_t h = 0; h < c->heads; h++) {
          for (int64_t i = 0; i < half; i++) {
            const int64_t lo = r * c->ld + h * c->hs + i;
            mag[lo] = mag[lo + half] = tsl_rope_attention(f) * (fabs(x[lo]) + fabs(x[lo + half]));
          }
          for (int64_t j = turned; j < c->hs; j++) mag[r * c->ld + h * c->hs + j] = fabs(x[r * c->ld + h * c->hs + j]);
        }
      }
      CHECK_EQ_INT(touched, 0);
      gt_check(inverse ? "rope inverse" : "rope", got, want, mag, n, 1e-7, GT_BF16, 1e-5);
      gt_free(d);
      free(x), free(want), free(got), free(mag);
    }
  }
}

int main(void) {
  gt_cuda();
  RUN(test_rope);
  return HARNESS_EXIT();
}
