/*
** zero_offload.c — ZeRO-1 with the optimizer moments on the host, a tessel
** strategy built outside tessel's tree with the installed SDK only.
**
** Every rank keeps the whole model and computes the gradient of its slice
** of the batch, as in data parallelism. The flat gradient buffer is cut
** into chunks, and each chunk into one piece per rank; as soon as backward
** has made a chunk's gradients final, a reduce-scatter leaves each rank
** its piece summed over all ranks (Rajbhandari et al., "ZeRO", 2020). The
** AdamW moments exist only for a rank's own pieces, in host memory: the
** core's optimizer streams them through the device, updates the owned
** pieces of the master weights and all-gathers them piece by piece.
**
** The strategy only says where state lives (the `place` hook) and sums the
** gradients (SDK shard buckets); the core runs the sharded optimizer, the
** gradient norm over owned pieces and checkpoints that any other strategy
** can resume. Sums run in rank order, so its trajectory is ddp's bit for bit.
**
** Options (plugin section):
**   chunk_size   bytes of gradients per reduce-scatter (default 25 MiB)
**   moments_on   host (default) or device: the tier of the moments
*/
#include <stdlib.h>

#include "tessel/sdk.h"

typedef struct zero_offload {
  tessel_sdk x;
  uint64_t chunk_bytes;
  tessel_tier moments_tier;
  tessel_group *dp;
  tessel_buckets buckets;
} zero_offload;

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  zero_offload *z = calloc(1, sizeof *z);
  if (!z) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  z->x = (tessel_sdk){api, host, section};
  static const char *const tiers[] = {"device", "host", NULL}; /* tessel_tier order */
  int tier;
  tessel_status st = tessel_opt_positive_size(&z->x, "chunk_size", 25u << 20, &z->chunk_bytes);
  if (st >= 0) st = api->cfg->get_enum(host, section, "moments_on", tiers, TESSEL_TIER_HOST, &tier);
  z->moments_tier = (tessel_tier)tier;
  if (st < 0) {
    free(z);
    return st;
  }
  *out = z;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  zero_offload *z = inst;
  tessel_buckets_free(&z->buckets);
  free(z);
}

/* One axis: every rank is a data-parallel replica. */
static tessel_status mesh(void *inst, int world_size, tessel_mesh *m) {
  (void)inst;
  m->naxes = 1;
  m->names[0] = "dp";
  m->sizes[0] = world_size;
  m->data_axes = 1u << 0;
  return TESSEL_OK;
}

/* Gradients and moments sharded over dp by the same chunks; the moments on
** their tier. Master weights, activations: the defaults (device, whole). */
static tessel_status place(void *inst, tessel_state_ref what, tessel_placement *out) {
  zero_offload *z = inst;
  if (what.kind != TESSEL_STATE_GRAD && what.kind != TESSEL_STATE_SLOT) return TESSEL_OK;
  out->shard_axes = 1u << 0;
  out->chunk_bytes = z->chunk_bytes;
  if (what.kind == TESSEL_STATE_SLOT) out->tier = z->moments_tier;
  return TESSEL_OK;
}

static tessel_status setup(void *inst) {
  zero_offload *z = inst;
  TESSEL_TRY(z->x.api->comm->group(z->x.host, 1u << 0, &z->dp));
  TESSEL_TRY(tessel_buckets_plan_shards(&z->buckets, &z->x));
  z->x.api->log(z->x.host, TESSEL_LOG_INFO, "%d reduce-scatter chunk(s) of up to %llu bytes; moments on the %s",
                z->buckets.n, (unsigned long long)z->chunk_bytes,
                z->moments_tier == TESSEL_TIER_HOST ? "host" : "device");
  return TESSEL_OK;
}

static tessel_status reduce_scatter(void *ctx, tessel_bucket *b) {
  zero_offload *z = ctx;
  return tessel_bucket_sum(&z->buckets, z->dp, b);
}

/* After backward of `unit` in the last micro-batch, every chunk whose
** gradients are now final starts its reduce-scatter. */
static tessel_status after_backward(void *inst, int unit, int micro) {
  zero_offload *z = inst;
  return tessel_buckets_ready(&z->buckets, unit, micro, reduce_scatter, z);
}

static tessel_status grads_finish(void *inst) { return tessel_buckets_finish(&((zero_offload *)inst)->buckets); }

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "zero-offload",
    .version = "1.0.0",
    .description = "ZeRO-1: gradients reduce-scattered by chunk, AdamW moments sharded on the host",
    .caps = TESSEL_CAP_DATA_PARALLEL | TESSEL_CAP_SHARDED_STATE | TESSEL_CAP_OFFLOAD,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .place = place,
    .setup = setup,
    .after_backward = after_backward,
    .grads_finish = grads_finish,
};

TESSEL_STRATEGY_DEFINE(strategy)
