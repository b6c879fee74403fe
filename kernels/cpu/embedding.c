/*
** kernels/cpu/embedding.c — token and position embeddings.
**
** wte may be split by vocabulary rows across ranks: this rank holds rows
** [vocab_begin, vocab_begin + vocab) and contributes zeros (forward) or
** nothing (backward) for tokens outside them, so summing the ranks' outputs
** gives the unsplit lookup.
*/
#include "cpu.h"

static int in_range(int32_t tok, int64_t vocab_begin, int64_t vocab) {
  return tok >= vocab_begin && tok < vocab_begin + vocab;
}

/* out[rows,width] = wte[tok − v0] for tokens in range, else 0 */
int tsl_cpu_embed_tokens_forward(tsl_backend *be, tsl_stream *s, void *out, const int32_t *tokens,
                                 const void *wte, int64_t rows, int64_t width, int64_t vocab_begin,
                                 int64_t vocab) {
  if (rows < 0 || width < 0 || vocab < 0) return TESSEL_E_INTERNAL;
  float *o = out;
  const float *table = wte;
  const size_t bytes = (size_t)width * sizeof(float);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    int32_t tok = tokens[r];
    if (in_range(tok, vocab_begin, vocab))
      memcpy(o + r * width, table + (tok - vocab_begin) * width, bytes);
    else
      memset(o + r * width, 0, bytes);
  }
  return TESSEL_OK;
}

/* out[b,t,:] += wpe[t,:] for out [batch, seq, width] */
int tsl_cpu_embed_positions_forward(tsl_backend *be, tsl_stream *s, void *out, const void *wpe,
                                    int64_t batch, int64_t seq, int64_t width) {
  if (batch < 0 || seq < 0 || width < 0) return TESSEL_E_INTERNAL;
  float *o = out;
  const float *pos = wpe;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t b = 0; b < batch; b++)
    for (int64_t t = 0; t < seq; t++) {
      float *row = o + (b * seq + t) * width;
      const float *p = pos + t * width;
#pragma omp simd
      for (int64_t j = 0; j < width; j++) row[j] += p[j];
    }
  return TESSEL_OK;
}

/* dwte[tok − v0,:] += dout[r,:] for tokens in range. A token can repeat, so
** threads split the columns, not the rows: each owns a block of columns of
** every dwte row, and the additions happen in row order whatever the
** thread count. */
int tsl_cpu_embed_tokens_backward(tsl_backend *be, tsl_stream *s, float *dwte, const void *dout,
                                  const int32_t *tokens, int64_t rows, int64_t width,
                                  int64_t vocab_begin, int64_t vocab) {
  if (rows < 0 || width < 0 || vocab < 0) return TESSEL_E_INTERNAL;
  const float *d = dout;
#pragma omp parallel for schedule(static)
  for (int64_t c0 = 0; c0 < width; c0 += TSL_CPU_COLUMN_BLOCK) {
    int64_t n = TSL_MIN(TSL_CPU_COLUMN_BLOCK, width - c0);
    for (int64_t r = 0; r < rows; r++) {
      int32_t tok = tokens[r];
      if (!in_range(tok, vocab_begin, vocab)) continue;
      float *g = dwte + (tok - vocab_begin) * width + c0;
      const float *dr = d + r * width + c0;
#pragma omp simd
      for (int64_t j = 0; j < n; j++) g[j] += dr[j];
    }
  }
  return TESSEL_OK;
}

/* dwpe[t,:] += Σ_b dout[b,t,:]: column sums of dout seen as [batch, seq·width] */
int tsl_cpu_embed_positions_backward(tsl_backend *be, tsl_stream *s, float *dwpe, const void *dout,
                                     int64_t batch, int64_t seq, int64_t width) {
  if (batch < 0 || seq < 0 || width < 0) return TESSEL_E_INTERNAL;
  tsl_cpu_column_sums(dwpe, dout, batch, seq * width);
  return TESSEL_OK;
}
