/*
** tests/kernels/test_cpu_embedding.c — token and position embeddings,
** whole and with the vocabulary split in two ranges.
**
** Lookups are copies and must be exact; the backward adds each dout row
** once per occurrence, so fp32 sums of up to `rows` terms (γ_rows bound,
** checked at 2·(rows + 2)·u of the terms' magnitudes).
*/
#include "kernel_test.h"

typedef struct emb_case {
  int64_t B, T, width, vocab;
} emb_case;

static const emb_case cases[] = {{1, 7, 13, 11}, {2, 3, 1, 1}, {4, 64, 256, 256}};

/* tokens in [0, vocab) with repeats, plus ids outside the table (-1 and
** vocab + 3) that every range must skip */
static int32_t *make_tokens(uint64_t *rng, int64_t rows, int64_t vocab) {
  int32_t *tok = kt_xalloc((size_t)rows * sizeof(int32_t));
  for (int64_t r = 0; r < rows; r++) tok[r] = kt_int(rng, (int32_t)vocab);
  if (rows > 3) tok[1] = tok[0], tok[2] = -1, tok[3] = (int32_t)vocab + 3;
  return tok;
}

/* forward over the whole table and over two ranges [0, v1), [v1, vocab):
** the ranges' outputs sum to the whole one, rows outside a range are 0 */
static void test_tokens_forward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 41;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const emb_case e = cases[c];
    const int64_t rows = e.B * e.T, n = rows * e.width, v1 = e.vocab / 2;
    int32_t *tok = make_tokens(&rng, rows, e.vocab);
    float *wte = kt_random(&rng, e.vocab * e.width, -1, 1), *out = kt_floats(n);
    float *lo = kt_floats(n), *hi = kt_floats(n), *want = kt_floats(n);
    for (int64_t r = 0; r < rows; r++)
      if (tok[r] >= 0 && tok[r] < e.vocab)
        memcpy(want + r * e.width, wte + tok[r] * e.width, (size_t)e.width * sizeof(float));
    kt_fill(out, n, NAN), kt_fill(lo, n, NAN), kt_fill(hi, n, NAN);
    CHECK_EQ_INT(be->embed_tokens_forward(be, NULL, out, tok, wte, rows, e.width, 0, e.vocab), 0);
    CHECK_ARRAY_EQ(out, want, n);
    CHECK_EQ_INT(be->embed_tokens_forward(be, NULL, lo, tok, wte, rows, e.width, 0, v1), 0);
    CHECK_EQ_INT(be->embed_tokens_forward(be, NULL, hi, tok, wte + v1 * e.width, rows, e.width, v1,
                                          e.vocab - v1),
                 0);
    int64_t both_nonzero = 0;
    for (int64_t i = 0; i < n; i++) {
      both_nonzero += lo[i] != 0.0f && hi[i] != 0.0f;
      lo[i] += hi[i];
    }
    CHECK_EQ_INT(both_nonzero, 0);
    CHECK_ARRAY_EQ(lo, want, n);
    free(tok), free(wte), free(out), free(lo), free(hi), free(want);
  }
}

/* out[b,t] += wpe[t], exactly one fp32 addition */
static void test_positions_forward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 42;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const emb_case e = cases[c];
    const int64_t n = e.B * e.T * e.width;
    float *out = kt_random(&rng, n, -1, 1), *wpe = kt_random(&rng, e.T * e.width, -1, 1);
    float *want = kt_floats(n);
    for (int64_t i = 0; i < n; i++) want[i] = out[i] + wpe[i % (e.T * e.width)];
    CHECK_EQ_INT(be->embed_positions_forward(be, NULL, out, wpe, e.B, e.T, e.width), 0);
    CHECK_ARRAY_EQ(out, want, n);
    free(out), free(wpe), free(want);
  }
}

/* dwte and dwpe accumulate: two calls from random starting gradients add
** twice the reference; split ranges write exactly their rows of the
** unsplit gradient */
static void test_backward(void) {
  tsl_backend *be = kt_backend();
  uint64_t rng = 43;
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const emb_case e = cases[c];
    const int64_t rows = e.B * e.T, n = rows * e.width, nw = e.vocab * e.width;
    const int64_t np = e.T * e.width, v1 = e.vocab / 2;
    int32_t *tok = make_tokens(&rng, rows, e.vocab);
    float *dout = kt_random(&rng, n, -1, 1), *dwte0 = kt_random(&rng, nw, -1, 1);
    float *dwpe0 = kt_random(&rng, np, -1, 1), *dwte = kt_floats(nw), *dwpe = kt_floats(np);
    memcpy(dwte, dwte0, (size_t)nw * sizeof(float));
    memcpy(dwpe, dwpe0, (size_t)np * sizeof(float));
    double *rw = kt_widen(dwte0, nw), *mw = kt_doubles(nw), *rp = kt_widen(dwpe0, np);
    double *mp = kt_doubles(np);
    for (int64_t i = 0; i < nw; i++) mw[i] = fabs(rw[i]);
    for (int64_t i = 0; i < np; i++) mp[i] = fabs(rp[i]);
    for (int64_t r = 0; r < rows; r++)
      for (int64_t j = 0; j < e.width; j++) {
        double d = dout[r * e.width + j];
        if (tok[r] >= 0 && tok[r] < e.vocab)
          rw[tok[r] * e.width + j] += 2 * d, mw[tok[r] * e.width + j] += 2 * fabs(d);
        rp[(r % e.T) * e.width + j] += 2 * d, mp[(r % e.T) * e.width + j] += 2 * fabs(d);
      }
    for (int call = 0; call < 2; call++) {
      CHECK_EQ_INT(be->embed_tokens_backward(be, NULL, dwte, dout, tok, rows, e.width, 0, e.vocab),
                   0);
      CHECK_EQ_INT(be->embed_positions_backward(be, NULL, dwpe, dout, e.B, e.T, e.width), 0);
    }
    CHECK_ARRAY_BOUND(dwte, rw, mw, nw, 2.0 * (rows + 2) * KT_U);
    CHECK_ARRAY_BOUND(dwpe, rp, mp, np, 2.0 * (e.B + 2) * KT_U);

    /* split: each range's gradient is its rows of the whole one, bit for
    ** bit (the same additions in the same order) */
    float *split = kt_floats(nw), *whole = kt_floats(nw);
    CHECK_EQ_INT(be->embed_tokens_backward(be, NULL, whole, dout, tok, rows, e.width, 0, e.vocab),
                 0);
    CHECK_EQ_INT(be->embed_tokens_backward(be, NULL, split, dout, tok, rows, e.width, 0, v1), 0);
    CHECK_EQ_INT(be->embed_tokens_backward(be, NULL, split + v1 * e.width, dout, tok, rows, e.width,
                                           v1, e.vocab - v1),
                 0);
    CHECK_ARRAY_EQ(split, whole, nw);
    free(tok), free(dout), free(dwte0), free(dwpe0), free(dwte), free(dwpe), free(rw), free(mw),
        free(rp), free(mp), free(split), free(whole);
  }
}

int main(void) {
  RUN(test_tokens_forward);
  RUN(test_positions_forward);
  RUN(test_backward);
  return HARNESS_EXIT();
}
