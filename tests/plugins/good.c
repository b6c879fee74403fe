/*
** tests/plugins/good.c — `testgood`, the smallest real strategy.
**
** Plain data parallelism: one mesh axis "dp" over every rank, every
** parameter replicated (no layout hook), and at the end of each step each
** gradient summed over the data ranks (the core's loss scale already divides
** by their number). It reads one option, `greeting_count` (an integer ≥ 1,
** default 1), through the host's config getters so that the loader tests can
** provoke option errors and unknown-key reports in a plugin section.
**
** The same source is built twice, with TESTGOOD_VERSION "1.0" and "2.0", so
** that two ranks can be made to load different builds; and once with
** TESTGOOD_SETUP_FAILS_ON_RANK=R, whose setup fails on rank R alone, and
** TESTGOOD_STEP_FAILS_ON_RANK=R, whose every step fails there; and once
** under a name longer than `tessel plugins`' narrowest NAME column
** (TESTGOOD_NAME, "testgood" when undefined).
*/
#include <stdint.h>
#include <stdlib.h>

#include <tessel/plugin.h>

#ifndef TESTGOOD_VERSION
#error "TESTGOOD_VERSION must be defined by the build"
#endif
#ifndef TESTGOOD_NAME
#define TESTGOOD_NAME "testgood"
#endif

typedef struct testgood {
  const tessel_host_api *api;
  tessel_host *host;
  int64_t greeting_count;
} testgood;

static tessel_status tg_create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section,
                               void **inst) {
  int64_t count = 0;
  tessel_status st = api->cfg->get_int(host, section, "greeting_count", 1, 1, INT64_MAX, &count);
  if (st < 0) return st;
  testgood *t = calloc(1, sizeof *t);
  if (!t) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  t->api = api;
  t->host = host;
  t->greeting_count = count;
  api->log(host, TESSEL_LOG_DEBUG, "hello x%lld", (long long)count);
  *inst = t;
  return TESSEL_OK;
}

static void tg_destroy(void *inst) { free(inst); }

static tessel_status tg_mesh(void *inst, int world_size, tessel_mesh *out) {
  testgood *t = inst;
  if (world_size < 1)
    return t->api->set_error(t->host, TESSEL_E_INTERNAL, "world size %d", world_size);
  out->naxes = 1;
  out->names[0] = "dp";
  out->sizes[0] = world_size;
  out->data_axes = 1u;
  out->n_groups = 0;
  return TESSEL_OK;
}

/* Sum every gradient over the data ranks, in place (failing on rank
** TESTGOOD_STEP_FAILS_ON_RANK alone, when it is defined, before the sum
** the other ranks then wait in). */
static tessel_status tg_grads_finish(void *inst) {
  testgood *t = inst;
  const tessel_host_api *api = t->api;
  int world, n, rank = 0;
  tessel_status st = api->world(t->host, &rank, &world);
#ifdef TESTGOOD_STEP_FAILS_ON_RANK
  if (st >= 0 && rank == TESTGOOD_STEP_FAILS_ON_RANK)
    return api->set_error(t->host, TESSEL_E_DEVICE, "testgood: its gradients are lost on rank %d", rank);
#endif
  if (st < 0 || world == 1) return st;
  tessel_group *dp = NULL;
  if ((st = api->comm->group(t->host, 1u, &dp)) < 0 || (st = api->model->param_count(t->host, &n)) < 0) return st;
  for (int i = 0; i < n; i++) {
    tessel_param_view v = {.size = sizeof v};
    if ((st = api->model->view(t->host, i, &v)) < 0) return st;
    if (!v.grad || !v.local_numel) continue;
    st = api->comm->all_reduce(t->host, dp, v.grad, v.grad, v.local_numel, TESSEL_F32, TESSEL_SUM, NULL);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}

#ifdef TESTGOOD_SETUP_FAILS_ON_RANK
static tessel_status tg_setup(void *inst) {
  testgood *t = inst;
  int rank = 0;
  tessel_status st = t->api->world(t->host, &rank, NULL);
  if (st < 0 || rank != TESTGOOD_SETUP_FAILS_ON_RANK) return st;
  return t->api->set_error(t->host, TESSEL_E_NOMEM, "testgood: no room for its buffers on rank %d", rank);
}
#endif

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = TESTGOOD_NAME,
    .version = TESTGOOD_VERSION,
    .description = "test strategy: every parameter replicated over one data-parallel axis",
    .caps = TESSEL_CAP_DATA_PARALLEL,
    .create = tg_create,
    .destroy = tg_destroy,
    .mesh = tg_mesh,
    .grads_finish = tg_grads_finish,
#ifdef TESTGOOD_SETUP_FAILS_ON_RANK
    .setup = tg_setup,
#endif
};

TESSEL_STRATEGY_DEFINE(table)
