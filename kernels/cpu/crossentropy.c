/*
** kernels/cpu/crossentropy.c — softmax cross-entropy over a vocabulary that
** may be split by columns across ranks.
**
** logits [rows, vocab] hold this rank's columns [vocab_begin, vocab_begin +
** vocab); targets are global token ids. Three phases so that a split only
** needs two small all-reduces between them (MAX of rowmax, SUM of sums);
** without a split the phases compute the ordinary loss and gradient.
** Only the first `valid` columns are vocabulary: the rest pad the table to
** an aligned width, take no part in the softmax and get a zero gradient.
*/
#include "cpu.h"

/* The phases are per-row helpers, so that the fused kernel at the end
** does exactly the arithmetic of the three. */

static float row_max(const float *row, int64_t valid) {
  float mx = -INFINITY;
#pragma omp simd reduction(max : mx)
  for (int64_t j = 0; j < valid; j++) mx = row[j] > mx ? row[j] : mx;
  return mx;
}

/* rowmax[rows] = max_{j < valid} logits[r, j] */
int tsl_cpu_ce_rowmax(tsl_backend *be, tsl_stream *s, float *rowmax, const void *logits,
                      int64_t rows, int64_t vocab, int64_t valid) {
  if (rows < 0 || vocab < 0 || valid < 0 || valid > vocab) return TESSEL_E_INTERNAL;
  const float *l = logits;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) rowmax[r] = row_max(l + r * vocab, valid);
  return TESSEL_OK;
}

enum { EXP_CHUNK = 256 };

/* Σ_j exp(row[j] − mx) over n columns: the exponentials in fp32, the sum in
** fp64. Done in chunks through a buffer because GCC will not vectorise
** tsl_cpu_expf and a float-to-double reduction in one loop. */
static double sum_exp(const float *row, float mx, int64_t n) {
  float e[EXP_CHUNK];
  double sum = 0.0;
  for (int64_t j0 = 0; j0 < n; j0 += EXP_CHUNK) {
    const int64_t m = TSL_MIN(EXP_CHUNK, n - j0);
#pragma omp simd
    for (int64_t j = 0; j < m; j++) e[j] = tsl_cpu_expf(row[j0 + j] - mx);
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < m; j++) sum += e[j];
  }
  return sum;
}

static void row_sums(double out[2], const float *row, float mx, int64_t t, int64_t valid) {
  out[0] = valid ? sum_exp(row, mx, valid) : 0.0;
  out[1] = t >= 0 && t < valid ? row[t] : 0.0;
}

/* sums[rows,2] = (Σ_j exp(l − rowmax), l[target − v0] if the target is in
** this rank's range else 0). The sum is fp64 so that adding ranks'
** partial sums loses nothing. */
int tsl_cpu_ce_sums(tsl_backend *be, tsl_stream *s, double *sums, const void *logits,
                    const float *rowmax, const int32_t *targets, int64_t rows, int64_t vocab_begin,
                    int64_t vocab, int64_t valid) {
  if (rows < 0 || vocab < 0 || valid < 0 || valid > vocab) return TESSEL_E_INTERNAL;
  const float *l = logits;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    row_sums(sums + 2 * r, l + r * vocab, rowmax[r], (int64_t)targets[r] - vocab_begin, valid);
  return TESSEL_OK;
}

static void row_finish(float *loss, float *row, float mx, const double sums[2], int64_t t, int64_t vocab,
                       int64_t valid, float dscale) {
  const double sum = sums[0];
  *loss = (float)(log(sum) + (double)mx - sums[1]);
  if (dscale == 0.0f) return;
  const float k = (float)((double)dscale / sum);
#pragma omp simd
  for (int64_t j = 0; j < valid; j++) row[j] = tsl_cpu_expf(row[j] - mx) * k;
  for (int64_t j = valid; j < vocab; j++) row[j] = 0.0f;
  if (t >= 0 && t < valid) row[t] -= dscale;
}

/* losses[r] = log Σ + rowmax − l_target from the reduced sums; if dscale is
** not 0, logits[r, j] = (softmax_j − [j is the target])·dscale. */
int tsl_cpu_ce_finish(tsl_backend *be, tsl_stream *s, float *losses, void *logits,
                      const float *rowmax, const double *sums, const int32_t *targets, int64_t rows,
                      int64_t vocab_begin, int64_t vocab, int64_t valid, float dscale) {
  if (rows < 0 || vocab < 0 || valid < 0 || valid > vocab) return TESSEL_E_INTERNAL;
  float *l = logits;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++)
    row_finish(losses + r, l + r * vocab, rowmax[r], sums + 2 * r, (int64_t)targets[r] - vocab_begin, vocab, valid,
               dscale);
  return TESSEL_OK;
}

/* The three phases on a whole vocabulary, row by row (fusion: a row is
** read three times while it is in cache instead of three passes over all
** the logits, and one parallel region instead of three). */
int tsl_cpu_ce_fused(tsl_backend *be, tsl_stream *s, float *losses, void *logits, const int32_t *targets,
                     int64_t rows, int64_t vocab, int64_t valid, float dscale) {
  if (rows < 0 || vocab < 0 || valid < 0 || valid > vocab) return TESSEL_E_INTERNAL;
  float *l = logits;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    float *row = l + r * vocab;
    double sums[2];
    const float mx = row_max(row, valid);
    row_sums(sums, row, mx, targets[r], valid);
    row_finish(losses + r, row, mx, sums, targets[r], vocab, valid, dscale);
  }
  return TESSEL_OK;
}
