/*
** core/model/model.h — the model: a chain of units run on micro-batches.
**
** Unit 0 is the embedding, units 1..L the blocks, unit L+1 the head (final
** norm, LM head, loss). Each unit is a list of ops from the architecture's
** description (arch.h), run by one interpreter with the strategy's hooks
** around every unit and its layer primitives (or the core's) inside.
** Activation buffers are sized from the strategy's geometry, one set per
** slot (a pipeline keeps several micro-batches in flight); gradient buffers
** are one set, reused unit after unit. The residual stream entering unit u
** is one buffer per slot, the boundary a pipeline stage sends and receives;
** its gradient is one buffer updated in place as backward walks down.
**
** The struct is private to core/model: other modules use these calls.
*/
#ifndef TSL_MODEL_H
#define TSL_MODEL_H

#include "model/params.h"
#include "state/layouts.h"
#include "state/state.h"

typedef struct tsl_model tsl_model;

/* Fill host buffers inputs/targets [micro_batch, seq_len] for micro-batch
** `micro` of the current step (or evaluation batch). */
typedef tsl_status (*tsl_batch_fn)(void *ctx, int micro, int32_t *inputs, int32_t *targets);

/* Model dimensions for the settings and the mesh: the global batch split
** over the mesh's data-parallel ranks and micro-batches (config errors at
** train.batch_size / train.micro_batch_size when it does not split). */
tsl_status tsl_model_dims_for(const tsl_runtime *rt, tessel_model_dims *out);
/* The same for one sequence on one rank (sampling, export). */
void tsl_model_dims_single(const tsl_runtime *rt, tessel_model_dims *out);

/* Fill the fields a strategy's geometry left zero with the single-process
** values (tessel_geometry) and check the result against the model; the
** error says which field does not fit. */
tsl_status tsl_geometry_complete(const tessel_model_dims *d, tessel_geometry *g);
/* The reduction scratch the core keeps for a geometry (cross-entropy and
** norm statistics per row, the gradient norm), taken when activations are
** allocated so that a strategy that plans memory at setup sees it. */
uint64_t tsl_model_scratch_bytes(const tessel_geometry *g);
/* The bytes activation storage takes on the device (every slot, the
** workspace of recomputed parts, offload staging, the activation
** gradients) and on the host (offloaded kept parts) for geometry g, each
** unit as the strategy placed its activations: what materialize
** allocates. */
tsl_status tsl_model_act_bytes(const tsl_model *m, const tessel_geometry *g, uint64_t *device, uint64_t *host);

/* The two halves of building a model: plan registers the parameters and
** asks the strategy for layouts, geometry and placements (no device
** memory; what `tessel check` validates); materialize allocates and
** initialises with *seed. create does both. A NULL seed leaves the
** parameters unset, for a caller that writes every one of them
** (tsl_scatter_state) before any use: a billion parameters take tens of
** seconds to draw. */
tsl_status tsl_model_plan(tsl_runtime *rt, const tessel_model_dims *dims, tsl_model **out);
tsl_status tsl_model_materialize(tsl_model *m, const uint64_t *seed);
tsl_status tsl_model_create(tsl_runtime *rt, const tessel_model_dims *dims, const uint64_t *seed, tsl_model **out);
void tsl_model_destroy(tsl_model *m);

void tsl_model_set_batch(tsl_model *m, tsl_batch_fn fn, void *ctx);

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

/* With TESSEL_OP_TIMES=1 (model/optime.c): print (rank 0 prints) each op's
** time per training step after the first, largest first, as a share of
** `step_s` (the mean time of those `steps` steps), then the time no op
** accounts for. Does nothing otherwise. */
void tsl_model_report_op_times(const tsl_model *m, double step_s, int64_t steps);
/* The logits of the last evaluation micro-batch's rows on this rank (the
** head's vocabulary slice), to read the whole forward's output (the tests
** against transformers): [rows, vocab] in act dtype. Generation uses
** tsl_model_decode, which makes the last row's alone. */
tsl_status tsl_model_logits(tsl_model *m, const void **logits, int64_t *rows, int64_t *vocab);

/* Generation with a cache of keys and values (decode.c), for one sequence
** of an inference model without a strategy, on a backend whose attention
** takes a past (the CPU's). open makes the cache for model.seq_len
** positions. decode runs the next n tokens at positions past .. past + n − 1
** and points *logits at the last one's [vocab] logits (device memory,
** valid until the next step); past + n may not pass the cache's size. room
** is how many positions the cache has left; reset empties it. */
tsl_status tsl_model_decode_open(tsl_model *m);
tsl_status tsl_model_decode(tsl_model *m, const int32_t *tokens, int64_t n, const void **logits);
int64_t tsl_model_decode_room(const tsl_model *m);
void tsl_model_decode_reset(tsl_model *m);

/* Accessors. */
tsl_runtime *tsl_model_runtime(const tsl_model *m);
const tessel_model_dims *tsl_model_dims(const tsl_model *m);
const tessel_geometry *tsl_model_geometry(const tsl_model *m);
const tsl_arch *tsl_model_arch(const tsl_model *m);
tsl_params *tsl_model_params(tsl_model *m);
tsl_state *tsl_model_state(tsl_model *m);
const tsl_layouts *tsl_model_layouts(const tsl_model *m);
/* A parameter's local storage as compute uses it. */
void tsl_model_view(const tsl_model *m, int index, tessel_param_view *out);
/* The unit's public description, and its op i with global parameter indices. */
const tessel_unit_info *tsl_model_unit(const tsl_model *m, int unit);
const tessel_op *tsl_model_op(const tsl_model *m, int unit, int op);

#endif
