/*
** tests/kernels/test_cpu_crossentropy.c — the three-phase softmax
** cross-entropy, whole and with the vocabulary split in two ranges.
**
** Tolerances. The kernel rounds l − rowmax to fp32 (absolute error
** u·|l − rowmax|, which exp turns into relative error) and then exp is
** within 1 ulp (2u); the row sum is in double. So log Σ is within about
** (max|l − rowmax| + 2)·u absolute, and the loss rounds once more: 4u of
** mag = |log Σ| + |rowmax| + |l_target| + max|l − rowmax| + 1. A gradient
** element exp·(dscale/Σ) − [target]·dscale is within about 5u of
** (p·(|l − rowmax| + 1) + [target])·|dscale|.
*/
#include "kernel_test.h"

typedef struct ce_case {
  int64_t rows, vocab, split; /* split: the first range is [0, split) */
  float spread;               /* logits uniform in [-spread, spread] */
} ce_case;

static const ce_case cases[] = {{7, 11, 5, 10}, {1, 1, 0, 3}, {256, 256, 100, 10}, {3, 50, 20, 80}};

/* loss and gradient (for dscale) in double, with magnitudes */
static void reference(double *loss, double *mag_loss, double *grad, double *mag_grad,
                      const float *logits, const int32_t *targets, const ce_case *c,
                      double dscale) {
  for (int64_t r = 0; r < c->rows; r++) {
    const float *l = logits + r * c->vocab;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < c->vocab; j++) mx = fmax(mx, l[j]);
    for (int64_t j = 0; j < c->vocab; j++) sum += exp(l[j] - mx);
    double lt = l[targets[r]], spread = 0.0;
    for (int64_t j = 0; j < c->vocab; j++) spread = fmax(spread, mx - l[j]);
    loss[r] = log(sum) + mx - lt;
    mag_loss[r] = fabs(log(sum)) + fabs(mx) + fabs(lt) + spread + 1.0;
    for (int64_t j = 0; j < c->vocab; j++) {
      double p = exp(l[j] - mx) / sum, hot = j == targets[r];
      grad[r * c->vocab + j] = (p - hot) * dscale;
      mag_grad[r * c->vocab + j] = (p * (mx - l[j] + 1.0) + hot) * fabs(dscale);
    }
  }
}

static float *make_logits(uint64_t *rng, const ce_case *c, int32_t **targets) {
  float *l = kt_random(rng, c->rows * c->vocab, -c->spread, c->spread);
  *targets = kt_xalloc((size_t)c->rows * sizeof(int32_t));
  for (int64_t r = 0; r < c->rows; r++) (*targets)[r] = kt_int(rng, (int32_t)c->vocab);
  return l;
}

/* the three phases unsplit: ordinary cross-entropy, gradient written over
** the logits; with dscale = 0 the logits are left alone */
static void test_unsplit(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 51;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const ce_case *c = &cases[k];
    const int64_t n = c->rows * c->vocab;
    int32_t *tg;
    float *logits = make_logits(&rng, c, &tg), *rowmax = kt_floats(c->rows);
    float *losses = kt_floats(c->rows), *keep = kt_floats(n);
    double *sums = kt_doubles(2 * c->rows), *rl = kt_doubles(c->rows);
    double *ml = kt_doubles(c->rows), *rg = kt_doubles(n), *mg = kt_doubles(n);
    const float dscale = 1.0f / 3.0f;
    reference(rl, ml, rg, mg, logits, tg, c, dscale);
    memcpy(keep, logits, (size_t)n * sizeof(float));

    CHECK_EQ_INT(be->ce_rowmax(be, NULL, rowmax, logits, c->rows, c->vocab, c->vocab), 0);
    CHECK_EQ_INT(be->ce_sums(be, NULL, sums, logits, rowmax, tg, c->rows, 0, c->vocab, c->vocab), 0);
    kt_fill(losses, c->rows, NAN);
    CHECK_EQ_INT(
        be->ce_finish(be, NULL, losses, logits, rowmax, sums, tg, c->rows, 0, c->vocab, c->vocab, 0.0f), 0);
    CHECK_ARRAY_BOUND(losses, rl, ml, c->rows, 4 * KT_U);
    CHECK_ARRAY_EQ(logits, keep, n);

    kt_fill(losses, c->rows, NAN);
    CHECK_EQ_INT(
        be->ce_finish(be, NULL, losses, logits, rowmax, sums, tg, c->rows, 0, c->vocab, c->vocab, dscale), 0);
    CHECK_ARRAY_BOUND(losses, rl, ml, c->rows, 4 * KT_U);
    CHECK_ARRAY_BOUND(logits, rg, mg, n, 5 * KT_U);
    free(tg), free(logits), free(rowmax), free(losses), free(keep), free(sums), free(rl), free(ml),
        free(rg), free(mg);
  }
}

/* columns [c0, c0 + n) of a [rows, cols] matrix, as a [rows, n] matrix */
static float *columns(const float *x, int64_t rows, int64_t cols, int64_t c0, int64_t n) {
  float *y = kt_floats(rows * n);
  for (int64_t r = 0; r < rows; r++)
    memcpy(y + r * n, x + r * cols + c0, (size_t)n * sizeof(float));
  return y;
}

/* Two vocabulary ranges as two ranks hold them: max of the rowmaxes, sum of
** the sums, then finish per range. Losses equal the unsplit ones (only the
** double sums associate differently) and the ranges' gradients put
** together equal the unsplit gradient. */
static void test_split_matches_unsplit(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 52;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const ce_case *c = &cases[k];
    const int64_t rows = c->rows, n = rows * c->vocab;
    const int64_t begin[2] = {0, c->split}, width[2] = {c->split, c->vocab - c->split};
    int32_t *tg;
    float *logits = make_logits(&rng, c, &tg), *rowmax = kt_floats(rows);
    float *losses = kt_floats(rows);
    double *sums = kt_doubles(2 * rows), *ml = kt_doubles(rows), *mg = kt_doubles(n);
    double *rl = kt_doubles(rows), *rg = kt_doubles(n);
    const float dscale = -0.25f;
    reference(rl, ml, rg, mg, logits, tg, c, dscale);
    float *part[2], *part_max[2], *part_loss[2];
    double *part_sums[2];
    for (int p = 0; p < 2; p++) {
      part[p] = columns(logits, rows, c->vocab, begin[p], width[p]);
      part_max[p] = kt_floats(rows), part_loss[p] = kt_floats(rows);
      part_sums[p] = kt_doubles(2 * rows);
    }
    CHECK_EQ_INT(be->ce_rowmax(be, NULL, rowmax, logits, rows, c->vocab, c->vocab), 0);
    CHECK_EQ_INT(be->ce_sums(be, NULL, sums, logits, rowmax, tg, rows, 0, c->vocab, c->vocab), 0);
    CHECK_EQ_INT(
        be->ce_finish(be, NULL, losses, logits, rowmax, sums, tg, rows, 0, c->vocab, c->vocab, dscale), 0);

    float *max_all = kt_floats(rows);
    double *sums_all = kt_doubles(2 * rows);
    kt_fill(max_all, rows, -INFINITY);
    for (int p = 0; p < 2; p++) {
      CHECK_EQ_INT(be->ce_rowmax(be, NULL, part_max[p], part[p], rows, width[p], width[p]), 0);
      for (int64_t r = 0; r < rows; r++) max_all[r] = fmaxf(max_all[r], part_max[p][r]);
    }
    CHECK_ARRAY_EQ(max_all, rowmax, rows);
    for (int p = 0; p < 2; p++) {
      CHECK_EQ_INT(
          be->ce_sums(be, NULL, part_sums[p], part[p], max_all, tg, rows, begin[p], width[p], width[p]), 0);
      for (int64_t i = 0; i < 2 * rows; i++) sums_all[i] += part_sums[p][i];
    }
    /* the target logit comes from exactly one range */
    for (int64_t r = 0; r < rows; r++) CHECK(sums_all[2 * r + 1] == sums[2 * r + 1]);
    float *grad = kt_floats(n);
    for (int p = 0; p < 2; p++) {
      CHECK_EQ_INT(be->ce_finish(be, NULL, part_loss[p], part[p], max_all, sums_all, tg, rows,
                                 begin[p], width[p], width[p], dscale),
                   0);
      for (int64_t r = 0; r < rows; r++)
        memcpy(grad + r * c->vocab + begin[p], part[p] + r * width[p],
               (size_t)width[p] * sizeof(float));
    }
    CHECK_ARRAY_EQ(part_loss[0], part_loss[1], rows);
    double *unsplit_loss = kt_widen(losses, rows), *unsplit_grad = kt_widen(logits, n);
    /* one fp32 rounding apart at most: the double sums agree to ~1e-16 */
    CHECK_ARRAY_BOUND(part_loss[0], unsplit_loss, ml, rows, 2 * KT_U);
    for (int64_t i = 0; i < n; i++) mg[i] = fabs(unsplit_grad[i]) + fabs(dscale);
    CHECK_ARRAY_BOUND(grad, unsplit_grad, mg, n, 2 * KT_U);

    for (int p = 0; p < 2; p++)
      free(part[p]), free(part_max[p]), free(part_loss[p]), free(part_sums[p]);
    free(tg), free(logits), free(rowmax), free(losses), free(sums), free(max_all), free(sums_all),
        free(grad), free(unsplit_loss), free(unsplit_grad), free(ml), free(mg), free(rl), free(rg);
  }
}

/* A padded vocabulary: columns past `valid` hold large logits that would
** dominate the softmax. Masked, the loss and the valid columns' gradient
** are bit for bit those of the unpadded rows (the same operations on the
** same values), and the padding's gradient is exactly zero. */
static void test_padding_is_masked(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 53;
  const ce_case c = {5, 13, 0, 6};
  const int64_t pad = 19, rows = c.rows;
  int32_t *tg;
  float *logits = make_logits(&rng, &c, &tg), *padded = kt_floats(rows * pad);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t j = 0; j < pad; j++) padded[r * pad + j] = j < c.vocab ? logits[r * c.vocab + j] : 100.0f;
  float *max_a = kt_floats(rows), *max_b = kt_floats(rows), *loss_a = kt_floats(rows), *loss_b = kt_floats(rows);
  double *sums_a = kt_doubles(2 * rows), *sums_b = kt_doubles(2 * rows);
  const float dscale = 0.5f;
  CHECK_EQ_INT(be->ce_rowmax(be, NULL, max_a, logits, rows, c.vocab, c.vocab), 0);
  CHECK_EQ_INT(be->ce_sums(be, NULL, sums_a, logits, max_a, tg, rows, 0, c.vocab, c.vocab), 0);
  CHECK_EQ_INT(be->ce_finish(be, NULL, loss_a, logits, max_a, sums_a, tg, rows, 0, c.vocab, c.vocab, dscale), 0);
  CHECK_EQ_INT(be->ce_rowmax(be, NULL, max_b, padded, rows, pad, c.vocab), 0);
  CHECK_EQ_INT(be->ce_sums(be, NULL, sums_b, padded, max_b, tg, rows, 0, pad, c.vocab), 0);
  CHECK_EQ_INT(be->ce_finish(be, NULL, loss_b, padded, max_b, sums_b, tg, rows, 0, pad, c.vocab, dscale), 0);
  CHECK_ARRAY_EQ(loss_b, loss_a, rows);
  for (int64_t r = 0; r < rows; r++) {
    CHECK_ARRAY_EQ(padded + r * pad, logits + r * c.vocab, c.vocab);
    for (int64_t j = c.vocab; j < pad; j++) CHECK(padded[r * pad + j] == 0.0f);
  }
  free(tg), free(logits), free(padded), free(max_a), free(max_b), free(loss_a), free(loss_b), free(sums_a),
      free(sums_b);
}

int main(void) {
  RUN(test_unsplit);
  RUN(test_padding_is_masked);
  RUN(test_split_matches_unsplit);
  return HARNESS_EXIT();
}
