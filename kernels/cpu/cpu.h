/*
** kernels/cpu/cpu.h — internal to the CPU backend.
**
** The kernels that backend_cpu.c gathers into its table (their contracts are
** in kernels/backend.h and above each definition) and the helpers they
** share. On the CPU every `act` buffer is float, streams are NULL and every
** call has finished when it returns.
*/
#ifndef TSL_KERNELS_CPU_H
#define TSL_KERNELS_CPU_H

#include <math.h>
#include <stdint.h>
#include <string.h>
#include "backend.h"
#include "base.h"

/* ---- helpers ---- */

/* exp(x) as plain arithmetic, so that loops calling it vectorise (glibc's
** expf has no vector variant without -ffast-math). Within 1 ulp of exp over
** [-86.5, 88.72]; below that it returns 0 (exp(-86.5) is 2.7e-38, already
** below any sum it could join), above it +inf, and NaN stays NaN. */
static inline float tsl_cpu_expf(float x) {
  const float lo = -86.5f, hi = 88.72283f;
  /* NaN compares false and lands on lo, so that the integer conversion
  ** below stays defined; the result is put back to NaN at the end. */
  float xc = x >= lo ? (x <= hi ? x : hi) : lo;
  /* x = n·ln2 + r with |r| <= ln2/2; adding and subtracting 1.5·2^23 rounds
  ** to the nearest integer without a libm call. */
  float n = (xc * 1.44269504089f + 12582912.0f) - 12582912.0f;
  float r = xc - n * 0.693359375f; /* ln2 split in two (Cody-Waite) */
  r = r - n * -2.12194440e-4f;
  /* Cephes' minimax polynomial for e^r on that interval */
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  /* 2^n built as 2·2^(n-1) so that n = 128 (x near ln FLT_MAX) still fits
  ** the exponent field; n is in [-125, 128], so the biased value is > 0 */
  uint32_t bits = (uint32_t)((int32_t)n + 126) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  float y = (p + p) * scale;
  y = x < lo ? 0.0f : y;
  y = x > hi ? INFINITY : y;
  return x != x ? x : y;
}

/* Column-parallel reductions come in two walks, each result independent
** of the thread count. The norm-weight and token-embedding gradients give
** each thread blocks of this many columns: a whole number of cache lines,
** few enough that the accumulators stay in registers. */
enum { TSL_CPU_COLUMN_BLOCK = 64 };
/* The bias gradients (tsl_cpu_column_sums, alone or after the GELU
** backward) walk rows over a thread's whole range (tsl_cpu_team_part),
** this many columns per pass: 4 KiB of accumulators in L1, rows read in
** runs of pages. That walk made the fused GELU backward 40% cheaper; for
** the norms it measured no faster and for the embedding about half as
** fast (256 × 256), so they keep the blocks. */
enum { TSL_CPU_COLUMN_CHUNK = 1024 };

/* Elementwise kernels on fewer elements than this run on one thread: waking
** the team costs more than the loop. */
enum { TSL_CPU_PARALLEL_MIN = 1 << 15 };

/* ---- the OpenBLAS kernel family (blas_core.c) ---- */

/* The instruction sets that decide which OpenBLAS kernels a CPU can run. */
typedef struct tsl_cpu_features {
  int avx2, fma, avx512f, avx512bw, avx512dq, avx512vl, avx512cd, avx512bf16;
} tsl_cpu_features;
/* The OPENBLAS_CORETYPE a CPU with features f should use when OpenBLAS
** chose `current`: a name when `current` is OpenBLAS's Prescott fallback
** and f allows faster kernels, else NULL (keep what OpenBLAS chose). */
const char *tsl_cpu_blas_core_for(const char *current, const tsl_cpu_features *f);
/* tsl_cpu_blas_core_for on this CPU and the OpenBLAS kernels loaded now. */
const char *tsl_cpu_blas_core_better(void);
/* Whether OpenBLAS started its own thread pool as it loaded (pthread build,
** more than one thread): one that competes with the OpenMP team. Ask
** before openblas_set_num_threads, which changes the count, not the pool. */
int tsl_cpu_blas_pool_started(void);
/* Sets OPENBLAS_CORETYPE when tsl_cpu_blas_core_better names kernels, and
** OPENBLAS_NUM_THREADS=1 when a pool was started, each only if the user
** has not set it, and executes this program again with argv (returns only
** when nothing was to be done or the restart failed). */
void tsl_cpu_blas_restart(char **argv);

/* ---- dense algebra (matmul.c) ---- */

int tsl_cpu_gemm(tsl_backend *be, tsl_stream *s, int trans_a, int trans_b, int64_t m, int64_t n,
                 int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                 float beta, void *c, int64_t ldc, tessel_dtype c_dtype);
int tsl_cpu_linear_forward(tsl_backend *be, tsl_stream *s, void *out, const void *inp,
                           const void *w, const void *bias, int64_t rows, int64_t ic, int64_t oc);
int tsl_cpu_linear_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                            const void *dout, const void *inp, const void *w, int64_t rows,
                            int64_t ic, int64_t oc);
/* C = alpha·op(A)·op(B) + beta·C as one single-threaded OpenBLAS call,
** for kernels that already run inside the OpenMP team (sizes must fit an
** int; row-major, as tsl_cpu_gemm). */
void tsl_cpu_sgemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                   const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                   int64_t ldc);
/* Inside a parallel region: the part [lo, hi) of [0, extent) this thread
** owns, contiguous and starting on a multiple of align (16 floats: whole
** cache lines, so that no two threads write one). */
void tsl_cpu_team_part(int64_t extent, int64_t align, int64_t *lo, int64_t *hi);
/* tsl_cpu_column_sums; with gelu_x (and gelu_d), x is first written row by
** row as gelu'(gelu_x)·gelu_d and summed while in cache. */
void tsl_cpu_column_sums_gelu(float *db, float *x, const float *gelu_x, const float *gelu_d, int64_t rows,
                              int64_t cols);
/* db[cols] += Σ_rows x[rows, cols], parallel over columns so that the
** result does not depend on the thread count. */
void tsl_cpu_column_sums(float *db, const float *x, int64_t rows, int64_t cols);
int tsl_cpu_linear_gelu_forward(tsl_backend *be, tsl_stream *s, void *pre, void *out, const void *inp,
                                const void *w, const void *bias, int64_t rows, int64_t ic, int64_t oc);
/* GELU and its gradient over n contiguous elements on the calling thread:
** the one copy of each loop, shared by the kernels and their fusions. */
void tsl_cpu_gelu_span(float *o, const float *x, int64_t n);
void tsl_cpu_gelu_grad_span(float *di, const float *x, const float *d, int64_t n);

/* ---- layer norm (layernorm.c) ---- */

int tsl_cpu_layernorm_forward(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                              const void *inp, const void *w, const void *b, int64_t rows,
                              int64_t cols, float eps);
int tsl_cpu_layernorm_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                               const void *dout, const void *inp, const void *w, const float *mean,
                               const float *rstd, int64_t rows, int64_t cols);
int tsl_cpu_add_layernorm_forward(tsl_backend *be, tsl_stream *s, void *sum, void *out, float *mean, float *rstd,
                                  const void *a, const void *b, const void *w, const void *bias, int64_t rows,
                                  int64_t cols, float eps);
int tsl_cpu_layernorm_backward_add(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                                   const void *dout, const void *inp, const void *w, const float *mean,
                                   const float *rstd, int64_t rows, int64_t cols);
int tsl_cpu_layernorm_stats(tsl_backend *be, tsl_stream *s, double *sums, const void *inp,
                            int64_t rows, int64_t cols);
int tsl_cpu_layernorm_apply(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                            const double *sums, const void *inp, const void *w, const void *b,
                            int64_t rows, int64_t cols, int64_t total_cols, float eps);
int tsl_cpu_layernorm_backward_stats(tsl_backend *be, tsl_stream *s, double *sums, float *dw,
                                     float *db, const void *dout, const void *inp, const void *w,
                                     const float *mean, const float *rstd, int64_t rows,
                                     int64_t cols);
int tsl_cpu_layernorm_backward_apply(tsl_backend *be, tsl_stream *s, void *dinp, const double *sums,
                                     const void *dout, const void *inp, const void *w,
                                     const float *mean, const float *rstd, int64_t rows,
                                     int64_t cols, int64_t total_cols);

/* ---- RMS norm (rmsnorm.c) ---- */

int tsl_cpu_rmsnorm_forward(tsl_backend *be, tsl_stream *s, void *out, float *rstd,
                            const void *inp, const void *w, int64_t rows, int64_t cols, float eps);
int tsl_cpu_rmsnorm_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw,
                             const void *dout, const void *inp, const void *w, const float *rstd,
                             int64_t rows, int64_t cols);
int tsl_cpu_rmsnorm_stats(tsl_backend *be, tsl_stream *s, double *sums, const void *inp,
                          int64_t rows, int64_t cols);
int tsl_cpu_rmsnorm_apply(tsl_backend *be, tsl_stream *s, void *out, float *rstd,
                          const double *sums, const void *inp, const void *w, int64_t rows,
                          int64_t cols, int64_t total_cols, float eps);
int tsl_cpu_rmsnorm_backward_stats(tsl_backend *be, tsl_stream *s, double *sums, float *dw,
                                   const void *dout, const void *inp, const void *w,
                                   const float *rstd, int64_t rows, int64_t cols);
int tsl_cpu_rmsnorm_backward_apply(tsl_backend *be, tsl_stream *s, void *dinp, const double *sums,
                                   const void *dout, const void *inp, const void *w,
                                   const float *rstd, int64_t rows, int64_t cols,
                                   int64_t total_cols);

/* ---- attention (attention.c) ---- */

int tsl_cpu_attention_forward(tsl_backend *be, tsl_stream *s, void *out, float *lse, const void *q,
                              const void *k, const void *v, const tsl_attn_shape *sh);
int tsl_cpu_attention_backward(tsl_backend *be, tsl_stream *s, void *dq, void *dk, void *dv,
                               const void *dout, const void *out, const float *lse, const void *q,
                               const void *k, const void *v, const tsl_attn_shape *sh);

/* ---- rotary position embedding (rope.c) ---- */

int tsl_cpu_rope(tsl_backend *be, tsl_stream *s, void *x, int64_t batch, int64_t seq,
                 int64_t heads, int64_t head_size, int64_t ld, int64_t pos_offset, tsl_rope_freqs freqs,
                 int inverse);

/* ---- elementwise (elementwise.c) ---- */

int tsl_cpu_gelu_forward(tsl_backend *be, tsl_stream *s, void *out, const void *inp, int64_t n);
int tsl_cpu_gelu_backward(tsl_backend *be, tsl_stream *s, void *dinp, const void *inp,
                          const void *dout, int64_t n);
int tsl_cpu_gelu_backward_bias(tsl_backend *be, tsl_stream *s, void *dinp, float *db, const void *inp,
                               const void *dout, int64_t rows, int64_t cols);
int tsl_cpu_add(tsl_backend *be, tsl_stream *s, void *out, const void *a, const void *b, int64_t n);
int tsl_cpu_axpy(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *y, float alpha,
                 const void *x, int64_t n);
int tsl_cpu_scale(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *x, float alpha,
                  int64_t n);
int tsl_cpu_convert(tsl_backend *be, tsl_stream *s, void *dst, tessel_dtype dst_dtype,
                    const void *src, tessel_dtype src_dtype, int64_t n);
int tsl_cpu_swiglu_forward(tsl_backend *be, tsl_stream *s, void *out, const void *gate,
                           const void *up, int64_t n);
int tsl_cpu_swiglu_backward(tsl_backend *be, tsl_stream *s, void *dgate, void *dup,
                            const void *dout, const void *gate, const void *up, int64_t n);

/* ---- embedding (embedding.c) ---- */

int tsl_cpu_embed_tokens_forward(tsl_backend *be, tsl_stream *s, void *out, const int32_t *tokens,
                                 const void *wte, int64_t rows, int64_t width, int64_t vocab_begin,
                                 int64_t vocab);
int tsl_cpu_embed_positions_forward(tsl_backend *be, tsl_stream *s, void *out, const void *wpe,
                                    int64_t batch, int64_t seq, int64_t width);
int tsl_cpu_embed_tokens_backward(tsl_backend *be, tsl_stream *s, float *dwte, const void *dout,
                                  const int32_t *tokens, int64_t rows, int64_t width,
                                  int64_t vocab_begin, int64_t vocab);
int tsl_cpu_embed_positions_backward(tsl_backend *be, tsl_stream *s, float *dwpe, const void *dout,
                                     int64_t batch, int64_t seq, int64_t width);

/* ---- cross-entropy (crossentropy.c) ---- */

int tsl_cpu_ce_rowmax(tsl_backend *be, tsl_stream *s, float *rowmax, const void *logits,
                      int64_t rows, int64_t vocab, int64_t valid);
int tsl_cpu_ce_sums(tsl_backend *be, tsl_stream *s, double *sums, const void *logits,
                    const float *rowmax, const int32_t *targets, int64_t rows, int64_t vocab_begin,
                    int64_t vocab, int64_t valid);
int tsl_cpu_ce_finish(tsl_backend *be, tsl_stream *s, float *losses, void *logits,
                      const float *rowmax, const double *sums, const int32_t *targets, int64_t rows,
                      int64_t vocab_begin, int64_t vocab, int64_t valid, float dscale);
int tsl_cpu_ce_fused(tsl_backend *be, tsl_stream *s, float *losses, void *logits, const int32_t *targets,
                     int64_t rows, int64_t vocab, int64_t valid, float dscale);

/* ---- optimizer and reductions (adamw.c) ---- */

int tsl_cpu_adamw(tsl_backend *be, tsl_stream *s, float *master, void *work, const float *grad,
                  float *m, float *v, int64_t n, float lr, float beta1, float beta2, float eps,
                  float weight_decay, float grad_scale, int64_t step);
int tsl_cpu_sumsq(tsl_backend *be, tsl_stream *s, double *out, const float *x, int64_t n);

#endif
