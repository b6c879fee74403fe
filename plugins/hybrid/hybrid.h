/*
** plugins/hybrid/hybrid.h — Megatron-style hybrid parallelism on one mesh.
**
** The world is a mesh dp × pp × tp (tp varies fastest, so a tensor-parallel
** group is a run of consecutive ranks):
**   tp  1D tensor parallelism by parameter role: linears into the heads or
**       the MLP split by columns (whole query and key/value heads), linears
**       back to the hidden width split by rows, the embedding table and LM
**       head by vocabulary rows with a cross-entropy that never gathers the
**       logits; norms, position tables and output biases replicated. With
**       sequence parallelism the residual stream is cut into contiguous row
**       shards over the same group.
**   pp  pipeline stages, each a contiguous run of units, driven by a 1F1B
**       schedule; a tied embedding lives on the first and the last stage.
**   dp  data parallelism over the rest. ZeRO-1 asks the core to shard the
**       optimizer slots over dp, ZeRO-2 the reduced gradients too: the
**       core's optimizer updates this rank's pieces and all-gathers them.
*/
#ifndef HYBRID_H
#define HYBRID_H

#include "tessel/sdk.h"

#define HYBRID_MAX_STAGES 256
enum { AXIS_DP = 0, AXIS_PP = 1, AXIS_TP = 2 };

/* A run of the flat gradient buffer summed over a group outside the
** buckets: norms partial over row shards or heads (tp), a tied table's two ends (pp). */
typedef struct hybrid_range {
  uint64_t begin, count;
} hybrid_range;

typedef struct hybrid {
  tessel_sdk x;

  /* options */
  int tp, pp, dp, sp, zero, microbatches; /* microbatches 0: any */
  int stage_layers[HYBRID_MAX_STAGES];
  int n_stage_layers; /* 0: balanced */
  uint64_t bucket_bytes;

  /* this rank on the mesh */
  int tp_rank, stage;

  /* plan, from the model's dimensions */
  int planned;
  tessel_model_dims dims;
  int unit_first, unit_last, slots;
  int64_t rows, vocab_begin, vocab;
  uint64_t act_size; /* bytes per activation element */

  tessel_group *g_tp, *g_pp, *g_dp;

  /* tensor-parallel scratch: a gathered and a not-yet-reduced [B·T, C] */
  void *gathered, *partial;
  void *head_logits;  /* [B·T, V/tp] under sequence parallelism */
  float *head_losses; /* [B·T] under sequence parallelism */

  float *grad;                   /* the flat gradient buffer */
  hybrid_range *norms;           /* norm gradients partial over tp (SP; per-head norms) */
  int n_norms;
  hybrid_range tied;             /* a tied table's gradient (count 0: none here) */
  float *peer_tied;              /* the other end's */
  tessel_buckets buckets;        /* all-reduce (ZeRO 0/1) or shard (ZeRO-2) buckets over dp */
} hybrid;

/* plugin.c: the bytes of the tensor-parallel scratch (a gathered and a not
** yet reduced [B·T, C]; under sequence parallelism the head's logits and
** losses on the last stage). */
#define HYBRID_SCRATCH 4
void hybrid_scratch_bytes(const hybrid *h, uint64_t bytes[HYBRID_SCRATCH]);

/* layout.c */
tessel_status hybrid_plan(hybrid *h);
tessel_status hybrid_layout(void *inst, const tessel_param_info *p, tessel_layout *out);
tessel_status hybrid_geometry(void *inst, tessel_geometry *g);
int hybrid_on_stage(const hybrid *h, int unit);

/* tp_ops.c */
extern const tessel_layer_ops hybrid_layer_ops;

/* estimate.c */
tessel_status hybrid_enumerate(void *inst, const tessel_plan_query *q);
tessel_status hybrid_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out);

/* pipeline.c */
tessel_status hybrid_train_step(void *inst, int micro_steps);
tessel_status hybrid_eval_step(void *inst, int micro_steps);

/* grads.c */
/* The runs of norm gradients (under sequence parallelism) and the tied
** table's part among this rank's parts: info[i], its flat offset and
** elements (into h->norms, h->n_norms, h->tied). */
tessel_status hybrid_ranges(hybrid *h, const tessel_param_info *info, const uint64_t *offset, const uint64_t *numel,
                            int n);
tessel_status hybrid_setup_grads(hybrid *h);
void hybrid_free_grads(hybrid *h);
tessel_status hybrid_after_backward(void *inst, int unit, int micro);
tessel_status hybrid_grads_finish(void *inst);

#endif
