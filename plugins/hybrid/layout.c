/* plugins/hybrid/layout.c — what each rank keeps and computes: the check of
** the options against the model, stages, parameter layouts and geometry. */
#include <string.h>

#include "hybrid.h"

static int on_stage(const hybrid *h, int unit) { return unit >= h->unit_first && unit <= h->unit_last; }

/* Colossal-AI's balance: every stage gets layers/pp blocks and the leftover
** ones go to the middle stages, since the first and the last stage also
** run the embedding and the head. */
static void balance_stages(hybrid *h, int layers) {
  int q = layers / h->pp, r = layers % h->pp, from = h->pp / 2 - r / 2;
  for (int s = 0; s < h->pp; s++) h->stage_layers[s] = q + (s >= from && s < from + r);
}

static tessel_status check_tensor_parallel(hybrid *h, const tessel_model_dims *d) {
  const tessel_cfg_api *cfg = h->api->cfg;
  if (d->heads % h->tp != 0)
    return cfg->error_at(h->host, h->section, "tp",
                         "the model's %d heads do not split over tp %d: every tensor-parallel rank needs whole heads "
                         "(and with them an equal share of the %d-wide MLP)",
                         d->heads, h->tp, 4 * d->channels);
  if (d->vocab_size % h->tp != 0)
    return cfg->error_at(h->host, h->section, "tp",
                         "the vocabulary of %d tokens does not split over tp %d: wte is cut into equal vocabulary "
                         "slices (pad model.vocab_size to a multiple of %d)",
                         d->vocab_size, h->tp, h->tp);
  int64_t tokens = (int64_t)d->micro_batch * d->seq_len;
  if (h->sp && tokens % h->tp != 0)
    return cfg->error_at(h->host, h->section, "sequence_parallel",
                         "a micro-batch of %lld tokens (%d sequence(s) × %d) does not split into %d equal row shards",
                         (long long)tokens, d->micro_batch, d->seq_len, h->tp);
  return TESSEL_OK;
}

static tessel_status check_pipeline(hybrid *h, const tessel_model_dims *d) {
  const tessel_cfg_api *cfg = h->api->cfg;
  if (d->layers < h->pp)
    return cfg->error_at(h->host, h->section, "pp", "%d pipeline stages for %d layers: every stage needs at least one block",
                         h->pp, d->layers);
  if (h->n_stage_layers) {
    int sum = 0;
    for (int s = 0; s < h->pp; s++) sum += h->stage_layers[s];
    if (sum != d->layers)
      return cfg->error_at(h->host, h->section, "stage_layers", "adds up to %d layers, but the model has %d", sum,
                           d->layers);
  } else {
    balance_stages(h, d->layers);
  }
  int per_rank = d->micro_batch * d->micro_steps;
  if (h->microbatches && h->microbatches != d->micro_steps) {
    if (per_rank % h->microbatches == 0)
      return cfg->error_at(h->host, h->section, "num_microbatches",
                           "is %d, but each data rank's %d sequences per step make %d micro-batch(es) of "
                           "train.micro_batch_size %d; set train.micro_batch_size: %d for %d micro-batches",
                           h->microbatches, per_rank, d->micro_steps, d->micro_batch, per_rank / h->microbatches,
                           h->microbatches);
    return cfg->error_at(h->host, h->section, "num_microbatches",
                         "is %d, but each data rank's %d sequences per step do not split into %d equal micro-batches",
                         h->microbatches, per_rank, h->microbatches);
  }
  return TESSEL_OK;
}

tessel_status hybrid_plan(hybrid *h) {
  if (h->planned) return TESSEL_OK;
  tessel_model_dims *d = &h->dims;
  d->size = sizeof *d;
  tessel_status st = h->api->model->dims(h->host, d);
  if (st < 0 || (st = check_tensor_parallel(h, d)) < 0 || (st = check_pipeline(h, d)) < 0) return st;
  int before = 0;
  for (int s = 0; s < h->stage; s++) before += h->stage_layers[s];
  h->unit_first = h->stage == 0 ? 0 : 1 + before;
  h->unit_last = h->stage == h->pp - 1 ? d->layers + 1 : before + h->stage_layers[h->stage];
  /* 1F1B keeps at most pp - stage micro-batches in flight on a stage */
  h->slots = h->pp - h->stage < d->micro_steps ? h->pp - h->stage : d->micro_steps;
  h->sp = h->sp && h->tp > 1;
  h->rows = (int64_t)d->micro_batch * d->seq_len / (h->sp ? h->tp : 1);
  h->vocab = d->vocab_size / h->tp;
  h->vocab_begin = h->tp_rank * h->vocab;
  h->act_size = d->act_dtype == TESSEL_F32 ? 4 : 2;
  h->planned = 1;
  return TESSEL_OK;
}

/* The dimension a tensor-parallel split cuts, by the tensor's role; -1 for
** a replicated tensor (layer norms, wpe, the biases of row-parallel layers). */
static int split_dim(const char *name) {
  static const struct {
    const char *suffix;
    int dim;
  } cuts[] = {
      {"attn.c_attn.weight", 1}, {"attn.c_attn.bias", 0}, /* column-parallel: whole heads of q, k, v */
      {"mlp.c_fc.weight", 1},    {"mlp.c_fc.bias", 0},    /* column-parallel */
      {"attn.c_proj.weight", 0}, {"mlp.c_proj.weight", 0}, /* row-parallel */
      {"wte.weight", 0},                                  /* vocabulary-parallel */
  };
  size_t n = strlen(name);
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    size_t k = strlen(cuts[i].suffix);
    if (n >= k && strcmp(name + n - k, cuts[i].suffix) == 0) return cuts[i].dim;
  }
  return -1;
}

tessel_status hybrid_layout(void *inst, const tessel_param_info *p, tessel_layout *out) {
  hybrid *h = inst;
  tessel_status st = hybrid_plan(h);
  if (st < 0) return st;
  int tied_here = (p->flags & TESSEL_PARAM_TIED) && on_stage(h, h->dims.layers + 1);
  if (!on_stage(h, p->unit) && !tied_here) {
    out->kind = TESSEL_LAYOUT_ABSENT;
    return TESSEL_OK;
  }
  int dim = split_dim(p->name);
  if (h->tp == 1 || dim < 0) {
    out->kind = TESSEL_LAYOUT_REPLICATED;
    return TESSEL_OK;
  }
  out->kind = TESSEL_LAYOUT_SPLIT;
  out->nsplit = 1;
  out->split[0] = (tessel_split){.dim = dim, .parts = h->tp, .index = h->tp_rank};
  return TESSEL_OK;
}

tessel_status hybrid_geometry(void *inst, tessel_geometry *g) {
  hybrid *h = inst;
  tessel_status st = hybrid_plan(h);
  if (st < 0) return st;
  const tessel_model_dims *d = &h->dims;
  int64_t C = d->channels;
  g->rows = h->rows;
  g->width = C;
  g->inner_rows = (int64_t)d->micro_batch * d->seq_len;
  g->batch = d->micro_batch;
  g->heads = d->heads / h->tp;
  g->qkv_width = 3 * C / h->tp;
  g->attn_width = C / h->tp;
  g->fc_width = 4 * C / h->tp;
  g->vocab_begin = h->vocab_begin;
  g->vocab = h->vocab;
  /* every tensor-parallel rank computes the same per-token losses, unless
  ** each keeps only its row shard of them (sequence parallelism) */
  g->loss_replica = !h->sp && h->tp_rank != 0;
  g->act_slots = h->slots;
  g->unit_first = h->unit_first;
  g->unit_last = h->unit_last;
  return TESSEL_OK;
}
