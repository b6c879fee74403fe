/* plugins/hybrid/layout.c — what each rank keeps and computes: the check of
** the options against the model, stages, parameter layouts and geometry. */
#include <string.h>

#include "hybrid.h"

int hybrid_on_stage(const hybrid *h, int unit) { return unit >= h->unit_first && unit <= h->unit_last; }

/* Colossal-AI's balance: every stage gets layers/pp blocks and the leftover
** ones go to the middle stages, since the first and the last stage also
** run the embedding and the head. */
static void balance_stages(hybrid *h, int layers) {
  int q = layers / h->pp, r = layers % h->pp, from = h->pp / 2 - r / 2;
  for (int s = 0; s < h->pp; s++) h->stage_layers[s] = q + (s >= from && s < from + r);
}

/* Every tensor-parallel rank needs whole query heads, whole key/value
** heads (kv heads are split, never replicated: kv_heads < tp is refused),
** an equal share of the MLP and of the (padded) vocabulary. */
static tessel_status check_tensor_parallel(hybrid *h, const tessel_model_dims *d) {
  const tessel_cfg_api *cfg = h->x.api->cfg;
  const int64_t *dim = d->dim;
  const char *what = NULL;
  char vocab[192] = "";
  int64_t n = 0;
  if (dim[TESSEL_DIM_HEADS] % h->tp) what = "query heads (model.heads)", n = dim[TESSEL_DIM_HEADS];
  else if (dim[TESSEL_DIM_KV_HEADS] % h->tp) what = "key/value heads (model.kv_heads)", n = dim[TESSEL_DIM_KV_HEADS];
  else if (dim[TESSEL_DIM_FFN] % h->tp) what = "MLP columns (model.ffn)", n = dim[TESSEL_DIM_FFN];
  else if (dim[TESSEL_DIM_VOCAB] % h->tp) {
    what = "vocabulary rows (model.vocab_size, padded)", n = dim[TESSEL_DIM_VOCAB];
    tessel_vocab_hint(d, h->tp, vocab, sizeof vocab);
  }
  /* only a model with key/value heads of its own has kv_heads to set (GPT-2 refuses the key) */
  int kv_hint = dim[TESSEL_DIM_KV_HEADS] % h->tp && dim[TESSEL_DIM_KV_HEADS] != dim[TESSEL_DIM_HEADS];
  if (what)
    return cfg->error_at(h->x.host, h->x.section, "tp",
                         "the model's %lld %s do not split over tp %d: every tensor-parallel rank keeps an equal "
                         "share%s%s",
                         (long long)n, what, h->tp,
                         kv_hint ? " (key/value heads are split, not replicated, so kv_heads must be a multiple of tp)"
                                 : "",
                         vocab);
  int64_t tokens = (int64_t)d->micro_batch * d->seq_len;
  if (h->sp && tokens % h->tp != 0)
    return cfg->error_at(h->x.host, h->x.section, "sequence_parallel",
                         "a micro-batch of %lld tokens (%d sequence(s) × %d) does not split into %d equal row shards",
                         (long long)tokens, d->micro_batch, d->seq_len, h->tp);
  return TESSEL_OK;
}

static tessel_status check_pipeline(hybrid *h, const tessel_model_dims *d) {
  const tessel_cfg_api *cfg = h->x.api->cfg;
  if (d->layers < h->pp)
    return cfg->error_at(h->x.host, h->x.section, "pp", "%d pipeline stages for %d layers: every stage needs at least one block",
                         h->pp, d->layers);
  if (h->n_stage_layers) {
    int sum = 0;
    for (int s = 0; s < h->pp; s++) sum += h->stage_layers[s];
    if (sum != d->layers)
      return cfg->error_at(h->x.host, h->x.section, "stage_layers", "adds up to %d layers, but the model has %d", sum,
                           d->layers);
  } else {
    balance_stages(h, d->layers);
  }
  int per_rank = d->micro_batch * d->micro_steps;
  if (h->microbatches && h->microbatches != d->micro_steps) {
    if (per_rank % h->microbatches == 0)
      return cfg->error_at(h->x.host, h->x.section, "num_microbatches",
                           "is %d, but each data rank's %d sequences per step make %d micro-batch(es) of "
                           "train.micro_batch_size %d; set train.micro_batch_size: %d for %d micro-batches",
                           h->microbatches, per_rank, d->micro_steps, d->micro_batch, per_rank / h->microbatches,
                           h->microbatches);
    return cfg->error_at(h->x.host, h->x.section, "num_microbatches",
                         "is %d, but each data rank's %d sequences per step do not split into %d equal micro-batches",
                         h->microbatches, per_rank, h->microbatches);
  }
  return TESSEL_OK;
}

tessel_status hybrid_plan(hybrid *h) {
  if (h->planned) return TESSEL_OK;
  tessel_model_dims *d = &h->dims;
  d->size = sizeof *d;
  TESSEL_TRY(h->x.api->model->dims(h->x.host, d));
  TESSEL_TRY(check_tensor_parallel(h, d));
  TESSEL_TRY(check_pipeline(h, d));
  int before = 0;
  for (int s = 0; s < h->stage; s++) before += h->stage_layers[s];
  h->unit_first = h->stage == 0 ? 0 : 1 + before;
  h->unit_last = h->stage == h->pp - 1 ? d->layers + 1 : before + h->stage_layers[h->stage];
  /* 1F1B keeps at most pp - stage micro-batches in flight on a stage */
  h->slots = h->pp - h->stage < d->micro_steps ? h->pp - h->stage : d->micro_steps;
  h->sp = h->sp && h->tp > 1;
  h->rows = (int64_t)d->micro_batch * d->seq_len / (h->sp ? h->tp : 1);
  h->vocab = d->dim[TESSEL_DIM_VOCAB] / h->tp;
  h->vocab_begin = h->tp_rank * h->vocab;
  h->act_size = d->act_dtype == TESSEL_F32 ? 4 : 2;
  h->planned = 1;
  return TESSEL_OK;
}

/* The dimension a tensor-parallel split cuts, by the tensor's role; -1 for
** a replicated tensor (norms, positions, the biases of row-parallel linears). */
static int split_dim(tessel_param_role role) {
  switch (role) {
    case TESSEL_ROLE_LINEAR_IN: return 1;  /* column-parallel: whole heads of each run */
    case TESSEL_ROLE_BIAS_IN: return 0;    /* with its columns */
    case TESSEL_ROLE_LINEAR_OUT: return 0; /* row-parallel */
    case TESSEL_ROLE_EMBEDDING:
    case TESSEL_ROLE_HEAD: return 0;       /* vocabulary-parallel */
    default: return -1;
  }
}

tessel_status hybrid_layout(void *inst, const tessel_param_info *p, tessel_layout *out) {
  hybrid *h = inst;
  TESSEL_TRY(hybrid_plan(h));
  if (!hybrid_on_stage(h, p->first_unit) && !hybrid_on_stage(h, p->last_unit)) {
    out->kind = TESSEL_LAYOUT_ABSENT;
    return TESSEL_OK;
  }
  int dim = split_dim(p->role);
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
  TESSEL_TRY(hybrid_plan(h));
  const tessel_model_dims *d = &h->dims;
  g->rows = h->rows;
  g->inner_rows = (int64_t)d->micro_batch * d->seq_len;
  g->batch = d->micro_batch;
  g->heads = d->dim[TESSEL_DIM_HEADS] / h->tp;
  g->kv_heads = d->dim[TESSEL_DIM_KV_HEADS] / h->tp;
  g->ffn = d->dim[TESSEL_DIM_FFN] / h->tp;
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
