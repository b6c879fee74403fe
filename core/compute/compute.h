/*
** core/compute/compute.h — kernels as the core and plugins call them.
**
** Each function is one backend kernel, or, when a dimension is split over
** a group of ranks, the backend's two-phase version with the small
** all-reduce between the phases (layer-norm statistics over a split hidden
** dimension, softmax statistics over a split vocabulary, token embedding
** over a split vocabulary). With group == NULL they are plain local kernels.
** These are the functions behind tessel_kernel_api.
*/
#ifndef TSL_COMPUTE_H
#define TSL_COMPUTE_H

#include "runtime/runtime.h"

tsl_status tsl_layernorm_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, void *out, float *mean,
                                 float *rstd, const void *inp, const void *w, const void *b, int64_t rows,
                                 int64_t cols, int64_t total_cols);
tsl_status tsl_layernorm_backward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, void *dinp, float *dw,
                                  float *db, const void *dout, const void *inp, const void *w,
                                  const float *mean, const float *rstd, int64_t rows, int64_t cols,
                                  int64_t total_cols);
/* Causal attention over GPT-2's fused qkv (q, k, v as three column blocks
** of a->qkv); a->lse holds the saved log-sum-exp, a->out the output, which
** the backward reads too. */
tsl_status tsl_attention_forward(tsl_runtime *rt, tsl_stream *s, const tessel_attention_args *a);
tsl_status tsl_attention_backward(tsl_runtime *rt, tsl_stream *s, const tessel_attention_args *a);
tsl_status tsl_embedding_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, void *out,
                                 const int32_t *tokens, const void *wte, const void *wpe, int64_t batch,
                                 int64_t seq, int64_t width, int64_t vocab_begin, int64_t vocab);
tsl_status tsl_embedding_backward(tsl_runtime *rt, tsl_stream *s, float *dwte, float *dwpe, const void *dout,
                                  const int32_t *tokens, int64_t batch, int64_t seq, int64_t width,
                                  int64_t vocab_begin, int64_t vocab);
tsl_status tsl_cross_entropy(tsl_runtime *rt, tsl_stream *s, tessel_group *g, float *losses, void *logits,
                             const int32_t *targets, int64_t rows, int64_t vocab_begin, int64_t vocab,
                             float dlogits_scale);

/* Device scratch of at least `bytes`, valid until the next call. */
tsl_status tsl_scratch(tsl_runtime *rt, uint64_t bytes, void **out);

/* The host-API kernel table. */
const tessel_kernel_api *tsl_host_kernels(void);

#endif
