/* plugins/tp3d/layout.c — what each rank keeps, local shapes, and checks
** that the model and batch split over the cube. */
#include "tp3d.h"

/* Sequences split q² ways (rows block k, sub-block i or j), heads q ways
** (whole heads per column block), channels and the vocabulary q² ways (the
** weights' K dimension and wte's vocabulary are cut in q² pieces). */
static tessel_status validate(tp3d *t) {
  const tessel_cfg_api *cfg = t->b.api->cfg;
  tessel_model_dims d = {.size = sizeof d};
  tessel_status st = t->b.api->model->dims(t->b.host, &d);
  if (st < 0) return st;
  int q = t->q, q2 = q * q, tp = q2 * q;
  const char *key = tp_shape_key(&t->b);
  if (d.micro_batch % q2 != 0)
    return cfg->error_at(t->b.host, t->b.section, key,
                         "each data rank's micro-batch of %d sequences must split q² = %d ways over the %d×%d×%d cube "
                         "(tp %d): make train.batch_size (or micro_batch_size) a multiple of %d per data rank",
                         d.micro_batch, q2, q, q, q, tp, q2);
  if (d.heads % q != 0)
    return cfg->error_at(t->b.host, t->b.section, key,
                         "model.heads = %d does not split over q = %d (tp %d): each block of columns keeps whole heads",
                         d.heads, q, tp);
  if (d.channels % q2 != 0)
    return cfg->error_at(t->b.host, t->b.section, key,
                         "model.channels = %d does not split q² = %d ways (tp %d): weights are cut in q² along their "
                         "input dimension",
                         d.channels, q2, tp);
  if (d.vocab_size % q2 != 0)
    return cfg->error_at(t->b.host, t->b.section, key,
                         "model.vocab_size = %d does not split q² = %d ways (tp %d): wte is cut in q² along the "
                         "vocabulary",
                         d.vocab_size, q2, tp);
  t->b.dims = d;
  t->rows = (int64_t)(d.micro_batch / q2) * d.seq_len;
  return TESSEL_OK;
}

/* Replicated along: biases the two axes other than their output axis,
** layer norms and wpe k and i (they follow the channels, cut along j),
** weights and wte none; everything along dp. */
uint32_t tp3d_replicated(tp_role role) {
  uint32_t dp = 1u << AX_DP;
  switch (role) {
    case TP_QKV_B:
    case TP_FC_B: return dp | (1u << AX_K) | (1u << AX_J);
    case TP_PROJ_B:
    case TP_FCP_B:
    case TP_LN_W:
    case TP_LN_B:
    case TP_WPE: return dp | (1u << AX_K) | (1u << AX_I);
    default: return dp;
  }
}

static void split(tessel_layout *out, int dim, int parts, int index) {
  out->kind = TESSEL_LAYOUT_SPLIT;
  out->split[out->nsplit++] = (tessel_split){dim, parts, index};
}

tessel_status tp3d_layout(void *inst, const tessel_param_info *p, tessel_layout *out) {
  tp3d *t = inst;
  tessel_status st = validate(t);
  if (st < 0) return st;
  int q = t->q;
  switch (tp_param_role(p->name)) {
    case TP_QKV_W: /* gather along i: K block j (sub-block k), N block i */
    case TP_FC_W:
      split(out, 0, q * q, t->cj * q + t->ck);
      split(out, 1, q, t->ci);
      return TESSEL_OK;
    case TP_PROJ_W: /* gather along j: K block i (sub-block k), N block j */
    case TP_FCP_W:
    case TP_WTE: /* [V, C]: the head's weight transposed, vocabulary block i */
      split(out, 0, q * q, t->ci * q + t->ck);
      split(out, 1, q, t->cj);
      return TESSEL_OK;
    case TP_QKV_B:
    case TP_FC_B: split(out, 0, q, t->ci); return TESSEL_OK;
    case TP_WPE: split(out, 1, q, t->cj); return TESSEL_OK;
    case TP_UNKNOWN:
      return t->b.api->set_error(t->b.host, TESSEL_E_INTERNAL, "tp3d: no layout for parameter %s", p->name);
    default: split(out, 0, q, t->cj); return TESSEL_OK; /* gather-j biases, layer norms: channel block j */
  }
}

tessel_status tp3d_geometry(void *inst, tessel_geometry *g) {
  tp3d *t = inst;
  tessel_status st = validate(t);
  if (st < 0) return st;
  const tessel_model_dims *d = &t->b.dims;
  int64_t C = d->channels, q = t->q;
  g->rows = g->inner_rows = t->rows;
  g->batch = d->micro_batch / (q * q);
  g->width = C / q;
  g->heads = d->heads / q;
  g->qkv_width = 3 * C / q;
  g->attn_width = C / q;
  g->fc_width = 4 * C / q;
  g->vocab_begin = t->ci * (d->vocab_size / q);
  g->vocab = d->vocab_size / q;
  g->loss_replica = t->ci != 0; /* the ranks along i share their rows' losses */
  return TESSEL_OK;
}
