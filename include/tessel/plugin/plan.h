/*
** tessel/plugin/plan.h — part of the plugin ABI: planning: the plan query and a rank's estimate (ABI 2.1).
**
** Included by <tessel/plugin.h>, which states the versioning, threading and
** error rules these declarations follow; include that header, not this one.
*/
#ifndef TESSEL_PLUGIN_PLAN_H
#define TESSEL_PLUGIN_PLAN_H
#ifndef TESSEL_PLUGIN_H
#error "include <tessel/plugin.h>, not its parts"
#endif

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

#endif /* TESSEL_PLUGIN_PLAN_H */
