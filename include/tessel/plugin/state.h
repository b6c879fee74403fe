/*
** tessel/plugin/state.h — part of the plugin ABI: core-owned state and where it is placed.
**
** Included by <tessel/plugin.h>, which states the versioning, threading and
** error rules these declarations follow; include that header, not this one.
*/
#ifndef TESSEL_PLUGIN_STATE_H
#define TESSEL_PLUGIN_STATE_H
#ifndef TESSEL_PLUGIN_H
#error "include <tessel/plugin.h>, not its parts"
#endif

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

#endif /* TESSEL_PLUGIN_STATE_H */
