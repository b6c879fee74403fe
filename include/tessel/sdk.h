/*
** tessel/sdk.h — the strategy SDK's support library.
**
** Machinery every data-, tensor- or pipeline-parallel strategy needs and
** none should write again: error chaining, option helpers, mesh
** coordinates and extra groups, and gradient buckets that launch their
** collective as soon as backward has made them final. It is a small static
** library (libtessel-sdk.a, installed beside plugin.h) compiled into the
** plugin; it uses only plugin.h's host API and libc, so a plugin built with
** it still links nothing of tessel's.
**
** Contract of every call: it returns a tessel_status and reports detail
** through the host's set_error, like a hook would, so a hook can return the
** status as it is.
*/
#ifndef TESSEL_SDK_H
#define TESSEL_SDK_H

#include "tessel/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Return from the enclosing function when `expr` fails. */
#define TESSEL_TRY(expr)                         \
  do {                                           \
    tessel_status tessel_try_st_ = (expr);       \
    if (tessel_try_st_ < 0) return tessel_try_st_; \
  } while (0)

/* Keep the first failure of `expr` in st and go on: a plugin reading its
** options this way reports every mistake of its section at once (a getter
** that refuses a value still stores its default). */
#define TESSEL_KEEP(st, expr)                                    \
  do {                                                           \
    tessel_status tessel_keep_st_ = (expr);                      \
    if (tessel_keep_st_ < 0 && (st) >= 0) (st) = tessel_keep_st_; \
  } while (0)

/* Assign `expr` to st and jump to the enclosing function's `fail:` label
** when it fails (for functions that clean up). */
#define TESSEL_CHECK(st, expr) \
  do {                         \
    if (((st) = (expr)) < 0)   \
      goto fail;               \
  } while (0)

/* What every helper needs: the host table, the instance's handle and the
** plugin's config section. A plugin keeps one in its instance. */
typedef struct tessel_sdk {
  const tessel_host_api *api;
  tessel_host *host;
  const tessel_cfg *section;
} tessel_sdk;

/* ---------------------------------------------------------------- options */

/* An optional integer in [1, max] (max is capped at INT_MAX, the most *out
** holds): *out 0 when the key is absent. */
tessel_status tessel_opt_count(const tessel_sdk *x, const char *key, int64_t max, int *out);
/* A size (units allowed) that must be positive; `dflt` when absent. */
tessel_status tessel_opt_positive_size(const tessel_sdk *x, const char *key, uint64_t dflt, uint64_t *out);
/* The way out when a tensor-parallel strategy's padded vocabulary
** d->dim[TESSEL_DIM_VOCAB] does not split into `parts` equal pieces, as the
** end of its error message: "; byte-level data can take model.vocab_size:
** 384 ...", the smallest value at or above the real vocabulary whose padding
** (to a multiple of TESSEL_VOCAB_ALIGN_TP) splits. A tokenizer fixes the
** vocabulary, so the way out is for byte-level data only. Returns buf. */
const char *tessel_vocab_hint(const tessel_model_dims *d, int64_t parts, char *buf, size_t cap);

/* ------------------------------------------------------------------- mesh */

/* Rank `rank`'s coordinate on each axis of `m` (the last axis fastest). */
void tessel_mesh_coords(const tessel_mesh *m, int rank, int coord[TESSEL_MESH_MAX_AXES]);
/* The axes of `mask` longer than one rank: those a collective really spans. */
uint32_t tessel_mesh_real_axes(const tessel_mesh *m, uint32_t mask);
/* List `mask` (reduced to its real axes) among the mesh's extra groups when
** it has two axes or more and is not listed yet. */
tessel_status tessel_mesh_add_group(const tessel_sdk *x, tessel_mesh *m, uint32_t mask);

/* ------------------------------------------------------ gradient buckets */

/* A bucket: gradients of parameters that finish together and travel in one
** collective. `range` is what the collective works on in place: a stretch
** of the flat gradient buffer, or — when its parameters are not adjacent
** there — a staging copy the SDK packs before launch and unpacks after. */
typedef struct tessel_bucket {
  int key;          /* the class the plan's key function gave its parameters */
  int ready_unit;   /* final once backward has finished this unit       */
  uint64_t begin;   /* its stretch of the flat buffer (contiguous ones)  */
  uint64_t count;   /* fp32 elements                                      */
  float *range;
  int shard_tail;   /* a shard plan's last < n elements, owned by all     */
  int first, n;     /* its parameters: params[first .. first + n)         */
  int packed;
  tessel_work *work;
  int launched;
} tessel_bucket;

typedef struct tessel_buckets {
  tessel_sdk x;
  tessel_bucket *b;
  int n;
  int *params;        /* parameter indices, bucket after bucket          */
  uint64_t *offsets;  /* their flat offsets and sizes, same order        */
  uint64_t *numels;
  float *grad;        /* the flat gradient buffer                         */
  float *stage;       /* staging for packed buckets (device)              */
  int micro_steps;    /* buckets launch in the last micro-batch only      */
  int shard_rank;     /* a shard plan: this rank's place in the group     */
  int shard_size;     /*   that shards the gradients (0 for other plans)  */
  uint64_t staged;    /* elements of the staging for packed buckets      */
  int in_flight;      /* launched buckets whose collective is not yet waited for */
} tessel_buckets;

/* The class of a parameter for bucketing, or −1 to leave it out. */
typedef int (*tessel_bucket_key_fn)(void *ctx, const tessel_param_info *p);

/* The key of plans that put every gradient in one class. */
int tessel_bucket_key_all(void *ctx, const tessel_param_info *p);

/* Buckets of at most max_bytes of core-stored gradients, parameters taken
** last to first (the order backward finishes them), never mixing keys.
** Call in `setup`. */
tessel_status tessel_buckets_plan(tessel_buckets *bs, const tessel_sdk *x, uint64_t max_bytes,
                                  tessel_bucket_key_fn key, void *ctx);
/* The same plan from given parts — param i's flat offset offsets[i] and
** numels[i] elements (TESSEL_NO_OFFSET or 0: none) — with nothing
** allocated: what a rank's plan would be, for an estimate. */
tessel_status tessel_buckets_plan_parts(tessel_buckets *bs, const tessel_sdk *x, uint64_t max_bytes,
                                        tessel_bucket_key_fn key, void *ctx, const uint64_t *offsets,
                                        const uint64_t *numels);
/* Buckets that follow the partition of sharded gradients (plugin.h,
** tessel_placement): one per chunk — reduce-scatter it in place and each
** rank's piece is its reduced share — and, when there is one, a last bucket
** for the tail (shard_tail set: all-reduce it). Call in `setup`. */
tessel_status tessel_buckets_plan_shards(tessel_buckets *bs, const tessel_sdk *x);

/* Sum a bucket over `g` in place, asynchronously (b->work): an all-reduce,
** or in a shard plan (g the group the gradients are sharded over) a
** reduce-scatter that leaves this rank's piece reduced, the tail
** all-reduced. The launch of every strategy that needs no other. */
tessel_status tessel_bucket_sum(const tessel_buckets *bs, tessel_group *g, tessel_bucket *b);

/* Launch one bucket's collective, asynchronously (b->work). */
enum { TESSEL_BUCKETS_IN_FLIGHT = 256 };
typedef tessel_status (*tessel_bucket_launch_fn)(void *ctx, tessel_bucket *b);
/* After backward of `unit` on micro-batch `micro`: in the last micro-batch,
** launch every bucket whose gradients are now final, in bucket order. With
** TESSEL_BUCKETS_IN_FLIGHT collectives outstanding, the oldest is waited for
** before the next starts (the core holds a bounded number, see host.h). */
tessel_status tessel_buckets_ready(tessel_buckets *bs, int unit, int micro, tessel_bucket_launch_fn launch,
                                   void *ctx);
/* Wait for every launched bucket and unpack the packed ones; a bucket that
** never launched is an error naming its parameters. Ready for the next step. */
tessel_status tessel_buckets_finish(tessel_buckets *bs);
void tessel_buckets_free(tessel_buckets *bs);

/* ------------------------------------------------------------- estimates */

/* What an `estimate` hook computes from (plugin.h, tessel_plan_query): a
** rank's parts and their offsets in the core's flat storage, traffic lines,
** and the FLOPs of the model's units. */

/* A parameter's layout as a function of the rank being estimated: usually
** the strategy's layout hook on a copy of the instance set up as that rank. */
typedef tessel_status (*tessel_layout_fn)(void *inst, const tessel_param_info *p, tessel_layout *out);

/* Elements of the part a layout gives (0 when ABSENT). */
uint64_t tessel_layout_numel(const tessel_param_info *p, const tessel_layout *l);

/* A rank's parts: for every parameter, its layout there, its elements, and
** its offset in the flat core storage (CORE-stored parts one after another
** in parameter order; TESSEL_NO_OFFSET for plugin-stored or absent ones).
** *core_numel: the elements of the CORE-stored parts. The arrays have one
** entry per parameter; free them with tessel_parts_free. */
typedef struct tessel_parts {
  int n;
  tessel_param_info *info;
  tessel_layout *layout;
  uint64_t *numel, *offset;
  uint64_t core_numel;
} tessel_parts;
tessel_status tessel_parts_of(const tessel_sdk *x, tessel_layout_fn layout, void *inst, tessel_parts *out);
void tessel_parts_free(tessel_parts *p);

/* Add a traffic line of the estimated rank (nothing when calls is 0). */
tessel_status tessel_est_traffic(const tessel_sdk *x, const tessel_plan_query *q, uint32_t axes,
                                 tessel_collective kind, tessel_overlap overlap, uint64_t calls, uint64_t payload);

/* How many times op `op` of `unit` runs its forward per micro-batch: 2 when
** the core recomputes it before the unit's backward (model->op_reruns,
** ABI 2.1; the unit's activation placement), else 1. Its forward
** collectives happen that many times. */
tessel_status tessel_est_op_passes(const tessel_sdk *x, int unit, int op, uint64_t *passes);

/* The core's storage for the rank (q->core_state), added into out->memory. */
tessel_status tessel_est_core(const tessel_sdk *x, const tessel_plan_query *q, const tessel_geometry *g,
                              uint64_t core_numel, tessel_estimate *out);

/* FLOPs of forward and backward of units first..last over the tokens a
** data rank runs in a step (micro_batch · micro_steps · seq_len of the
** model's dims), as one process computes them: per token 2·K·N for
** every linear [K, N] and for the LM head [V, C], 2·T·heads·head_size for
** causal attention (scores and weighted sum over the T/2 positions a token
** sees on average; T the op's sliding window where it is shorter: about
** the W a token sees); backward twice the forward. Norms, activations and
** other elementwise ops are not counted. */
tessel_status tessel_est_step_flops(const tessel_sdk *x, int first_unit, int last_unit, double *flops);

#ifdef __cplusplus
}
#endif
#endif /* TESSEL_SDK_H */
