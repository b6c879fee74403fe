/*
** tessel/plugin/host.h — part of the plugin ABI: the services the core lends a plugin (the host api tables).
**
** Included by <tessel/plugin.h>, which states the versioning, threading and
** error rules these declarations follow; include that header, not this one.
*/
#ifndef TESSEL_PLUGIN_HOST_H
#define TESSEL_PLUGIN_HOST_H
#ifndef TESSEL_PLUGIN_H
#error "include <tessel/plugin.h>, not its parts"
#endif

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
** be used again), synchronous otherwise. At most 1024 asynchronous calls
** may be outstanding on a rank; one more is a TESSEL_E_INTERNAL error, so
** a strategy with many small messages waits for some first (the SDK's
** buckets keep 256 in flight). Counts are in elements of `dtype`.
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
  ** convention, plain frequencies theta^(-2i/head_size); inverse = 1
  ** rotates back (the backward). A model's ROTARY ops, which may scale
  ** their frequencies (tessel_op.rope_factor), are always the core's. */
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
  ** checked and completed). ACT may be read from `place` on: a unit not yet
  ** answered for reads as the run's own placement of it (train.recompute,
  ** train.offload_activations), the default its `place` call will see. */
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

#endif /* TESSEL_PLUGIN_HOST_H */
