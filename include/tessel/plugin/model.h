/*
** tessel/plugin/model.h — part of the plugin ABI: the model as data: dimensions, parameters and their roles, units and ops, layer primitives.
**
** Included by <tessel/plugin.h>, which states the versioning, threading and
** error rules these declarations follow; include that header, not this one.
*/
#ifndef TESSEL_PLUGIN_MODEL_H
#define TESSEL_PLUGIN_MODEL_H
#ifndef TESSEL_PLUGIN_H
#error "include <tessel/plugin.h>, not its parts"
#endif

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
/* dim[VOCAB] is model.vocab_size rounded up to a multiple of this for a
** strategy that declares TESSEL_CAP_TENSOR_PARALLEL (of 64 for others). */
#define TESSEL_VOCAB_ALIGN_TP 128

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
  TESSEL_ROLE_HEAD = 8,       /* an untied LM head [VOCAB, HIDDEN]           */
  TESSEL_ROLE_HEAD_NORM = 9   /* ABI 2.3: a per-head norm's weight
                                 [HEAD_SIZE], shared by every query (or key)
                                 head: whole on every rank. A rank that holds
                                 some of the heads computes only their part of
                                 its gradient, so a strategy that splits heads
                                 sums that gradient over the ranks that split
                                 them */
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
  TESSEL_OP_NORM = 2,       /* layer norm or RMS norm over the hidden width,
                               or (RMS_HEADS) over each head of q or k      */
  TESSEL_OP_LINEAR = 3,     /* out = inp · W (+ b)                          */
  TESSEL_OP_ROTARY = 4,     /* rotary positions on queries and keys         */
  TESSEL_OP_ATTENTION = 5,  /* causal (grouped-query) attention             */
  TESSEL_OP_ACTIVATION = 6, /* GELU, or SwiGLU's silu(gate) · up            */
  TESSEL_OP_RESIDUAL = 7,   /* the residual stream plus a branch            */
  TESSEL_OP_HEAD = 8        /* logits = inp · Wᵀ, softmax cross-entropy     */
} tessel_op_kind;

/* TESSEL_NORM_RMS_HEADS (ABI 2.3): an RMS norm over each head of
** HEAD_SIZE elements of a query or key buffer (Qwen3's q_norm and k_norm),
** one weight for all heads. It is elementwise on whatever heads a rank
** holds, so it is always the core's: a strategy's norm hooks are never
** called for it. */
enum { TESSEL_NORM_LAYER = 0, TESSEL_NORM_RMS = 1, TESSEL_NORM_RMS_HEADS = 2 };
enum { TESSEL_ACT_GELU = 0, TESSEL_ACT_SWIGLU = 1 };

/* One op of a unit. Ops run in order in forward and in reverse in backward.
** The core runs every op a strategy's layer_ops leave NULL; rotary,
** activation, residual and per-head norm ops are elementwise on whatever
** part a rank holds and are always the core's. */
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
  /* ABI 2.2. ROTARY: Llama 3's scaling of the frequencies (Hugging Face's
  ** rope_type "llama3"): rope_factor 0 when they are plain
  ** theta^(-2i/head_size); otherwise wavelengths longer than
  ** rope_original_positions / rope_low_freq_factor are stretched
  ** rope_factor times, those shorter than rope_original_positions /
  ** rope_high_freq_factor kept, and those between interpolated. */
  double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
  int32_t rope_original_positions;
  /* ABI 2.4. ATTENTION: the sliding window (model.sliding_window), keys
  ** each query attends to, its own included; 0: every earlier key. */
  int32_t window;
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
** stores a seq × seq matrix). dq, dk, dv have the strides of q, k, v.
** window (ABI 2.4; model.sliding_window): when > 0, query t attends to
** keys t − window < j <= t only (Mistral's and Phi-3's sliding window);
** 0: to all keys j <= t. */
typedef struct tessel_attention_args {
  uint32_t size;
  const void *q, *k, *v;
  int64_t ldq, ldk, ldv;
  void *out;
  float *lse;
  const void *dout;
  void *dq, *dk, *dv;
  int64_t batch, seq, heads, kv_heads, head_size;
  int64_t window;
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

#endif /* TESSEL_PLUGIN_MODEL_H */
