/*
** core/model/gpt.h — the GPT-2 model as a chain of units.
**
** Unit 0 is the embedding, units 1..L the transformer blocks, unit L+1 the
** head (final layer norm, tied LM head, loss). Each unit runs on one
** micro-batch in one activation slot; the strategy's communication hooks
** run around it, and the strategy's layer primitives (or the core's local
** ones) do the math. Activation buffers are sized from the strategy's
** geometry, one set per slot (a pipeline keeps several micro-batches in
** flight); gradient buffers are one set, reused block after block.
**
** The residual stream entering unit u is resid[u] of the slot; the
** gradient flowing back through the residual stream is one buffer, dres,
** updated in place as backward walks down the units.
*/
#ifndef TSL_GPT_H
#define TSL_GPT_H

#include "model/params.h"

/* Fill host buffers inputs/targets [micro_batch, seq_len] for micro-batch
** `micro` of the current step (or evaluation batch). */
typedef tsl_status (*tsl_batch_fn)(void *ctx, int micro, int32_t *inputs, int32_t *targets);

typedef struct tsl_block_acts {
  void *ln1, *qkv, *att, *atty, *attproj, *res2, *ln2, *fch, *fch_gelu, *fcproj;
  float *ln1_mean, *ln1_rstd, *ln2_mean, *ln2_rstd;
} tsl_block_acts;

typedef struct tsl_slot {
  void *arena;            /* one allocation holding everything below */
  void **resid;           /* [units + 1]: input of unit u; NULL when not on this rank */
  tsl_block_acts *blocks; /* [layers] */
  void *lnf;
  float *lnf_mean, *lnf_rstd;
  int32_t *tokens, *targets; /* device, [micro_batch * seq_len] */
  uint64_t loaded_serial;    /* the step (or evaluation batch) the tokens are for */
  int loaded_micro;          /* and the micro-batch */
} tsl_slot;

struct tsl_model {
  tsl_runtime *rt;
  tessel_model_dims dims;
  tsl_params params;
  tessel_geometry geo;
  tessel_layer_ops plugin_ops; /* zero-filled copy: NULL = core version */
  tsl_slot *slots;
  int n_slots;
  void *grad_arena;
  void *dres, *dtmp, *dln, *dfc, *dfc_gelu, *datty, *dqkv, *dlnf, *logits;
  float *losses;                        /* [micro_steps * rows] per-token losses */
  int32_t *host_inputs, *host_targets; /* staging for the batch function */
  float *host_losses;                   /* staging for reading losses back */
  tsl_batch_fn batch;
  void *batch_ctx;
  int training;          /* head computes dlogits and backward runs */
  uint64_t serial;       /* bumped per step or evaluation batch */
  float dloss;           /* 1 / tokens in the global batch */
};

/* Build the model for `dims` (layers, heads, channels, seq_len, vocab_size,
** micro_batch, micro_steps, data_ranks filled in): parameters, layouts,
** geometry, storage, initialisation with `seed`. */
tsl_status tsl_model_create(tsl_runtime *rt, const tessel_model_dims *dims, uint64_t seed, tsl_model **out);
/* The two halves of create: plan registers parameters and asks the
** strategy for layouts and geometry (no device memory; what `tessel check`
** validates); materialize allocates and initialises. */
tsl_status tsl_model_plan(tsl_runtime *rt, const tessel_model_dims *dims, tsl_model **out);
tsl_status tsl_model_materialize(tsl_model *m, uint64_t seed);
/* Model dimensions for the settings and the mesh: the global batch split
** over the mesh's data-parallel ranks and micro-batches (config errors at
** train.batch_size / train.micro_batch_size when it does not split). */
tsl_status tsl_model_dims_for(const tsl_runtime *rt, tessel_model_dims *out);
void tsl_model_destroy(tsl_model *m);

/* One unit of one micro-batch, with the strategy's hooks around it. */
tsl_status tsl_model_forward(tsl_model *m, int micro, int slot, int unit);
tsl_status tsl_model_backward(tsl_model *m, int micro, int slot, int unit);
tsl_status tsl_model_boundary(tsl_model *m, int slot, int unit, void **act, void **grad, uint64_t *count);

/* A training step's forward and backward over all micro-batches: the
** strategy's train_step, or forward-all-then-backward-all per micro-batch.
** Zeroes core-stored gradients first; ends with grads_finish. */
tsl_status tsl_model_train_step(tsl_model *m);
/* Forward only, over `micro_steps` evaluation micro-batches. */
tsl_status tsl_model_eval_step(tsl_model *m, int micro_steps);
/* Sum and count of the per-token losses this rank owns, over the micro-
** batches of the last step (reads device memory: synchronises). */
tsl_status tsl_model_loss_sum(tsl_model *m, int micro_steps, double *sum, double *count);

/* A parameter's local storage as compute uses it. */
void tsl_model_view(const tsl_model *m, int index, tessel_param_view *out);
/* Parameter indices used by a unit; returns how many (at most cap written). */
int tsl_model_unit_params(const tsl_model *m, int unit, int *out, int cap);

/* Default layer primitives (ops.c). */
tsl_status tsl_op_linear_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_linear_args *a);
tsl_status tsl_op_linear_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_linear_args *a);
tsl_status tsl_op_layernorm_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_layernorm_args *a);
tsl_status tsl_op_layernorm_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_layernorm_args *a);
tsl_status tsl_op_attention_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_attention_args *a);
tsl_status tsl_op_attention_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_attention_args *a);
tsl_status tsl_op_embedding_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_embedding_args *a);
tsl_status tsl_op_embedding_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_embedding_args *a);
tsl_status tsl_op_head(tsl_model *m, const tessel_op_ctx *c, const tessel_head_args *a);

#endif
