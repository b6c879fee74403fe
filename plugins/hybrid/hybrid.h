/*
** plugins/hybrid/hybrid.h — Megatron-style hybrid parallelism on one mesh.
**
** The world is a mesh dp × pp × tp (tp varies fastest, so a tensor-parallel
** group is a run of consecutive ranks):
**   tp  1D tensor parallelism: c_attn and c_fc split by columns (whole heads
**       of q, k and v), the two c_proj split by rows, wte split by vocabulary
**       rows with a cross-entropy that never gathers the logits; layer norms
**       and wpe replicated. With sequence parallelism the residual stream is
**       cut into contiguous row shards over the same group.
**   pp  pipeline stages, each a contiguous run of units, driven by a 1F1B
**       schedule; the tied wte lives on the first and the last stage.
**   dp  data parallelism over the rest, with the optimizer state (ZeRO-1)
**       and the reduced gradients (ZeRO-2) sharded over it.
** The plugin always owns the optimizer (AdamW through the host's kernel), so
** one code path serves every ZeRO stage: stage 0 keeps the moments of the
** whole local part, stages 1 and 2 a 1/dp share of it.
*/
#ifndef HYBRID_H
#define HYBRID_H

#include "tessel/plugin.h"

#define HYBRID_MAX_STAGES 256
enum { AXIS_DP = 0, AXIS_PP = 1, AXIS_TP = 2 };

/* A parameter this rank stores, as the optimizer, the norm and the
** gradient synchronisation see it: a range of the flat local buffers. */
typedef struct hybrid_param {
  int index;
  uint64_t offset, numel; /* elements, in the flat master/grad buffers */
  float wd_scale;         /* 0 for TESSEL_PARAM_NO_DECAY, else 1 */
  int in_norm;            /* counted by this rank's tensor/pipeline position */
  int partial_over_tp;    /* a layer norm under sequence parallelism */
  int ready_unit;         /* lowest unit on this stage that uses it */
} hybrid_param;

/* A contiguous range of the flat gradient buffer all-reduced over dp in
** one call, launched once backward has passed its ready unit. */
typedef struct hybrid_bucket {
  uint64_t offset, count;
  int ready_unit;
  tessel_work *work;
  int launched;
} hybrid_bucket;

/* A range [begin, end) of the flat local buffer and where its AdamW
** moments start in this rank's moment storage. */
typedef struct hybrid_range {
  uint64_t begin, end, moment;
} hybrid_range;

/* One bucket of the data-parallel partition: dp pieces of `share`
** elements from `begin`, rank r owning piece r. */
typedef struct hybrid_chunk {
  uint64_t begin, share;
} hybrid_chunk;

typedef struct hybrid {
  const tessel_host_api *api;
  tessel_host *host;
  const tessel_cfg *section;

  /* options */
  int tp, pp, dp, sp, zero, microbatches; /* microbatches 0: any */
  int stage_layers[HYBRID_MAX_STAGES];
  int n_stage_layers; /* 0: balanced */
  uint64_t bucket_bytes;

  /* this rank on the mesh */
  int tp_rank, stage, dp_rank;

  /* plan, from the model's dimensions */
  int planned;
  tessel_model_dims dims;
  int unit_first, unit_last, slots;
  int64_t rows, vocab_begin, vocab;
  uint64_t act_size; /* bytes per activation element */

  tessel_group *g_tp, *g_pp, *g_dp, *g_all;

  /* tensor-parallel scratch: a gathered and a not-yet-reduced [B·T, C] */
  void *gathered, *partial;
  void *head_logits;  /* [B·T, V/tp] under sequence parallelism */
  float *head_losses; /* [B·T] under sequence parallelism */

  /* flat local storage (the core's) */
  hybrid_param *params;
  int n_params;
  int wte; /* its entry in params, -1 when not on this stage */
  float *master, *grad;
  void *work;
  uint64_t numel;

  /* data-parallel partition of the flat buffer, in chunks of about
  ** bucket_size; the tail [tail, numel) past the last chunk (fewer than dp
  ** elements) is everybody's */
  hybrid_chunk *chunks;
  int n_chunks;
  uint64_t tail;
  hybrid_range *owned;   /* whose moments this rank keeps and updates */
  hybrid_range *counted; /* what it answers for once among its dp replicas */
  int n_owned, n_counted;
  float *m, *v;
  uint64_t moments;  /* elements of m and of v */
  float *rs_scratch; /* one chunk's reduced piece (ZeRO-2) */
  float *peer_wte;   /* the other end's wte gradient (pp > 1) */
  float *state_tmp;  /* a parameter's moment, gathered over dp */
  double *norm_dev;  /* the squared norm being summed */

  hybrid_bucket *buckets;
  int n_buckets;
} hybrid;

/* layout.c */
tessel_status hybrid_plan(hybrid *h);
tessel_status hybrid_layout(void *inst, const tessel_param_info *p, tessel_layout *out);
tessel_status hybrid_geometry(void *inst, tessel_geometry *g);

/* tp_ops.c */
extern const tessel_layer_ops hybrid_layer_ops;

/* pipeline.c */
tessel_status hybrid_train_step(void *inst, int micro_steps);
tessel_status hybrid_eval_step(void *inst, int micro_steps);

/* grads.c */
tessel_status hybrid_plan_buckets(hybrid *h);
tessel_status hybrid_after_backward(void *inst, int unit, int micro);
tessel_status hybrid_grads_finish(void *inst);
tessel_status hybrid_grad_norm(void *inst, double *sumsq);

/* zero.c */
typedef tessel_status (*hybrid_piece_fn)(hybrid *h, const hybrid_param *p, uint64_t lo, uint64_t hi, uint64_t moment,
                                         void *ctx);
/* Call fn for every non-empty intersection [lo, hi) of a parameter's range
** with one of the ranges r[0..nr) (only parameter `only` when it is >= 0);
** `moment` is where lo's AdamW moments are. Stops at the first error. */
tessel_status hybrid_each_piece(hybrid *h, const hybrid_range *r, int nr, int only, hybrid_piece_fn fn, void *ctx);
/* Cut the flat buffer into chunks, and list the owned and counted ranges. */
tessel_status hybrid_plan_partition(hybrid *h);
tessel_status hybrid_optimizer_step(void *inst, const tessel_optim_step *hp);
tessel_status hybrid_state_read(void *inst, int param, tessel_state which, float *host_dst);
tessel_status hybrid_state_write(void *inst, int param, tessel_state which, const float *host_src);

/* storage.c */
tessel_status hybrid_setup_storage(hybrid *h);
void hybrid_free_storage(hybrid *h);

#endif
