/* plugins/tp3d/layout.c — what each rank keeps, local shapes, and checks
** that the model and batch split over the cube. */
#include "tp3d.h"

/* Sequences split q² ways (rows block k, sub-block i or j); query heads,
** key/value heads and the MLP q ways (whole heads per column block); the
** hidden width and the (padded) vocabulary q² ways (the weights' K dimension
** and the table's rows are cut in q² pieces). */
static tessel_status validate(tp3d *t) {
  const tessel_cfg_api *cfg = t->b.x.api->cfg;
  tessel_model_dims d = {.size = sizeof d};
  TESSEL_TRY(t->b.x.api->model->dims(t->b.x.host, &d));
  int q = t->q, q2 = q * q, tp = q2 * q;
  const char *key = tp_shape_key(&t->b);
  if (d.micro_batch % q2 != 0)
    return cfg->error_at(t->b.x.host, t->b.x.section, key,
                         "each data rank's micro-batch of %d sequences must split q² = %d ways over the %d×%d×%d cube "
                         "(tp %d): make train.batch_size (or micro_batch_size) a multiple of %d per data rank",
                         d.micro_batch, q2, q, q, q, tp, q2);
  static const struct {
    tessel_dim dim;
    int by_q2;
    const char *what;
  } cuts[] = {{TESSEL_DIM_HEADS, 0, "query heads (model.heads)"},
              {TESSEL_DIM_KV_HEADS, 0, "key/value heads (model.kv_heads)"},
              {TESSEL_DIM_FFN, 1, "MLP columns (model.ffn)"},
              {TESSEL_DIM_HIDDEN, 1, "channels (model.channels)"},
              {TESSEL_DIM_VOCAB, 1, "vocabulary rows (model.vocab_size, padded)"}};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    int parts = cuts[i].by_q2 ? q2 : q;
    if (d.dim[cuts[i].dim] % parts != 0) {
      char hint[192] = "";
      if (cuts[i].dim == TESSEL_DIM_VOCAB) tessel_vocab_hint(&d, parts, hint, sizeof hint);
      return cfg->error_at(t->b.x.host, t->b.x.section, key,
                           "the model's %lld %s do not split %d ways over the %d×%d×%d cube (tp %d)%s",
                           (long long)d.dim[cuts[i].dim], cuts[i].what, parts, q, q, q, tp, hint);
    }
  }
  t->b.dims = d;
  t->rows = (int64_t)(d.micro_batch / q2) * d.seq_len;
  return TESSEL_OK;
}

/* Replicated along: biases the two axes other than their output axis,
** norms and positions k and i (they follow the channels, cut along j),
** weights and tables none; everything along dp. */
uint32_t tp3d_replicated(tessel_param_role role) {
  uint32_t dp = 1u << AX_DP;
  switch (role) {
    case TESSEL_ROLE_BIAS_IN: return dp | (1u << AX_K) | (1u << AX_J);
    case TESSEL_ROLE_BIAS_OUT:
    case TESSEL_ROLE_NORM:
    case TESSEL_ROLE_POSITIONS: return dp | (1u << AX_K) | (1u << AX_I);
    case TESSEL_ROLE_HEAD_NORM: return dp | (1u << AX_K) | (1u << AX_I) | (1u << AX_J); /* each rank its rows' heads */
    default: return dp;
  }
}

static void split(tessel_layout *out, int dim, int parts, int index) {
  out->kind = TESSEL_LAYOUT_SPLIT;
  out->split[out->nsplit++] = (tessel_split){dim, parts, index};
}

tessel_status tp3d_layout(void *inst, const tessel_param_info *p, tessel_layout *out) {
  tp3d *t = inst;
  TESSEL_TRY(validate(t));
  int q = t->q;
  switch (p->role) {
    case TESSEL_ROLE_LINEAR_IN: /* gather along i: K block j (sub-block k), N block i */
      split(out, 0, q * q, t->cj * q + t->ck);
      split(out, 1, q, t->ci);
      return TESSEL_OK;
    case TESSEL_ROLE_LINEAR_OUT: /* gather along j: K block i (sub-block k), N block j */
    case TESSEL_ROLE_EMBEDDING:  /* [V, C]: the head's weight transposed, vocabulary block i */
    case TESSEL_ROLE_HEAD:
      split(out, 0, q * q, t->ci * q + t->ck);
      split(out, 1, q, t->cj);
      return TESSEL_OK;
    case TESSEL_ROLE_BIAS_IN: split(out, 0, q, t->ci); return TESSEL_OK;
    case TESSEL_ROLE_POSITIONS: split(out, 1, q, t->cj); return TESSEL_OK;
    case TESSEL_ROLE_BIAS_OUT:
    case TESSEL_ROLE_NORM: split(out, 0, q, t->cj); return TESSEL_OK; /* channel block j */
    case TESSEL_ROLE_HEAD_NORM: return TESSEL_OK; /* whole: every head of every rank uses it */
    default:
      return t->b.x.api->set_error(t->b.x.host, TESSEL_E_UNSUPPORTED, "no 3D layout for %s, a parameter without a role",
                                   p->name);
  }
}

tessel_status tp3d_geometry(void *inst, tessel_geometry *g) {
  tp3d *t = inst;
  TESSEL_TRY(validate(t));
  const tessel_model_dims *d = &t->b.dims;
  int64_t q = t->q;
  g->rows = g->inner_rows = t->rows;
  g->batch = d->micro_batch / (q * q);
  g->width = d->dim[TESSEL_DIM_HIDDEN] / q;
  g->heads = d->dim[TESSEL_DIM_HEADS] / q;
  g->kv_heads = d->dim[TESSEL_DIM_KV_HEADS] / q;
  g->ffn = d->dim[TESSEL_DIM_FFN] / q;
  g->vocab_begin = t->ci * (d->dim[TESSEL_DIM_VOCAB] / q);
  g->vocab = d->dim[TESSEL_DIM_VOCAB] / q;
  g->loss_replica = t->ci != 0; /* the ranks along i share their rows' losses */
  return TESSEL_OK;
}

void tp3d_at_coords(tp3d *t) {
  t->ck = t->b.coord[AX_K];
  t->ci = t->b.coord[AX_I];
  t->cj = t->b.coord[AX_J];
}
