/*
** plugins/gemini/gemini.h — chunk-based ZeRO-3 with device/host/NVMe placement.
**
** Parameters are packed, in the order the model uses them, into chunks of a
** fixed number of elements, and every chunk is cut into one equal shard per
** data-parallel rank. A rank keeps, for its shard of every chunk, the fp32
** parameters (the master copy), their gradient and the AdamW moments, each
** in the tier its chunk's placement names. Compute sees whole tensors:
** before a unit runs, the chunks holding its parameters are all-gathered
** into device buffers and its tensors are bound to their places there;
** afterwards the gathered copies are released (or, under placement auto,
** kept while the device has room). In backward each chunk also has a
** gathered-size gradient buffer; once every gradient in it is final it is
** reduce-scattered, asynchronously, into the owners' gradient shards, and
** AdamW then runs shard by shard on the tier where each shard's state lives.
**
** Every decision is taken from values all ranks share — sizes, positions in
** the schedule, measurements reduced over the data-parallel group — so the
** ranks decide alike and meet in the same collectives. The same code runs
** "dry" (no memory, no copies, no messages) to simulate a step for the
** start-up checks and the traffic forecast: see gm_simulate.
*/
#ifndef GEMINI_H
#define GEMINI_H

#include "tessel/sdk.h"

/* ------------------------------------------------------------ options */

typedef enum { GM_STATIC = 0, GM_AUTO = 1 } gm_placement;

typedef struct gm_opts {
  uint64_t chunk_bytes; /* fp32 bytes per chunk; 0: search */
  gm_placement placement;
  double shard_param_frac, offload_optim_frac, offload_param_frac, nvme_optim_frac, steady_ratio;
  const char *nvme_dir;
  int prefetch;         /* chunks gathered ahead of use */
  int auto_recompute;   /* auto: recompute or offload activations that do not fit */
} gm_opts;

/* ----------------------------------------------- chunks and tensor states */

/* A tensor's life in its chunk (Colossal-AI's states):
**   FREE              its chunk is not gathered and it has no gradient pending
**   HOLD              gathered, not in use
**   COMPUTE           in use by the unit running now
**   HOLD_AFTER_BWD    its gradient is partly accumulated; more uses follow
**   READY_FOR_REDUCE  its gradient for this micro-batch is final
** Allowed moves: FREE→HOLD (gather), HOLD→FREE (release), HOLD→COMPUTE,
** COMPUTE→HOLD (forward done), COMPUTE→HOLD_AFTER_BWD (gradient added),
** HOLD_AFTER_BWD→COMPUTE (used again: the tied wte), HOLD_AFTER_BWD→
** READY_FOR_REDUCE, READY_FOR_REDUCE→HOLD (its chunk's reduce is posted).
** Anything else is an internal error naming the tensor. */
typedef enum { GM_FREE = 0, GM_COMPUTE, GM_HOLD, GM_HOLD_AFTER_BWD, GM_READY_FOR_REDUCE } gm_state;
#define GM_STATES 5

typedef struct gm_tensor {
  int param;          /* the model's parameter index (== this tensor's index) */
  const char *name;
  uint32_t flags;     /* TESSEL_PARAM_* */
  uint64_t numel;
  int chunk;
  uint64_t offset;    /* first element within its chunk */
  int ready_unit;     /* its gradient is final after this unit's backward */
  gm_state state;
} gm_tensor;

/* A run of this rank's shard that belongs to one tensor (padding has none). */
typedef struct gm_segment {
  int tensor;
  uint64_t shard_off, n;
} gm_segment;

typedef struct gm_chunk {
  uint64_t size, used, shard; /* elements: gathered size, filled, per rank */
  int first, count;           /* its tensors [first, first + count) */
  int in_state[GM_STATES];    /* how many of them are in each state */
  gm_segment *segs;           /* this rank's shard, tensor by tensor */
  int nsegs;
  int reduce_at;              /* visit within a micro-batch after which its gradient is final */
  /* placement */
  tessel_tier otier;          /* master and gradient shard: DEVICE or HOST */
  int nvme;                   /* the moments are on the NVMe tier */
  int param_dev;              /* a device copy of the parameter shard (otier HOST) */
  int keep;                   /* training: stays gathered from forward until its reduce */
  /* storage (shard-sized unless noted) */
  float *master, *gshard, *m, *v, *pshard;
  float *data, *grad;         /* gathered parameters and gradients (chunk-sized, device) */
  float *recv;                /* device: a reduce-scatter's result on its way to gshard */
  tessel_work *gather_work, *reduce_work;
  /* residency */
  int gathered, gathering, grad_live, reducing, reduce_pos;
  int acc; /* gshard already holds this step's gradient: add to it */
} gm_chunk;

typedef struct gm_chunks {
  const tessel_host_api *api;
  tessel_host *host;
  gm_tensor *t;
  int nt;
  gm_chunk *c;
  int nc;
  uint64_t chunk_elems, align;
} gm_chunks;

/* chunk.c. Pack tensors of numel[i] elements, in order, into chunks of
** `size` elements (a multiple of align): next fit, and a tensor larger
** than `size` gets a chunk of its own rounded up to align. Writes each
** tensor's chunk and offset and each chunk's size when the arrays are
** given; returns the number of chunks, *capacity their total elements. */
int gm_pack(const uint64_t *numel, int n, uint64_t size, uint64_t align, int *chunk, uint64_t *offset,
            uint64_t *sizes, uint64_t *capacity);
/* Chunk sizes are multiples of this, so every shard is a whole number of
** 64-byte lines. */
uint64_t gm_align(int world);
/* Build cs from tensors (param, name, flags, numel set) in model order,
** with chunks of chunk_elems elements split over `world` shards, and the
** segments of `rank`'s shards. Takes ownership of `tensors`. */
tessel_status gm_chunks_build(gm_chunks *cs, const tessel_host_api *api, tessel_host *host, gm_tensor *tensors,
                              int n, uint64_t chunk_elems, int world, int rank);
void gm_chunks_free(gm_chunks *cs);
/* Move tensor t to state `to`, or fail naming it if the move is not allowed. */
tessel_status gm_set_state(gm_chunks *cs, int t, gm_state to);
const char *gm_state_name(gm_state s);
/* Shard geometry: the elements [begin, end) of tensor t in `rank`'s shard. */
void gm_tensor_part(const gm_chunks *cs, int t, int rank, uint64_t *begin, uint64_t *end);

/* search.c. The chunk size that wastes least, reported for the start-up log. */
typedef struct gm_search_result {
  uint64_t chunk_elems;        /* the choice */
  uint64_t lo, hi, step, tried; /* candidates lo, lo+step, ... <= hi */
  uint64_t chunks, used, wasted;
  int outliers;                /* tensors left out of the range (> mean + 3σ) */
} gm_search_result;
void gm_search(const uint64_t *numel, int n, uint64_t align, gm_search_result *out);

/* ----------------------------------------------------------- schedule */

/* One unit run of a step in the core's default order: per micro-batch,
** forward units 0..U-1, then backward U-1..0 (training), or forward only
** (evaluation). `grads`: parameter gradients accumulate during it — every
** backward, and the head's forward in training, which also runs the loss
** backward and adds to the tied wte's gradient. */
typedef struct gm_visit {
  int unit, backward, micro, grads;
} gm_visit;

/* A step's visits: n = micro-batches × per_micro, every micro-batch in the
** same order, so its tables hold one micro-batch. */
typedef struct gm_schedule {
  gm_visit *v; /* [per_micro]: one micro-batch's visits (micro 0) */
  int n, per_micro, units;
  int *uses, *use_first; /* chunk c is used at visits uses[use_first[c] .. use_first[c + 1]) of a micro-batch */
} gm_schedule;

typedef struct gm_unit {
  int *tensors, nt; /* the parameters it uses */
  int *chunks, nc;  /* the chunks they live in, ascending */
} gm_unit;

/* ------------------------------------------------------ the strategy */

typedef enum {
  GM_RELEASE = 0, /* after a unit, release what the next visit does not use */
  GM_CACHE = 1    /* keep gathered chunks until room is needed (furthest next use goes first) */
} gm_policy;

typedef struct gemini {
  const tessel_host_api *api;
  tessel_host *host;
  tessel_stream *s;       /* the compute stream (from setup on) */
  gm_opts o;
  const tessel_cfg *section; /* the plugin: section, for mistakes found once the model is known */
  int world, rank;
  tessel_group *dp;
  tessel_model_dims dims;
  gm_chunks cs;
  gm_search_result search;
  int planned;            /* chunks built (at the first layout call) */
  gm_unit *units;
  int nunits;
  gm_schedule train, eval;
  /* the device as every rank counts it */
  uint64_t cap;           /* capacity; UINT64_MAX: unbounded */
  uint64_t nonmodel;      /* activations and scratch: setup estimate, then measured (dp max) */
  uint64_t dev_bytes;     /* this plugin's model data on the device now */
  uint64_t dev_peak;
  /* of dev_bytes, the transient gradient buffers (gathered gradients,
  ** reduced shards), now and at dev_peak: what a plan counts as gradients,
  ** as the ledger does, rather than parameters */
  uint64_t grad_bytes, grad_at_peak;
  int headroom;           /* auto: a step fits only in the whole device, not × steady_ratio */
  int acts_decided;       /* auto: the activations' placement is chosen */
  /* per unit (one allocation, act_tier): the activations' placement auto
  ** chose, or the run's own where auto does not choose, and the run's own
  ** (train.recompute, train.offload_activations); NULL: not read */
  int32_t *act_tier, *act_rec, *run_tier, *run_rec;
  struct gm_pooled *pool; /* released transient buffers, kept for reuse */
  int npool, pool_cap;
  uint64_t pooled;        /* their bytes */
  /* the step in progress */
  gm_policy policy;
  int prefetch;           /* chunks to gather ahead now (0 in the warm-up) */
  int training, warmup;
  const gm_schedule *sch;
  int pos;                /* last visit entered, -1 before the first */
  int *reduces, n_reduces; /* chunks whose reduce-scatter is in flight, ascending ([nchunks]) */
  uint64_t ag_bytes[2], rs_bytes; /* payload posted this step: all-gathers (forward, backward), reduce-scatters */
  uint64_t ag_calls[2], rs_calls; /* and how many calls */
  uint64_t *warm_unit;    /* auto warm-up: the most non-model device bytes seen around each unit */
  /* scratch */
  double *norm;           /* device, 2 doubles: the squared gradient norm, values reduced over dp */
  float *host_stage;      /* host: NVMe moments, or a gradient on its way into a host shard */
  uint64_t stage_elems;   /* per half of host_stage */
  int dry;                /* simulating: no memory, copies, messages or binds */
} gemini;

/* schedule.c */
/* The visits of one training step, micro_steps × 2 × units, in 64 bits:
** the schedule numbers them in an int, so a step of more than INT_MAX
** visits cannot be scheduled. */
int64_t gm_step_visits(const tessel_model_dims *d);
tessel_status gm_units_build(gemini *g);
tessel_status gm_schedules_build(gemini *g);
void gm_schedules_free(gemini *g);
/* Visit pos of the step (its micro-batch filled in). */
gm_visit gm_visit_at(const gm_schedule *s, int pos);
int gm_uses(const gemini *g, const gm_schedule *s, int pos, int chunk);
/* The first visit after pos that uses chunk, or n: O(log uses). */
int gm_next_use(const gemini *g, const gm_schedule *s, int pos, int chunk);
/* The position of (unit, micro, direction) in schedule s, or -1. */
int gm_position(const gm_schedule *s, int unit, int micro, int backward);

/* store.c: shard storage in its tiers and the plugin's device accounting. */
tessel_status gm_alloc(gemini *g, tessel_tier tier, tessel_mem_kind kind, uint64_t bytes, const char *what, int chunk,
                       void **out);
void gm_free(gemini *g, tessel_tier tier, void **ptr, uint64_t bytes);
/* Transient device buffers (gathered chunks, gradient buffers, reduce
** results), through the pool; `zero`: the contents must start at zero. */
tessel_status gm_take(gemini *g, tessel_mem_kind kind, uint64_t bytes, int zero, const char *what, int chunk,
                      void **out);
void gm_give(gemini *g, tessel_mem_kind kind, void **ptr, uint64_t bytes);
uint64_t gm_resident_bytes(const gemini *g); /* device bytes of shards that live there */
tessel_status gm_store_create(gemini *g);    /* allocate every shard, initialise the parameters, staging */
tessel_status gm_store_promote(gemini *g, int c); /* move a chunk's state from the host to the device */
void gm_store_free(gemini *g);

/* move.c: gathering, releasing and reducing chunks. */
tessel_status gm_gather(gemini *g, int c, int backward); /* post the all-gather (waited by gm_wait_gather) */
tessel_status gm_wait_gather(gemini *g, int c);
tessel_status gm_release(gemini *g, int c);
tessel_status gm_grad_buffer(gemini *g, int c);
tessel_status gm_reduce(gemini *g, int c, int pos);
tessel_status gm_reduce_complete(gemini *g, int c);
/* Finish every reduce posted before visit `before` (INT_MAX: all), in chunk order. */
tessel_status gm_reduces_complete(gemini *g, int before);
tessel_status gm_release_all(gemini *g);

/* The device scratch gemini takes for itself (its reductions). */
#define GM_OWN_SCRATCH (2 * sizeof(double))

/* placement.c */
const char *gm_bytes(uint64_t bytes, char buf[32]); /* "12.50 MiB" */
tessel_status gm_max_over_dp(gemini *g, double *v, int n); /* each v[i]: the largest of any rank (n <= 2) */
void gm_place(gemini *g);                    /* the initial placement from the options */
uint64_t gm_limit(const gemini *g);          /* device bytes a step may use */
uint64_t gm_budget(const gemini *g);         /* room for model data on the device */
tessel_status gm_make_room(gemini *g, int pos, uint64_t demand);
tessel_status gm_prefetch_ahead(gemini *g, int pos);
tessel_status gm_check_fit(gemini *g);       /* stop before step 1 when a step cannot fit */
/* The error for a device of `have` bytes that cannot hold even the least
** step: `other` bytes of activations and scratch beside `least` of model
** data (every chunk offloaded). Says what is left to try. */
tessel_status gm_refuse_least(gemini *g, uint64_t other, uint64_t least, uint64_t have);
tessel_status gm_warmup_end(gemini *g);      /* auto: measure, promote, switch to caching */
void gm_warmup_sample(gemini *g, int unit);

/* hooks.c */
tessel_status gm_before_forward(void *inst, int unit, int micro);
tessel_status gm_after_forward(void *inst, int unit, int micro);
tessel_status gm_before_backward(void *inst, int unit, int micro);
tessel_status gm_after_backward(void *inst, int unit, int micro);
tessel_status gm_prefetch_hook(void *inst, int next_unit, tessel_phase phase);
tessel_status gm_set_grad_sync(void *inst, int on);
tessel_status gm_grads_finish(void *inst);
/* A training step simulated dry: the current placement, the given policy and prefetch. */
typedef struct gm_sim {
  uint64_t peak;       /* most model-data device bytes at once, resident shards included */
  uint64_t peak_grads; /* of them, transient gradient buffers */
  uint64_t ag_bytes[2], rs_bytes;
  uint64_t ag_calls[2], rs_calls;
} gm_sim;
/* all_offloaded: as if every chunk's state were on the host; unbounded:
** as if the device had no limit (nothing is evicted). */
tessel_status gm_simulate(gemini *g, gm_policy policy, int prefetch, int all_offloaded, int unbounded, gm_sim *out);

/* auto, once non-model memory is known: switch to caching, move the
** optimizer state of the chunks that fit to the device, and simulate the
** steady step (dry-safe, for estimates). */
tessel_status gm_settle(gemini *g, int *promoted, gm_sim *steady);

/* activations.c: the `place` hook — under auto, activations recomputed or
** offloaded when they do not fit. */
tessel_status gm_place_state(void *inst, tessel_state_ref what, tessel_placement *out);

/* What placement auto does with the activations under a device of
** `capacity` bytes (activations.c): the core's non-model bytes on the
** device and host as the run placed them and as chosen, and the least model
** data beside them. g->act_tier/act_rec hold the choice (the run's own
** placement unless auto with auto_recompute). When not even the choice
** fits the whole device beside the least model data: TESSEL_E_NOMEM,
** saying what a step needs and what is available (gm_refuse_least). */
typedef struct gm_acts_choice {
  uint64_t plain_device, plain_host, device, host, model;
  int changed; /* something more is recomputed or offloaded */
} gm_acts_choice;
tessel_status gm_acts_choose(gemini *g, uint64_t capacity, gm_acts_choice *out);
/* Every unit's activations are placed to be recomputed in full. */
int gm_acts_all_full(const gemini *g);
/* Whether auto placement chooses the activations' recomputation and tier
** (placement auto with auto_recompute), rather than taking the run's. */
static inline int gm_auto_places_acts(const gemini *g) { return g->o.placement == GM_AUTO && g->o.auto_recompute; }

/* optim.c */
tessel_status gm_grad_norm(void *inst, double *sumsq);
tessel_status gm_optimizer_step(void *inst, const tessel_optim_step *hp);

/* estimate.c */
tessel_status gm_enumerate(void *inst, const tessel_plan_query *q);
tessel_status gm_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out);

/* state.c */
tessel_status gm_state_read(void *inst, int param, tessel_state_ref which, float *host_dst);
tessel_status gm_state_write(void *inst, int param, tessel_state_ref which, const float *host_src);

#endif
