/* plugins/hybrid/plugin.c — options, the mesh and the strategy table. */
#include <stdlib.h>

#include "hybrid.h"

static tessel_status read_stage_layers(hybrid *h) {
  const tessel_cfg_api *cfg = h->x.api->cfg;
  int64_t list[HYBRID_MAX_STAGES];
  tessel_status st = cfg->get_int_list(h->x.host, h->x.section, "stage_layers", list, HYBRID_MAX_STAGES, &h->n_stage_layers);
  if (st < 0 || h->n_stage_layers == 0) return st;
  if (h->n_stage_layers != h->pp)
    return cfg->error_at(h->x.host, h->x.section, "stage_layers", "lists %d stage(s), but pp is %d: give one layer count per stage",
                         h->n_stage_layers, h->pp);
  for (int s = 0; s < h->n_stage_layers; s++) {
    if (list[s] < 1 || list[s] > 1 << 20)
      return cfg->error_at(h->x.host, h->x.section, "stage_layers", "stage %d has %lld layers; every stage needs at least one",
                           s, (long long)list[s]);
    h->stage_layers[s] = (int)list[s];
  }
  return TESSEL_OK;
}

/* Every option is read whatever the others hold, so that all the
** section's mistakes are reported at once; the stage list is checked
** against pp only when pp itself is valid. */
static tessel_status read_options(hybrid *h) {
  const tessel_cfg_api *cfg = h->x.api->cfg;
  int64_t tp = 1, pp = 1, zero = 0;
  tessel_status st = TESSEL_OK, pp_st = cfg->get_int(h->x.host, h->x.section, "pp", 1, 1, HYBRID_MAX_STAGES, &pp);
  TESSEL_KEEP(st, cfg->get_int(h->x.host, h->x.section, "tp", 1, 1, 1 << 16, &tp));
  TESSEL_KEEP(st, pp_st);
  h->tp = (int)tp;
  h->pp = (int)pp;
  TESSEL_KEEP(st, tessel_opt_count(&h->x, "dp", 1 << 20, &h->dp));
  TESSEL_KEEP(st, cfg->get_bool(h->x.host, h->x.section, "sequence_parallel", 0, &h->sp));
  TESSEL_KEEP(st, cfg->get_int(h->x.host, h->x.section, "zero_stage", 0, 0, 2, &zero));
  h->zero = (int)zero;
  TESSEL_KEEP(st, tessel_opt_count(&h->x, "num_microbatches", 1 << 20, &h->microbatches));
  TESSEL_KEEP(st, tessel_opt_positive_size(&h->x, "bucket_size", 25u << 20, &h->bucket_bytes));
  if (pp_st >= 0) TESSEL_KEEP(st, read_stage_layers(h));
  return st;
}

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  hybrid *h = calloc(1, sizeof *h);
  if (!h) return api->set_error(host, TESSEL_E_NOMEM, "out of host memory");
  h->x = (tessel_sdk){api, host, section};
  tessel_status st = read_options(h);
  if (st < 0) {
    free(h);
    return st;
  }
  *out = h;
  return TESSEL_OK;
}

static void destroy(void *inst) {
  hybrid *h = inst;
  hybrid_free_grads(h);
  void *scratch[] = {h->gathered, h->partial, h->head_logits, h->head_losses};
  for (size_t i = 0; i < sizeof scratch / sizeof scratch[0]; i++)
    if (scratch[i]) h->x.api->mem->free(h->x.host, TESSEL_TIER_DEVICE, scratch[i]);
  free(h);
}

/* dp × pp × tp, tp fastest. An explicit dp must make the product the world
** size; otherwise dp is what tp × pp leaves. */
static tessel_status mesh(void *inst, int world_size, tessel_mesh *m) {
  hybrid *h = inst;
  const tessel_cfg_api *cfg = h->x.api->cfg;
  long long model = (long long)h->tp * h->pp;
  int has_tp;
  if (h->dp && model * h->dp != world_size)
    return cfg->error_at(h->x.host, h->x.section, "dp", "tp %d × pp %d × dp %d = %lld ≠ world size %d", h->tp, h->pp, h->dp,
                         model * h->dp, world_size);
  if (!h->dp && world_size % model != 0) {
    TESSEL_TRY(cfg->has(h->x.host, h->x.section, "tp", &has_tp));
    return cfg->error_at(h->x.host, h->x.section, has_tp ? "tp" : "pp",
                         "tp %d × pp %d = %lld does not divide the world size %d", h->tp, h->pp, model, world_size);
  }
  if (!h->dp) h->dp = (int)(world_size / model);
  int rank, coord[TESSEL_MESH_MAX_AXES];
  m->naxes = 3;
  m->names[AXIS_DP] = "dp";
  m->names[AXIS_PP] = "pp";
  m->names[AXIS_TP] = "tp";
  m->sizes[AXIS_DP] = h->dp;
  m->sizes[AXIS_PP] = h->pp;
  m->sizes[AXIS_TP] = h->tp;
  m->data_axes = 1u << AXIS_DP;
  TESSEL_TRY(h->x.api->world(h->x.host, &rank, NULL));
  tessel_mesh_coords(m, rank, coord);
  h->tp_rank = coord[AXIS_TP];
  h->stage = coord[AXIS_PP];
  return TESSEL_OK;
}

/* ZeRO: the optimizer slots (stage 1) and the reduced gradients (stage 2)
** sharded over dp, in chunks of bucket_size. */
static tessel_status place(void *inst, tessel_state_ref what, tessel_placement *out) {
  hybrid *h = inst;
  int shard = h->dp > 1 && ((what.kind == TESSEL_STATE_SLOT && h->zero >= 1) ||
                            (what.kind == TESSEL_STATE_GRAD && h->zero == 2));
  if (shard) {
    out->shard_axes = 1u << AXIS_DP;
    out->chunk_bytes = h->bucket_bytes;
  }
  return TESSEL_OK;
}

static tessel_status alloc(hybrid *h, uint64_t bytes, const char *name, void **out) {
  *out = NULL;
  if (bytes == 0) return TESSEL_OK;
  return h->x.api->mem->alloc(h->x.host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, bytes, name, out);
}

void hybrid_scratch_bytes(const hybrid *h, uint64_t bytes[HYBRID_SCRATCH]) {
  const tessel_model_dims *d = &h->dims;
  uint64_t tokens = (uint64_t)d->micro_batch * (uint64_t)d->seq_len, C = (uint64_t)d->dim[TESSEL_DIM_HIDDEN];
  int last = h->stage == h->pp - 1, tp = h->tp > 1;
  bytes[0] = bytes[1] = tp ? tokens * C * h->act_size : 0;
  bytes[2] = h->sp && last ? tokens * (uint64_t)h->vocab * h->act_size : 0;
  bytes[3] = h->sp && last ? tokens * sizeof(float) : 0;
}

static tessel_status alloc_scratch(hybrid *h) {
  uint64_t bytes[HYBRID_SCRATCH];
  hybrid_scratch_bytes(h, bytes);
  TESSEL_TRY(alloc(h, bytes[0], "tensor-parallel gather", &h->gathered));
  TESSEL_TRY(alloc(h, bytes[1], "tensor-parallel partial sums", &h->partial));
  TESSEL_TRY(alloc(h, bytes[2], "head logits (sequence parallel)", &h->head_logits));
  return alloc(h, bytes[3], "head losses (sequence parallel)", (void **)&h->head_losses);
}

static tessel_status setup(void *inst) {
  hybrid *h = inst;
  const tessel_comm_api *comm = h->x.api->comm;
  TESSEL_TRY(comm->group(h->x.host, 1u << AXIS_TP, &h->g_tp));
  TESSEL_TRY(comm->group(h->x.host, 1u << AXIS_PP, &h->g_pp));
  TESSEL_TRY(comm->group(h->x.host, 1u << AXIS_DP, &h->g_dp));
  TESSEL_TRY(alloc_scratch(h));
  TESSEL_TRY(hybrid_setup_grads(h));
  h->x.api->log(h->x.host, TESSEL_LOG_INFO,
                "dp %d × pp %d × tp %d%s, ZeRO stage %d: stage %d runs units %d..%d with %d activation slot(s)", h->dp,
                h->pp, h->tp, h->sp ? " (sequence parallel)" : "", h->zero, h->stage, h->unit_first, h->unit_last,
                h->slots);
  return TESSEL_OK;
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "hybrid",
    .version = "2.1.0",
    .description = "1D tensor parallel (Megatron) x sequence parallel x 1F1B pipeline x ZeRO-1/2 data parallel",
    .caps = TESSEL_CAP_DATA_PARALLEL | TESSEL_CAP_TENSOR_PARALLEL | TESSEL_CAP_PIPELINE | TESSEL_CAP_SHARDED_STATE,
    .create = create,
    .destroy = destroy,
    .mesh = mesh,
    .layout = hybrid_layout,
    .geometry = hybrid_geometry,
    .place = place,
    .setup = setup,
    .layer_ops = &hybrid_layer_ops,
    .train_step = hybrid_train_step,
    .eval_step = hybrid_eval_step,
    .after_backward = hybrid_after_backward,
    .grads_finish = hybrid_grads_finish,
    .enumerate = hybrid_enumerate,
    .estimate = hybrid_estimate,
};

TESSEL_STRATEGY_DEFINE(strategy)
