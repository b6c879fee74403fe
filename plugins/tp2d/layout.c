/* plugins/tp2d/layout.c — what each rank keeps, local shapes, and checks
** that the model and batch split over the grid. */
#include "tp2d.h"

/* Every split must be whole: sequences over depth·q, heads (so channels)
** over q, the vocabulary over q. Errors point at the option that set q. */
static tessel_status validate(tp2d *t) {
  const tessel_cfg_api *cfg = t->b.api->cfg;
  tessel_model_dims d = {.size = sizeof d};
  tessel_status st = t->b.api->model->dims(t->b.host, &d);
  if (st < 0) return st;
  int q = t->q, dq = t->depth * q;
  if (d.micro_batch % dq != 0)
    return cfg->error_at(t->b.host, t->b.section, t->depth > 1 ? "depth" : tp_shape_key(&t->b),
                         "each data rank's micro-batch of %d sequences must split over depth %d × q %d = %d rows of the "
                         "grid: make train.batch_size (or micro_batch_size) a multiple of %d per data rank",
                         d.micro_batch, t->depth, q, dq, dq);
  if (d.heads % q != 0)
    return cfg->error_at(t->b.host, t->b.section, tp_shape_key(&t->b),
                         "model.heads = %d does not split over the q = %d columns of the grid (tp %d): each column "
                         "keeps whole heads",
                         d.heads, q, t->depth * q * q);
  if (d.vocab_size % q != 0)
    return cfg->error_at(t->b.host, t->b.section, tp_shape_key(&t->b),
                         "model.vocab_size = %d does not split over q = %d (tp %d): wte and the logits are split by "
                         "vocabulary over the grid",
                         d.vocab_size, q, t->depth * q * q);
  t->b.dims = d;
  t->seqs = d.micro_batch / t->depth;
  t->m = (int64_t)(d.micro_batch / dq) * d.seq_len;
  return TESSEL_OK;
}

uint32_t tp2d_replicated(tp_role role) {
  uint32_t weights = (1u << AX_DP) | (1u << AX_DEPTH);
  switch (role) {
    case TP_WTE:
    case TP_QKV_W:
    case TP_PROJ_W:
    case TP_FC_W:
    case TP_FCP_W: return weights;
    default: return weights | (1u << AX_ROW); /* one copy per grid column */
  }
}

static void split(tessel_layout *out, int dim, int parts, int index) {
  out->kind = TESSEL_LAYOUT_SPLIT;
  out->split[out->nsplit++] = (tessel_split){dim, parts, index};
}

tessel_status tp2d_layout(void *inst, const tessel_param_info *p, tessel_layout *out) {
  tp2d *t = inst;
  tessel_status st = validate(t);
  if (st < 0) return st;
  tp_role role = tp_param_role(p->name);
  switch (role) {
    case TP_WTE: /* vocabulary by row, channels by column */
    case TP_QKV_W:
    case TP_PROJ_W:
    case TP_FC_W:
    case TP_FCP_W:
      split(out, 0, t->q, t->row);
      split(out, 1, t->q, t->col);
      return TESSEL_OK;
    case TP_WPE: split(out, 1, t->q, t->col); return TESSEL_OK;
    case TP_UNKNOWN:
      return t->b.api->set_error(t->b.host, TESSEL_E_INTERNAL, "tp2d: no layout for parameter %s", p->name);
    default: split(out, 0, t->q, t->col); return TESSEL_OK; /* biases, layer norms: by column */
  }
}

tessel_status tp2d_geometry(void *inst, tessel_geometry *g) {
  tp2d *t = inst;
  tessel_status st = validate(t);
  if (st < 0) return st;
  const tessel_model_dims *d = &t->b.dims;
  int64_t C = d->channels, q = t->q;
  g->rows = g->inner_rows = t->m;
  g->batch = d->micro_batch / (t->depth * q);
  g->width = C / q;
  g->heads = d->heads / q;
  g->qkv_width = 3 * C / q;
  g->attn_width = C / q;
  g->fc_width = 4 * C / q;
  g->vocab_begin = t->col * (d->vocab_size / q);
  g->vocab = d->vocab_size / q;
  g->loss_replica = t->col != 0; /* a grid row shares its rows' losses */
  return TESSEL_OK;
}
