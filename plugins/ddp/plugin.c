/* plugins/ddp/plugin.c — data parallelism: the strategy table, its options,
** its mesh and its three communication hooks. */
#include <stdlib.h>

#include "ddp.h"

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  ddp *d = calloc(1, sizeof *d);
  if (!d) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  d->x = (tessel_sdk){api, host, section};
  tessel_status st = tessel_opt_positive_size(&d->x, "bucket_size", 25u << 20, &d->bucket_bytes);
  if (st < 0) {
    free(d);
    return st;
  }
  *out = d;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  ddp *d = inst;
  tessel_buckets_free(&d->buckets);
  free(d);
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

static tessel_status setup(void *inst) {
  ddp *d = inst;
  TESSEL_TRY(d->x.api->comm->group(d->x.host, 1u << 0, &d->dp));
  TESSEL_TRY(tessel_buckets_plan(&d->buckets, &d->x, d->bucket_bytes, tessel_bucket_key_all, NULL));
  d->x.api->log(d->x.host, TESSEL_LOG_INFO, "%d gradient bucket(s) of up to %llu bytes", d->buckets.n,
                (unsigned long long)d->bucket_bytes);
  return TESSEL_OK;
}

static tessel_status all_reduce(void *ctx, tessel_bucket *b) {
  ddp *d = ctx;
  return tessel_bucket_sum(&d->buckets, d->dp, b);
}

/* After backward of `unit`, every bucket whose gradients are now final
** starts its all-reduce. */
static tessel_status after_backward(void *inst, int unit, int micro) {
  ddp *d = inst;
  return tessel_buckets_ready(&d->buckets, unit, micro, all_reduce, d);
}

static tessel_status grads_finish(void *inst) { return tessel_buckets_finish(&((ddp *)inst)->buckets); }

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "ddp",
    .version = "2.1.0",
    .description = "data parallel: replicated model, bucketed gradient all-reduce overlapping backward",
    .caps = TESSEL_CAP_DATA_PARALLEL,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .setup = setup,
    .after_backward = after_backward,
    .grads_finish = grads_finish,
    .estimate = ddp_estimate,
};

TESSEL_STRATEGY_DEFINE(strategy)
