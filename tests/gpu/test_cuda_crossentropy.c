/*
** tests/gpu/test_cuda_crossentropy.c — the three cross-entropy phases over
** a vocabulary split in two halves (the all-reduces between the phases done
** here: MAX of the row maxima, SUM of the row sums), against the CPU
** backend's unsplit run.
**
** Tolerances. Both sides read the same bf16 logits; row maxima agree
** exactly; the sums of exponentials are fp64 over fp32 exponentials, which
** differ by an ulp or two between expf implementations, so losses agree to
** about 1e-6 (checked at 1e-5 absolute and relative). The gradient
** (softmax − onehot)·dscale is fp32 on the CPU and rounded once to bf16 on
** the GPU: GT_BF16·|ref|, plus 1e-6·dscale where the target's term cancels.
*/
#include "gpu_test.h"

static void run_case(int64_t rows, int64_t V, int64_t split, float dscale, uint64_t *rng) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  float *logits = gt_random(rng, rows * V, -4, 4);
  int32_t *tgt = kt_xalloc((size_t)rows * 4);
  for (int64_t r = 0; r < rows; r++) tgt[r] = kt_int(rng, (int32_t)V);
  float *ref = gt_clone(logits, rows * V), *rmax = kt_floats(rows), *losses = kt_floats(rows);
  double *sums = kt_doubles(2 * rows);
  CHECK_EQ_INT(cpu->ce_rowmax(cpu, NULL, rmax, ref, rows, V, V), 0);
  CHECK_EQ_INT(cpu->ce_sums(cpu, NULL, sums, ref, rmax, tgt, rows, 0, V, V), 0);
  CHECK_EQ_INT(cpu->ce_finish(cpu, NULL, losses, ref, rmax, sums, tgt, rows, 0, V, V, dscale), 0);

  const int64_t begin[2] = {0, split}, width[2] = {split, V - split};
  void *part[2];
  float *gmax = kt_floats(rows);
  double *gsums = kt_doubles(2 * rows);
  int32_t *dtgt = gt_up_i32(tgt, rows);
  float *dmax = gt_alloc((uint64_t)rows * 4), *dloss = gt_alloc((uint64_t)rows * 4);
  double *dsums = gt_alloc((uint64_t)rows * 16);
  for (int64_t r = 0; r < rows; r++) gmax[r] = -INFINITY;
  for (int p = 0; p < 2; p++) {
    float *cols = kt_floats(rows * width[p]);
    for (int64_t r = 0; r < rows; r++) memcpy(cols + r * width[p], logits + r * V + begin[p], (size_t)width[p] * 4);
    part[p] = gt_up_bf16(cols, rows * width[p]);
    GT_OK(be->ce_rowmax(be, gt_s, dmax, part[p], rows, width[p], width[p]));
    float *m = gt_down_f32(dmax, rows);
    for (int64_t r = 0; r < rows; r++) gmax[r] = fmaxf(gmax[r], m[r]);
    free(cols), free(m);
  }
  CHECK_ARRAY_EQ(gmax, rmax, rows);
  gt_copy(dmax, gmax, (uint64_t)rows * 4, TSL_COPY_H2D);
  for (int p = 0; p < 2; p++) {
    GT_OK(be->ce_sums(be, gt_s, dsums, part[p], dmax, dtgt, rows, begin[p], width[p], width[p]));
    double *s = gt_down_f64(dsums, 2 * rows);
    for (int64_t i = 0; i < 2 * rows; i++) gsums[i] += s[i];
    free(s);
  }
  gt_copy(dsums, gsums, (uint64_t)rows * 16, TSL_COPY_H2D);
  for (int p = 0; p < 2; p++) {
    GT_OK(be->ce_finish(be, gt_s, dloss, part[p], dmax, dsums, dtgt, rows, begin[p], width[p], width[p], dscale));
    float *got = gt_down_f32(dloss, rows);
    gt_check("loss", got, losses, NULL, rows, 1e-5, 1e-5, 0.0);
    float *grad = gt_down_bf16(part[p], rows * width[p]), *want = kt_floats(rows * width[p]);
    for (int64_t r = 0; r < rows; r++) memcpy(want + r * width[p], ref + r * V + begin[p], (size_t)width[p] * 4);
    gt_check(dscale != 0.0f ? "dlogits" : "logits kept", grad, want, NULL, rows * width[p], 1e-6 * dscale,
             dscale != 0.0f ? GT_BF16 : 0.0, 0.0);
    gt_free(part[p]);
    free(got), free(grad), free(want);
  }
  gt_free(dtgt), gt_free(dmax), gt_free(dloss), gt_free(dsums);
  free(logits), free(tgt), free(ref), free(rmax), free(losses), free(sums), free(gmax), free(gsums);
}

static void test_split_vocabulary(void) {
  uint64_t rng = 61;
  run_case(19, 300, 150, 0.01f, &rng);
  run_case(5, 1031, 700, 1.0f / 77.0f, &rng);
  run_case(64, 256, 1, 0.5f, &rng);
  run_case(9, 512, 256, 0.25f, &rng); /* halves of whole 16-byte groups: the 8-wide loads */
}

/* A table padded past the vocabulary, as GPT-2's 50257 tokens in 50304
** columns: the pad columns (larger than every logit here) are left out of
** the maximum and the softmax and get a zero gradient. Once 1008 wide,
** which the kernels read 8 columns at a time, once 1003 wide, one at a
** time; against the CPU backend on the unpadded 1001 columns. */
static void test_padded_vocabulary(void) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  uint64_t rng = 63;
  const int64_t rows = 6, V = 1001, widths[2] = {1008, 1003};
  const float dscale = 0.5f;
  float *logits = gt_random(&rng, rows * V, -4, 4);
  int32_t *tgt = kt_xalloc((size_t)rows * 4);
  for (int64_t r = 0; r < rows; r++) tgt[r] = kt_int(&rng, (int32_t)V);
  float *ref = gt_clone(logits, rows * V), *rmax = kt_floats(rows), *losses = kt_floats(rows);
  double *sums = kt_doubles(2 * rows);
  CHECK_EQ_INT(cpu->ce_rowmax(cpu, NULL, rmax, ref, rows, V, V), 0);
  CHECK_EQ_INT(cpu->ce_sums(cpu, NULL, sums, ref, rmax, tgt, rows, 0, V, V), 0);
  CHECK_EQ_INT(cpu->ce_finish(cpu, NULL, losses, ref, rmax, sums, tgt, rows, 0, V, V, dscale), 0);
  int32_t *dtgt = gt_up_i32(tgt, rows);
  float *dmax = gt_alloc((uint64_t)rows * 4), *dloss = gt_alloc((uint64_t)rows * 4);
  double *dsums = gt_alloc((uint64_t)rows * 16);
  for (int k = 0; k < 2; k++) {
    const int64_t w = widths[k];
    float *padded = kt_floats(rows * w), *want = kt_floats(rows * w);
    for (int64_t r = 0; r < rows; r++) {
      memcpy(padded + r * w, logits + r * V, (size_t)V * 4);
      memcpy(want + r * w, ref + r * V, (size_t)V * 4);
      for (int64_t j = V; j < w; j++) padded[r * w + j] = 8.0f, want[r * w + j] = 0.0f;
    }
    void *d = gt_up_bf16(padded, rows * w);
    GT_OK(be->ce_rowmax(be, gt_s, dmax, d, rows, w, V));
    float *m = gt_down_f32(dmax, rows);
    CHECK_ARRAY_EQ(m, rmax, rows);
    GT_OK(be->ce_sums(be, gt_s, dsums, d, dmax, dtgt, rows, 0, w, V));
    GT_OK(be->ce_finish(be, gt_s, dloss, d, dmax, dsums, dtgt, rows, 0, w, V, dscale));
    float *got = gt_down_f32(dloss, rows), *grad = gt_down_bf16(d, rows * w);
    gt_check("loss", got, losses, NULL, rows, 1e-5, 1e-5, 0.0);
    gt_check("dlogits", grad, want, NULL, rows * w, 1e-6 * dscale, GT_BF16, 0.0);
    gt_free(d);
    free(padded), free(want), free(m), free(got), free(grad);
  }
  gt_free(dtgt), gt_free(dmax), gt_free(dloss), gt_free(dsums);
  free(logits), free(tgt), free(ref), free(rmax), free(losses), free(sums);
}

/* evaluation: dscale 0 leaves the logits as they were */
static void test_loss_only(void) {
  uint64_t rng = 62;
  run_case(7, 100, 50, 0.0f, &rng);
}

int main(void) {
  gt_cuda();
  RUN(test_split_vocabulary);
  RUN(test_padded_vocabulary);
  RUN(test_loss_only);
  return HARNESS_EXIT();
}
