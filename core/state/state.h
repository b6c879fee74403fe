/*
** core/state/state.h — the state the core keeps for the parameters, and
** where it lives.
**
** For the parameters stored by the core (TESSEL_STORE_CORE) the state is a
** set of flat buffers over the same element space — the local parts of
** those parameters one after another, in parameter order, no padding:
**   master   fp32 master weights, on the tier the strategy placed them;
**   grad     fp32 gradients, on the device;
**   work     the working weights compute reads, in act dtype, on the device
**            (the master buffer itself when that is fp32 on the device, or
**            on the host of a backend with one address space);
**   slot i   optimizer slot i on its tier; sharded slots hold only this
**            rank's pieces of the element space, packed;
**   private  a strategy's named fp32 slots, on their tiers.
** The strategy's `place` hook decides tiers and sharding per kind
** (tessel_placement); tsl_state_plan asks and checks, tsl_state_allocate
** builds. The partition of a sharded kind is the one plugin.h states at
** tessel_placement: pieces of chunks, and a tail every rank owns.
*/
#ifndef TSL_STATE_H
#define TSL_STATE_H

#include "model/params.h"

#define TSL_MAX_PRIVATE 8
/* A placement's chunk when it names none. */
#define TSL_STATE_CHUNK_BYTES (25ull << 20)

typedef struct tsl_private {
  char name[64];
  tessel_tier tier;
  float *data;
} tsl_private;

typedef struct tsl_state {
  tsl_runtime *rt;
  uint64_t numel;                  /* elements of the flat element space */
  int n_slots;
  const char *slot_names[TESSEL_MAX_SLOTS];
  tessel_placement master_at, grad_at;
  tessel_placement slot_at[TESSEL_MAX_SLOTS]; /* tiers may differ; sharding is shared */
  tessel_placement *act_at;        /* per unit */
  int n_units;

  /* the partition of sharded slots (and gradients) */
  tessel_group *shard;             /* NULL: whole */
  int shard_rank, shard_size;
  tessel_range *owned, *counted;   /* counted: the tail on shard rank 0 only */
  int n_owned, n_counted;
  int has_tail;                    /* owned[n_owned - 1] is the tail */
  uint64_t owned_numel;            /* elements of each slot buffer */

  float *master, *grad, *slot[TESSEL_MAX_SLOTS];
  void *work;
  int separate_work;               /* work is not the master buffer */
  tsl_private priv[TSL_MAX_PRIVATE];
  int n_priv;
} tsl_state;

/* Ask the strategy where each kind lives and check the answers against the
** backend and mesh: no memory yet (what `tessel check` validates). */
tsl_status tsl_state_plan(tsl_runtime *rt, tsl_state *s, int n_units, int n_slots, const char *const *slot_names);

/* Build the partition (needs communicators), allocate the flat buffers and
** point every CORE-stored parameter at its part. */
tsl_status tsl_state_allocate(tsl_state *s, tsl_params *ps);

/* Initialise the master weights of every CORE-stored part and the working
** copy from them. */
tsl_status tsl_state_init(tsl_state *s, tsl_params *ps, uint64_t seed);

/* Copy the working weights from the master weights (after a load). */
tsl_status tsl_state_refresh_work(tsl_state *s, uint64_t begin, uint64_t end);

/* A declared private slot; *index is its number. */
tsl_status tsl_state_add_private(tsl_state *s, const char *name, tessel_tier tier, int *index);

void tsl_state_free(tsl_state *s);

/* The tier and flat buffer behind a reference (NULL when there is none). */
tsl_status tsl_state_buffer(const tsl_state *s, tessel_state_ref ref, tessel_tier *tier, void **ptr,
                            uint64_t *numel);
/* Does this rank keep a part of `ref` for parameter p, and is it sharded? */
int tsl_state_sharded(const tsl_state *s, tessel_state_ref ref);

/* Checkpoint I/O of one parameter's local part of a state (MASTER, SLOT i
** or PRIVATE i), in host memory. Sharded slots are assembled over the shard
** group, so every rank of the group must call read in the same order. */
tsl_status tsl_state_read_local(tsl_state *s, const tsl_param *p, tessel_state_ref ref, float *host);
tsl_status tsl_state_write_local(tsl_state *s, const tsl_param *p, tessel_state_ref ref, const float *host);

/* The elements each rank of n owns when `numel` elements are sharded in
** chunks of chunk_bytes (tail included; the same on every rank); in
** *chunks the number of chunks that have pieces and in *gathered the
** elements they cover: the all-gathers after a sharded update. */
uint64_t tsl_shard_owned_numel(uint64_t numel, uint64_t chunk_bytes, int n, int *chunks, uint64_t *gathered);

/* Can kernels read this tier directly? */
int tsl_tier_addressable(const tsl_runtime *rt, tessel_tier tier);

#endif
