/*
** kernels/cuda/tsl_cuda.h — internal to the CUDA backend (libtessel-cuda.so).
**
** The state one rank's backend keeps, the checks every CUDA, cuBLASLt and
** NCCL call goes through, and the functions the files of this directory
** share. Included by the C host files and the CUDA (.cu) files alike.
**
** Dtypes: `act` buffers (activations, working weights, logits) are bf16; gradients of parameters, master weights, AdamW moments
** and the norms' and attention's statistics (mean, rstd, lse) are fp32;
** cross-entropy and norm row sums are fp64 (see kernels/backend.h).
**
** Streams. A tsl_stream wraps a cudaStream_t created *blocking* (the
** default flags), so work on the legacy default stream is ordered after
** everything already queued on every stream of this backend, and before
** everything queued after it. The caching allocator relies on that: a
** block handed out again is zeroed on the legacy stream, which orders its
** new life after every kernel, copy or collective that used it before it
** was freed, without the host waiting. A NULL stream means the legacy one.
** Each stream carries its own cuBLASLt workspace and kernel scratch, so two
** streams never share temporary memory.
*/
#ifndef TSL_CUDA_H
#define TSL_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cuBLASLt workspace per stream: what NVIDIA recommends for Hopper. */
#define TSL_CUDA_WORKSPACE_BYTES ((size_t)32 << 20)

struct tsl_stream {
  cudaStream_t s;        /* 0: the legacy default stream                  */
  void *workspace;       /* cuBLASLt workspace, allocated on the first GEMM */
  void *scratch;         /* kernels' temporary memory, ordered on s        */
  size_t scratch_bytes;
};

struct tsl_event {
  cudaEvent_t e;
  struct tsl_event *next; /* free list */
};

/* One block obtained from cudaMalloc; `size` is its size class. */
typedef struct tsl_cuda_block {
  void *ptr;
  size_t size;
  int in_use;
} tsl_cuda_block;

/* The caching allocator (memory.c). */
typedef struct tsl_cuda_pool {
  tsl_cuda_block *blocks;
  size_t n, cap;
  uint64_t cached; /* bytes of blocks held but not in use */
} tsl_cuda_pool;

typedef struct tsl_cuda_gemm_cache tsl_cuda_gemm_cache; /* matmul.c */
struct tsl_nccl_watch;                                  /* nccl_watch.h */

typedef struct tsl_cuda_ctx {
  int device;
  char description[320];
  void *lt;                  /* cublasLtHandle_t (kept opaque for the .cu files) */
  tsl_cuda_pool pool;
  tsl_cuda_gemm_cache *gemms;
  struct tsl_stream legacy;  /* what a NULL tsl_stream means */
  struct tsl_event *free_events;
  struct tsl_nccl_watch *watch; /* the live NCCL communicators; NULL before the first */
  double comm_timeout;          /* tsl_backend_opts.comm_timeout */
} tsl_cuda_ctx;

static inline tsl_cuda_ctx *tsl_cuda(tsl_backend *be) { return (tsl_cuda_ctx *)be->ctx; }

/* The stream to run on: s itself, or the legacy stream for NULL. */
static inline struct tsl_stream *tsl_cuda_stream(tsl_backend *be, tsl_stream *s) {
  return s ? s : &tsl_cuda(be)->legacy;
}

/* ---- failures (check.c) ----
** Every CUDA, cuBLASLt and NCCL call goes through one of these macros. On
** failure the message "CALL failed: WHY (FILE:LINE, rank R, GPU D)" is
** kept for last_error and, once the backend runs, logged as an error; the
** expression yields TESSEL_E_DEVICE (TESSEL_E_COMM for NCCL), else 0.
** Kernel launches are checked as (kernel<<<...>>>(...), cudaGetLastError()),
** so the message names the kernel. */
#define TSL_CU(call) tsl_cuda_check_rt((int)(call), #call, __FILE__, __LINE__)
#define TSL_BLAS(call) tsl_cuda_check_blas((int)(call), #call, __FILE__, __LINE__)
#define TSL_NCCL(call) tsl_cuda_check_nccl((int)(call), #call, __FILE__, __LINE__)

int tsl_cuda_check_rt(int err, const char *call, const char *file, int line);
int tsl_cuda_check_blas(int status, const char *call, const char *file, int line);
int tsl_cuda_check_nccl(int result, const char *call, const char *file, int line);
/* Record a failure that is not an API error code (a bad argument, no
** device); returns `status`. */
int tsl_cuda_fail(int status, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define TSL_CUDA_FAIL(status, ...) tsl_cuda_fail((status), __FILE__, __LINE__, __VA_ARGS__)
/* Who this backend is, for messages; `running` turns logging on. */
void tsl_cuda_diag_init(int rank, int device, void (*log)(int level, const char *fmt, ...));
void tsl_cuda_diag_running(int running);
const char *tsl_cuda_last_error(tsl_backend *be);
/* 1 once a call has failed since the backend started (running out of
** memory aside): communicators are then aborted, never finalised. */
int tsl_cuda_failed(void);
/* Call fn(arg, message) at every such failure (NULL: none): the NCCL
** engine aborts the rank's communicators, so its peers stop waiting. */
void tsl_cuda_diag_on_failure(void (*fn)(void *arg, const char *what), void *arg);

/* ---- memory (memory.c) ---- */

int tsl_cuda_device_alloc(tsl_backend *be, uint64_t bytes, void **out);
void tsl_cuda_device_free(tsl_backend *be, void *p);
void tsl_cuda_pool_release(tsl_cuda_pool *pool);
/* Kernel scratch of at least `bytes` on stream st, valid until the next
** call on that stream asks for scratch again. */
int tsl_cuda_scratch(tsl_backend *be, struct tsl_stream *st, size_t bytes, void **out);

/* ---- dense products (matmul.c) ----
** One row-major product, optionally a strided batch of them: for each
** i < batch, C_i[m,n] = alpha·op(A_i)·op(B_i) + beta·C_i (+ bias[n] broadcast
** over rows when bias is set), A_i = a + i·stride_a elements and so on. A and
** B are bf16; C is bf16 or fp32 (c_dtype); bias is bf16 and needs C bf16. */
typedef struct tsl_cuda_mm {
  int trans_a, trans_b;
  int64_t m, n, k;
  float alpha, beta;
  const void *a;
  int64_t lda, stride_a;
  const void *b;
  int64_t ldb, stride_b;
  void *c;
  int64_t ldc, stride_c;
  int64_t batch;
  tessel_dtype c_dtype;
  const void *bias;
} tsl_cuda_mm;

int tsl_cuda_matmul(tsl_backend *be, tsl_stream *s, const tsl_cuda_mm *p);
int tsl_cuda_gemm_cache_create(tsl_cuda_gemm_cache **out);
void tsl_cuda_gemm_cache_destroy(tsl_cuda_gemm_cache *cache);

/* ---- kernel launchers shared between files ---- */

/* db[cols] += Σ_rows x[rows, cols] (x bf16), deterministic (reduce.cu) */
int tsl_cuda_column_sums(tsl_backend *be, tsl_stream *s, float *db, const void *x, int64_t rows,
                         int64_t cols);
/* c[m, n] (row stride ldc) = beta·c, in c_dtype; beta 0 writes zeros (elementwise.cu) */
int tsl_cuda_scale_matrix(tsl_backend *be, tsl_stream *s, void *c, tessel_dtype c_dtype, int64_t m,
                          int64_t n, int64_t ldc, float beta);
/* out[rows, cols] = v[cols] broadcast over rows, bf16 (elementwise.cu) */
int tsl_cuda_broadcast_rows(tsl_backend *be, tsl_stream *s, void *out, const void *v, int64_t rows,
                            int64_t cols);

/* ---- the kernel table (contracts in kernels/backend.h) ---- */

int tsl_cuda_copy(tsl_backend *be, void *dst, const void *src, uint64_t bytes, tsl_copy_kind kind,
                  tsl_stream *s);
int tsl_cuda_memset_zero(tsl_backend *be, void *dst, uint64_t bytes, tsl_stream *s);
int tsl_cuda_host_alloc(tsl_backend *be, uint64_t bytes, void **out);
void tsl_cuda_host_free(tsl_backend *be, void *p);

int tsl_cuda_stream_create(tsl_backend *be, tsl_stream **out);
void tsl_cuda_stream_destroy(tsl_backend *be, tsl_stream *s);
int tsl_cuda_stream_sync(tsl_backend *be, tsl_stream *s);
int tsl_cuda_event_record(tsl_backend *be, tsl_stream *s, tsl_event **out);
int tsl_cuda_event_wait(tsl_backend *be, tsl_stream *waiter, tsl_event *e);
void tsl_cuda_event_free(tsl_backend *be, tsl_event *e);
int tsl_cuda_event_query(tsl_backend *be, tsl_event *e);
void tsl_cuda_events_release(tsl_backend *be);

int tsl_cuda_gemm(tsl_backend *be, tsl_stream *s, int trans_a, int trans_b, int64_t m, int64_t n,
                  int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                  float beta, void *c, int64_t ldc, tessel_dtype c_dtype);
int tsl_cuda_linear_forward(tsl_backend *be, tsl_stream *s, void *out, const void *inp,
                            const void *w, const void *bias, int64_t rows, int64_t ic, int64_t oc);
int tsl_cuda_linear_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                             const void *dout, const void *inp, const void *w, int64_t rows,
                             int64_t ic, int64_t oc);

int tsl_cuda_layernorm_forward(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                               const void *inp, const void *w, const void *b, int64_t rows,
                               int64_t cols, float eps);
int tsl_cuda_layernorm_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                                const void *dout, const void *inp, const void *w, const float *mean,
                                const float *rstd, int64_t rows, int64_t cols);
int tsl_cuda_layernorm_stats(tsl_backend *be, tsl_stream *s, double *sums, const void *inp,
                             int64_t rows, int64_t cols);
int tsl_cuda_layernorm_apply(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                             const double *sums, const void *inp, const void *w, const void *b,
                             int64_t rows, int64_t cols, int64_t total_cols, float eps);
int tsl_cuda_layernorm_backward_stats(tsl_backend *be, tsl_stream *s, double *sums, float *dw,
                                      float *db, const void *dout, const void *inp, const void *w,
                                      const float *mean, const float *rstd, int64_t rows,
                                      int64_t cols);
int tsl_cuda_layernorm_backward_apply(tsl_backend *be, tsl_stream *s, void *dinp,
                                      const double *sums, const void *dout, const void *inp,
                                      const void *w, const float *mean, const float *rstd,
                                      int64_t rows, int64_t cols, int64_t total_cols);

int tsl_cuda_rmsnorm_forward(tsl_backend *be, tsl_stream *s, void *out, float *rstd,
                             const void *inp, const void *w, int64_t rows, int64_t cols, float eps);
int tsl_cuda_rmsnorm_backward(tsl_backend *be, tsl_stream *s, void *dinp, float *dw,
                              const void *dout, const void *inp, const void *w, const float *rstd,
                              int64_t rows, int64_t cols);
int tsl_cuda_rmsnorm_stats(tsl_backend *be, tsl_stream *s, double *sums, const void *inp,
                           int64_t rows, int64_t cols);
int tsl_cuda_rmsnorm_apply(tsl_backend *be, tsl_stream *s, void *out, float *rstd,
                           const double *sums, const void *inp, const void *w, int64_t rows,
                           int64_t cols, int64_t total_cols, float eps);
int tsl_cuda_rmsnorm_backward_stats(tsl_backend *be, tsl_stream *s, double *sums, float *dw,
                                    const void *dout, const void *inp, const void *w,
                                    const float *rstd, int64_t rows, int64_t cols);
int tsl_cuda_rmsnorm_backward_apply(tsl_backend *be, tsl_stream *s, void *dinp,
                                    const double *sums, const void *dout, const void *inp,
                                    const void *w, const float *rstd, int64_t rows, int64_t cols,
                                    int64_t total_cols);

int tsl_cuda_attention_forward(tsl_backend *be, tsl_stream *s, void *out, float *lse,
                               const void *q, const void *k, const void *v,
                               const tsl_attn_shape *sh);
int tsl_cuda_attention_backward(tsl_backend *be, tsl_stream *s, void *dq, void *dk, void *dv,
                                const void *dout, const void *out, const float *lse,
                                const void *q, const void *k, const void *v,
                                const tsl_attn_shape *sh);
int tsl_cuda_rope(tsl_backend *be, tsl_stream *s, void *x, int64_t batch, int64_t seq,
                  int64_t heads, int64_t head_size, int64_t ld, int64_t pos_offset, tsl_rope_freqs freqs,
                  int inverse);

int tsl_cuda_gelu_forward(tsl_backend *be, tsl_stream *s, void *out, const void *inp, int64_t n);
int tsl_cuda_gelu_backward(tsl_backend *be, tsl_stream *s, void *dinp, const void *inp,
                           const void *dout, int64_t n);
int tsl_cuda_add(tsl_backend *be, tsl_stream *s, void *out, const void *a, const void *b, int64_t n);
int tsl_cuda_axpy(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *y, float alpha,
                  const void *x, int64_t n);
int tsl_cuda_scale(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *x, float alpha,
                   int64_t n);
int tsl_cuda_convert(tsl_backend *be, tsl_stream *s, void *dst, tessel_dtype dst_dtype,
                     const void *src, tessel_dtype src_dtype, int64_t n);
int tsl_cuda_swiglu_forward(tsl_backend *be, tsl_stream *s, void *out, const void *gate,
                            const void *up, int64_t n);
int tsl_cuda_swiglu_backward(tsl_backend *be, tsl_stream *s, void *dgate, void *dup,
                             const void *dout, const void *gate, const void *up, int64_t n);

int tsl_cuda_embed_tokens_forward(tsl_backend *be, tsl_stream *s, void *out, const int32_t *tokens,
                                  const void *wte, int64_t rows, int64_t width, int64_t vocab_begin,
                                  int64_t vocab);
int tsl_cuda_embed_positions_forward(tsl_backend *be, tsl_stream *s, void *out, const void *wpe,
                                     int64_t batch, int64_t seq, int64_t width);
int tsl_cuda_embed_tokens_backward(tsl_backend *be, tsl_stream *s, float *dwte, const void *dout,
                                   const int32_t *tokens, int64_t rows, int64_t width,
                                   int64_t vocab_begin, int64_t vocab);
int tsl_cuda_embed_positions_backward(tsl_backend *be, tsl_stream *s, float *dwpe,
                                      const void *dout, int64_t batch, int64_t seq, int64_t width);

int tsl_cuda_ce_rowmax(tsl_backend *be, tsl_stream *s, float *rowmax, const void *logits,
                       int64_t rows, int64_t vocab, int64_t valid);
int tsl_cuda_ce_sums(tsl_backend *be, tsl_stream *s, double *sums, const void *logits,
                     const float *rowmax, const int32_t *targets, int64_t rows,
                     int64_t vocab_begin, int64_t vocab, int64_t valid);
int tsl_cuda_ce_finish(tsl_backend *be, tsl_stream *s, float *losses, void *logits,
                       const float *rowmax, const double *sums, const int32_t *targets,
                       int64_t rows, int64_t vocab_begin, int64_t vocab, int64_t valid, float dscale);

int tsl_cuda_adamw(tsl_backend *be, tsl_stream *s, float *master, void *work, const float *grad,
                   float *m, float *v, int64_t n, float lr, float beta1, float beta2, float eps,
                   float weight_decay, float grad_scale, int64_t step);
int tsl_cuda_sumsq(tsl_backend *be, tsl_stream *s, double *out, const float *x, int64_t n);

/* ---- device communication (nccl.c) ---- */

int tsl_cuda_is_device_memory(tsl_backend *be, const void *p);
int tsl_cuda_dcomm_create(tsl_backend *be, int rank, int size, const tsl_dcomm_boot *boot, tsl_dcomm **out);
void tsl_cuda_dcomm_destroy(tsl_backend *be, tsl_dcomm *c);
int tsl_cuda_dcomm_post(tsl_backend *be, tsl_dcomm *c, const tsl_coll *op, tsl_stream *s);
int tsl_cuda_dcomm_group(tsl_backend *be, int begin);
/* Wait for stream s; while communicators live, by polling the stream and
** their asynchronous errors (a failure aborts them: TESSEL_E_COMM). */
int tsl_cuda_comms_wait(tsl_backend *be, cudaStream_t s);
/* Poll the communicators once: 0, or TESSEL_E_COMM after aborting them. */
int tsl_cuda_comms_check(tsl_backend *be);
void tsl_cuda_comms_release(tsl_backend *be);

#ifdef __cplusplus
}
#endif

#endif /* TSL_CUDA_H */
