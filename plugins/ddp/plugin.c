/* plugins/ddp/plugin.c — the strategy table, options and mesh. */
#include <stdlib.h>

#include "ddp.h"

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  ddp *d = calloc(1, sizeof *d);
  if (!d) return api->set_error(host, TESSEL_E_NOMEM, "ddp: out of host memory");
  d->api = api;
  d->host = host;
  d->sync = 1;
  tessel_status st = api->cfg->get_size(host, section, "bucket_size", 25u << 20, &d->bucket_bytes);
  if (st >= 0 && d->bucket_bytes == 0)
    st = api->cfg->error_at(host, section, "bucket_size", "must be positive (a size such as 25MiB)");
  if (st < 0) {
    free(d);
    return st;
  }
  *out = d;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  ddp_free_buckets(inst);
  free(inst);
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
  tessel_status st = d->api->comm->group(d->host, 1u << 0, &d->dp);
  return st < 0 ? st : ddp_plan_buckets(d);
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "ddp",
    .version = "1.0.0",
    .description = "data parallel: replicated model, bucketed gradient all-reduce overlapping backward",
    .caps = TESSEL_CAP_DATA_PARALLEL,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .setup = setup,
    .after_backward = ddp_after_backward,
    .set_grad_sync = ddp_set_grad_sync,
    .grads_finish = ddp_grads_finish,
};

TESSEL_STRATEGY_DEFINE(strategy)
