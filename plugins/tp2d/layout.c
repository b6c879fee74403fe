/* plugins/tp2d/layout.c — what each rank keeps, local shapes, and checks
** that the model and batch split over the grid. */
#include "tp2d.h"

/* Every split must be whole: sequences over depth·q; query heads, key/value
** heads, the channels, the MLP and the (padded) vocabulary over q. Whole
** heads give whole channels only when the heads are channels / heads wide,
** so a Llama's head_dim of its own needs the channels checked apart. Errors
** point at the option that set q. */
static tessel_status validate(tp2d *t) {
  const tessel_cfg_api *cfg = t->b.x.api->cfg;
  tessel_model_dims d = {.size = sizeof d};
  TESSEL_TRY(t->b.x.api->model->dims(t->b.x.host, &d));
  int q = t->q, dq = t->depth * q;
  if (d.micro_batch % dq != 0)
    return cfg->error_at(t->b.x.host, t->b.x.section, t->depth > 1 ? "depth" : tp_shape_key(&t->b),
                         "each data rank's micro-batch of %d sequences must split over depth %d × q %d = %d rows of the "
                         "grid: make train.batch_size (or micro_batch_size) a multiple of %d per data rank",
                         d.micro_batch, t->depth, q, dq, dq);
  static const struct {
    tessel_dim dim;
    const char *what;
  } cuts[] = {{TESSEL_DIM_HEADS, "query heads (model.heads)"},
              {TESSEL_DIM_KV_HEADS, "key/value heads (model.kv_heads)"},
              {TESSEL_DIM_HIDDEN, "channels (model.channels)"},
              {TESSEL_DIM_FFN, "MLP columns (model.ffn)"},
              {TESSEL_DIM_VOCAB, "vocabulary rows (model.vocab_size, padded)"}};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
    if (d.dim[cuts[i].dim] % q != 0) {
      char hint[192] = "";
      if (cuts[i].dim == TESSEL_DIM_VOCAB) tessel_vocab_hint(&d, q, hint, sizeof hint);
      return cfg->error_at(t->b.x.host, t->b.x.section, tp_shape_key(&t->b),
                           "the model's %lld %s do not split over the q = %d columns of the grid (tp %d): each column "
                           "keeps an equal share%s",
                           (long long)d.dim[cuts[i].dim], cuts[i].what, q, t->depth * q * q, hint);
    }
  t->b.dims = d;
  t->seqs = d.micro_batch / t->depth;
  t->m = (int64_t)(d.micro_batch / dq) * d.seq_len;
  return TESSEL_OK;
}

uint32_t tp2d_replicated(tessel_param_role role) {
  uint32_t weights = (1u << AX_DP) | (1u << AX_DEPTH);
  switch (role) {
    case TESSEL_ROLE_EMBEDDING:
    case TESSEL_ROLE_HEAD:
    case TESSEL_ROLE_LINEAR_IN:
    case TESSEL_ROLE_LINEAR_OUT: return weights;
    case TESSEL_ROLE_HEAD_NORM: return weights | (1u << AX_ROW) | (1u << AX_COL); /* each rank its rows' heads */
    default: return weights | (1u << AX_ROW); /* one copy per grid column */
  }
}

static void split(tessel_layout *out, int dim, int parts, int index) {
  out->kind = TESSEL_LAYOUT_SPLIT;
  out->split[out->nsplit++] = (tessel_split){dim, parts, index};
}

tessel_status tp2d_layout(void *inst, const tessel_param_info *p, tessel_layout *out) {
  tp2d *t = inst;
  TESSEL_TRY(validate(t));
  switch (p->role) {
    case TESSEL_ROLE_EMBEDDING: /* [V, C]: vocabulary by row, channels by column */
    case TESSEL_ROLE_HEAD:
    case TESSEL_ROLE_LINEAR_IN: /* [K, N]: K by row, N by column (each q|k|v run) */
    case TESSEL_ROLE_LINEAR_OUT:
      split(out, 0, t->q, t->row);
      split(out, 1, t->q, t->col);
      return TESSEL_OK;
    case TESSEL_ROLE_POSITIONS: split(out, 1, t->q, t->col); return TESSEL_OK;
    case TESSEL_ROLE_NORM:
    case TESSEL_ROLE_BIAS_IN:
    case TESSEL_ROLE_BIAS_OUT: split(out, 0, t->q, t->col); return TESSEL_OK;
    case TESSEL_ROLE_HEAD_NORM: return TESSEL_OK; /* whole: every head of every rank uses it */
    default:
      return t->b.x.api->set_error(t->b.x.host, TESSEL_E_UNSUPPORTED, "no 2D layout for %s, a parameter without a role",
                                   p->name);
  }
}

tessel_status tp2d_geometry(void *inst, tessel_geometry *g) {
  tp2d *t = inst;
  TESSEL_TRY(validate(t));
  const tessel_model_dims *d = &t->b.dims;
  int64_t q = t->q;
  g->rows = g->inner_rows = t->m;
  g->batch = d->micro_batch / (t->depth * q);
  g->width = d->dim[TESSEL_DIM_HIDDEN] / q;
  g->heads = d->dim[TESSEL_DIM_HEADS] / q;
  g->kv_heads = d->dim[TESSEL_DIM_KV_HEADS] / q;
  g->ffn = d->dim[TESSEL_DIM_FFN] / q;
  g->vocab_begin = t->col * (d->dim[TESSEL_DIM_VOCAB] / q);
  g->vocab = d->dim[TESSEL_DIM_VOCAB] / q;
  g->loss_replica = t->col != 0; /* a grid row shares its rows' losses */
  return TESSEL_OK;
}

void tp2d_at_coords(tp2d *t) {
  t->dep = t->b.coord[AX_DEPTH];
  t->row = t->b.coord[AX_ROW];
  t->col = t->b.coord[AX_COL];
}
