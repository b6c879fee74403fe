/* plugins/gemini/plugin.c — the strategy table, options, mesh, layouts and setup. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gemini.h"

static const char *const static_only[] = {"shard_param_frac", "offload_optim_frac", "offload_param_frac"};
static const char *const auto_only[] = {"steady_ratio", "auto_recompute"};

/* Is the key in the section? */
static int has(gemini *g, const tessel_cfg *sec, const char *key) {
  int present = 0;
  return g->api->cfg->has(g->host, sec, key, &present) >= 0 && present;
}

/* Each option is read only where it applies (chunk_size only when given:
** its absence means "search"), so the resolved section `tessel check`
** prints holds no value the options would then refuse. Every one is read
** whatever the others hold, so that all the section's mistakes are
** reported at once; the checks between options run when they read. */
static tessel_status options(gemini *g, const tessel_cfg *sec) {
  const tessel_cfg_api *cfg = g->api->cfg;
  tessel_host *h = g->host;
  gm_opts *o = &g->o;
  static const char *const placements[] = {"static", "auto", NULL};
  int placement = GM_STATIC;
  int64_t prefetch = 0;
  tessel_status st = TESSEL_OK;
  o->shard_param_frac = 1.0;
  o->steady_ratio = 0.8;
  if (has(g, sec, "chunk_size")) {
    tessel_status got = cfg->get_size(h, sec, "chunk_size", 0, &o->chunk_bytes);
    TESSEL_KEEP(st, got);
    if (got >= 0 && o->chunk_bytes == 0)
      TESSEL_KEEP(st, cfg->error_at(h, sec, "chunk_size",
                                    "must be positive (a size such as 1MiB; leave it out to search for one)"));
  }
  TESSEL_KEEP(st, cfg->get_enum(h, sec, "placement", placements, GM_STATIC, &placement));
  TESSEL_KEEP(st, cfg->get_float(h, sec, "nvme_optim_frac", 0.0, 0.0, 1.0, &o->nvme_optim_frac));
  TESSEL_KEEP(st, cfg->get_int(h, sec, "prefetch", 0, 0, 1 << 20, &prefetch));
  TESSEL_KEEP(st, cfg->get_string(h, sec, "nvme_dir", NULL, &o->nvme_dir));
  o->placement = (gm_placement)placement;
  o->prefetch = (int)prefetch;
  if (o->placement == GM_AUTO) {
    for (size_t i = 0; i < sizeof static_only / sizeof *static_only; i++)
      if (has(g, sec, static_only[i]))
        TESSEL_KEEP(st, cfg->error_at(h, sec, static_only[i],
                                      "applies to placement: static only (placement: auto places chunks itself)"));
    tessel_status ratio = cfg->get_float(h, sec, "steady_ratio", 0.8, 0.0, 1.0, &o->steady_ratio);
    TESSEL_KEEP(st, ratio);
    TESSEL_KEEP(st, cfg->get_bool(h, sec, "auto_recompute", 1, &o->auto_recompute));
    if (ratio >= 0 && o->steady_ratio <= 0.0)
      TESSEL_KEEP(st, cfg->error_at(h, sec, "steady_ratio", "must be above 0, got %g", o->steady_ratio));
  } else {
    for (size_t i = 0; i < sizeof auto_only / sizeof *auto_only; i++)
      if (has(g, sec, auto_only[i])) TESSEL_KEEP(st, cfg->error_at(h, sec, auto_only[i], "applies to placement: auto only"));
    TESSEL_KEEP(st, cfg->get_float(h, sec, "shard_param_frac", 1.0, 0.0, 1.0, &o->shard_param_frac));
    TESSEL_KEEP(st, cfg->get_float(h, sec, "offload_optim_frac", 0.0, 0.0, 1.0, &o->offload_optim_frac));
    TESSEL_KEEP(st, cfg->get_float(h, sec, "offload_param_frac", 0.0, 0.0, 1.0, &o->offload_param_frac));
    if (st < 0) return st;
    if (o->offload_param_frac > o->offload_optim_frac)
      return cfg->error_at(h, sec, "offload_param_frac",
                           "parameters leave the device only with their optimizer state (the fp32 master is the "
                           "parameter shard), so it cannot exceed offload_optim_frac (%g)",
                           o->offload_optim_frac);
    if (o->nvme_optim_frac > o->offload_optim_frac)
      return cfg->error_at(h, sec, "nvme_optim_frac",
                           "NVMe holds the moments of chunks whose optimizer state is on the host, so it cannot "
                           "exceed offload_optim_frac (%g)",
                           o->offload_optim_frac);
  }
  if (st < 0) return st;
  if (o->nvme_optim_frac > 0 && !o->nvme_dir)
    return cfg->error_at(h, sec, "nvme_optim_frac",
                         "needs nvme_dir in this section, the directory for gemini's NVMe files (device.nvme_dir "
                         "is for state the core places, not gemini's chunks)");
  /* one that does not exist is made at setup; a file in its place would
  ** only be found there, after the data was prepared */
  struct stat sb;
  if (o->nvme_optim_frac > 0 && stat(o->nvme_dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
    return cfg->error_at(h, sec, "nvme_dir", "%s exists and is not a directory: name a directory for gemini's NVMe "
                         "files (one that does not exist is created)", o->nvme_dir);
  return TESSEL_OK;
}

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  gemini *g = calloc(1, sizeof *g);
  if (!g) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  g->api = api;
  g->host = host;
  g->pos = -1;
  g->section = section;
  tessel_status st = options(g, section);
  if (st < 0) {
    free(g);
    return st;
  }
  *out = g;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  gemini *g = inst;
  gm_store_free(g);
  gm_schedules_free(g);
  gm_chunks_free(&g->cs);
  free(g->warm_unit);
  free(g->act_tier);
  free(g);
}

/* One axis: every rank holds a shard of every chunk and reads its own data. */
static tessel_status mesh(void *inst, int world_size, tessel_mesh *m) {
  gemini *g = inst;
  g->world = world_size;
  m->naxes = 1;
  m->names[0] = "dp";
  m->sizes[0] = world_size;
  m->data_axes = 1u << 0;
  return TESSEL_OK;
}

/* A step gemini can number: its schedule counts the visits of a step (each
** unit forward and backward in each micro-batch) in an int. Found when the
** model is known, so `tessel check` refuses what the run could not
** schedule; the mistake is in train's batch sizes or the layers, which
** gemini cannot point at, so it names them at its own section. */
static tessel_status check_visits(gemini *g) {
  tessel_model_dims d = {.size = sizeof d};
  TESSEL_TRY(g->api->model->dims(g->host, &d));
  int64_t visits = gm_step_visits(&d);
  if (visits <= INT_MAX) return TESSEL_OK;
  return g->api->cfg->error_at(g->host, g->section, "name",
                               "gemini schedules each step as %lld unit visits (%d micro-batch(es) × %d units, "
                               "forward and backward), more than the %d it can number; raise "
                               "train.micro_batch_size or use fewer model.layers",
                               (long long)visits, d.micro_steps, d.units, INT_MAX);
}

/* The chunks, built from the model's parameters at the first layout call
** (layouts need them, and the model exists from then on). */
static tessel_status plan(gemini *g) {
  const tessel_model_api *model = g->api->model;
  int n;
  TESSEL_TRY(check_visits(g));
  TESSEL_TRY(model->param_count(g->host, &n));
  TESSEL_TRY(g->api->world(g->host, &g->rank, NULL));
  tessel_status st = TESSEL_OK;
  gm_tensor *t = calloc((size_t)n, sizeof *t);
  uint64_t *numel = calloc((size_t)n, sizeof *numel);
  if (!t || !numel) {
    st = g->api->set_error(g->host, TESSEL_E_NOMEM, "out of host memory for %d tensors", n);
    goto fail;
  }
  for (int i = 0; i < n; i++) {
    tessel_param_info info = {.size = sizeof info};
    if ((st = model->param_info(g->host, i, &info)) < 0) goto fail;
    t[i] = (gm_tensor){.param = i, .name = info.name, .flags = info.flags, .ready_unit = info.first_unit,
                       .numel = (uint64_t)info.shape[0] * (uint64_t)(info.ndim == 2 ? info.shape[1] : 1)};
    numel[i] = t[i].numel;
  }
  uint64_t align = gm_align(g->world), elems;
  if (g->o.chunk_bytes) {
    elems = (g->o.chunk_bytes + 3) / 4;
    elems = (elems + align - 1) / align * align;
  } else {
    gm_search(numel, n, align, &g->search);
    elems = g->search.chunk_elems;
  }
  free(numel);
  st = gm_chunks_build(&g->cs, g->api, g->host, t, n, elems, g->world, g->rank);
  g->planned = st >= 0;
  return st;
fail:
  free(numel);
  free(t);
  return st;
}

static tessel_status layout(void *inst, const tessel_param_info *info, tessel_layout *out) {
  gemini *g = inst;
  tessel_status st;
  if (!g->planned && (st = plan(g)) < 0) return st;
  if (info->index < 0 || info->index >= g->cs.nt)
    return g->api->set_error(g->host, TESSEL_E_INTERNAL, "parameter %d is not in the chunks", info->index);
  uint64_t begin, end;
  gm_tensor_part(&g->cs, info->index, g->rank, &begin, &end);
  out->kind = TESSEL_LAYOUT_FLAT;
  out->store = TESSEL_STORE_PLUGIN;
  out->flat_begin = begin;
  out->flat_end = end;
  return TESSEL_OK;
}

static void log_layout(gemini *g) {
  const gm_search_result *r = &g->search;
  uint64_t capacity = 0, used = 0;
  char a[32];
  for (int k = 0; k < g->cs.nc; k++) {
    capacity += g->cs.c[k].size;
    used += g->cs.c[k].used;
  }
  if (r->tried)
    g->api->log(g->host, TESSEL_LOG_INFO,
                "chunk search: %llu elements (%s) per chunk, the least waste of %llu sizes from %llu to %llu in "
                "steps of %llu (%d outlier tensor(s) left out of the range)",
                (unsigned long long)r->chunk_elems, gm_bytes(4 * r->chunk_elems, a), (unsigned long long)r->tried,
                (unsigned long long)r->lo, (unsigned long long)r->hi, (unsigned long long)r->step, r->outliers);
  else
    g->api->log(g->host, TESSEL_LOG_INFO, "chunk size: %llu elements (%s) per chunk, as plugin.chunk_size sets",
                (unsigned long long)g->cs.chunk_elems, gm_bytes(4 * g->cs.chunk_elems, a));
  g->api->log(g->host, TESSEL_LOG_INFO, "%d chunk(s): %llu elements used, %llu wasted (%.2f%%), %llu per rank",
              g->cs.nc, (unsigned long long)used, (unsigned long long)(capacity - used),
              capacity ? 100.0 * (double)(capacity - used) / (double)capacity : 0.0,
              (unsigned long long)(capacity / (uint64_t)g->world));
  for (int k = 0; k < g->cs.nc; k++) {
    const gm_chunk *c = &g->cs.c[k];
    g->api->log(g->host, TESSEL_LOG_DEBUG, "chunk %d: %llu elements, %llu used, tensors %s .. %s; %s%s%s%s", k,
                (unsigned long long)c->size, (unsigned long long)c->used, g->cs.t[c->first].name,
                g->cs.t[c->first + c->count - 1].name,
                c->otier == TESSEL_TIER_DEVICE ? "state on the device" : "state on the host",
                c->nvme ? ", moments on NVMe" : "", c->param_dev ? ", parameters copied to the device" : "",
                c->keep ? ", kept gathered" : "");
  }
}

static void log_plan(gemini *g, const gm_sim *s) {
  int host = 0, nvme = 0, dev_param = 0, keep = 0;
  char a[32], b[32], c[32];
  for (int k = 0; k < g->cs.nc; k++) {
    host += g->cs.c[k].otier == TESSEL_TIER_HOST;
    nvme += g->cs.c[k].nvme;
    dev_param += g->cs.c[k].param_dev;
    keep += g->cs.c[k].keep;
  }
  g->api->log(g->host, TESSEL_LOG_INFO,
              "placement %s: optimizer state of %d chunk(s) on the host (%d with moments on NVMe, %d files kept "
              "open there; %d with a device copy of the parameters), %d on the device; %d kept gathered in "
              "training; prefetch %d; device %s, non-model %s",
              g->o.placement == GM_AUTO ? "auto (warm-up step first)" : "static", host, nvme, 2 * nvme, dev_param,
              g->cs.nc - host, keep, g->o.prefetch, gm_bytes(g->cap, a), gm_bytes(g->nonmodel, b));
  g->api->log(g->host, TESSEL_LOG_INFO,
              "%s step per rank: all-gather %llu B in forward and %llu B in backward, reduce-scatter %llu B "
              "(payload%s); model data on the device at most %s",
              g->o.placement == GM_AUTO ? "warm-up" : "each", (unsigned long long)s->ag_bytes[0],
              (unsigned long long)s->ag_bytes[1], (unsigned long long)s->rs_bytes,
              g->world > 1 ? ", plus 8 B for the gradient norm" : "", gm_bytes(s->peak, c));
}

static tessel_status setup(void *inst) {
  gemini *g = inst;
  const tessel_host_api *api = g->api;
  tessel_status st;
  gm_sim first;
  tessel_tier_stats dev = {.size = sizeof dev};
  int dp_rank, dp_size;
  g->dims.size = sizeof g->dims;
  TESSEL_TRY(api->model->dims(g->host, &g->dims));
  TESSEL_TRY(api->stream->compute(g->host, &g->s));
  TESSEL_TRY(api->comm->group(g->host, 1u << 0, &g->dp));
  TESSEL_TRY(api->comm->group_info(g->host, g->dp, &dp_rank, &dp_size));
  if (dp_size != g->world || dp_rank != g->rank)
    return api->set_error(g->host, TESSEL_E_INTERNAL, "the dp group is not the world it planned for");
  if (!g->units && ((st = gm_units_build(g)) < 0 || (st = gm_schedules_build(g)) < 0)) return st;
  if ((st = api->mem->alloc(g->host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, GM_OWN_SCRATCH, "gemini reductions",
                            (void **)&g->norm)) < 0 ||
      (st = api->mem->stats(g->host, TESSEL_TIER_DEVICE, &dev)) < 0)
    return st;
  /* every rank must plan alike: the most non-model bytes and the smallest
  ** device of any rank (as -capacity; an unbounded device counts as none) */
  double shared[2] = {(double)dev.non_model, dev.capacity == UINT64_MAX ? -1e30 : -(double)dev.capacity};
  if ((st = gm_max_over_dp(g, shared, 2)) < 0) return st;
  g->nonmodel = (uint64_t)shared[0];
  g->cap = shared[1] <= -1e30 ? UINT64_MAX : (uint64_t)-shared[1];
  gm_place(g);
  log_layout(g);
  if ((st = gm_check_fit(g)) < 0) return st;
  int automatic = g->o.placement == GM_AUTO;
  if ((st = gm_simulate(g, GM_RELEASE, automatic ? 0 : g->o.prefetch, 0, 0, &first)) < 0) return st;
  log_plan(g, &first);
  if (g->o.nvme_optim_frac > 0 && (st = api->mem->set_nvme_dir(g->host, g->o.nvme_dir)) < 0) return st;
  if ((st = gm_store_create(g)) < 0) return st;
  if (automatic && !(g->warm_unit = calloc((size_t)g->nunits, sizeof *g->warm_unit)))
    return api->set_error(g->host, TESSEL_E_NOMEM, "out of host memory for the warm-up readings");
  g->policy = GM_RELEASE;
  g->prefetch = automatic ? 0 : g->o.prefetch;
  g->warmup = automatic;
  return TESSEL_OK;
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "gemini",
    .version = "2.1.0",
    .description = "chunk-based ZeRO-3: parameters, gradients and AdamW state in chunks over device, host and NVMe",
    .caps = TESSEL_CAP_DATA_PARALLEL | TESSEL_CAP_SHARDED_STATE | TESSEL_CAP_OFFLOAD | TESSEL_CAP_OWNS_OPTIMIZER |
            TESSEL_CAP_FP32_ACTIVATIONS,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .layout = layout,
    .place = gm_place_state,
    .setup = setup,
    .before_forward = gm_before_forward,
    .after_forward = gm_after_forward,
    .before_backward = gm_before_backward,
    .after_backward = gm_after_backward,
    .set_grad_sync = gm_set_grad_sync,
    .grads_finish = gm_grads_finish,
    .grad_norm = gm_grad_norm,
    .optimizer_step = gm_optimizer_step,
    .prefetch = gm_prefetch_hook,
    .state_read = gm_state_read,
    .state_write = gm_state_write,
    .enumerate = gm_enumerate,
    .estimate = gm_estimate,
};

TESSEL_STRATEGY_DEFINE(strategy)
