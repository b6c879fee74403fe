/*
** tessel/plugin.h — the strategy plugin ABI, version 2.
**
** This header is the whole contract between the tessel core and a parallel
** strategy plugin: nothing a plugin may rely on is left to reading the
** core's source. A plugin includes it, fills in one `tessel_strategy` table
** and exports exactly one symbol, TESSEL_STRATEGY_ENTRY, that returns the
** table. It never links libtessel: every service it needs (logging, errors,
** config, memory tiers, streams, collectives, kernels, the model, its state)
** reaches it through the `tessel_host_api` table the core passes to
** `create`. The optional support library (tessel/sdk.h) is compiled into the
** plugin and uses only this header.
**
** The model is data. A strategy never sees "GPT-2": it sees units (the
** embedding, the blocks, the head), each a list of ops (linear, norm,
** rotary, attention, activation, residual, embedding, head) that name their
** weights by parameter index, parameters that declare a role (a linear into
** the heads or the MLP, a linear back to the hidden width, a norm, an
** embedding table …) and dimensions by role (hidden, heads, kv heads, head
** size, ffn, vocabulary). It splits by role and never parses a name.
**
** Versioning. TESSEL_ABI_VERSION packs major.minor. The major is part of the
** entry symbol's name (`tessel_strategy_v2`); a minor release only appends
** fields to the end of structs, hooks to the end of tables and values to
** enums. Every struct that crosses the boundary begins with `uint32_t size`
** = sizeof as compiled on the side that allocated it. The rules, tested by
** building plugins against an older (trimmed) and a newer (padded) copy of
** this header:
**  - structs the core fills for the plugin (dims, infos, views, stats …):
**    the plugin sets `size` = sizeof before the call; the core writes
**    min(size, its sizeof) bytes and leaves `size` as the plugin set it, so
**    fields the core does not know read as the zeros the plugin put there;
**  - structs and tables the plugin fills for the core (the strategy table,
**    layer ops, mesh, layout, geometry, placement): the core reads
**    min(size, its sizeof) into zeroed storage, so fields the plugin did not
**    know read as 0/NULL, and 0/NULL always means "absent / core default";
**  - out-structs the core passes to a hook (`tessel_mesh *out` …) arrive
**    zeroed with `size` = the core's sizeof: a plugin writes a field added
**    after 2.0 only when TESSEL_HAS(out, T, field).
**
** Threading. Hooks run on the rank's driver thread, one at a time, in the
** order documented for each family. Host calls are made from that thread,
** except `log` and `set_error`, which any thread may call. A plugin that
** starts threads joins them in `destroy`.
**
** Errors. Every hook and every host call returns tessel_status: 0 is
** success, negative values are error kinds; results come back through
** out-parameters. Detail goes through `api->set_error(host, status, ...)`,
** which returns its status so `return api->set_error(...)` reads well; the
** message lives in the plugin instance's own buffer. The core prefixes the
** strategy's name, the hook and the rank when it reports the error, and
** `log` prefixes the strategy's name: a plugin's messages never name the
** plugin themselves. A failed host call leaves its own message, which the
** core reports when the hook passes the status on without set_error.
*/
#ifndef TESSEL_PLUGIN_H
#define TESSEL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSEL_ABI(major, minor) (((uint32_t)(major) << 16) | (uint32_t)(minor))
#define TESSEL_ABI_MAJOR(v) ((uint32_t)(v) >> 16)
#define TESSEL_ABI_MINOR(v) ((uint32_t)(v) & 0xffffu)
#define TESSEL_ABI_VERSION TESSEL_ABI(2, 1)

/* The entry symbol a plugin exports; the major version is in its name. */
#define TESSEL_STRATEGY_ENTRY tessel_strategy_v2
#define TESSEL_STRATEGY_ENTRY_NAME "tessel_strategy_v2"

/* True when struct *p of type T (allocated by the other side) has field f. */
#define TESSEL_HAS(p, T, f) ((p)->size >= offsetof(T, f) + sizeof(((T *)0)->f))

#if defined(__GNUC__)
#define TESSEL_EXPORT __attribute__((visibility("default")))
#define TESSEL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TESSEL_EXPORT
#define TESSEL_PRINTF(fmt, args)
#endif

/* ---------------------------------------------------------------- status */

typedef int32_t tessel_status;
enum {
  TESSEL_OK = 0,
  TESSEL_E_CONFIG = -1,      /* invalid configuration or option: a user error */
  TESSEL_E_NOMEM = -2,       /* a memory tier cannot hold the request          */
  TESSEL_E_UNSUPPORTED = -3, /* not possible here; an optional hook may return
                                it to ask for the core default                 */
  TESSEL_E_VERSION = -4,     /* ABI, plugin build or file format mismatch      */
  TESSEL_E_COMM = -5,        /* a collective or point-to-point transfer failed */
  TESSEL_E_DEVICE = -6,      /* the device backend failed                      */
  TESSEL_E_IO = -7,          /* a file could not be read or written            */
  TESSEL_E_INTERNAL = -8,    /* a broken invariant: a bug, in core or plugin   */
  TESSEL_E_NUMERIC = -9      /* NaN or infinity where a number was needed      */
};

enum { TESSEL_LOG_ERROR = 0, TESSEL_LOG_WARN, TESSEL_LOG_INFO, TESSEL_LOG_DEBUG };

/* --------------------------------------------------------- opaque handles */

typedef struct tessel_host tessel_host;     /* one per plugin instance       */
typedef struct tessel_cfg tessel_cfg;       /* a read-only YAML node         */
typedef struct tessel_group tessel_group;   /* a communicator over mesh axes */
typedef struct tessel_work tessel_work;     /* an asynchronous transfer      */
typedef struct tessel_stream tessel_stream; /* an ordered device queue       */
typedef struct tessel_event tessel_event;   /* a point in a stream           */

/* ------------------------------------------------------------- data types */

typedef enum {
  TESSEL_F32 = 0, /* master weights, gradients, optimizer state   */
  TESSEL_BF16 = 1,
  TESSEL_F16 = 2,
  TESSEL_I32 = 3, /* token ids                                    */
  TESSEL_F64 = 4, /* reductions of scalars (loss sums, norms)      */
  TESSEL_U8 = 5   /* raw bytes                                     */
} tessel_dtype;
#define TESSEL_DTYPE_COUNT 6

/* Bytes per element of a dtype (0 for an unknown value). */
static inline size_t tessel_dtype_size(tessel_dtype dt) {
  switch (dt) {
    case TESSEL_F32: case TESSEL_I32: return 4;
    case TESSEL_BF16: case TESSEL_F16: return 2;
    case TESSEL_F64: return 8;
    case TESSEL_U8: return 1;
  }
  return 0;
}

typedef enum { TESSEL_SUM = 0, TESSEL_MAX = 1, TESSEL_MIN = 2 } tessel_redop;

/* Memory tiers. Every allocation lands in one tier and is counted in that
** tier's ledger. DEVICE is the accelerator's memory (on the CPU backend an
** ordinary heap region with the capacity from `device.memory_limit`), HOST
** is CPU memory (pinned under CUDA), NVME is file-backed: its "addresses" are
** opaque handles that only `mem->copy` understands. */
typedef enum { TESSEL_TIER_DEVICE = 0, TESSEL_TIER_HOST = 1, TESSEL_TIER_NVME = 2 } tessel_tier;
#define TESSEL_TIER_COUNT 3

/* What an allocation holds, for the ledger's split of each tier. */
typedef enum {
  TESSEL_MEM_PARAM = 0,   /* parameters (master or working copies)  */
  TESSEL_MEM_GRAD = 1,    /* gradients                               */
  TESSEL_MEM_OPTIM = 2,   /* optimizer state                         */
  TESSEL_MEM_ACT = 3,     /* activations and their gradients         */
  TESSEL_MEM_SCRATCH = 4  /* communication and kernel scratch        */
} tessel_mem_kind;
#define TESSEL_MEM_KIND_COUNT 5

typedef struct tessel_tier_stats {
  uint32_t size;
  uint64_t capacity;   /* bytes; UINT64_MAX when unbounded                */
  uint64_t in_use;     /* bytes currently allocated                       */
  uint64_t peak;       /* highest in_use since the last reset             */
  uint64_t model;      /* in_use that is PARAM, GRAD or OPTIM             */
  uint64_t non_model;  /* in_use that is ACT or SCRATCH                   */
  uint64_t bytes_in;   /* copied into this tier since the last reset      */
  uint64_t bytes_out;  /* copied out of this tier since then              */
  uint64_t params, grads, optim, acts, scratch; /* in_use by kind           */
} tessel_tier_stats;

/* ------------------------------------------------------------------ mesh */

/* A plugin arranges the world's ranks on a mesh of named axes; the last axis
** varies fastest (rank = Σ coord[i] · stride[i]). The core checks that the
** product of the sizes equals the world size and builds one communicator per
** axis set. `data_axes` is a bit mask of the axes over which ranks read
** different samples; the data-parallel degree is the product of their sizes
** and each such rank takes its slice of the global batch.
** Communicators are created collectively, on every rank at once, before
** `setup`: one per single axis, one for `data_axes`, one for the whole
** world, and one per extra axis set listed in `groups` (e.g. the x·z plane
** of 2.5D). Asking for any other set later is an error, never a hang. */
#define TESSEL_MESH_MAX_AXES 8
#define TESSEL_MESH_MAX_GROUPS 16
typedef struct tessel_mesh {
  uint32_t size;
  int32_t naxes;
  const char *names[TESSEL_MESH_MAX_AXES];
  int32_t sizes[TESSEL_MESH_MAX_AXES];
  uint32_t data_axes;
  int32_t n_groups;
  uint32_t groups[TESSEL_MESH_MAX_GROUPS];
} tessel_mesh;

/* ----------------------------------------------------------------- model */

/* What a dimension measures. A tensor dimension of role HEADS or KV_HEADS
** is that many heads of HEAD_SIZE elements each, so a split of it must keep
** whole heads; the others count elements. */
typedef enum {
  TESSEL_DIM_NONE = 0,
  TESSEL_DIM_HIDDEN = 1,    /* the residual stream's width                  */
  TESSEL_DIM_HEADS = 2,     /* query heads                                  */
  TESSEL_DIM_KV_HEADS = 3,  /* key/value heads (= HEADS without grouping)   */
  TESSEL_DIM_HEAD_SIZE = 4, /* elements per head                            */
  TESSEL_DIM_FFN = 5,       /* the MLP's inner width                        */
  TESSEL_DIM_VOCAB = 6,     /* vocabulary rows as stored (padded, see below) */
  TESSEL_DIM_POSITIONS = 7  /* positions of a learned position table        */
} tessel_dim;
#define TESSEL_DIM_COUNT 8

/* The model as a strategy sees it. The chain of units: unit 0 is the
** embedding, units 1..layers the blocks, unit layers+1 the head; pipeline
** schedules and communication hooks speak in units. */
typedef struct tessel_model_dims {
  uint32_t size;
  int64_t dim[TESSEL_DIM_COUNT]; /* global size of each dimension role       */
  int32_t layers;
  int32_t units;                 /* layers + 2                               */
  int32_t seq_len;
  int32_t micro_batch;           /* sequences per micro-batch on a data rank  */
  int32_t micro_steps;           /* micro-batches per optimizer step          */
  int32_t data_ranks;            /* data-parallel degree                      */
  tessel_dtype act_dtype;        /* activations and working weights          */
  int64_t vocab_valid;           /* real vocabulary; rows at and past it of a
                                    padded dim[VOCAB] are never a target and
                                    their logits are masked                   */
} tessel_model_dims;

/* Parameter roles: what a tensor is for, which is all a strategy needs to
** split it. Linear weights are stored [in, out]: out = in · W (+ b). */
typedef enum {
  TESSEL_ROLE_OTHER = 0,      /* nothing a split may rely on: keep it whole  */
  TESSEL_ROLE_EMBEDDING = 1,  /* token table [VOCAB, HIDDEN]; with
                                 TESSEL_PARAM_TIED also the LM head's weight */
  TESSEL_ROLE_POSITIONS = 2,  /* learned positions [POSITIONS, HIDDEN]       */
  TESSEL_ROLE_NORM = 3,       /* a norm's weight or bias [HIDDEN]            */
  TESSEL_ROLE_LINEAR_IN = 4,  /* [HIDDEN, out]: from the residual width into
                                 heads or the MLP (column-parallel)          */
  TESSEL_ROLE_BIAS_IN = 5,    /* [out]: its bias, cut with its columns       */
  TESSEL_ROLE_LINEAR_OUT = 6, /* [in, HIDDEN]: back to the residual width
                                 (row-parallel: partial sums reduced)       */
  TESSEL_ROLE_BIAS_OUT = 7,   /* [HIDDEN]: its bias, added once, after the
                                 reduction                                   */
  TESSEL_ROLE_HEAD = 8        /* an untied LM head [VOCAB, HIDDEN]           */
} tessel_param_role;

/* Parameter flags. */
#define TESSEL_PARAM_NO_DECAY (1u << 0) /* biases, norms: no weight decay       */
#define TESSEL_PARAM_TIED (1u << 1)     /* used by first_unit and last_unit     */

/* A parameter as the model registers it: the global (logical) tensor. */
#define TESSEL_MAX_SEGMENTS 4
typedef struct tessel_param_info {
  uint32_t size;
  int32_t index;            /* 0..count-1, in the order the model uses them  */
  const char *name;         /* its checkpoint name, for messages only        */
  tessel_param_role role;
  uint32_t flags;           /* TESSEL_PARAM_*                                */
  int32_t ndim;             /* 1 or 2                                        */
  int64_t shape[2];         /* global shape (shape[1] = 1 for 1-D tensors)   */
  tessel_dim dims[2];       /* what each dimension measures                  */
  int32_t segments;         /* the last dimension is `segments` runs laid end
                               to end (a fused q|k|v: 3); a split cuts each
                               run separately, so every part keeps whole
                               heads of each                               */
  tessel_dim segment_dims[TESSEL_MAX_SEGMENTS]; /* each run's role           */
  int32_t first_unit;       /* the lowest unit that uses it: its gradient is
                               final once backward has passed this unit     */
  int32_t last_unit;        /* the highest (≠ first_unit only when TIED)     */
} tessel_param_info;

/* Where a rank keeps its part of a parameter. The core allocates and
** initialises CORE-stored parts; a plugin that stores the part itself
** (ZeRO-3 chunks) says STORE_PLUGIN and later `bind`s pointers for compute.
**
**   REPLICATED  the whole tensor.
**   SPLIT       a block: dimension split[i].dim cut into split[i].parts equal
**               pieces, this rank holding piece split[i].index. On a
**               segmented dimension each run is cut separately.
**   FLAT        the elements [flat_begin, flat_end) of the row-major tensor.
**   ABSENT      nothing (the units that use it run on another stage).
*/
typedef enum {
  TESSEL_LAYOUT_REPLICATED = 0, TESSEL_LAYOUT_SPLIT = 1, TESSEL_LAYOUT_FLAT = 2, TESSEL_LAYOUT_ABSENT = 3
} tessel_layout_kind;
typedef enum { TESSEL_STORE_CORE = 0, TESSEL_STORE_PLUGIN = 1 } tessel_store;

typedef struct tessel_split {
  int32_t dim, parts, index;
} tessel_split;

typedef struct tessel_layout {
  uint32_t size;
  tessel_layout_kind kind;
  tessel_store store;
  int32_t nsplit;                /* SPLIT: how many dims are cut (1 or 2) */
  tessel_split split[2];
  uint64_t flat_begin, flat_end; /* FLAT                                  */
} tessel_layout;

/* A parameter's local storage as compute sees it right now.
**
** Core storage is flat: the parts of all CORE-stored parameters a rank
** holds lie one after the other, in parameter order with no padding, in one
** buffer per state (master, gradient, working copy; see state->flat), so a
** run of consecutive parameters is one range of each buffer. */
#define TESSEL_NO_OFFSET UINT64_MAX
typedef struct tessel_param_view {
  uint32_t size;
  void *data;           /* working weights in act_dtype (device tier)       */
  float *grad;          /* fp32 gradient (device tier), NULL if none bound   */
  float *master;        /* fp32 master weights; == data on an fp32 backend
                           whose master weights live on the device          */
  int64_t local_shape[2];
  uint64_t local_numel;
  uint64_t flat_offset; /* element offset in the flat core buffers, or
                           TESSEL_NO_OFFSET (plugin-stored or absent)       */
} tessel_param_view;

/* Geometry of the activations on this rank, per micro-batch. The core sizes
** every activation buffer from it. Zero fields (the plugin leaves them)
** mean the single-process value: rows = inner_rows = B·T, width = HIDDEN,
** batch = B, heads = HEADS, kv_heads = KV_HEADS, ffn = FFN, vocab_begin = 0,
** vocab = VOCAB, one slot, every unit on this rank. A buffer's width
** follows from what its columns measure: hidden → width, query heads →
** heads · head size, kv heads → kv_heads · head size, ffn → ffn. */
typedef struct tessel_geometry {
  uint32_t size;
  int64_t rows;         /* residual-stream rows (tokens) on this rank       */
  int64_t width;        /* residual-stream channels on this rank            */
  int64_t inner_rows;   /* rows inside attention and the MLP                */
  int64_t batch;        /* sequences seen by attention: inner_rows = batch·T */
  int64_t heads;        /* query heads on this rank                          */
  int64_t kv_heads;     /* key/value heads on this rank                      */
  int64_t ffn;          /* MLP inner columns on this rank                    */
  int64_t vocab_begin;  /* first vocabulary row held here                    */
  int64_t vocab;        /* vocabulary rows held here                         */
  int32_t loss_replica; /* 1: another rank already counts these rows' losses */
  int32_t act_slots;    /* activation sets kept at once (pipeline in-flight) */
  int32_t unit_first;   /* first unit that runs on this rank                 */
  int32_t unit_last;    /* last unit that runs on this rank                  */
} tessel_geometry;

/* ---------------------------------------------------------- units and ops */

typedef enum { TESSEL_UNIT_EMBEDDING = 0, TESSEL_UNIT_BLOCK = 1, TESSEL_UNIT_HEAD = 2 } tessel_unit_kind;

typedef enum {
  TESSEL_OP_EMBEDDING = 1,  /* out = table[tokens] (+ positions)            */
  TESSEL_OP_NORM = 2,       /* layer norm or RMS norm over the hidden width */
  TESSEL_OP_LINEAR = 3,     /* out = inp · W (+ b)                          */
  TESSEL_OP_ROTARY = 4,     /* rotary positions on queries and keys         */
  TESSEL_OP_ATTENTION = 5,  /* causal (grouped-query) attention             */
  TESSEL_OP_ACTIVATION = 6, /* GELU, or SwiGLU's silu(gate) · up            */
  TESSEL_OP_RESIDUAL = 7,   /* the residual stream plus a branch            */
  TESSEL_OP_HEAD = 8        /* logits = inp · Wᵀ, softmax cross-entropy     */
} tessel_op_kind;

enum { TESSEL_NORM_LAYER = 0, TESSEL_NORM_RMS = 1 };
enum { TESSEL_ACT_GELU = 0, TESSEL_ACT_SWIGLU = 1 };

/* One op of a unit. Ops run in order in forward and in reverse in backward.
** The core runs every op a strategy's layer_ops leave NULL; rotary,
** activation and residual ops are elementwise on whatever part a rank holds
** and are always the core's. */
typedef struct tessel_op {
  uint32_t size;
  tessel_op_kind kind;
  int32_t index;   /* position in its unit                                    */
  int32_t variant; /* NORM: TESSEL_NORM_*; ACTIVATION: TESSEL_ACT_*           */
  int32_t weight;  /* parameter index, -1 when none (EMBEDDING: the table;
                      HEAD: the LM head's weight, the table itself if tied)  */
  int32_t bias;    /* parameter index, -1 when none (EMBEDDING: positions)   */
  float eps;       /* NORM                                                   */
  float theta;     /* ROTARY: base of the frequencies                        */
} tessel_op;

typedef struct tessel_unit_info {
  uint32_t size;
  tessel_unit_kind kind;
  int32_t layer; /* block index 0..layers-1, -1 for the embedding and head */
  int32_t n_ops;
} tessel_unit_info;

/* ------------------------------------------------------ layer primitives */

/* Arguments of one primitive call. Pointers are device memory in the
** backend's act_dtype unless noted. Forward writes `out`; backward writes
** the input gradients (overwrite) and accumulates (+=) into parameter
** gradients. Buffers are row-major and contiguous unless a leading
** dimension (ld: elements between consecutive rows) says otherwise. */
typedef struct tessel_op_ctx {
  uint32_t size;
  const tessel_op *op;  /* the op being run                               */
  int32_t unit;         /* unit being computed                            */
  int32_t micro;        /* micro-batch index within the step              */
  int32_t slot;         /* activation set in use                          */
  tessel_stream *stream;
} tessel_op_ctx;

typedef struct tessel_linear_args {
  uint32_t size;
  tessel_param_role role;        /* of the weight: LINEAR_IN or LINEAR_OUT     */
  const tessel_param_view *w, *b; /* b NULL: no bias                           */
  const void *inp; void *out;    /* forward: out[out_rows, out_cols]           */
  const void *dout; void *dinp;  /* backward; dinp NULL: not wanted            */
  int64_t inp_rows, inp_cols, out_rows, out_cols;
} tessel_linear_args;

typedef struct tessel_norm_args {
  uint32_t size;
  int32_t variant;               /* TESSEL_NORM_LAYER or TESSEL_NORM_RMS       */
  float eps;
  const tessel_param_view *w, *b; /* b NULL for RMS norm                       */
  const void *inp; void *out;
  float *mean, *rstd;            /* [rows] fp32, saved for backward; mean NULL
                                    for RMS norm                               */
  const void *dout; void *dinp;
  int64_t rows, cols;
} tessel_norm_args;

/* q [batch, seq, heads, head_size] rows of ldq elements; k and v
** [batch, seq, kv_heads, head_size] rows of ldk and ldv; query head h reads
** kv head h / (heads / kv_heads). out [batch, seq, heads · head_size]
** contiguous, lse [batch, heads, seq] fp32 (the log-sum-exp of each query's
** scaled scores, all backward needs besides q, k, v and out: attention never
** stores a seq × seq matrix). dq, dk, dv have the strides of q, k, v. */
typedef struct tessel_attention_args {
  uint32_t size;
  const void *q, *k, *v;
  int64_t ldq, ldk, ldv;
  void *out;
  float *lse;
  const void *dout;
  void *dq, *dk, *dv;
  int64_t batch, seq, heads, kv_heads, head_size;
} tessel_attention_args;

typedef struct tessel_embedding_args {
  uint32_t size;
  const tessel_param_view *table, *positions; /* positions NULL: none     */
  const int32_t *tokens;         /* [batch, seq] on the device             */
  void *out;                     /* [rows, width]                          */
  const void *dout;
  int64_t batch, seq;
} tessel_embedding_args;

typedef struct tessel_head_args {
  uint32_t size;
  const tessel_param_view *weight; /* [vocab, width] part: the LM head, or
                                      the tied embedding table             */
  const void *inp;               /* the final norm's output [rows, width]  */
  const int32_t *targets;        /* [rows] on the device                   */
  float *losses;                 /* [rows] fp32 per-token loss             */
  void *logits;                  /* scratch [rows, vocab]                  */
  void *dinp;                    /* NULL in evaluation: no backward        */
  float dloss;                   /* d(mean loss)/d(token loss) = 1/tokens  */
  int64_t rows, width;
} tessel_head_args;

/* A plugin's versions of the model primitives: any NULL member means the
** core's local version. Each runs on ctx->stream. */
typedef struct tessel_layer_ops {
  uint32_t size;
  tessel_status (*linear_forward)(void *inst, const tessel_op_ctx *, const tessel_linear_args *);
  tessel_status (*linear_backward)(void *inst, const tessel_op_ctx *, const tessel_linear_args *);
  tessel_status (*norm_forward)(void *inst, const tessel_op_ctx *, const tessel_norm_args *);
  tessel_status (*norm_backward)(void *inst, const tessel_op_ctx *, const tessel_norm_args *);
  tessel_status (*attention_forward)(void *inst, const tessel_op_ctx *, const tessel_attention_args *);
  tessel_status (*attention_backward)(void *inst, const tessel_op_ctx *, const tessel_attention_args *);
  tessel_status (*embedding_forward)(void *inst, const tessel_op_ctx *, const tessel_embedding_args *);
  tessel_status (*embedding_backward)(void *inst, const tessel_op_ctx *, const tessel_embedding_args *);
  /* loss forward and, when a->dinp is set, its backward in the same call */
  tessel_status (*head)(void *inst, const tessel_op_ctx *, const tessel_head_args *);
} tessel_layer_ops;

/* --------------------------------------------------- state and placement */

/* The state the core keeps, by kind. MASTER: fp32 master weights. GRAD:
** fp32 gradients. SLOT: optimizer slot `index` (AdamW: 0 "m", 1 "v"; see
** state->optimizer). PRIVATE: the plugin's named slot `index` (see
** state->add_private). ACT: the activations of unit `index`. WORK: the
** working weights compute reads (act dtype; the master weights themselves
** on an fp32 backend whose masters are on the device) — never placed. */
typedef enum {
  TESSEL_STATE_MASTER = 0,
  TESSEL_STATE_GRAD = 1,
  TESSEL_STATE_SLOT = 2,
  TESSEL_STATE_PRIVATE = 3,
  TESSEL_STATE_ACT = 4,
  TESSEL_STATE_WORK = 5
} tessel_state_kind;

typedef struct tessel_state_ref {
  tessel_state_kind kind;
  int32_t index;
} tessel_state_ref;

/* What to do with a unit's activations between its forward and backward.
** Recomputation reruns forward ops with the same kernels on the same
** inputs, so losses and gradients are bit for bit those of NONE; a rerun
** op calls the strategy's layer_ops again (a tensor-parallel linear
** communicates again under FULL; SELECTIVE reruns no linear). */
enum {
  TESSEL_RECOMPUTE_NONE = 0,      /* keep everything                         */
  TESSEL_RECOMPUTE_SELECTIVE = 1, /* keep GEMM outputs, redo the cheap parts  */
  TESSEL_RECOMPUTE_FULL = 2       /* keep the unit's input, redo its forward  */
};

/* Where one kind of core-owned state lives (the `place` hook's answer).
**
** tier: MASTER and SLOT may live on any tier (the core's optimizer streams
** them through the device in pieces); GRAD stays on the device (backward
** writes it); ACT on DEVICE or HOST (kept activations copied out after the
** unit's forward and back before its backward, fetched ahead while the
** unit above runs its backward). The core's default for ACT is the run's
** train.recompute and train.offload_activations; the `place` hook sees it
** in `out` and may change it.
**
** shard_axes ≠ 0 shards SLOT or GRAD state over the group of those axes,
** whose ranks must hold identical layouts (data-parallel replicas):
** the flat core storage (see tessel_param_view) is cut into chunks of
** chunk_bytes / 4 / n elements per rank (n the group's size, at least 1),
** chunk c being n pieces, piece r owned by group rank r; after the last full
** chunk, the remainder is cut into n equal pieces the same way, and its last
** < n elements (the tail) are owned by every rank. state->pieces lists them.
**   SLOT sharded: slots exist for owned elements only; the core updates
**     only those and then all-gathers the updated master and working
**     weights piece by piece over the group (ZeRO-1).
**   GRAD sharded: after grads_finish, only owned elements (tail included)
**     must hold the reduced gradient; the core's norm and optimizer read
**     nothing else (ZeRO-2). Implies SLOT sharded the same way.
** MASTER, PRIVATE and ACT are never sharded (a strategy that shards
** parameters stores them itself: TESSEL_STORE_PLUGIN). */
typedef struct tessel_placement {
  uint32_t size;
  tessel_tier tier;
  uint32_t shard_axes;
  uint64_t chunk_bytes; /* 0: 25 MiB                                        */
  int32_t recompute;    /* ACT: TESSEL_RECOMPUTE_*                          */
} tessel_placement;

/* A range [begin, end) of the flat core storage and, for sharded state, the
** element of this rank's packed shard storage that holds `begin`. */
typedef struct tessel_range {
  uint64_t begin, end, packed;
} tessel_range;

#define TESSEL_MAX_SLOTS 8
typedef struct tessel_optimizer_info {
  uint32_t size;
  const char *name;                        /* "adamw"                      */
  int32_t n_slots;
  const char *slot_names[TESSEL_MAX_SLOTS]; /* checkpoint names: "m", "v"   */
} tessel_optimizer_info;

/* One optimizer step's hyper-parameters. */
typedef struct tessel_optim_step {
  uint32_t size;
  int64_t step;      /* 1-based count of optimizer steps               */
  float lr;          /* this step's learning rate                       */
  float grad_scale;  /* clipping factor the core computed, 1 if none    */
} tessel_optim_step;

/* One optimizer update over n elements: master -= update(grad·grad_scale,
** slots) with the configured optimizer and its hyper-parameters, weight
** decay off when no_decay; then work (act dtype) = master unless they are
** the same buffer. slots[i] holds n elements of slot i. Device tier. */
typedef struct tessel_optim_update {
  uint32_t size;
  float *master;
  void *work;
  const float *grad;
  float *slots[TESSEL_MAX_SLOTS];
  int64_t n;
  int32_t no_decay;
} tessel_optim_update;

/* ------------------------------------------------------- host: services */

typedef struct tessel_cfg_api {
  uint32_t size;
  /* The child map or list under `key`; *out NULL when absent. */
  tessel_status (*child)(tessel_host *, const tessel_cfg *node, const char *key, const tessel_cfg **out);
  tessel_status (*has)(tessel_host *, const tessel_cfg *node, const char *key, int *out);
  /* Typed getters. A missing key yields `dflt`. A present key of the wrong
  ** type or outside [min, max] is a TESSEL_E_CONFIG error whose message
  ** names FILE:LINE:COL. Reading a key also declares it: after `create`
  ** returns, any key of the plugin's section that was never read is
  ** reported as unknown, with the closest declared key as a suggestion. */
  tessel_status (*get_int)(tessel_host *, const tessel_cfg *, const char *key, int64_t dflt, int64_t min,
                           int64_t max, int64_t *out);
  tessel_status (*get_float)(tessel_host *, const tessel_cfg *, const char *key, double dflt, double min,
                             double max, double *out);
  tessel_status (*get_bool)(tessel_host *, const tessel_cfg *, const char *key, int dflt, int *out);
  /* Sizes accept units: 512, 64KiB, 25MiB, 1GiB, 2GB. */
  tessel_status (*get_size)(tessel_host *, const tessel_cfg *, const char *key, uint64_t dflt, uint64_t *out);
  /* The string lives as long as the configuration. */
  tessel_status (*get_string)(tessel_host *, const tessel_cfg *, const char *key, const char *dflt,
                              const char **out);
  /* One of `choices` (NULL-terminated); *out is its index. */
  tessel_status (*get_enum)(tessel_host *, const tessel_cfg *, const char *key, const char *const *choices,
                            int dflt, int *out);
  /* A list of integers; *n is set to its length. A list longer than cap is
  ** a TESSEL_E_CONFIG error at the key. */
  tessel_status (*get_int_list)(tessel_host *, const tessel_cfg *, const char *key, int64_t *out, int cap,
                                int *n);
  /* A TESSEL_E_CONFIG error located at `key` of `node` (the node itself
  ** when key is NULL or absent). Returns TESSEL_E_CONFIG. */
  tessel_status (*error_at)(tessel_host *, const tessel_cfg *node, const char *key, const char *fmt, ...)
      TESSEL_PRINTF(4, 5);
} tessel_cfg_api;

typedef struct tessel_mem_api {
  uint32_t size;
  /* Allocate `bytes` in a tier, zero-filled. `name` (e.g. the tensor) is
  ** kept for the ledger and for the error if the tier is full. */
  tessel_status (*alloc)(tessel_host *, tessel_tier, tessel_mem_kind, uint64_t bytes, const char *name,
                         void **out);
  tessel_status (*free)(tessel_host *, tessel_tier, void *ptr); /* NULL: nothing */
  /* Copy between any two tiers, ordered on `stream` (NULL: the compute
  ** stream). The host tier is readable only after the stream is synced.
  ** Source and destination ranges must not overlap. */
  tessel_status (*copy)(tessel_host *, tessel_tier dst_tier, void *dst, uint64_t dst_off, tessel_tier src_tier,
                        const void *src, uint64_t src_off, uint64_t bytes, tessel_stream *stream);
  tessel_status (*stats)(tessel_host *, tessel_tier, tessel_tier_stats *out);
  /* Put the NVMe tier's files in `dir` (created if needed); call before
  ** allocating on that tier. */
  tessel_status (*set_nvme_dir)(tessel_host *, const char *dir);
} tessel_mem_api;

typedef struct tessel_stream_api {
  uint32_t size;
  tessel_status (*compute)(tessel_host *, tessel_stream **out); /* the stream the model runs on */
  tessel_status (*comm)(tessel_host *, tessel_stream **out);    /* the stream collectives run on */
  tessel_status (*record)(tessel_host *, tessel_stream *, tessel_event **out);
  tessel_status (*wait_event)(tessel_host *, tessel_stream *waiter, tessel_event *);
  tessel_status (*sync)(tessel_host *, tessel_stream *); /* block the host */
  tessel_status (*event_free)(tessel_host *, tessel_event *);
} tessel_stream_api;

/* Collectives on device buffers, counted by the core per group and step.
** Each call is asynchronous when `work` is non-NULL (finish it with `wait`,
** or `test` until it reports done: either frees the handle, which must not
** be used again), synchronous otherwise. Counts are in elements of `dtype`.
**
** Buffers: send and recv of an all-reduce or reduce may be the same buffer
** (in place); a reduce-scatter may write into this rank's block of its own
** send buffer, and an all-gather may read its send block from this rank's
** block of recv; no other overlap is allowed, and a buffer must not be
** touched until its transfer is done.
**
** Reductions (SUM, MAX, MIN) by dtype and engine:
**   MPI (host buffers, the CPU backend): F32, F64, I32 exactly; BF16 and
**     F16 accumulated in fp32 and rounded once; U8 not reducible. Every SUM
**     adds the ranks' contributions in group-rank order, whatever the kind
**     of collective, so an all-reduce and a reduce-scatter of the same data
**     agree bit for bit.
**   NCCL (device buffers, the CUDA backend): F32, F64, I32, BF16, F16 as
**     NCCL reduces them (16-bit data accumulated in 16 bits per hop).
** Bytes are counted per group and step in the nccl-tests conventions:
** payload is the caller's buffer (the whole vector of an all-reduce, the
** full vector of an all-gather, reduce-scatter or all-to-all, a broadcast's
** or reduce's message, a send's message; a receive counts nothing, so a
** transfer is counted once), bus bytes are payload × 2(n−1)/n for
** all-reduce, × (n−1)/n for all-gather, reduce-scatter and all-to-all, × 1
** otherwise. */
typedef struct tessel_comm_api {
  uint32_t size;
  /* The communicator over the ranks that differ only in the axes of `axes`
  ** (a bit mask over the mesh axes; 0 = this rank alone). Only the sets
  ** described at tessel_mesh exist. */
  tessel_status (*group)(tessel_host *, uint32_t axes, tessel_group **out);
  tessel_status (*group_info)(tessel_host *, const tessel_group *, int *rank, int *nranks);
  /* This rank's coordinate on a mesh axis. */
  tessel_status (*coord)(tessel_host *, int axis, int *out);
  tessel_status (*all_reduce)(tessel_host *, tessel_group *, const void *send, void *recv, uint64_t count,
                              tessel_dtype, tessel_redop, tessel_work **work);
  /* recv gets this rank's recv_count elements of the reduced send buffer */
  tessel_status (*reduce_scatter)(tessel_host *, tessel_group *, const void *send, void *recv,
                                  uint64_t recv_count, tessel_dtype, tessel_redop, tessel_work **);
  tessel_status (*all_gather)(tessel_host *, tessel_group *, const void *send, void *recv,
                              uint64_t send_count, tessel_dtype, tessel_work **);
  /* block j of send (count elements) goes to group rank j, whose block i of
  ** recv gets it from rank i */
  tessel_status (*all_to_all)(tessel_host *, tessel_group *, const void *send, void *recv, uint64_t count,
                              tessel_dtype, tessel_work **);
  tessel_status (*broadcast)(tessel_host *, tessel_group *, void *buf, uint64_t count, tessel_dtype, int root,
                             tessel_work **);
  tessel_status (*reduce)(tessel_host *, tessel_group *, const void *send, void *recv, uint64_t count,
                          tessel_dtype, tessel_redop, int root, tessel_work **);
  tessel_status (*send)(tessel_host *, tessel_group *, const void *buf, uint64_t count, tessel_dtype, int peer,
                        tessel_work **);
  tessel_status (*recv)(tessel_host *, tessel_group *, void *buf, uint64_t count, tessel_dtype, int peer,
                        tessel_work **);
  tessel_status (*barrier)(tessel_host *, tessel_group *);
  tessel_status (*wait)(tessel_host *, tessel_work *);
  /* *done = 1 when complete, and then the handle is freed */
  tessel_status (*test)(tessel_host *, tessel_work *, int *done);
} tessel_comm_api;

/* Kernels, on the backend the run uses. Pointers are device memory; "act"
** buffers are in dims.act_dtype, fp32 otherwise. Every call is ordered on
** `stream`. A non-NULL `group` makes the kernel reduce over that group
** where a split dimension needs it (noted per kernel). */
typedef struct tessel_kernel_api {
  uint32_t size;
  /* C[M,N] = alpha · op(A) op(B) + beta · C, row-major, act dtype in, the
  ** C dtype given (fp32 for gradients). */
  tessel_status (*gemm)(tessel_host *, tessel_stream *, int trans_a, int trans_b, int64_t m, int64_t n,
                        int64_t k, float alpha, const void *a, const void *b, float beta, void *c,
                        tessel_dtype c_dtype);
  /* out[rows,oc] = inp[rows,ic] w[ic,oc] + bias[oc]   (bias may be NULL) */
  tessel_status (*linear_forward)(tessel_host *, tessel_stream *, void *out, const void *inp, const void *w,
                                  const void *bias, int64_t rows, int64_t ic, int64_t oc);
  /* dinp = dout wᵀ (overwrite, skipped if NULL); dw += inpᵀ dout; db += Σrows dout */
  tessel_status (*linear_backward)(tessel_host *, tessel_stream *, void *dinp, float *dw, float *db,
                                   const void *dout, const void *inp, const void *w, int64_t rows, int64_t ic,
                                   int64_t oc);
  /* A norm over `cols` (a->variant, a->eps, buffers and shapes from `a`);
  ** with a group, cols is this rank's slice of a hidden dimension of
  ** `total_cols` split over the group and the statistics are summed over
  ** it. */
  tessel_status (*norm_forward)(tessel_host *, tessel_stream *, tessel_group *, const tessel_norm_args *a,
                                int64_t total_cols);
  tessel_status (*norm_backward)(tessel_host *, tessel_stream *, tessel_group *, const tessel_norm_args *a,
                                 int64_t total_cols);
  tessel_status (*attention_forward)(tessel_host *, tessel_stream *, const tessel_attention_args *);
  tessel_status (*attention_backward)(tessel_host *, tessel_stream *, const tessel_attention_args *);
  /* Rotary positions in place on x [batch, seq, heads, head_size] (rows of
  ** ld elements), position = t + pos_offset, Hugging Face's rotate-half
  ** convention; inverse = 1 rotates back (the backward). */
  tessel_status (*rotary)(tessel_host *, tessel_stream *, void *x, int64_t batch, int64_t seq, int64_t heads,
                          int64_t head_size, int64_t ld, int64_t pos_offset, float theta, int inverse);
  /* GELU: out = gelu(a); SWIGLU: out = silu(a) · b. n elements. */
  tessel_status (*activation_forward)(tessel_host *, tessel_stream *, int variant, void *out, const void *a,
                                      const void *b, int64_t n);
  /* da (and db for SWIGLU) from dout (overwrite) */
  tessel_status (*activation_backward)(tessel_host *, tessel_stream *, int variant, void *da, void *db,
                                       const void *dout, const void *a, const void *b, int64_t n);
  /* out = a + b */
  tessel_status (*add)(tessel_host *, tessel_stream *, void *out, const void *a, const void *b, int64_t n);
  /* y += alpha · x, in dtype */
  tessel_status (*axpy)(tessel_host *, tessel_stream *, tessel_dtype, void *y, float alpha, const void *x,
                        int64_t n);
  tessel_status (*scale)(tessel_host *, tessel_stream *, tessel_dtype, void *x, float alpha, int64_t n);
  /* dst = src converted between dtypes (fp32 ↔ bf16/f16, rounding to
  ** nearest even); n elements; the buffers must not overlap. */
  tessel_status (*convert)(tessel_host *, tessel_stream *, void *dst, tessel_dtype dst_dtype, const void *src,
                           tessel_dtype src_dtype, int64_t n);
  /* Token embedding of table rows [vocab_begin, vocab_begin+vocab) (tokens
  ** outside give 0), then out += positions[t] when positions is non-NULL;
  ** with a group the token part is summed over it before positions are
  ** added. */
  tessel_status (*embedding_forward)(tessel_host *, tessel_stream *, tessel_group *, void *out,
                                     const int32_t *tokens, const void *table, const void *positions,
                                     int64_t batch, int64_t seq, int64_t width, int64_t vocab_begin,
                                     int64_t vocab);
  /* dtable[rows in range] += dout; dpositions[t] += Σbatch dout (may be NULL) */
  tessel_status (*embedding_backward)(tessel_host *, tessel_stream *, float *dtable, float *dpositions,
                                      const void *dout, const int32_t *tokens, int64_t batch, int64_t seq,
                                      int64_t width, int64_t vocab_begin, int64_t vocab);
  /* Softmax cross-entropy over logits [rows, vocab] holding vocabulary
  ** columns [vocab_begin, +vocab) of a group-split vocabulary; columns at
  ** and past the model's vocab_valid are masked out. Writes the per-row
  ** loss; when `dlogits_scale` ≠ 0 overwrites logits with
  ** dloss/dlogits · dlogits_scale. */
  tessel_status (*cross_entropy)(tessel_host *, tessel_stream *, tessel_group *, float *losses, void *logits,
                                 const int32_t *targets, int64_t rows, int64_t vocab_begin, int64_t vocab,
                                 float dlogits_scale);
  /* One update of the configured optimizer (see tessel_optim_update). */
  tessel_status (*optimizer_update)(tessel_host *, tessel_stream *, const tessel_optim_update *,
                                    const tessel_optim_step *);
  /* *out += Σ x[i]² over fp32 x; out is one double in device memory. */
  tessel_status (*sumsq)(tessel_host *, tessel_stream *, double *out, const float *x, int64_t n);
} tessel_kernel_api;

/* The model as a plugin sees it, and the building blocks of a step. */
typedef struct tessel_model_api {
  uint32_t size;
  tessel_status (*dims)(tessel_host *, tessel_model_dims *out);
  tessel_status (*param_count)(tessel_host *, int *out);
  tessel_status (*param_info)(tessel_host *, int index, tessel_param_info *out);
  tessel_status (*param_layout)(tessel_host *, int index, tessel_layout *out);
  tessel_status (*unit_info)(tessel_host *, int unit, tessel_unit_info *out);
  tessel_status (*unit_op)(tessel_host *, int unit, int op, tessel_op *out);
  /* The local storage of a parameter as compute will use it next. */
  tessel_status (*view)(tessel_host *, int index, tessel_param_view *out);
  /* For STORE_PLUGIN parameters: point compute at plugin-owned storage
  ** (data may be NULL while a parameter is released). */
  tessel_status (*bind)(tessel_host *, int index, void *data, float *grad, float *master);
  /* Fill `dst` (device tier) with the deterministic initial values of the
  ** elements [begin, end) of the flattened global tensor. */
  tessel_status (*init_flat)(tessel_host *, int index, uint64_t begin, uint64_t end, float *dst);
  /* Step building blocks for a `train_step` hook. forward/backward run one
  ** unit on one micro-batch in activation slot `slot`, with the
  ** communication hooks around them. The boundary buffer is the residual
  ** stream entering unit u: a pipeline stage receives into it before
  ** forward(u), and receives the gradient of its output before backward. */
  tessel_status (*forward)(tessel_host *, int micro, int slot, int unit);
  tessel_status (*backward)(tessel_host *, int micro, int slot, int unit);
  tessel_status (*boundary)(tessel_host *, int slot, int unit, void **act, void **grad, uint64_t *count);
  /* ABI 2.1. The bytes the core's non-model memory (activations, their
  ** gradients, the kernels' reduction scratch) would take on the device and
  ** on the host if unit u's activations were placed on tier[u] (DEVICE or HOST)
  ** with recompute[u] (TESSEL_RECOMPUTE_*), for every unit (arrays of
  ** dims.units). Exact: the same arithmetic allocates them. For a `place`
  ** hook weighing recomputation and offload against the device; callable
  ** from `place` on. */
  tessel_status (*act_memory)(tessel_host *, const int32_t *tier, const int32_t *recompute, uint64_t *device,
                              uint64_t *host);
  /* ABI 2.1. 1 when op `op` of unit `unit` runs again before the unit's
  ** backward under its activations' placement (recompute), else 0: the
  ** strategy's layer_ops hook then runs that op's forward twice per
  ** micro-batch, and a tensor-parallel split communicates twice (estimates
  ** count it). Callable once activations are placed. */
  tessel_status (*op_reruns)(tessel_host *, int unit, int op, int32_t *reruns);
} tessel_model_api;

/* The core-owned state: optimizer, placement, flat storage, private slots. */
typedef struct tessel_state_api {
  uint32_t size;
  tessel_status (*optimizer)(tessel_host *, tessel_optimizer_info *out);
  /* What was decided for a kind (after layouts; the `place` hook's answer
  ** checked and completed). */
  tessel_status (*placement)(tessel_host *, tessel_state_ref, tessel_placement *out);
  /* The flat core buffer of MASTER, GRAD, WORK, SLOT i or PRIVATE i and its
  ** element count; device-tier buffers only (a placed one on the host or
  ** NVMe is the core's to move). Sharded slots are packed (see
  ** tessel_range.packed). Available from `setup` on. */
  tessel_status (*flat)(tessel_host *, tessel_state_ref, void **ptr, uint64_t *numel);
  /* The ranges of the flat storage this rank owns of a sharded kind (all of
  ** it, as one range, when whole): at most cap written, *n set to how many
  ** there are. */
  tessel_status (*pieces)(tessel_host *, tessel_state_ref, tessel_range *out, int cap, int *n);
  /* Declare a private fp32 slot over the flat storage, zero-initialised, in
  ** `tier`, saved and restored by checkpoints as one logical tensor per
  ** parameter under "<name>" (so it survives resuming under another world
  ** size; a strategy that does not declare it ignores it). Call in `setup`.
  ** *index is its index for TESSEL_STATE_PRIVATE. */
  tessel_status (*add_private)(tessel_host *, const char *name, tessel_tier tier, int *index);
} tessel_state_api;

typedef struct tessel_host_api {
  uint32_t size;
  uint32_t abi_version; /* the core's TESSEL_ABI_VERSION */
  const char *core_version;
  void (*log)(tessel_host *, int level, const char *fmt, ...) TESSEL_PRINTF(3, 4);
  tessel_status (*set_error)(tessel_host *, tessel_status, const char *fmt, ...) TESSEL_PRINTF(3, 4);
  tessel_status (*world)(tessel_host *, int *rank, int *size);
  const tessel_cfg_api *cfg;
  const tessel_mem_api *mem;
  const tessel_stream_api *stream;
  const tessel_comm_api *comm;
  const tessel_kernel_api *kernels;
  const tessel_model_api *model;
  const tessel_state_api *state;
} tessel_host_api;

/* ------------------------------------------------- estimates (ABI 2.1) */

/*
** Planning: what a strategy will cost, predicted before anything runs
** (`tessel plan`). The core builds the planning half of a run for one set
** of options — configuration, `create`, `mesh`, the parameters, `layout`,
** `geometry` and `place` as for rank 0 — without devices, memory or
** communicators, and asks the strategy about every rank of the world in
** turn. There the model api answers (dims, param_count, param_info,
** unit_info, unit_op, param_layout of rank 0); memory, streams, comm,
** kernels and state->flat do not.
**
** Both hooks are optional: a strategy without `estimate` is listed as
** having no estimate, one without `enumerate` is planned with the options
** its configuration gives.
*/

/* The kinds of collective, as tessel_comm_api calls them. */
typedef enum {
  TESSEL_COLL_ALL_REDUCE = 0,
  TESSEL_COLL_REDUCE_SCATTER = 1,
  TESSEL_COLL_ALL_GATHER = 2,
  TESSEL_COLL_ALL_TO_ALL = 3,
  TESSEL_COLL_BROADCAST = 4,
  TESSEL_COLL_REDUCE = 5,
  TESSEL_COLL_SEND = 6,   /* a send; its matching receive is a call of no bytes */
  TESSEL_COLL_RECV = 7
} tessel_collective;
#define TESSEL_COLL_COUNT 8

/* What a transfer can hide behind, for the planner's time model. */
typedef enum {
  TESSEL_OVERLAP_NONE = 0,     /* compute waits for it                         */
  TESSEL_OVERLAP_BACKWARD = 1, /* runs while backward goes on below it
                                  (gradient buckets)                            */
  TESSEL_OVERLAP_COMPUTE = 2   /* runs while compute goes on in either
                                  direction (prefetched gathers, broadcasts of
                                  the next step of a double-buffered product)   */
} tessel_overlap;

/* One line of a rank's traffic in one optimizer step: all its collectives
** of one kind on the communicator over `axes` that overlap alike, counted
** the way the core counts them (tessel_comm_api: payload bytes; a receive
** counts none). */
typedef struct tessel_traffic {
  uint32_t size;
  uint32_t axes;          /* the communicator, as for comm->group        */
  tessel_collective kind;
  uint64_t calls;         /* calls per step                              */
  uint64_t payload;       /* payload bytes per step                      */
  tessel_overlap overlap;
} tessel_traffic;

/* One rank's predicted cost per optimizer step (the core zeroes it and sets
** size before the call). */
typedef struct tessel_estimate {
  uint32_t size;
  /* memory at the rank's peak: what the ledger would hold then, per tier
  ** and kind — the core's storage (plan_query.core_state) included */
  uint64_t memory[TESSEL_TIER_COUNT][TESSEL_MEM_KIND_COUNT];
  double flops;  /* floating-point operations the rank computes: forward,
                    backward, recomputation, by GEMM and attention */
  double bubble; /* time the rank waits on others in its schedule (a
                    pipeline's fill and drain), as a multiple of its compute
                    time: (stages − 1) / micro-batches for 1F1B           */
} tessel_estimate;

/* What the core hands to `enumerate` and `estimate`. */
typedef struct tessel_plan_query {
  uint32_t size;
  int32_t world_size;
  int32_t rank;                   /* estimate: the rank to describe         */
  uint64_t device_capacity;       /* bytes of device memory a rank may use
                                     (UINT64_MAX: unbounded): what a
                                     placement that adapts to the device
                                     plans for                               */
  const tessel_model_dims *dims;  /* enumerate: the model, as for one data
                                     rank holding the whole batch (read
                                     fields newer than 2.0 with TESSEL_HAS)  */
  /* enumerate: offer one set of options worth trying for world_size, as
  ** the inside of a YAML flow map of the strategy's section ("tp: 2, pp:
  ** 4, zero_stage: 1"; "" for the defaults). The core plans each one and
  ** ranks them; a set the model or batch refuses is reported as such. */
  tessel_status (*option_set)(tessel_host *, const char *options);
  /* estimate: what the rank keeps of the core's storage — its geometry and
  ** the elements of the CORE-stored parameter parts it holds. The core adds
  ** its own costs there (master weights, gradients, working weights,
  ** optimizer slots as `place` put them, activations for the geometry and
  ** its act_slots, reduction scratch; the traffic of sharded slots) and
  ** writes the memory into `out` for the strategy to add to its estimate.
  ** Call it once per estimate. */
  tessel_status (*core_state)(tessel_host *, const tessel_geometry *, uint64_t core_numel,
                              uint64_t out[TESSEL_TIER_COUNT][TESSEL_MEM_KIND_COUNT]);
  /* estimate: add one line of the rank's traffic (lines of the same axes,
  ** kind and overlap add up). */
  tessel_status (*traffic)(tessel_host *, const tessel_traffic *);
  /* estimate: how the core cuts `numel` elements of sharded state over a
  ** group of `ranks` in chunks of chunk_bytes (tessel_placement): how many
  ** chunks have pieces, and the elements they cover (the rest is the tail). */
  tessel_status (*shard_cut)(tessel_host *, uint64_t numel, int32_t ranks, uint64_t chunk_bytes, uint64_t *chunks,
                             uint64_t *covered);
} tessel_plan_query;

/* ---------------------------------------------------- the plugin's table */

/* Capabilities, for `tessel plugins` and for the core's checks. */
#define TESSEL_CAP_DATA_PARALLEL (1ull << 0)
#define TESSEL_CAP_TENSOR_PARALLEL (1ull << 1)
#define TESSEL_CAP_PIPELINE (1ull << 2)
#define TESSEL_CAP_SHARDED_STATE (1ull << 3)   /* ZeRO: optimizer/grad/param shards  */
#define TESSEL_CAP_OFFLOAD (1ull << 4)         /* places state on host or NVMe       */
#define TESSEL_CAP_OWNS_OPTIMIZER (1ull << 5)  /* its optimizer_step replaces the core's */
#define TESSEL_CAP_FP32_ACTIVATIONS (1ull << 6) /* refused on a 16-bit backend        */
#define TESSEL_CAP_LOSSY (1ull << 7)           /* not step-by-step equivalent to one
                                                  process (compression, local steps):
                                                  judged by validation loss          */

/* Where a hint is given. */
typedef enum { TESSEL_PHASE_FORWARD = 0, TESSEL_PHASE_BACKWARD = 1, TESSEL_PHASE_OPTIMIZER = 2 } tessel_phase;

/*
** The strategy. Lifecycle, in order:
**   create → mesh → layout (per parameter) → geometry → place (per state
**   kind) → [core allocates, initialises, builds groups] → setup → per
**   step: set_grad_sync, train_step or the default schedule
**   (before/after_forward, before/after_backward and prefetch around each
**   unit), grads_finish, grad_norm, prefetch(OPTIMIZER), optimizer_step → …
**   → destroy; eval_step for validation. Checkpoints may be written or read
**   between steps (state_read/state_write). Planning runs create → mesh →
**   layout → geometry → place, then enumerate or estimate, then destroy:
**   no setup and no step.
*/
typedef struct tessel_strategy {
  uint32_t size;           /* sizeof(tessel_strategy) as compiled       */
  uint32_t abi_version;    /* TESSEL_ABI_VERSION as compiled            */
  const char *name;        /* must equal NAME in libtessel-NAME.so      */
  const char *version;     /* the plugin's own version                  */
  const char *description; /* one line                                  */
  uint64_t caps;           /* TESSEL_CAP_*                               */

  /* setup */
  tessel_status (*create)(const tessel_host_api *, tessel_host *, const tessel_cfg *section, void **inst);
  void (*destroy)(void *inst);
  /* Required. Arrange world_size ranks; a mismatch is TESSEL_E_CONFIG
  ** with a message that shows the arithmetic. */
  tessel_status (*mesh)(void *inst, int world_size, tessel_mesh *out);
  /* NULL: every parameter REPLICATED, STORE_CORE. */
  tessel_status (*layout)(void *inst, const tessel_param_info *, tessel_layout *out);
  /* NULL: the single-process geometry. */
  tessel_status (*geometry)(void *inst, tessel_geometry *out);
  /* Where one kind of core-owned state lives. NULL (or out left as given):
  ** the device, whole; activations as train.recompute and
  ** train.offload_activations say (everything kept on the device unless
  ** set). */
  tessel_status (*place)(void *inst, tessel_state_ref what, tessel_placement *out);
  /* After storage is allocated and initialised: build buckets, chunks. */
  tessel_status (*setup)(void *inst);

  /* sharding of compute; NULL: all core versions */
  const tessel_layer_ops *layer_ops;

  /* schedule; NULL: forward all units then backward all, per micro-batch */
  tessel_status (*train_step)(void *inst, int micro_steps);
  /* forward only, for validation; NULL: forward all units per micro-batch.
  ** A pipeline needs it: its stages pass activations to each other. */
  tessel_status (*eval_step)(void *inst, int micro_steps);

  /* communication */
  tessel_status (*before_forward)(void *inst, int unit, int micro);
  tessel_status (*after_forward)(void *inst, int unit, int micro);
  tessel_status (*before_backward)(void *inst, int unit, int micro);
  tessel_status (*after_backward)(void *inst, int unit, int micro);
  /* Gradient accumulation: sync is off on all but the last micro-batch. */
  tessel_status (*set_grad_sync)(void *inst, int on);
  /* All gradient communication of the step is complete when it returns. */
  tessel_status (*grads_finish)(void *inst);
  /* The squared global gradient norm. NULL: the core's, which counts every
  ** logical gradient element of core storage once (a part held by several
  ** ranks on the lowest of them; sharded gradients on their owners). A
  ** strategy that stores parameters itself provides it. */
  tessel_status (*grad_norm)(void *inst, double *sumsq);
  /* Requires TESSEL_CAP_OWNS_OPTIMIZER; NULL: the core's optimizer. */
  tessel_status (*optimizer_step)(void *inst, const tessel_optim_step *);

  /* memory placement: a hint to start moving state, called after each
  ** unit's compute with the unit that comes next in this direction
  ** (forward: unit + 1, backward: unit − 1), and before the optimizer step
  ** with next_unit −1 and TESSEL_PHASE_OPTIMIZER. */
  tessel_status (*prefetch)(void *inst, int next_unit, tessel_phase phase);

  /* checkpoint: move this rank's part (as its layout describes) of one
  ** parameter's MASTER or SLOT state that the plugin stores itself to or
  ** from a host buffer. Both run on every rank that holds a part, one
  ** parameter at a time in the same order on all ranks, so state_read may
  ** assemble its part with a collective over the ranks that share it. */
  tessel_status (*state_read)(void *inst, int param, tessel_state_ref, float *host_dst);
  tessel_status (*state_write)(void *inst, int param, tessel_state_ref, const float *host_src);

  /* planning (ABI 2.1; see tessel_plan_query): offer the option sets worth
  ** trying for q->world_size, and predict one rank's memory, traffic,
  ** FLOPs and schedule idle time for the options of this instance. */
  tessel_status (*enumerate)(void *inst, const tessel_plan_query *q);
  tessel_status (*estimate)(void *inst, const tessel_plan_query *q, tessel_estimate *out);
} tessel_strategy;

/* The entry point: return the table for a core speaking `core_abi`, or
** NULL when this plugin cannot serve that major version. */
typedef const tessel_strategy *(*tessel_strategy_entry_fn)(uint32_t core_abi);

/* What a plugin defines (and nothing else exported):
**   TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) { ... } */
TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi);

/* The usual entry point: serve `table` to any core of this major version.
** A plugin that supports several majors writes the function itself. */
#define TESSEL_STRATEGY_DEFINE(table)                                                  \
  TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {      \
    return TESSEL_ABI_MAJOR(core_abi) == TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION) ? &(table) : NULL; \
  }

#ifdef __cplusplus
}
#endif
#endif /* TESSEL_PLUGIN_H */
