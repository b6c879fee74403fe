/*
** tests/plugins/hostcalls.c — `testhostcalls`, a one-axis data-parallel
** strategy that makes one bad host call, picked by the environment variable
** HOSTCALLS. The core must refuse each with a status and a message naming
** the call and the bad value, never read or write past its own arrays, and
** never crash:
**
**   coord_create  create: comm->coord, before there is a mesh
**   coord_mesh    mesh: comm->coord, on the mesh it is filling in
**   alloc_kind    setup: mem->alloc with memory kind 12345
**   alloc_tier    setup: mem->alloc on tier 7
**   stats_tier    setup: mem->stats of tier 9
**   copy_tier     setup: mem->copy to tier 5
**   copy_dst_end  setup: mem->copy of 32 bytes to offset 48 of a 64-byte
**                 device allocation (after two that fit it exactly)
**   copy_src_end  setup: mem->copy of 32 bytes from offset 8 of a pointer
**                 40 bytes into a 64-byte host allocation
**   private_many  setup: a 9th state->add_private, over the limit
**                 (TESSEL_E_UNSUPPORTED passed on: a failure, not a decline)
**   declines      setup: set_error(TESSEL_E_UNSUPPORTED), the strategy
**                 declining the device in its own words
**   scale_bf16    setup: kernels->scale in bf16, which the CPU backend lacks
**   scale_count   grads_finish: kernels->scale of -5 elements
**   scale_dtype   grads_finish: kernels->scale in dtype 42
**   norm_neg, norm_nan, norm_inf   grad_norm: a sum of squares of -4, NaN
**                 or infinity
**   private_null  setup: state->add_private with a NULL name
**   act_null      setup: model->act_memory with NULL tier and recompute
**   null_group    grads_finish: comm->all_reduce on a NULL group
**   null_barrier  grads_finish: comm->barrier on a NULL group
**
** Without a mode it trains plainly (each gradient summed in grads_finish).
*/
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tessel/plugin.h>

typedef struct hostcalls {
  const tessel_host_api *api;
  tessel_host *host;
  const char *mode;
  int rank, world;
} hostcalls;

static int is(const hostcalls *t, const char *mode) { return t->mode && strcmp(t->mode, mode) == 0; }

static tessel_status hc_create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                               void **inst) {
  (void)section;
  hostcalls *t = calloc(1, sizeof *t);
  if (!t) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  *t = (hostcalls){.api = api, .host = host, .mode = getenv("HOSTCALLS")};
  *inst = t;
  tessel_status st = api->world(host, &t->rank, &t->world);
  int c;
  return st < 0 || !is(t, "coord_create") ? st : api->comm->coord(host, 0, &c);
}

static void hc_destroy(void *inst) { free(inst); }

static tessel_status hc_mesh(void *inst, int world_size, tessel_mesh *out) {
  hostcalls *t = inst;
  int c;
  out->naxes = 1;
  out->names[0] = "dp";
  out->data_axes = 1u;
  if (is(t, "coord_mesh")) { /* sizes[0] is still 0 */
    tessel_status st = t->api->comm->coord(t->host, 0, &c);
    if (st < 0) return st;
  }
  out->sizes[0] = world_size;
  return TESSEL_OK;
}

/* A copy that fits its allocations to the byte, then one that runs past
** the end of the destination or of the source. */
static tessel_status copy_past_end(hostcalls *t) {
  const tessel_mem_api *mem = t->api->mem;
  char *dev = NULL, *host = NULL;
  tessel_status st = mem->alloc(t->host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, 64, "copy device", (void **)&dev);
  if (st >= 0) st = mem->alloc(t->host, TESSEL_TIER_HOST, TESSEL_MEM_SCRATCH, 64, "copy host", (void **)&host);
  if (st >= 0) st = mem->copy(t->host, TESSEL_TIER_DEVICE, dev, 0, TESSEL_TIER_HOST, host, 0, 64, NULL);
  if (st >= 0) st = mem->copy(t->host, TESSEL_TIER_DEVICE, dev, 32, TESSEL_TIER_HOST, host + 40, 8, 16, NULL);
  if (st < 0) return st;
  if (is(t, "copy_dst_end")) return mem->copy(t->host, TESSEL_TIER_DEVICE, dev, 48, TESSEL_TIER_HOST, host, 0, 32, NULL);
  return mem->copy(t->host, TESSEL_TIER_DEVICE, dev, 0, TESSEL_TIER_HOST, host + 40, 8, 32, NULL);
}

/* The memory calls with a tier or kind out of their enums. */
static tessel_status bad_memory(hostcalls *t) {
  const tessel_mem_api *mem = t->api->mem;
  void *p = NULL;
  tessel_tier_stats stats = {.size = sizeof stats};
  if (is(t, "alloc_kind")) return mem->alloc(t->host, TESSEL_TIER_DEVICE, (tessel_mem_kind)12345, 64, "kind", &p);
  if (is(t, "alloc_tier")) return mem->alloc(t->host, (tessel_tier)7, TESSEL_MEM_SCRATCH, 64, "tier", &p);
  if (is(t, "stats_tier")) return mem->stats(t->host, (tessel_tier)9, &stats);
  if (is(t, "copy_tier")) {
    tessel_status st = mem->alloc(t->host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, 64, "copy", &p);
    return st < 0 ? st : mem->copy(t->host, (tessel_tier)5, p, 0, TESSEL_TIER_DEVICE, p, 0, 16, NULL);
  }
  if (is(t, "copy_dst_end") || is(t, "copy_src_end")) return copy_past_end(t);
  return TESSEL_OK;
}

/* kernels->scale of a scratch buffer. */
static tessel_status scale(hostcalls *t, tessel_dtype dt, int64_t n) {
  tessel_stream *s;
  void *p;
  tessel_status st = t->api->stream->compute(t->host, &s);
  if (st >= 0) st = t->api->mem->alloc(t->host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, 64, "scaled", &p);
  return st < 0 ? st : t->api->kernels->scale(t->host, s, dt, p, 2.0f, n);
}

/* Declining the device in its own words, or a mistake in a state or
** model call (a "not possible here" among them) passed on. */
static tessel_status unsupported(hostcalls *t) {
  char name[8] = "p";
  int index;
  if (is(t, "scale_bf16")) return scale(t, TESSEL_BF16, 8);
  if (is(t, "private_null")) return t->api->state->add_private(t->host, NULL, TESSEL_TIER_DEVICE, &index);
  if (is(t, "act_null")) {
    uint64_t device, host;
    return t->api->model->act_memory(t->host, NULL, NULL, &device, &host);
  }
  if (is(t, "declines")) return t->api->set_error(t->host, TESSEL_E_UNSUPPORTED, "declines: a test of declining");
  for (int i = 0; i < 9 && is(t, "private_many"); i++) {
    name[1] = (char)('a' + i);
    tessel_status st = t->api->state->add_private(t->host, name, TESSEL_TIER_DEVICE, &index);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}

static tessel_status hc_setup(void *inst) {
  tessel_status st = bad_memory(inst);
  return st < 0 ? st : unsupported(inst);
}

/* Sum every core-stored gradient over the ranks. */
static tessel_status hc_grads_finish(void *inst) {
  hostcalls *t = inst;
  const tessel_host_api *api = t->api;
  tessel_group *dp = NULL;
  int n;
  tessel_status st;
  if (is(t, "null_group"))
    return api->comm->all_reduce(t->host, NULL, &t->rank, &t->rank, 1, TESSEL_I32, TESSEL_SUM, NULL);
  if (is(t, "scale_count")) return scale(t, TESSEL_F32, -5);
  if (is(t, "scale_dtype")) return scale(t, (tessel_dtype)42, 4);
  if (is(t, "null_barrier")) return api->comm->barrier(t->host, NULL);
  if (t->world == 1) return TESSEL_OK;
  if ((st = api->comm->group(t->host, 1u, &dp)) < 0 || (st = api->model->param_count(t->host, &n)) < 0) return st;
  for (int i = 0; i < n; i++) {
    tessel_param_view v = {.size = sizeof v};
    if ((st = api->model->view(t->host, i, &v)) < 0) return st;
    if (v.grad && v.local_numel &&
        (st = api->comm->all_reduce(t->host, dp, v.grad, v.grad, v.local_numel, TESSEL_F32, TESSEL_SUM, NULL)) < 0)
      return st;
  }
  return TESSEL_OK;
}

/* The squared norm of gradients this test never looks at: 1, unless the
** mode asks for one that is no norm. */
static tessel_status hc_grad_norm(void *inst, double *sumsq) {
  hostcalls *t = inst;
  *sumsq = is(t, "norm_neg") ? -4.0 : is(t, "norm_nan") ? NAN : is(t, "norm_inf") ? INFINITY : 1.0;
  return TESSEL_OK;
}

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "testhostcalls",
    .version = "1.0",
    .description = "test strategy: data parallelism with one bad host call (HOSTCALLS)",
    .caps = TESSEL_CAP_DATA_PARALLEL,
    .create = hc_create,
    .destroy = hc_destroy,
    .mesh = hc_mesh,
    .setup = hc_setup,
    .grads_finish = hc_grads_finish,
    .grad_norm = hc_grad_norm,
};

TESSEL_STRATEGY_DEFINE(table)
