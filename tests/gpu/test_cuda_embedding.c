/*
** tests/gpu/test_cuda_embedding.c — token and position embeddings over a
** split vocabulary, against the CPU backend.
**
** Tolerances. The token lookup copies bf16 values: exact. Adding positions
** rounds the bf16 sum once (GT_BF16·|ref|). Gradients accumulate fp32 sums
** of bf16 values over the rows that share a token or position, in another
** order than the CPU's: 2·(rows + 4)·2^-24 of the summed magnitudes. The
** token gradient must also be deterministic: two runs give the same bits.
*/
#include "gpu_test.h"

static void test_embedding(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 51;
  const int64_t B = 4, T = 33, W = 72, V = 50, v0 = 7, vn = 30, rows = B * T;
  int32_t *tok = kt_xalloc((size_t)rows * 4);
  /* a skewed draw: token 9 is a third of all rows (long runs), some tokens
  ** fall outside [v0, v0 + vn) */
  for (int64_t r = 0; r < rows; r++) tok[r] = r % 3 == 0 ? 9 : kt_int(&rng, (int32_t)V);
  float *wte = gt_random(&rng, vn * W, -1, 1), *wpe = gt_random(&rng, T * W, -1, 1);
  float *dy = gt_random(&rng, rows * W, -1, 1);
  float *dwte0 = kt_random(&rng, vn * W, -1, 1), *dwpe0 = kt_random(&rng, T * W, -1, 1);

  float *out = kt_floats(rows * W);
  CHECK_EQ_INT(cpu->embed_tokens_forward(cpu, NULL, out, tok, wte, rows, W, v0, vn), 0);
  int32_t *dtok = gt_up_i32(tok, rows);
  void *dwte = gt_up_bf16(wte, vn * W), *dwpe = gt_up_bf16(wpe, T * W), *dout = gt_alloc((uint64_t)(rows * W) * 2);
  GT_OK(be->embed_tokens_forward(be, gt_s, dout, dtok, dwte, rows, W, v0, vn));
  float *got = gt_down_bf16(dout, rows * W);
  CHECK_ARRAY_EQ(got, out, rows * W);
  free(got);
  CHECK_EQ_INT(cpu->embed_positions_forward(cpu, NULL, out, wpe, B, T, W), 0);
  GT_OK(be->embed_positions_forward(be, gt_s, dout, dwpe, B, T, W));
  got = gt_down_bf16(dout, rows * W);
  gt_check("position embedding", got, out, NULL, rows * W, 0.0, GT_BF16, 0.0);

  /* gradients: magnitudes of what each element sums */
  double *mag_wte = kt_doubles(vn * W), *mag_wpe = kt_doubles(T * W);
  for (int64_t i = 0; i < vn * W; i++) mag_wte[i] = fabs(dwte0[i]);
  for (int64_t i = 0; i < T * W; i++) mag_wpe[i] = fabs(dwpe0[i]);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < W; c++) {
      double d = fabs(dy[r * W + c]);
      if (tok[r] >= v0 && tok[r] < v0 + vn) mag_wte[(tok[r] - v0) * W + c] += d;
      mag_wpe[(r % T) * W + c] += d;
    }
  float *gwte = gt_clone(dwte0, vn * W), *gwpe = gt_clone(dwpe0, T * W);
  CHECK_EQ_INT(cpu->embed_tokens_backward(cpu, NULL, gwte, dy, tok, rows, W, v0, vn), 0);
  CHECK_EQ_INT(cpu->embed_positions_backward(cpu, NULL, gwpe, dy, B, T, W), 0);
  void *ddy = gt_up_bf16(dy, rows * W);
  float *ddwte = gt_up_f32(dwte0, vn * W), *ddwte2 = gt_up_f32(dwte0, vn * W), *ddwpe = gt_up_f32(dwpe0, T * W);
  GT_OK(be->embed_tokens_backward(be, gt_s, ddwte, ddy, dtok, rows, W, v0, vn));
  GT_OK(be->embed_tokens_backward(be, gt_s, ddwte2, ddy, dtok, rows, W, v0, vn));
  GT_OK(be->embed_positions_backward(be, gt_s, ddwpe, ddy, B, T, W));
  float *g1 = gt_down_f32(ddwte, vn * W), *g2 = gt_down_f32(ddwte2, vn * W), *gp = gt_down_f32(ddwpe, T * W);
  const double bound = 2.0 * ((double)rows + 4.0) * KT_U;
  gt_check("token gradient", g1, gwte, mag_wte, vn * W, 0.0, 0.0, bound);
  CHECK(memcmp(g1, g2, (size_t)(vn * W) * 4) == 0);
  gt_check("position gradient", gp, gwpe, mag_wpe, T * W, 0.0, 0.0, bound);

  gt_free(dtok), gt_free(dwte), gt_free(dwpe), gt_free(dout), gt_free(ddy), gt_free(ddwte), gt_free(ddwte2);
  gt_free(ddwpe);
  free(tok), free(wte), free(wpe), free(dy), free(dwte0), free(dwpe0), free(out), free(got), free(mag_wte);
  free(mag_wpe), free(gwte), free(gwpe), free(g1), free(g2), free(gp);
}

int main(void) {
  gt_cuda();
  RUN(test_embedding);
  return HARNESS_EXIT();
}
