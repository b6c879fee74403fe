/*
** core/model/internal.h — the model's private state, shared by the files
** of core/model only.
*/
#ifndef TSL_MODEL_INTERNAL_H
#define TSL_MODEL_INTERNAL_H

#include "model/model.h"

/* What a unit keeps from its forward to its backward, and what it runs
** again before its backward (recompute.c). Buffers and statistics that are
** not kept are transient: they live in the workspace every unit shares. */
typedef struct tsl_unit_plan {
  int recompute;                          /* TESSEL_RECOMPUTE_* */
  tessel_tier tier;                       /* where the kept part waits: DEVICE or HOST */
  uint8_t keep[TSL_UNIT_MAX_ACTS];        /* own buffers (not views, not the stream ends) */
  uint8_t keep_saved[TSL_UNIT_MAX_OPS];   /* an op's statistics (norm, attention) */
  uint8_t rerun[TSL_UNIT_MAX_OPS];        /* forward ops run again before backward */
  int n_rerun;
} tsl_unit_plan;

/* A unit as the interpreter runs it. */
typedef struct tsl_unit {
  const tsl_unit_decl *decl;
  tessel_unit_info info;
  tessel_op ops[TSL_UNIT_MAX_OPS];       /* public form, global parameter indices */
  int kind_index;                       /* 0 embedding, 1 block, 2 head: which grad set */
  tsl_unit_plan plan;
} tsl_unit;

/* One unit's activations in one slot. Kept buffers of a unit placed on the
** host point into a staging buffer while the unit runs (offload.c). */
typedef struct tsl_unit_acts {
  void *buf[TSL_UNIT_MAX_ACTS];          /* NULL for views and absent stream ends */
  float *saved[TSL_UNIT_MAX_OPS][2];     /* norm: mean, rstd; attention: lse */
  void *host;                            /* HOST tier: the kept part between its passes */
  uint64_t kept_bytes;                   /* size of the kept part */
  int over_stage;                        /* its transient part lies over staging buffer 1 (acts.c) */
} tsl_unit_acts;

/* A device buffer that holds the kept part of a host-placed unit while it
** runs or waits to run (offload.c). */
typedef struct tsl_stage {
  void *buf;               /* in the workspace */
  int slot, unit;          /* whose kept part it holds; unit -1: none */
  int valid;               /* it holds that part's current values */
  tsl_event *copied;       /* the last copy into or out of it, on the offload stream */
  tsl_event *computed;     /* the last compute that used it, on the compute stream */
  uint64_t last_use;       /* for choosing the least recently used */
} tsl_stage;

typedef struct tsl_kv_cache tsl_kv_cache;

typedef struct tsl_slot {
  void *arena;            /* one allocation holding everything below */
  void **resid;           /* [units + 1]: stream entering unit u; NULL when not on this rank */
  tsl_unit_acts *units;   /* [units] */
  int32_t *tokens, *targets; /* device, [micro_batch * seq_len] */
  int64_t loaded_step;    /* which (step, micro) the tokens are for */
  int loaded_micro;
} tsl_slot;

/* The gradient buffers of one unit kind, shared by every unit of that kind. */
typedef struct tsl_grad_set {
  void *buf[TSL_UNIT_MAX_ACTS];
} tsl_grad_set;

struct tsl_model {
  tsl_runtime *rt;
  tsl_arch arch;
  tessel_model_dims dims;
  tsl_params params;
  tsl_state state;
  tsl_layouts layouts;
  tessel_geometry geo;
  tessel_layer_ops plugin_ops; /* zero-filled copy: NULL = core version */
  tsl_unit *units;             /* [dims.units] */
  tsl_slot *slots;
  int n_slots;
  void *grad_arena;
  tsl_grad_set grads[3];       /* embedding, block, head */
  void *workspace;             /* the staging buffers, then transient buffers of the unit running now */
  void *host_arena;            /* per slot, the kept parts of host-placed units */
  tsl_stage stage[2];          /* one for the unit running, one being filled */
  uint64_t stage_bytes, stage_uses;
  tsl_stream *offload;         /* copies to and from the host tier */
  void *dres, *dtmp, *logits;  /* logits: [rows, vocab] for a strategy's head, a block of rows for the core's */
  void *all_logits;            /* every row's logits, made on demand (tsl_model_logits) */
  float *losses;                        /* [micro_steps * rows] per-token losses */
  int32_t *host_inputs, *host_targets; /* staging for the batch function */
  float *host_losses;                   /* staging for reading losses back */
  tsl_batch_fn batch;
  void *batch_ctx;
  int training;          /* head computes dlogits and backward runs */
  int64_t step_serial;   /* bumped per step or evaluation batch */
  float dloss;           /* 1 / tokens in the global batch */
  tsl_kv_cache *kv;      /* decoding (decode.c); NULL: none */
  /* op_reruns' last unit plan, a function of the unit's description and
  ** placement alone, asked op after op and unit after unit of one kind
  ** (host_model.c); reruns_decl NULL: none */
  const tsl_unit_decl *reruns_decl;
  tsl_unit_plan reruns_plan;
  struct tsl_optime *optime; /* per-op times (optime.c); NULL: not asked for */
};

/* decode.c: while a decode step runs (tsl_decoding), the position of its
** first row (tsl_decode_past), and attention that appends the step's keys
** and values to the cache and attends over it. */
int tsl_decoding(const tsl_model *m);
int64_t tsl_decode_past(const tsl_model *m);
tsl_status tsl_decode_attention(tsl_model *m, int unit, const tessel_attention_args *a);
void tsl_decode_free(tsl_model *m);

/* acts.c: sizes and storage of activations and their gradients. */
int64_t tsl_act_rows(const tsl_model *m, const tsl_act_decl *a);
int64_t tsl_act_width(const tsl_model *m, const tsl_unit_decl *u, int act);
/* The rows and columns norm op `od` normalises: its input's, or for a
** per-head norm (TESSEL_NORM_RMS_HEADS) rows · heads rows of one head. */
void tsl_norm_shape(const tsl_model *m, const tsl_unit_decl *u, const tsl_op_decl *od, int64_t *rows, int64_t *cols);
/* The activation's storage (a view resolves into its parent) and its row
** stride in elements. */
void *tsl_act_ptr(const tsl_model *m, int slot, int unit, int act, int64_t *ld);
/* The gradient buffer of an activation, for the unit being run backward. */
void *tsl_act_grad(const tsl_model *m, int unit, int act, int64_t *ld);
int tsl_act_on_rank(const tsl_model *m, int unit);
tsl_status tsl_acts_allocate(tsl_model *m);
void tsl_acts_free(tsl_model *m);
/* Bytes the activation storage takes on the device and on the host with
** unit u planned as plans[u] (plans of every unit). */
tsl_status tsl_acts_size(const tsl_model *m, const tsl_unit_plan *plans, uint64_t *device, uint64_t *host);
/* Point the kept buffers of (slot, unit) at `base` (a part carved as the
** plan says). */
void tsl_acts_bind_kept(tsl_model *m, int slot, int unit, void *base);

/* fit.c: refuse (framed as the strategy's hook) what the ops the core runs
** on this rank cannot compute with: an ABSENT weight of a unit that runs
** here, a core-stored part whose shape is not the one the geometry implies,
** rows that the core's embedding, head, linear or norm would not keep. */
tsl_status tsl_fit_check(tsl_model *m);
/* Does the core run `op` in this direction (forward 0, backward 1; -1:
** either), rather than the strategy's layer op? */
int tsl_core_runs(const tsl_model *m, const tessel_op *op, int backward);
/* Before unit `unit` runs (forward 0, backward 1): every plugin-stored
** parameter a core op of it reads has its data (and, to take gradients,
** its gradient) bound. */
tsl_status tsl_fit_bound(tsl_model *m, int unit, int backward);

/* recompute.c: the plan of a unit's activations under a placement. */
tsl_status tsl_unit_plan_for(const tsl_unit_decl *d, const tessel_placement *p, tsl_unit_plan *out);
/* "none", "selective", "full" */
const char *tsl_recompute_name(int recompute);

/* offload.c: the kept part of a host-placed unit on its way between the
** tiers. enter before the unit's ops run (backward: its kept part fetched
** unless a prefetch brought it), leave after (forward in training: copied
** out to the host); prefetch starts fetching a unit's part ahead of its
** backward. Other units pass through, taking staging buffer 1 while they
** run if their transient part lies over it. */
tsl_status tsl_offload_enter(tsl_model *m, int slot, int unit, int backward);
tsl_status tsl_offload_leave(tsl_model *m, int slot, int unit, int backward);
tsl_status tsl_offload_prefetch(tsl_model *m, int slot, int unit);
void tsl_offload_free(tsl_model *m);

/* exec.c: one unit's ops forward and backward. */
tsl_status tsl_exec_forward(tsl_model *m, const tessel_op_ctx *c, int slot, int unit, int micro);
tsl_status tsl_exec_backward(tsl_model *m, const tessel_op_ctx *c, int slot, int unit);

/* ops.c: the core's versions of the layer primitives. */
tsl_status tsl_op_linear_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_linear_args *a);
tsl_status tsl_op_linear_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_linear_args *a);
tsl_status tsl_op_norm_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_norm_args *a);
tsl_status tsl_op_norm_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_norm_args *a);
tsl_status tsl_op_attention_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_attention_args *a);
tsl_status tsl_op_attention_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_attention_args *a);
tsl_status tsl_op_embedding_forward(tsl_model *m, const tessel_op_ctx *c, const tessel_embedding_args *a);
tsl_status tsl_op_embedding_backward(tsl_model *m, const tessel_op_ctx *c, const tessel_embedding_args *a);
tsl_status tsl_op_head(tsl_model *m, const tessel_op_ctx *c, const tessel_head_args *a);
/* Rows per block of the core's head, which never holds all rows' logits. */
int64_t tsl_op_head_block_rows(const tsl_model *m);
/* out [rows, vocab] = inp · wᵀ: rows' logits at once (tsl_model_logits,
** and decoding's last row). */
tsl_status tsl_op_head_logits(tsl_model *m, const void *inp, const tessel_param_view *w, int64_t rows, void *out);

#endif
