/* plugins/hybrid/plugin.c — options, the mesh and the strategy table. */
#include <stdlib.h>

#include "hybrid.h"

/* Read an optional positive integer: 0 when the key is absent. */
static tessel_status optional_int(hybrid *h, const char *key, int64_t max, int *out) {
  int64_t v = 0;
  tessel_status st = TESSEL_OK;
  if (h->api->cfg->has(h->host, h->section, key)) st = h->api->cfg->get_int(h->host, h->section, key, 1, 1, max, &v);
  *out = (int)v;
  return st;
}

static tessel_status read_stage_layers(hybrid *h) {
  const tessel_cfg_api *cfg = h->api->cfg;
  int64_t list[HYBRID_MAX_STAGES];
  tessel_status st = cfg->get_int_list(h->host, h->section, "stage_layers", list, HYBRID_MAX_STAGES, &h->n_stage_layers);
  if (st < 0 || h->n_stage_layers == 0) return st;
  if (h->n_stage_layers != h->pp)
    return cfg->error_at(h->host, h->section, "stage_layers", "lists %d stage(s), but pp is %d: give one layer count per stage",
                         h->n_stage_layers, h->pp);
  for (int s = 0; s < h->n_stage_layers; s++) {
    if (list[s] < 1 || list[s] > 1 << 20)
      return cfg->error_at(h->host, h->section, "stage_layers", "stage %d has %lld layers; every stage needs at least one",
                           s, (long long)list[s]);
    h->stage_layers[s] = (int)list[s];
  }
  return TESSEL_OK;
}

static tessel_status read_options(hybrid *h) {
  const tessel_cfg_api *cfg = h->api->cfg;
  int64_t tp, pp, zero;
  tessel_status st;
  if ((st = cfg->get_int(h->host, h->section, "tp", 1, 1, 1 << 16, &tp)) < 0) return st;
  if ((st = cfg->get_int(h->host, h->section, "pp", 1, 1, HYBRID_MAX_STAGES, &pp)) < 0) return st;
  h->tp = (int)tp;
  h->pp = (int)pp;
  if ((st = optional_int(h, "dp", 1 << 20, &h->dp)) < 0) return st;
  if ((st = cfg->get_bool(h->host, h->section, "sequence_parallel", 0, &h->sp)) < 0) return st;
  if ((st = cfg->get_int(h->host, h->section, "zero_stage", 0, 0, 2, &zero)) < 0) return st;
  h->zero = (int)zero;
  if ((st = optional_int(h, "num_microbatches", 1 << 20, &h->microbatches)) < 0) return st;
  if ((st = cfg->get_size(h->host, h->section, "bucket_size", 25u << 20, &h->bucket_bytes)) < 0) return st;
  if (h->bucket_bytes == 0)
    return cfg->error_at(h->host, h->section, "bucket_size", "must be positive (a size such as 25MiB)");
  return read_stage_layers(h);
}

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  hybrid *h = calloc(1, sizeof *h);
  if (!h) return api->set_error(host, TESSEL_E_NOMEM, "hybrid: out of host memory");
  h->api = api;
  h->host = host;
  h->section = section;
  tessel_status st = read_options(h);
  if (st < 0) {
    free(h);
    return st;
  }
  *out = h;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  hybrid_free_storage(inst);
  free(inst);
}

/* dp × pp × tp, tp fastest. An explicit dp must make the product the world
** size; otherwise dp is what tp × pp leaves. */
static tessel_status mesh(void *inst, int world_size, tessel_mesh *m) {
  hybrid *h = inst;
  const tessel_cfg_api *cfg = h->api->cfg;
  long long model = (long long)h->tp * h->pp;
  if (h->dp && model * h->dp != world_size)
    return cfg->error_at(h->host, h->section, "dp", "tp %d × pp %d × dp %d = %lld ≠ world size %d", h->tp, h->pp, h->dp,
                         model * h->dp, world_size);
  if (!h->dp && world_size % model != 0)
    return cfg->error_at(h->host, h->section, cfg->has(h->host, h->section, "tp") ? "tp" : "pp",
                         "tp %d × pp %d = %lld does not divide the world size %d", h->tp, h->pp, model, world_size);
  if (!h->dp) h->dp = (int)(world_size / model);
  int rank = h->api->world_rank(h->host);
  h->tp_rank = rank % h->tp;
  h->stage = rank / h->tp % h->pp;
  h->dp_rank = rank / h->tp / h->pp;
  m->naxes = 3;
  m->names[AXIS_DP] = "dp";
  m->names[AXIS_PP] = "pp";
  m->names[AXIS_TP] = "tp";
  m->sizes[AXIS_DP] = h->dp;
  m->sizes[AXIS_PP] = h->pp;
  m->sizes[AXIS_TP] = h->tp;
  m->data_axes = 1u << AXIS_DP;
  return TESSEL_OK;
}

static tessel_status setup(void *inst) {
  hybrid *h = inst;
  const tessel_comm_api *comm = h->api->comm;
  tessel_status st;
  if ((st = comm->group(h->host, 1u << AXIS_TP, &h->g_tp)) < 0 || (st = comm->group(h->host, 1u << AXIS_PP, &h->g_pp)) < 0 ||
      (st = comm->group(h->host, 1u << AXIS_DP, &h->g_dp)) < 0 ||
      (st = comm->group(h->host, (1u << AXIS_DP) | (1u << AXIS_PP) | (1u << AXIS_TP), &h->g_all)) < 0)
    return st;
  if ((st = hybrid_setup_storage(h)) < 0 || (st = hybrid_plan_buckets(h)) < 0) return st;
  h->api->log(h->host, TESSEL_LOG_INFO,
              "dp %d × pp %d × tp %d%s, ZeRO stage %d: stage %d runs units %d..%d with %d activation slot(s); "
              "%llu local parameter elements, AdamW moments for %llu",
              h->dp, h->pp, h->tp, h->sp ? " (sequence parallel)" : "", h->zero, h->stage, h->unit_first, h->unit_last,
              h->slots, (unsigned long long)h->numel, (unsigned long long)h->moments);
  return TESSEL_OK;
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "hybrid",
    .version = "1.0.0",
    .description = "1D tensor parallel (Megatron) x sequence parallel x 1F1B pipeline x ZeRO-1/2 data parallel",
    .caps = TESSEL_CAP_DATA_PARALLEL | TESSEL_CAP_TENSOR_PARALLEL | TESSEL_CAP_PIPELINE | TESSEL_CAP_SHARDED_STATE |
            TESSEL_CAP_OWNS_OPTIMIZER,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .layout = hybrid_layout,
    .geometry = hybrid_geometry,
    .setup = setup,
    .layer_ops = &hybrid_layer_ops,
    .train_step = hybrid_train_step,
    .eval_step = hybrid_eval_step,
    .after_backward = hybrid_after_backward,
    .grads_finish = hybrid_grads_finish,
    .grad_norm = hybrid_grad_norm,
    .optimizer_step = hybrid_optimizer_step,
    .state_read = hybrid_state_read,
    .state_write = hybrid_state_write,
};

TESSEL_STRATEGY_DEFINE(strategy)
