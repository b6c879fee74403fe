/*
** core/compute/compute.h — kernels as the core and plugins call them.
**
** Each function is one backend kernel, or, when a dimension is split over
** a group of ranks, the backend's two-phase version with the small
** all-reduce between the phases (norm statistics over a split hidden
** dimension, softmax statistics over a split vocabulary, token embedding
** over a split vocabulary). With group == NULL they are plain local kernels.
** These are the functions behind tessel_kernel_api.
*/
#ifndef TSL_COMPUTE_H
#define TSL_COMPUTE_H

#include "runtime/runtime.h"

/* Layer norm or RMS norm (a->variant) over a->cols; with a group, cols is
** this rank's slice of a hidden dimension of total_cols split over it. */
tsl_status tsl_norm_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, const tessel_norm_args *a,
                            int64_t total_cols);
tsl_status tsl_norm_backward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, const tessel_norm_args *a,
                             int64_t total_cols);
tsl_status tsl_attention_forward(tsl_runtime *rt, tsl_stream *s, const tessel_attention_args *a);
tsl_status tsl_attention_backward(tsl_runtime *rt, tsl_stream *s, const tessel_attention_args *a);
/* GELU (b unused) or SwiGLU: out = silu(a) · b. */
tsl_status tsl_activation_forward(tsl_runtime *rt, tsl_stream *s, int variant, void *out, const void *a,
                                  const void *b, int64_t n);
tsl_status tsl_activation_backward(tsl_runtime *rt, tsl_stream *s, int variant, void *da, void *db,
                                   const void *dout, const void *a, const void *b, int64_t n);
tsl_status tsl_embedding_forward(tsl_runtime *rt, tsl_stream *s, tessel_group *g, void *out,
                                 const int32_t *tokens, const void *table, const void *positions, int64_t batch,
                                 int64_t seq, int64_t width, int64_t vocab_begin, int64_t vocab);
tsl_status tsl_embedding_backward(tsl_runtime *rt, tsl_stream *s, float *dtable, float *dpositions,
                                  const void *dout, const int32_t *tokens, int64_t batch, int64_t seq,
                                  int64_t width, int64_t vocab_begin, int64_t vocab);
/* Cross-entropy over vocabulary columns [vocab_begin, +vocab) of a
** group-split vocabulary; columns at and past the model's real vocabulary
** (a padded table's extra rows) are masked. */
tsl_status tsl_cross_entropy(tsl_runtime *rt, tsl_stream *s, tessel_group *g, float *losses, void *logits,
                             const int32_t *targets, int64_t rows, int64_t vocab_begin, int64_t vocab,
                             float dlogits_scale);

/* One update of the configured optimizer (AdamW with the config's
** hyper-parameters, decay off when u->no_decay) over device buffers. */
tsl_status tsl_optim_update(tsl_runtime *rt, tsl_stream *s, const tessel_optim_update *u, const tessel_optim_step *hp);

/* Device scratch of at least `bytes`, valid until the next call. */
tsl_status tsl_scratch(tsl_runtime *rt, uint64_t bytes, void **out);

/* The host-API kernel table. */
const tessel_kernel_api *tsl_host_kernels(void);

#endif
