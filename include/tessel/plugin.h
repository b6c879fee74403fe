/*
** tessel/plugin.h — the strategy plugin ABI.
**
** This header is the only contract between the tessel core and a parallel
** strategy plugin. A plugin includes it, fills in one `tessel_strategy` table
** and exports exactly one symbol, TESSEL_STRATEGY_ENTRY, that returns the
** table. It never links libtessel: every service it needs (logging, config,
** memory tiers, streams, collectives, kernels, the model) reaches it through
** the `tessel_host_api` table the core passes to `create`.
**
** Versioning. TESSEL_ABI_VERSION packs major.minor. The major is part of the
** entry symbol's name (`tessel_strategy_v1`); a minor release only appends
** fields to the end of structs and only adds enum values. Every struct that
** crosses the boundary begins with `uint32_t size` = sizeof as compiled on the
** side that filled it; the reader copies min(size, sizeof) into zeroed
** storage, so fields the writer did not know read as 0/NULL, and 0/NULL
** always means "absent / core default". Use TESSEL_HAS(p, T, field) before
** touching a field added after 1.0.
**
** Threading. Hooks run on the rank's driver thread, one at a time, in the
** order documented for each family. Host calls are safe from that thread.
** A plugin that starts threads joins them in `destroy`.
**
** Errors. Every hook returns tessel_status: 0 is success, negative values
** are error kinds. Detail goes through `api->set_error(host, status, ...)`,
** which also returns its status so `return api->set_error(...)` reads well.
** The core prefixes the hook name and the rank when it reports the error.
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
#define TESSEL_ABI_VERSION TESSEL_ABI(1, 0)

/* The entry symbol a plugin exports; the major version is in its name. */
#define TESSEL_STRATEGY_ENTRY tessel_strategy_v1
#define TESSEL_STRATEGY_ENTRY_NAME "tessel_strategy_v1"

/* True when struct *p (of type T, filled by the other side) carries field f. */
#define TESSEL_HAS(p, T, f) \
  ((p)->size >= offsetof(T, f) + sizeof(((T *)0)->f))

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

typedef struct tessel_host tessel_host;     /* one per plugin instance      */
typedef struct tessel_cfg tessel_cfg;       /* a read-only YAML node        */
typedef struct tessel_group tessel_group;   /* a communicator over mesh axes */
typedef struct tessel_work tessel_work;     /* an asynchronous collective    */
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

typedef enum { TESSEL_SUM = 0, TESSEL_MAX = 1, TESSEL_MIN = 2 } tessel_redop;

/* Memory tiers. Every allocation lands in one tier and is counted in that
** tier's ledger. DEVICE is the accelerator's memory (on the CPU backend an
** ordinary heap region with the capacity from `device.memory_limit`), HOST
** is CPU memory (pinned under CUDA), NVME is file-backed: its "addresses" are
** opaque handles that only `copy` understands. */
typedef enum { TESSEL_TIER_DEVICE = 0, TESSEL_TIER_HOST = 1, TESSEL_TIER_NVME = 2 } tessel_tier;
#define TESSEL_TIER_COUNT 3

/* What an allocation holds, for the ledger's model / non-model split. */
typedef enum {
  TESSEL_MEM_PARAM = 0,   /* parameters (master or working copies)  */
  TESSEL_MEM_GRAD = 1,    /* gradients                               */
  TESSEL_MEM_OPTIM = 2,   /* optimizer state                         */
  TESSEL_MEM_ACT = 3,     /* activations and their gradients         */
  TESSEL_MEM_SCRATCH = 4  /* communication and kernel scratch        */
} tessel_mem_kind;

typedef struct tessel_tier_stats {
  uint32_t size;
  uint64_t capacity;   /* bytes; UINT64_MAX when unbounded                */
  uint64_t in_use;     /* bytes currently allocated                       */
  uint64_t peak;       /* highest in_use since the last reset_peak        */
  uint64_t model;      /* in_use that is PARAM, GRAD or OPTIM             */
  uint64_t non_model;  /* in_use that is ACT or SCRATCH                   */
  uint64_t bytes_in;   /* copied into this tier since the last reset_peak */
  uint64_t bytes_out;  /* copied out of this tier since then              */
  uint64_t params, grads, optim; /* in_use split of `model` by kind         */
} tessel_tier_stats;

/* ------------------------------------------------------------------ mesh */

/* A plugin arranges the world's ranks on a mesh of named axes; the last axis
** varies fastest (rank = sum coord[i] * stride[i]). The core checks that the
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

/* The model is a chain of units: unit 0 is the embedding (wte, wpe), units
** 1..L are transformer blocks, unit L+1 is the head (ln_f, tied wte, loss).
** Communication hooks and the pipeline schedule speak in units. */
#define TESSEL_UNIT_EMBED 0

typedef struct tessel_model_dims {
  uint32_t size;
  int32_t layers, heads, channels, seq_len, vocab_size;
  int32_t micro_batch;   /* sequences per micro-batch on one data rank   */
  int32_t micro_steps;   /* micro-batches per optimizer step             */
  int32_t data_ranks;    /* data-parallel degree                          */
  int32_t units;         /* layers + 2                                    */
  tessel_dtype act_dtype; /* dtype of activations and working weights    */
} tessel_model_dims;

/* Parameter flags. */
#define TESSEL_PARAM_NO_DECAY (1u << 0) /* biases, layernorm, 1-D tensors      */
#define TESSEL_PARAM_TIED (1u << 1)     /* used by more than one unit (wte)     */

/* Which parameter a layer primitive uses, inside one block. */
typedef enum {
  TESSEL_W_LN1 = 0, TESSEL_W_QKV, TESSEL_W_ATTN_PROJ, TESSEL_W_LN2, TESSEL_W_FC, TESSEL_W_FC_PROJ
} tessel_block_weight;

/* A parameter as the model registers it: the global (logical) tensor. */
typedef struct tessel_param_info {
  uint32_t size;
  int32_t index;          /* 0..param_count-1, in the order the model uses them */
  const char *name;       /* Hugging Face GPT-2 name, e.g. "h.3.attn.c_attn.weight" */
  int32_t ndim;
  int64_t shape[2];       /* global shape; GPT-2 tensors have 1 or 2 dims     */
  int32_t unit;           /* unit that owns it (wte: 0, also used by the head) */
  uint32_t flags;         /* TESSEL_PARAM_*                                   */
  int32_t groups;         /* the last dim is `groups` equal segments (3 for the
                             fused q|k|v of c_attn); splits keep segments whole */
} tessel_param_info;

/* Where a rank keeps its part of a parameter. The core allocates and
** initialises CORE-stored parts; a plugin that stores the part itself
** (ZeRO-3 chunks) says STORE_PLUGIN and later `bind`s pointers for compute.
**
**   REPLICATED  the whole tensor.
**   SPLIT       a block: dimension split[i].dim cut into split[i].parts equal
**               pieces, this rank holding piece split[i].index. On a
**               dimension with `groups` > 1 each group is cut separately
**               (whole heads of q, k and v).
**   FLAT        the elements [flat_begin, flat_end) of the row-major tensor.
**   ABSENT      nothing (the unit runs on another pipeline stage).
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
  int32_t nsplit;               /* SPLIT: how many dims are cut (1 or 2) */
  tessel_split split[2];
  uint64_t flat_begin, flat_end; /* FLAT                                  */
} tessel_layout;

/* A parameter's local storage as compute sees it right now. */
typedef struct tessel_param_view {
  uint32_t size;
  void *data;        /* working weights in act_dtype (device tier)        */
  float *grad;       /* fp32 gradient (device tier), NULL if none bound    */
  float *master;     /* fp32 master weights; == data on an fp32 backend    */
  int64_t local_shape[2];
  uint64_t local_numel;
} tessel_param_view;

/* Geometry of one block's activations on this rank, per micro-batch. The
** core allocates activation buffers from it. Defaults (all zero from the
** plugin) mean the single-process layout: rows = inner_rows = B*T,
** width = C, heads = H, qkv_width = 3C, attn_width = C, fc_width = 4C,
** vocab_begin = 0, vocab = V, batch = B, every unit on this rank. */
typedef struct tessel_geometry {
  uint32_t size;
  int64_t rows;        /* residual-stream rows (tokens) on this rank          */
  int64_t width;       /* residual-stream channels on this rank               */
  int64_t inner_rows;  /* rows inside attention and MLP                        */
  int64_t batch;       /* sequences seen by attention; inner_rows = batch*T    */
  int64_t heads;       /* attention heads on this rank                         */
  int64_t qkv_width;   /* columns of the c_attn output                         */
  int64_t attn_width;  /* columns of the attention output (heads * head size)  */
  int64_t fc_width;    /* columns of the c_fc output                           */
  int64_t vocab_begin; /* first vocabulary row of wte held here                */
  int64_t vocab;       /* vocabulary rows held here                            */
  int32_t loss_replica; /* 1: another rank already counts these rows' losses  */
  int32_t act_slots;   /* activation sets kept at once (pipeline in-flight)    */
  int32_t unit_first;  /* first unit that runs on this rank                    */
  int32_t unit_last;   /* last unit that runs on this rank                     */
} tessel_geometry;

/* ------------------------------------------------------ layer primitives */

/* Arguments of one primitive call. Pointers are device memory in the
** backend's act_dtype unless noted. Forward writes `out`; backward writes
** `dinp` (overwrite) and accumulates (+=) into parameter gradients. */
typedef struct tessel_op_ctx {
  uint32_t size;
  int32_t unit;        /* unit being computed                                */
  int32_t layer;       /* block index 0..L-1, or -1 outside blocks           */
  int32_t micro;       /* micro-batch index within the step                 */
  int32_t slot;        /* activation set in use                             */
  tessel_stream *stream;
} tessel_op_ctx;

typedef struct tessel_linear_args {
  uint32_t size;
  tessel_block_weight which;     /* QKV, ATTN_PROJ, FC or FC_PROJ              */
  const tessel_param_view *w, *b;
  const void *inp; void *out;    /* forward: out[out_rows, out_cols]            */
  const void *dout; void *dinp;  /* backward                                    */
  int64_t inp_rows, inp_cols, out_rows, out_cols;
} tessel_linear_args;

typedef struct tessel_layernorm_args {
  uint32_t size;
  const tessel_param_view *w, *b;
  const void *inp; void *out;
  float *mean, *rstd;            /* [rows] fp32, saved for backward             */
  const void *dout; void *dinp;
  int64_t rows, cols;
} tessel_layernorm_args;

typedef struct tessel_attention_args {
  uint32_t size;
  const void *qkv; void *out;    /* qkv [batch, T, qkv_width], out [batch, T, attn_width] */
  float *lse;                    /* [batch, heads, T] fp32 log-sum-exp, saved; the
                                    backward reads out and lse                  */
  const void *dout; void *dqkv;
  int64_t batch, seq, heads, head_size;
} tessel_attention_args;

typedef struct tessel_embedding_args {
  uint32_t size;
  const tessel_param_view *wte, *wpe;
  const int32_t *tokens;         /* [batch, T] on the device                   */
  void *out;                     /* [rows, width]                              */
  const void *dout;
  int64_t batch, seq;
} tessel_embedding_args;

typedef struct tessel_head_args {
  uint32_t size;
  const tessel_param_view *wte;
  const void *inp;               /* ln_f output [rows, width]                  */
  const int32_t *targets;        /* [rows] on the device                       */
  float *losses;                 /* [rows] fp32 per-token loss                 */
  void *logits;                  /* scratch [rows, vocab]                      */
  void *dinp;                    /* NULL in evaluation: no backward            */
  float dloss;                   /* d(mean loss)/d(token loss) = 1/(tokens)    */
  int64_t rows, width;
} tessel_head_args;

/* A plugin's versions of the five model primitives. Any NULL member means
** the core's local version. Each runs on ctx->stream. */
typedef struct tessel_layer_ops {
  uint32_t size;
  tessel_status (*linear_forward)(void *inst, const tessel_op_ctx *, const tessel_linear_args *);
  tessel_status (*linear_backward)(void *inst, const tessel_op_ctx *, const tessel_linear_args *);
  tessel_status (*layernorm_forward)(void *inst, const tessel_op_ctx *, const tessel_layernorm_args *);
  tessel_status (*layernorm_backward)(void *inst, const tessel_op_ctx *, const tessel_layernorm_args *);
  tessel_status (*attention_forward)(void *inst, const tessel_op_ctx *, const tessel_attention_args *);
  tessel_status (*attention_backward)(void *inst, const tessel_op_ctx *, const tessel_attention_args *);
  tessel_status (*embedding_forward)(void *inst, const tessel_op_ctx *, const tessel_embedding_args *);
  tessel_status (*embedding_backward)(void *inst, const tessel_op_ctx *, const tessel_embedding_args *);
  /* loss forward and, when a->dinp is set, its backward in the same call */
  tessel_status (*head)(void *inst, const tessel_op_ctx *, const tessel_head_args *);
} tessel_layer_ops;

/* ------------------------------------------------------- host: services */

typedef struct tessel_cfg_api {
  uint32_t size;
  /* The child map or list under `key`, or NULL when absent. */
  const tessel_cfg *(*child)(tessel_host *, const tessel_cfg *node, const char *key);
  int (*has)(tessel_host *, const tessel_cfg *node, const char *key);
  /* Typed getters. A missing key yields `dflt`. A present key of the wrong
  ** type or outside [min, max] is a TESSEL_E_CONFIG error whose message
  ** names FILE:LINE:COL. Reading a key also declares it: after `create`
  ** returns, any key of the plugin's section that was never read is
  ** reported as unknown, with the closest declared key as a suggestion. */
  tessel_status (*get_int)(tessel_host *, const tessel_cfg *, const char *key, int64_t dflt,
                           int64_t min, int64_t max, int64_t *out);
  tessel_status (*get_float)(tessel_host *, const tessel_cfg *, const char *key, double dflt,
                             double min, double max, double *out);
  tessel_status (*get_bool)(tessel_host *, const tessel_cfg *, const char *key, int dflt, int *out);
  /* Sizes accept units: 512, 64KiB, 25MiB, 1GiB, 2GB. */
  tessel_status (*get_size)(tessel_host *, const tessel_cfg *, const char *key, uint64_t dflt,
                            uint64_t *out);
  /* The string lives as long as the configuration. */
  tessel_status (*get_string)(tessel_host *, const tessel_cfg *, const char *key, const char *dflt,
                              const char **out);
  /* One of `choices` (NULL-terminated); *out is its index. */
  tessel_status (*get_enum)(tessel_host *, const tessel_cfg *, const char *key,
                            const char *const *choices, int dflt, int *out);
  /* A list of integers; *n is set to its length (at most cap are stored). */
  tessel_status (*get_int_list)(tessel_host *, const tessel_cfg *, const char *key, int64_t *out,
                                int cap, int *n);
  /* A TESSEL_E_CONFIG error located at `key` of `node` (the node itself
  ** when key is NULL or absent). Returns TESSEL_E_CONFIG. */
  tessel_status (*error_at)(tessel_host *, const tessel_cfg *node, const char *key,
                            const char *fmt, ...) TESSEL_PRINTF(4, 5);
} tessel_cfg_api;

typedef struct tessel_mem_api {
  uint32_t size;
  /* Allocate `bytes` in a tier, zero-filled. `name` (e.g. the tensor) is
  ** kept for the ledger and for the error if the tier is full. */
  tessel_status (*alloc)(tessel_host *, tessel_tier, tessel_mem_kind, uint64_t bytes,
                         const char *name, void **out);
  void (*free)(tessel_host *, tessel_tier, void *ptr);
  /* Copy between any two tiers, ordered on `stream` (NULL: the compute
  ** stream). The host tier is readable only after the stream is synced. */
  tessel_status (*copy)(tessel_host *, tessel_tier dst_tier, void *dst, uint64_t dst_off,
                        tessel_tier src_tier, const void *src, uint64_t src_off, uint64_t bytes,
                        tessel_stream *stream);
  tessel_status (*stats)(tessel_host *, tessel_tier, tessel_tier_stats *out);
  /* Put the NVMe tier's files in `dir` (created if needed); call before
  ** allocating on that tier. */
  tessel_status (*set_nvme_dir)(tessel_host *, const char *dir);
} tessel_mem_api;

typedef struct tessel_stream_api {
  uint32_t size;
  tessel_stream *(*compute)(tessel_host *); /* the stream the model runs on     */
  tessel_stream *(*comm)(tessel_host *);    /* the stream collectives run on    */
  tessel_status (*record)(tessel_host *, tessel_stream *, tessel_event **out);
  tessel_status (*wait_event)(tessel_host *, tessel_stream *waiter, tessel_event *);
  tessel_status (*sync)(tessel_host *, tessel_stream *); /* block the host     */
  void (*event_free)(tessel_host *, tessel_event *);
} tessel_stream_api;

/* Collectives on device buffers, counted by the core per group and step.
** Each call is asynchronous when `work` is non-NULL (wait for it with
** `wait`), synchronous otherwise. Counts are in elements of `dtype`. */
typedef struct tessel_comm_api {
  uint32_t size;
  /* The communicator over the ranks that differ only in the axes of `axes`
  ** (a bit mask over the mesh axes; 0 = this rank alone). Only the sets
  ** described at tessel_mesh exist. */
  tessel_status (*group)(tessel_host *, uint32_t axes, tessel_group **out);
  int (*rank)(tessel_host *, const tessel_group *);
  int (*nranks)(tessel_host *, const tessel_group *);
  int (*coord)(tessel_host *, int axis); /* this rank's coordinate on an axis  */
  tessel_status (*all_reduce)(tessel_host *, tessel_group *, const void *send, void *recv,
                              uint64_t count, tessel_dtype, tessel_redop, tessel_work **work);
  /* recv gets this rank's recv_count elements of the reduced send buffer */
  tessel_status (*reduce_scatter)(tessel_host *, tessel_group *, const void *send, void *recv,
                                  uint64_t recv_count, tessel_dtype, tessel_redop, tessel_work **);
  tessel_status (*all_gather)(tessel_host *, tessel_group *, const void *send, void *recv,
                              uint64_t send_count, tessel_dtype, tessel_work **);
  tessel_status (*broadcast)(tessel_host *, tessel_group *, void *buf, uint64_t count,
                             tessel_dtype, int root, tessel_work **);
  tessel_status (*reduce)(tessel_host *, tessel_group *, const void *send, void *recv,
                          uint64_t count, tessel_dtype, tessel_redop, int root, tessel_work **);
  tessel_status (*send)(tessel_host *, tessel_group *, const void *buf, uint64_t count,
                        tessel_dtype, int peer, tessel_work **);
  tessel_status (*recv)(tessel_host *, tessel_group *, void *buf, uint64_t count, tessel_dtype,
                        int peer, tessel_work **);
  tessel_status (*barrier)(tessel_host *, tessel_group *);
  tessel_status (*wait)(tessel_host *, tessel_work *); /* completes and frees */
  tessel_status (*test)(tessel_host *, tessel_work *, int *done);
} tessel_comm_api;

/* Kernels, on the backend the run uses. Pointers are device memory;
** "act" buffers are in dims.act_dtype, fp32 otherwise. Every call is
** ordered on `stream`. A non-NULL `group` makes the kernel reduce over
** that group where a split dimension needs it (noted per kernel). */
typedef struct tessel_kernel_api {
  uint32_t size;
  /* C[M,N] = alpha * op(A) op(B) + beta * C, row-major, act dtype in, the
  ** C dtype given (fp32 for gradients). */
  tessel_status (*gemm)(tessel_host *, tessel_stream *, int trans_a, int trans_b, int64_t m,
                        int64_t n, int64_t k, float alpha, const void *a, const void *b,
                        float beta, void *c, tessel_dtype c_dtype);
  /* out[rows,oc] = inp[rows,ic] w[ic,oc] + bias[oc]   (bias may be NULL) */
  tessel_status (*linear_forward)(tessel_host *, tessel_stream *, void *out, const void *inp,
                                  const void *w, const void *bias, int64_t rows, int64_t ic,
                                  int64_t oc);
  /* dinp = dout wᵀ (overwrite, skipped if NULL); dw += inpᵀ dout; db += Σrows dout */
  tessel_status (*linear_backward)(tessel_host *, tessel_stream *, void *dinp, float *dw,
                                   float *db, const void *dout, const void *inp, const void *w,
                                   int64_t rows, int64_t ic, int64_t oc);
  /* Layer norm over `cols`; with a group, cols is this rank's slice of a
  ** hidden dimension of `total_cols` split over the group. */
  tessel_status (*layernorm_forward)(tessel_host *, tessel_stream *, tessel_group *, void *out,
                                     float *mean, float *rstd, const void *inp, const void *w,
                                     const void *b, int64_t rows, int64_t cols, int64_t total_cols);
  tessel_status (*layernorm_backward)(tessel_host *, tessel_stream *, tessel_group *, void *dinp,
                                      float *dw, float *db, const void *dout, const void *inp,
                                      const void *w, const float *mean, const float *rstd,
                                      int64_t rows, int64_t cols, int64_t total_cols);
  tessel_status (*attention_forward)(tessel_host *, tessel_stream *, const tessel_attention_args *);
  tessel_status (*attention_backward)(tessel_host *, tessel_stream *, const tessel_attention_args *);
  tessel_status (*gelu_forward)(tessel_host *, tessel_stream *, void *out, const void *inp, int64_t n);
  /* dinp = gelu'(inp) * dout */
  tessel_status (*gelu_backward)(tessel_host *, tessel_stream *, void *dinp, const void *inp,
                                 const void *dout, int64_t n);
  /* out = a + b */
  tessel_status (*add)(tessel_host *, tessel_stream *, void *out, const void *a, const void *b,
                       int64_t n);
  /* y += alpha * x, in dtype */
  tessel_status (*axpy)(tessel_host *, tessel_stream *, tessel_dtype, void *y, float alpha,
                        const void *x, int64_t n);
  tessel_status (*scale)(tessel_host *, tessel_stream *, tessel_dtype, void *x, float alpha, int64_t n);
  /* Token embedding of vocabulary rows [vocab_begin, vocab_begin+vocab)
  ** (tokens outside give 0), then out += wpe[t] when wpe is non-NULL; with a
  ** group the token part is summed over it before wpe is added. */
  tessel_status (*embedding_forward)(tessel_host *, tessel_stream *, tessel_group *, void *out,
                                     const int32_t *tokens, const void *wte, const void *wpe,
                                     int64_t batch, int64_t seq, int64_t width,
                                     int64_t vocab_begin, int64_t vocab);
  /* dwte[rows in range] += dout; dwpe[t] += Σbatch dout (dwpe may be NULL) */
  tessel_status (*embedding_backward)(tessel_host *, tessel_stream *, float *dwte, float *dwpe,
                                      const void *dout, const int32_t *tokens, int64_t batch,
                                      int64_t seq, int64_t width, int64_t vocab_begin, int64_t vocab);
  /* Softmax cross-entropy over logits [rows, vocab] holding vocabulary
  ** columns [vocab_begin, +vocab) of a group-split vocabulary. Writes the
  ** per-row loss; when `dlogits_scale` != 0 overwrites logits with
  ** dloss/dlogits * dlogits_scale. */
  tessel_status (*cross_entropy)(tessel_host *, tessel_stream *, tessel_group *, float *losses,
                                 void *logits, const int32_t *targets, int64_t rows,
                                 int64_t vocab_begin, int64_t vocab, float dlogits_scale);
  /* One AdamW step on n elements: master -= lr * (m̂/(√v̂+eps) + wd*master),
  ** grads multiplied by grad_scale first; writes the working copy `work`
  ** (act dtype) when it is not the master itself. */
  tessel_status (*adamw)(tessel_host *, tessel_stream *, float *master, void *work,
                         const float *grad, float *m, float *v, int64_t n, float lr, float beta1,
                         float beta2, float eps, float weight_decay, float grad_scale, int64_t step);
  /* *out += Σ x[i]^2 over fp32 x; out is one double in device memory. */
  tessel_status (*sumsq)(tessel_host *, tessel_stream *, double *out, const float *x, int64_t n);
} tessel_kernel_api;

/* The model as a plugin sees it, and the building blocks of a step. */
typedef struct tessel_model_api {
  uint32_t size;
  tessel_status (*dims)(tessel_host *, tessel_model_dims *out);
  int (*param_count)(tessel_host *);
  tessel_status (*param_info)(tessel_host *, int index, tessel_param_info *out);
  tessel_status (*param_layout)(tessel_host *, int index, tessel_layout *out);
  /* The local storage of a parameter as compute will use it next. */
  tessel_status (*view)(tessel_host *, int index, tessel_param_view *out);
  /* For STORE_PLUGIN parameters: point compute at plugin-owned storage
  ** (data may be NULL while a parameter is released). */
  tessel_status (*bind)(tessel_host *, int index, void *data, float *grad, float *master);
  /* Fill `dst` (device tier) with the deterministic initial values of the
  ** elements [begin, end) of the flattened global tensor. */
  tessel_status (*init_flat)(tessel_host *, int index, uint64_t begin, uint64_t end, float *dst);
  /* The parameters a unit uses: their indices, written to `out` (cap entries). */
  int (*unit_params)(tessel_host *, int unit, int *out, int cap);
  /* Step building blocks for a `train_step` hook. forward/backward run one
  ** unit on one micro-batch in activation slot `slot`, with the
  ** communication hooks around them. The boundary buffer is the residual
  ** stream entering unit u: a pipeline stage receives into it before
  ** forward(u), and receives the gradient of its output before backward. */
  tessel_status (*forward)(tessel_host *, int micro, int slot, int unit);
  tessel_status (*backward)(tessel_host *, int micro, int slot, int unit);
  tessel_status (*boundary)(tessel_host *, int slot, int unit, void **act, void **grad,
                            uint64_t *count);
} tessel_model_api;

typedef struct tessel_host_api {
  uint32_t size;
  uint32_t abi_version;   /* the core's TESSEL_ABI_VERSION */
  const char *core_version;
  void (*log)(tessel_host *, int level, const char *fmt, ...) TESSEL_PRINTF(3, 4);
  tessel_status (*set_error)(tessel_host *, tessel_status, const char *fmt, ...) TESSEL_PRINTF(3, 4);
  int (*world_size)(tessel_host *);
  int (*world_rank)(tessel_host *);
  const tessel_cfg_api *cfg;
  const tessel_mem_api *mem;
  const tessel_stream_api *stream;
  const tessel_comm_api *comm;
  const tessel_kernel_api *kernels;
  const tessel_model_api *model;
} tessel_host_api;

/* ---------------------------------------------------- the plugin's table */

/* Capabilities, for `tessel plugins` and for the core's checks. */
#define TESSEL_CAP_DATA_PARALLEL (1ull << 0)
#define TESSEL_CAP_TENSOR_PARALLEL (1ull << 1)
#define TESSEL_CAP_PIPELINE (1ull << 2)
#define TESSEL_CAP_SHARDED_STATE (1ull << 3)   /* ZeRO: optimizer/grad/param shards */
#define TESSEL_CAP_OFFLOAD (1ull << 4)         /* places state on host or NVMe     */
#define TESSEL_CAP_OWNS_OPTIMIZER (1ull << 5)

/* One optimizer step's hyper-parameters. */
typedef struct tessel_optim_step {
  uint32_t size;
  int64_t step;          /* 1-based count of optimizer steps */
  float lr, beta1, beta2, eps, weight_decay;
  float grad_scale;      /* clipping factor the core computed, 1 if none */
} tessel_optim_step;

/* Which per-parameter tensor a checkpoint hook moves. */
typedef enum { TESSEL_STATE_PARAM = 0, TESSEL_STATE_ADAM_M = 1, TESSEL_STATE_ADAM_V = 2 } tessel_state;

/*
** The strategy. Lifecycle, in order:
**   create → mesh → layout (per parameter) → geometry → [core allocates,
**   initialises, builds groups] → setup → per step: set_grad_sync,
**   train_step or the default schedule (before/after_forward,
**   before/after_backward and prefetch around each unit), grads_finish,
**   grad_norm, optimizer_step → … → destroy; eval_step for validation.
** Checkpoints may be written or read between steps (state_read/state_write).
*/
typedef struct tessel_strategy {
  uint32_t size;             /* sizeof(tessel_strategy) as compiled       */
  uint32_t abi_version;      /* TESSEL_ABI_VERSION as compiled            */
  const char *name;          /* must equal NAME in libtessel-NAME.so      */
  const char *version;       /* the plugin's own version                  */
  const char *description;   /* one line                                  */
  uint64_t caps;             /* TESSEL_CAP_*                               */

  /* setup */
  tessel_status (*create)(const tessel_host_api *, tessel_host *, const tessel_cfg *section,
                          void **inst);
  void (*destroy)(void *inst);
  /* Required. Arrange world_size ranks; a mismatch is TESSEL_E_CONFIG
  ** with a message that shows the arithmetic. */
  tessel_status (*mesh)(void *inst, int world_size, tessel_mesh *out);
  /* NULL: every parameter REPLICATED, STORE_CORE. */
  tessel_status (*layout)(void *inst, const tessel_param_info *, tessel_layout *out);
  /* NULL: the single-process geometry. */
  tessel_status (*geometry)(void *inst, tessel_geometry *out);
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
  /* The squared global gradient norm. NULL: the sum over this rank's
  ** gradients (right when gradients are replicated). */
  tessel_status (*grad_norm)(void *inst, double *sumsq);
  /* Requires TESSEL_CAP_OWNS_OPTIMIZER; NULL: core AdamW on local storage. */
  tessel_status (*optimizer_step)(void *inst, const tessel_optim_step *);

  /* memory placement: a hint, called after each unit's compute with the
  ** unit that comes next in this direction (forward: unit + 1, backward:
  ** unit - 1), so state can start moving while the current unit's
  ** communication finishes. Placement itself is the plugin's decision,
  ** made with mem->stats. */
  tessel_status (*prefetch)(void *inst, int next_unit, int backward);

  /* checkpoint: move this rank's part (as its layout describes) of one
  ** parameter's state to or from a host buffer. NULL: core storage. Both
  ** run on every rank that holds a part, one parameter at a time in the
  ** same order on all ranks, so state_read may assemble its part with a
  ** collective over the ranks that share it (ZeRO's sliced moments). */
  tessel_status (*state_read)(void *inst, int param, tessel_state, float *host_dst);
  tessel_status (*state_write)(void *inst, int param, tessel_state, const float *host_src);
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
