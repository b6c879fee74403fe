/*
** tests/abi/probe.c — a data-parallel strategy that asks the core for every
** struct it fills and checks the answers, built three times: against this
** plugin.h, against an older minor (each sized struct's last member
** missing) and against a newer one (members appended). In each build the
** core must write no more than the plugin's struct holds, keep the `size`
** the plugin set, and read the plugin's tables and out-structs up to the
** plugin's size only — so all three train like one process. It also
** plans (ABI 2.1): enumerate offers its one option set, and estimate
** describes a rank through the query's callbacks, writing no field a
** header lacks (the newest member of tessel_traffic, `overlap`, then reads
** as 0: none). The older build's table ends before `estimate` (its newest
** hook): the core must take the shorter table and list the probe as having
** no estimate (PROBE_OLDER leaves the hook out of that build).
*/
#include <stdlib.h>
#include <string.h>

#include <tessel/plugin.h>

typedef struct probe {
  const tessel_host_api *api;
  tessel_host *host;
} probe;

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **inst) {
  (void)section;
  probe *p = calloc(1, sizeof *p);
  if (!p) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  p->api = api;
  p->host = host;
  *inst = p;
  return TESSEL_OK;
}

static void destroy(void *inst) { free(inst); }

static tessel_status mesh(void *inst, int world_size, tessel_mesh *out) {
  (void)inst;
  out->naxes = 1;
  out->names[0] = "dp";
  out->sizes[0] = world_size;
  out->data_axes = 1u;
  return TESSEL_OK;
}

static tessel_status layout(void *inst, const tessel_param_info *p, tessel_layout *out) {
  (void)inst;
  (void)p;
  out->kind = TESSEL_LAYOUT_REPLICATED;
  out->store = TESSEL_STORE_CORE;
  return TESSEL_OK;
}

static tessel_status geometry(void *inst, tessel_geometry *out) {
  (void)inst;
  out->act_slots = 1;
  return TESSEL_OK;
}

/* Did the core keep the size this plugin set (and so write no more)? */
#define KEPT(p, x, what)                                                                                    \
  do {                                                                                                      \
    if ((x).size != sizeof(x))                                                                              \
      return (p)->api->set_error((p)->host, TESSEL_E_VERSION, "%s came back with size %u, this plugin's is %zu", \
                                 what, (x).size, sizeof(x));                                                \
  } while (0)

static tessel_status probe_params(probe *p) {
  const tessel_model_api *m = p->api->model;
  int n;
  tessel_status st = m->param_count(p->host, &n);
  for (int i = 0; i < n && st >= 0; i++) {
    tessel_param_info in = {.size = sizeof in};
    tessel_layout l = {.size = sizeof l};
    tessel_param_view v = {.size = sizeof v};
    if ((st = m->param_info(p->host, i, &in)) < 0 || (st = m->param_layout(p->host, i, &l)) < 0 ||
        (st = m->view(p->host, i, &v)) < 0)
      break;
    KEPT(p, in, "a parameter's info");
    KEPT(p, l, "a layout");
    KEPT(p, v, "a view");
    if (in.index != i || in.shape[0] < 1 || l.kind != TESSEL_LAYOUT_REPLICATED || !v.grad)
      return p->api->set_error(p->host, TESSEL_E_INTERNAL, "parameter %d came back wrong", i);
  }
  return st;
}

static tessel_status probe_units(probe *p, const tessel_model_dims *d) {
  for (int u = 0; u < d->units; u++) {
    tessel_unit_info info = {.size = sizeof info};
    tessel_status st = p->api->model->unit_info(p->host, u, &info);
    if (st < 0) return st;
    KEPT(p, info, "a unit's info");
    for (int k = 0; k < 1; k++) {
      tessel_op op = {.size = sizeof op};
      if ((st = p->api->model->unit_op(p->host, u, k, &op)) < 0) return st;
      KEPT(p, op, "an op");
      if (op.index != k) return p->api->set_error(p->host, TESSEL_E_INTERNAL, "op %d of unit %d came back wrong", k, u);
    }
  }
  return TESSEL_OK;
}

static tessel_status setup(void *inst) {
  probe *p = inst;
  tessel_model_dims d = {.size = sizeof d};
  tessel_tier_stats stats = {.size = sizeof stats};
  tessel_status st = p->api->model->dims(p->host, &d);
  if (st < 0) return st;
  KEPT(p, d, "the model's dims");
  if (d.layers < 1 || d.units != d.layers + 2)
    return p->api->set_error(p->host, TESSEL_E_INTERNAL, "dims came back wrong");
  if ((st = probe_params(p)) < 0 || (st = probe_units(p, &d)) < 0) return st;
  if ((st = p->api->mem->stats(p->host, TESSEL_TIER_DEVICE, &stats)) < 0) return st;
  KEPT(p, stats, "tier statistics");
  return stats.in_use > 0 ? TESSEL_OK : p->api->set_error(p->host, TESSEL_E_INTERNAL, "tier statistics came back wrong");
}

/* Sum every gradient over the data ranks, in place. */
static tessel_status grads_finish(void *inst) {
  probe *p = inst;
  int world, n;
  tessel_group *dp;
  tessel_status st = p->api->world(p->host, NULL, &world);
  if (st < 0 || world == 1) return st;
  if ((st = p->api->comm->group(p->host, 1u, &dp)) < 0 || (st = p->api->model->param_count(p->host, &n)) < 0) return st;
  for (int i = 0; i < n && st >= 0; i++) {
    tessel_param_view v = {.size = sizeof v};
    if ((st = p->api->model->view(p->host, i, &v)) >= 0)
      st = p->api->comm->all_reduce(p->host, dp, v.grad, v.grad, (uint64_t)v.local_shape[0] * (uint64_t)v.local_shape[1],
                                    TESSEL_F32, TESSEL_SUM, NULL);
  }
  return st;
}

static tessel_status enumerate(void *inst, const tessel_plan_query *q) {
  probe *p = inst;
  return q->option_set(p->host, "");
}

#ifndef PROBE_OLDER
/* Every parameter whole in the core's storage, the single-process
** geometry with one activation slot, and (with more than one rank) one
** all-reduce of every gradient per step, as grads_finish makes it. */
static tessel_status estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out) {
  probe *p = inst;
  const tessel_model_api *m = p->api->model;
  uint64_t numel = 0, core[TESSEL_TIER_COUNT][TESSEL_MEM_KIND_COUNT];
  int n;
  tessel_status st = m->param_count(p->host, &n);
  for (int i = 0; i < n && st >= 0; i++) {
    tessel_param_info in = {.size = sizeof in};
    if ((st = m->param_info(p->host, i, &in)) >= 0) numel += (uint64_t)in.shape[0] * (uint64_t)in.shape[1];
  }
  tessel_geometry g = {.size = sizeof g, .act_slots = 1};
  if (st >= 0) st = q->core_state(p->host, &g, numel, core);
  for (int t = 0; t < TESSEL_TIER_COUNT && st >= 0; t++)
    for (int k = 0; k < TESSEL_MEM_KIND_COUNT; k++) out->memory[t][k] = core[t][k];
  tessel_traffic sums = {.size = sizeof sums, .axes = 1u, .kind = TESSEL_COLL_ALL_REDUCE, .calls = (uint64_t)n,
                         .payload = 4 * numel};
  if (st >= 0 && q->world_size > 1) st = q->traffic(p->host, &sums);
  return st;
}
#endif

static const tessel_strategy table = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "probe",
    .version = PROBE_BUILD,
    .description = "test strategy: checks every struct the core fills",
    .caps = TESSEL_CAP_DATA_PARALLEL,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .layout = layout,
    .geometry = geometry,
    .setup = setup,
    .grads_finish = grads_finish,
    .enumerate = enumerate,
#ifndef PROBE_OLDER
    .estimate = estimate,
#endif
};

TESSEL_STRATEGY_DEFINE(table)
