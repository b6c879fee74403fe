/*
** kernels/backend.h — the device backend interface.
**
** One table per backend (ggml style): the CPU backend is built into
** libtessel; the CUDA backend is a separate shared object, libtessel-cuda.so,
** that the core loads at run time through the entry symbol
** TSL_BACKEND_ENTRY_NAME. The core is the only caller; plugins reach these
** kernels through the host API, which adds groups and accounting.
**
** Conventions, shared by every kernel:
**  - pointers are device memory; `act` buffers are in the backend's
**    act_dtype (fp32 on the CPU, bf16 on CUDA), parameters' gradients,
**    master weights, optimizer state and the statistics of the norms and of
**    attention (mean, rstd, lse) are fp32;
**  - row-major everywhere; shapes are written [rows, cols] in the comments;
**  - forward kernels overwrite their outputs; backward kernels overwrite
**    activation gradients and ACCUMULATE (+=) parameter gradients, so
**    gradient accumulation over micro-batches needs no extra pass;
**  - every kernel is ordered on `stream` and returns 0 or a negative
**    tessel_status; on the CPU backend streams are NULL and calls complete
**    before they return.
*/
#ifndef TSL_BACKEND_H
#define TSL_BACKEND_H

#include <stdint.h>
#include "rope_freq.h"
#include "tessel/plugin.h"

/* 2: attention without stored probabilities (q, k, v strides, grouped
** kv heads, lse); RMS norm, rotary embedding and SwiGLU kernels.
** 3: attention over a key/value cache (tsl_attn_shape's past and kv_seq,
** offered where attention_past is set).
** 4: attention in a sliding window (tsl_attn_shape's window, offered where
** attention_window is set).
** 5: the layer norm's epsilon passed to its forward kernels (GPT-2's
** layer_norm_epsilon). */
#define TSL_BACKEND_VERSION 5
#define TSL_BACKEND_ENTRY_NAME "tessel_backend_v1"

typedef struct tsl_backend tsl_backend;
typedef struct tsl_stream tsl_stream; /* backend-defined; NULL on the CPU */
typedef struct tsl_event tsl_event;

typedef struct tsl_backend_opts {
  uint32_t size;
  int threads;      /* CPU threads for kernels; 0 = all cores          */
  int device_index; /* which GPU, chosen by local rank                 */
  void (*log)(int level, const char *fmt, ...);
  int rank;         /* world rank, for the backend's error messages     */
  double comm_timeout; /* seconds a wait for device collectives may take
                       ** before the rank gives up (0: forever)          */
} tsl_backend_opts;

/* The shape of one attention call (see attention_forward). past and
** kv_seq are 0 except when decoding with a cache of keys and values: then
** the seq queries of a sequence are its positions past .. past + seq − 1,
** and k, v hold kv_seq rows per sequence (at least past + seq), of which
** query t sees the first past + t + 1. window W > 0 (only where
** attention_window is set) narrows what a query sees to the last W of
** those positions, its own included (a sliding window); 0: all of them. */
typedef struct tsl_attn_shape {
  int64_t batch, seq, heads, kv_heads, head_size, ldq, ldk, ldv;
  int64_t past, kv_seq;
  int64_t window;
} tsl_attn_shape;

typedef enum { TSL_COPY_H2D = 0, TSL_COPY_D2H = 1, TSL_COPY_D2D = 2, TSL_COPY_H2H = 3 } tsl_copy_kind;

/* ---- device communication (the optional section at the end of the table) ---- */

typedef struct tsl_dcomm tsl_dcomm; /* a device communicator over one group of ranks */

typedef enum {
  TSL_COLL_ALL_REDUCE = 0,
  TSL_COLL_REDUCE_SCATTER,
  TSL_COLL_ALL_GATHER,
  TSL_COLL_BROADCAST,
  TSL_COLL_REDUCE,
  TSL_COLL_SEND,
  TSL_COLL_RECV,
  TSL_COLL_ALL_TO_ALL
} tsl_coll_kind;

/* One collective. `count` is in elements of `dtype` per rank's block, as the
** core's comm calls count them: the whole vector of an all-reduce, broadcast,
** reduce, send or recv; the received elements per rank of a reduce-scatter
** (send holds count × group size); the sent elements per rank of an
** all-gather (recv holds count × group size); the block sent to each rank
** of an all-to-all (send and recv hold count × group size). `peer` is the root of a
** broadcast or reduce and the other rank of a send or recv. In place as
** MPI and NCCL define it: send == recv, or, for reduce-scatter and
** all-gather, the block at this rank's offset of the larger buffer. */
typedef struct tsl_coll {
  tsl_coll_kind kind;
  const void *send;
  void *recv;
  uint64_t count;
  tessel_dtype dtype;
  tessel_redop op;
  int peer;
} tsl_coll;

/* What a backend needs from the ranks of a group to make a device
** communicator. The core passes functions that run over the group's MPI
** communicator, so a backend bootstraps without linking MPI; both are
** collective over the group and return 0 or a negative status. */
typedef struct tsl_dcomm_boot {
  /* Broadcast `bytes` of host memory from the group's rank 0 to the others. */
  int (*bcast)(void *arg, void *buf, int bytes);
  /* Every rank's `status`, combined: 0 when all are 0, else the lowest
  ** (one failed rank's), on every rank alike. */
  int (*agree)(void *arg, int status);
  void *arg;
} tsl_dcomm_boot;

struct tsl_backend {
  uint32_t size;
  uint32_t version;       /* TSL_BACKEND_VERSION */
  const char *name;       /* "cpu", "cuda" */
  tessel_dtype act_dtype; /* dtype of activations and working weights */
  void *ctx;              /* backend state, passed back as `be` */

  /* ---- lifecycle and device ---- */
  int (*init)(tsl_backend *be, const tsl_backend_opts *opts);
  void (*shutdown)(tsl_backend *be);
  /* Bytes of device memory free right now (UINT64_MAX when unbounded). */
  uint64_t (*device_free_bytes)(tsl_backend *be);
  /* One line naming the device, e.g. "AMD EPYC, 2 threads, OpenBLAS 0.3.21". */
  const char *(*describe)(tsl_backend *be);

  /* ---- memory ---- */
  int (*device_alloc)(tsl_backend *be, uint64_t bytes, void **out);
  void (*device_free)(tsl_backend *be, void *p);
  int (*host_alloc)(tsl_backend *be, uint64_t bytes, void **out); /* pinned under CUDA */
  void (*host_free)(tsl_backend *be, void *p);
  int (*copy)(tsl_backend *be, void *dst, const void *src, uint64_t bytes, tsl_copy_kind,
              tsl_stream *s);
  int (*memset_zero)(tsl_backend *be, void *dst, uint64_t bytes, tsl_stream *s);

  /* ---- streams and events (CPU: all NULL-safe no-ops) ---- */
  int (*stream_create)(tsl_backend *be, tsl_stream **out);
  void (*stream_destroy)(tsl_backend *be, tsl_stream *s);
  int (*stream_sync)(tsl_backend *be, tsl_stream *s);
  int (*event_record)(tsl_backend *be, tsl_stream *s, tsl_event **out);
  int (*event_wait)(tsl_backend *be, tsl_stream *waiter, tsl_event *e);
  void (*event_free)(tsl_backend *be, tsl_event *e);

  /* ---- dense algebra ---- */
  /* C[m,n] = alpha * op(A) op(B) + beta * C; A, B in act dtype; C in c_dtype
  ** (act dtype or fp32). op(A) is [m,k], op(B) is [k,n]; lda/ldb/ldc are the
  ** row strides of A, B, C as stored. */
  int (*gemm)(tsl_backend *be, tsl_stream *s, int trans_a, int trans_b, int64_t m, int64_t n,
              int64_t k, float alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
              float beta, void *c, int64_t ldc, tessel_dtype c_dtype);
  /* out[rows,oc] = inp[rows,ic] · w[ic,oc] + bias[oc] (bias may be NULL) */
  int (*linear_forward)(tsl_backend *be, tsl_stream *s, void *out, const void *inp, const void *w,
                        const void *bias, int64_t rows, int64_t ic, int64_t oc);
  /* dinp[rows,ic] = dout · wᵀ (skipped if NULL); dw[ic,oc] += inpᵀ · dout;
  ** db[oc] += Σ_rows dout (skipped if NULL) */
  int (*linear_backward)(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                         const void *dout, const void *inp, const void *w, int64_t rows,
                         int64_t ic, int64_t oc);

  /* ---- layer norm ----
  ** One-pass version for a whole hidden dimension, and a split version for
  ** a hidden dimension cut across ranks: `stats` kernels produce per-row
  ** partial sums that the core all-reduces between the two halves. */
  /* out = (inp - mean) * rstd * w + b over cols, rstd = 1/√(var + eps);
  ** mean, rstd: [rows] */
  int (*layernorm_forward)(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                           const void *inp, const void *w, const void *b, int64_t rows,
                           int64_t cols, float eps);
  /* dinp = (overwrite), dw += , db += */
  int (*layernorm_backward)(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                            const void *dout, const void *inp, const void *w, const float *mean,
                            const float *rstd, int64_t rows, int64_t cols);
  /* sums[rows,2] = (Σx, Σx²) over this rank's cols */
  int (*layernorm_stats)(tsl_backend *be, tsl_stream *s, double *sums, const void *inp,
                         int64_t rows, int64_t cols);
  /* mean/rstd from the reduced sums over total_cols, then normalise */
  int (*layernorm_apply)(tsl_backend *be, tsl_stream *s, void *out, float *mean, float *rstd,
                         const double *sums, const void *inp, const void *w, const void *b,
                         int64_t rows, int64_t cols, int64_t total_cols, float eps);
  /* sums[rows,2] = (Σ dout·w, Σ dout·w·x̂) over this rank's cols; dw, db += */
  int (*layernorm_backward_stats)(tsl_backend *be, tsl_stream *s, double *sums, float *dw,
                                  float *db, const void *dout, const void *inp, const void *w,
                                  const float *mean, const float *rstd, int64_t rows, int64_t cols);
  /* dinp from the reduced sums over total_cols */
  int (*layernorm_backward_apply)(tsl_backend *be, tsl_stream *s, void *dinp, const double *sums,
                                  const void *dout, const void *inp, const void *w,
                                  const float *mean, const float *rstd, int64_t rows, int64_t cols,
                                  int64_t total_cols);

  /* ---- RMS norm ----
  ** The layer norm's two forms without the mean and the bias: one pass for
  ** a whole hidden dimension, and a split form whose `stats` kernels give
  ** per-row partial sums that the core all-reduces between the phases. */
  /* out = inp · rstd · w over cols, rstd = 1/√(mean(inp²) + eps): [rows] */
  int (*rmsnorm_forward)(tsl_backend *be, tsl_stream *s, void *out, float *rstd, const void *inp,
                         const void *w, int64_t rows, int64_t cols, float eps);
  /* dinp (overwrite), dw += */
  int (*rmsnorm_backward)(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, const void *dout,
                          const void *inp, const void *w, const float *rstd, int64_t rows,
                          int64_t cols);
  /* sums[rows] = Σx² over this rank's cols */
  int (*rmsnorm_stats)(tsl_backend *be, tsl_stream *s, double *sums, const void *inp, int64_t rows,
                       int64_t cols);
  /* rstd from the reduced sums over total_cols, then normalise */
  int (*rmsnorm_apply)(tsl_backend *be, tsl_stream *s, void *out, float *rstd, const double *sums,
                       const void *inp, const void *w, int64_t rows, int64_t cols,
                       int64_t total_cols, float eps);
  /* sums[rows] = Σ dout·w·x over this rank's cols; dw += */
  int (*rmsnorm_backward_stats)(tsl_backend *be, tsl_stream *s, double *sums, float *dw,
                                const void *dout, const void *inp, const void *w,
                                const float *rstd, int64_t rows, int64_t cols);
  /* dinp from the reduced sums over total_cols */
  int (*rmsnorm_backward_apply)(tsl_backend *be, tsl_stream *s, void *dinp, const double *sums,
                                const void *dout, const void *inp, const void *w,
                                const float *rstd, int64_t rows, int64_t cols,
                                int64_t total_cols);

  /* ---- attention ----
  ** Causal and grouped-query, by the FlashAttention algorithm: the forward
  ** walks key blocks with an online softmax and saves only each row's
  ** log-sum-exp; the backward recomputes the probabilities block by block
  ** from q, k and lse. Memory is O(B·heads·T), never T×T.
  ** q [B, T, heads, hs] with rows (one time step) ldq elements apart; k, v
  ** [B, T, kv_heads, hs] with row strides ldk, ldv; query head h reads kv
  ** head h / (heads / kv_heads); scores are scaled by 1/√hs. out
  ** [B, T, heads·hs] contiguous; lse [B, heads, T] fp32, the log-sum-exp of
  ** each row's scaled scores, saved for backward. GPT-2's fused c_attn
  ** output [rows, 3C] is q = qkv, k = qkv + C, v = qkv + 2C with ld 3C.
  ** With sh->past > 0 (only where attention_past is set) lse may be NULL;
  ** backward is for past 0 alone. */
  int (*attention_forward)(tsl_backend *be, tsl_stream *s, void *out, float *lse, const void *q,
                           const void *k, const void *v, const tsl_attn_shape *sh);
  /* dq, dk, dv overwritten, with the strides of q, k, v; D = rowsum(dout·out)
  ** is computed internally */
  int (*attention_backward)(tsl_backend *be, tsl_stream *s, void *dq, void *dk, void *dv,
                            const void *dout, const void *out, const float *lse, const void *q,
                            const void *k, const void *v, const tsl_attn_shape *sh);

  /* ---- rotary position embedding ----
  ** In place on x [B, T, heads, hs] (rows ld elements apart), Hugging
  ** Face's rotate-half convention: for i < hs/2 the pair (x_i, x_{i+hs/2})
  ** turns by a = pos·inv_freq_i, pos = t + pos_offset, inv_freq_i element
  ** i of tsl_rope_inv_freqs(freqs, hs, pos_offset + T, ...) (rope_freq.h:
  ** plain or scaled; freqs that are not tsl_rope_freqs_valid are refused),
  ** angle and its cos/sin in fp32 as transformers computes them.
  ** inverse = 1 turns by −a: the backward of the rotation. */
  int (*rope)(tsl_backend *be, tsl_stream *s, void *x, int64_t batch, int64_t seq, int64_t heads,
              int64_t head_size, int64_t ld, int64_t pos_offset, tsl_rope_freqs freqs, int inverse);

  /* ---- elementwise ---- */
  int (*gelu_forward)(tsl_backend *be, tsl_stream *s, void *out, const void *inp, int64_t n);
  /* dinp = gelu'(inp) · dout (overwrite) */
  int (*gelu_backward)(tsl_backend *be, tsl_stream *s, void *dinp, const void *inp,
                       const void *dout, int64_t n);
  int (*add)(tsl_backend *be, tsl_stream *s, void *out, const void *a, const void *b, int64_t n);
  /* y += alpha·x in dtype */
  int (*axpy)(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *y, float alpha,
              const void *x, int64_t n);
  int (*scale)(tsl_backend *be, tsl_stream *s, tessel_dtype dtype, void *x, float alpha, int64_t n);
  /* convert n elements between dtypes (fp32 master ↔ act dtype) */
  int (*convert)(tsl_backend *be, tsl_stream *s, void *dst, tessel_dtype dst_dtype,
                 const void *src, tessel_dtype src_dtype, int64_t n);
  /* out = silu(gate) · up, silu(x) = x·σ(x) */
  int (*swiglu_forward)(tsl_backend *be, tsl_stream *s, void *out, const void *gate,
                        const void *up, int64_t n);
  /* dgate = dout·up·silu'(gate), dup = dout·silu(gate) (both overwritten) */
  int (*swiglu_backward)(tsl_backend *be, tsl_stream *s, void *dgate, void *dup, const void *dout,
                         const void *gate, const void *up, int64_t n);

  /* ---- embedding ---- */
  /* out[b,t,:] = wte[tok - v0] if v0 <= tok < v0+vn else 0 */
  int (*embed_tokens_forward)(tsl_backend *be, tsl_stream *s, void *out, const int32_t *tokens,
                              const void *wte, int64_t rows, int64_t width, int64_t vocab_begin,
                              int64_t vocab);
  /* out[b,t,:] += wpe[t] */
  int (*embed_positions_forward)(tsl_backend *be, tsl_stream *s, void *out, const void *wpe,
                                 int64_t batch, int64_t seq, int64_t width);
  /* dwte[tok - v0] += dout[b,t] for tokens in range */
  int (*embed_tokens_backward)(tsl_backend *be, tsl_stream *s, float *dwte, const void *dout,
                               const int32_t *tokens, int64_t rows, int64_t width,
                               int64_t vocab_begin, int64_t vocab);
  /* dwpe[t] += Σ_b dout[b,t] */
  int (*embed_positions_backward)(tsl_backend *be, tsl_stream *s, float *dwpe, const void *dout,
                                  int64_t batch, int64_t seq, int64_t width);

  /* ---- softmax cross-entropy over a (possibly split) vocabulary ----
  ** Three phases so that a split vocabulary only needs two small
  ** all-reduces between them: rowmax (reduce MAX), sums (reduce SUM), finish.
  ** Only the first `valid` of the `vocab` columns are vocabulary; the rest
  ** pad the table, are left out of the softmax and get a zero gradient. */
  /* rowmax[rows] = max_{j < valid} logits[r, j] */
  int (*ce_rowmax)(tsl_backend *be, tsl_stream *s, float *rowmax, const void *logits,
                   int64_t rows, int64_t vocab, int64_t valid);
  /* sums[rows,2] = (Σ_{j<valid} exp(l - rowmax), l[target] if target in range else 0) */
  int (*ce_sums)(tsl_backend *be, tsl_stream *s, double *sums, const void *logits,
                 const float *rowmax, const int32_t *targets, int64_t rows, int64_t vocab_begin,
                 int64_t vocab, int64_t valid);
  /* losses[r] = log Σ + rowmax - l[target]; if dscale != 0 the logits are
  ** overwritten with (softmax - onehot) · dscale (0 past `valid`) */
  int (*ce_finish)(tsl_backend *be, tsl_stream *s, float *losses, void *logits,
                   const float *rowmax, const double *sums, const int32_t *targets, int64_t rows,
                   int64_t vocab_begin, int64_t vocab, int64_t valid, float dscale);

  /* ---- optimizer and reductions ---- */
  /* AdamW with bias correction at 1-based `step`; grad multiplied by
  ** grad_scale; decoupled weight decay; writes `work` (act dtype) from the
  ** updated master unless work == master. */
  int (*adamw)(tsl_backend *be, tsl_stream *s, float *master, void *work, const float *grad,
               float *m, float *v, int64_t n, float lr, float beta1, float beta2, float eps,
               float weight_decay, float grad_scale, int64_t step);
  /* *out += Σ x² (fp32 x, fp64 accumulation); out in device memory */
  int (*sumsq)(tsl_backend *be, tsl_stream *s, double *out, const float *x, int64_t n);

  /* ---- optional: appended in interface 1, NULL on the CPU backend ----
  ** A reader copies min(size, sizeof) of the table, so a backend built
  ** before these members existed reads them as NULL. */

  /* The last failure as one line naming the call, file:line, rank and
  ** device ("" when none); valid even after a failed init, so the core can
  ** say why a device did not start. */
  const char *(*last_error)(tsl_backend *be);
  /* 1 when everything recorded before e has completed, 0 when not yet,
  ** negative on error. */
  int (*event_query)(tsl_backend *be, tsl_event *e);

  /* Device communication. When dcomm_create is set, the core gives every
  ** group of two or more ranks a device communicator and runs collectives
  ** whose buffers are device memory through it, on its communication
  ** stream; host buffers stay on MPI. */
  /* 1 when p is device memory (collectives on it go to the device engine) */
  int (*is_device_memory)(tsl_backend *be, const void *p);
  /* Collective over the group: this rank is `rank` of `size`; bootstrap
  ** data (NCCL's unique id) goes from rank 0 through boot->bcast, and the
  ** ranks settle through boot->agree that every one of them succeeded, so
  ** the call fails on all of them or on none. */
  int (*dcomm_create)(tsl_backend *be, int rank, int size, const tsl_dcomm_boot *boot, tsl_dcomm **out);
  void (*dcomm_destroy)(tsl_backend *be, tsl_dcomm *c);
  /* Enqueue one collective on stream s (asynchronous, like a kernel). */
  int (*dcomm_post)(tsl_backend *be, tsl_dcomm *c, const tsl_coll *op, tsl_stream *s);
  /* begin = 1 opens a group of collectives that are launched together when
  ** it closes (begin = 0): sends and receives that two ranks post to each
  ** other must be in one group, or each waits for the other. */
  int (*dcomm_group)(tsl_backend *be, int begin);

  /* ---- optional: fusions, appended in interface 2; NULL where a backend
  ** has none (the core then runs the parts). Each does what its parts do,
  ** the same arithmetic per element, in fewer passes over memory. ---- */

  /* pre = inp·w + bias as linear_forward, and out = gelu(pre) */
  int (*linear_gelu_forward)(tsl_backend *be, tsl_stream *s, void *pre, void *out, const void *inp,
                             const void *w, const void *bias, int64_t rows, int64_t ic, int64_t oc);
  /* dinp = gelu'(inp)·dout as gelu_backward, and db[cols] += Σ_rows dinp:
  ** the bias gradient of the linear layer before the GELU */
  int (*gelu_backward_bias)(tsl_backend *be, tsl_stream *s, void *dinp, float *db, const void *inp,
                            const void *dout, int64_t rows, int64_t cols);
  /* sum = a + b, then layernorm_forward of sum into out */
  int (*add_layernorm_forward)(tsl_backend *be, tsl_stream *s, void *sum, void *out, float *mean,
                               float *rstd, const void *a, const void *b, const void *w,
                               const void *bias, int64_t rows, int64_t cols, float eps);
  /* layernorm_backward adding its input gradient into dinp */
  int (*layernorm_backward_add)(tsl_backend *be, tsl_stream *s, void *dinp, float *dw, float *db,
                                const void *dout, const void *inp, const void *w,
                                const float *mean, const float *rstd, int64_t rows, int64_t cols);
  /* ce_rowmax, ce_sums and ce_finish over a whole vocabulary (vocab_begin
  ** 0, nothing to reduce between them) in one pass */
  int (*ce_fused)(tsl_backend *be, tsl_stream *s, float *losses, void *logits, const int32_t *targets,
                  int64_t rows, int64_t vocab, int64_t valid, float dscale);

  /* ---- optional: appended in interface 3 ---- */
  /* 1 when attention_forward takes a past > 0 (decoding over a cache of
  ** keys and values); 0: it refuses one, and a decoder runs the whole
  ** context again for each token. */
  int attention_past;

  /* ---- optional: appended in interface 4 ---- */
  /* 1 when attention_forward and attention_backward take a window > 0;
  ** 0: a model with model.sliding_window is refused on this backend. */
  int attention_window;
};

/* The CPU backend, always built in. */
const tsl_backend *tsl_cpu_backend(void);

/* Signature of a loadable backend's entry symbol. */
typedef const tsl_backend *(*tsl_backend_entry_fn)(uint32_t version);

#endif /* TSL_BACKEND_H */
