/* core/model/fit.c — what the ops that run on a rank need of its layouts
** and geometry.
**
** A layout and a geometry can each be valid on their own and still not fit
** together: the core's own primitives read a weight's part with the shape
** its geometry implies, and write as many rows as the geometry gives the
** buffers. A strategy's own primitives (layer_ops) answer for their ops;
** the core checks those it runs itself, once, when the model is planned,
** and before each unit that a plugin-stored weight it reads is bound. */
#include <stdio.h>

#include "common/util.h"
#include "model/internal.h"
#include "plugin/host.h"

/* "unit 0 (embedding)", "unit 2 (block 1)", "unit 3 (head)" */
static const char *unit_name(const tsl_model *m, int unit, char *buf, size_t cap) {
  const tsl_unit *u = &m->units[unit];
  if (u->info.kind == TESSEL_UNIT_BLOCK) snprintf(buf, cap, "unit %d (block %d)", unit, u->info.layer);
  else snprintf(buf, cap, "unit %d (%s)", unit, u->info.kind == TESSEL_UNIT_EMBEDDING ? "embedding" : "head");
  return buf;
}

/* A per-head norm is the core's whatever the strategy's norm hooks. */
int tsl_core_runs(const tsl_model *m, const tessel_op *op, int backward) {
  const tessel_layer_ops *o = &m->plugin_ops;
  switch (op->kind) {
    case TESSEL_OP_LINEAR:
      return backward < 0 ? !o->linear_forward || !o->linear_backward
                          : !(backward ? o->linear_backward : o->linear_forward);
    case TESSEL_OP_NORM:
      if (op->variant == TESSEL_NORM_RMS_HEADS) return 1;
      return backward < 0 ? !o->norm_forward || !o->norm_backward : !(backward ? o->norm_backward : o->norm_forward);
    case TESSEL_OP_EMBEDDING:
      return backward < 0 ? !o->embedding_forward || !o->embedding_backward
                          : !(backward ? o->embedding_backward : o->embedding_forward);
    case TESSEL_OP_HEAD: return !o->head;
    default: return 1;
  }
}

/* The local shape the core's version of op k of unit u reads parameter
** `which` (0 weight, 1 bias) with, from the geometry. */
static void shape_needed(const tsl_model *m, int u, int k, int which, int64_t out[2]) {
  const tsl_unit_decl *d = m->units[u].decl;
  const tsl_op_decl *od = &d->ops[k];
  const tessel_op *op = &m->units[u].ops[k];
  /* the embedding reads token ids, not an activation (its in[0] is -1) */
  int64_t in = op->kind == TESSEL_OP_EMBEDDING ? 0 : tsl_act_width(m, d, od->in[0]);
  int64_t V = m->dims.dim[TESSEL_DIM_VOCAB];
  switch (op->kind) {
    case TESSEL_OP_LINEAR: {
      int64_t o = tsl_act_width(m, d, od->out[0]);
      out[0] = which ? o : in;
      out[1] = which ? 1 : o;
      return;
    }
    case TESSEL_OP_NORM: { /* a weight as wide as the rows it normalises */
      int64_t rows;
      tsl_norm_shape(m, d, od, &rows, &out[0]);
      out[1] = 1;
      return;
    }
    case TESSEL_OP_EMBEDDING: /* the table, or the positions: every row, the stream's width */
      out[0] = which ? m->params.p[op->bias].info.shape[0] : V;
      out[1] = tsl_act_width(m, d, od->out[0]);
      return;
    default: out[0] = V; out[1] = in; return; /* the head */
  }
}

/* The rows the core's version of op k of unit u needs to be consistent:
** NULL when they are. */
static const char *rows_misfit(const tsl_model *m, int u, int k, char *buf, size_t cap) {
  const tsl_unit_decl *d = m->units[u].decl;
  const tsl_op_decl *od = &d->ops[k];
  int64_t BT = (int64_t)m->dims.micro_batch * m->dims.seq_len, V = m->dims.dim[TESSEL_DIM_VOCAB];
  switch (m->units[u].ops[k].kind) {
    case TESSEL_OP_LINEAR:
    case TESSEL_OP_NORM: {
      int64_t a = tsl_act_rows(m, &d->acts[od->in[0]]), b = tsl_act_rows(m, &d->acts[od->out[0]]);
      if (a == b) return NULL;
      snprintf(buf, cap, "it keeps the rows, but reads %lld and writes %lld (rows %lld, inner_rows %lld)",
               (long long)a, (long long)b, (long long)m->geo.rows, (long long)m->geo.inner_rows);
      return buf;
    }
    case TESSEL_OP_EMBEDDING:
    case TESSEL_OP_HEAD:
      if (m->geo.rows != BT) {
        snprintf(buf, cap, "it covers all B·T = %lld rows of a micro-batch, but the geometry gives the residual "
                 "stream rows %lld", (long long)BT, (long long)m->geo.rows);
        return buf;
      }
      if (m->units[u].ops[k].kind == TESSEL_OP_EMBEDDING || (m->geo.vocab_begin == 0 && m->geo.vocab == V))
        return NULL;
      snprintf(buf, cap, "it computes the logits of the whole vocabulary (%lld rows), but the geometry holds "
               "vocabulary rows %lld..%lld", (long long)V, (long long)m->geo.vocab_begin,
               (long long)(m->geo.vocab_begin + m->geo.vocab));
      return buf;
    default: return NULL;
  }
}

/* One parameter of op k of unit u: present on this rank, and shaped as
** the core's version of the op reads it. */
static tsl_status fit_param(tsl_model *m, int u, int k, int which) {
  const tessel_op *op = &m->units[u].ops[k];
  const tsl_param *p = &m->params.p[which ? op->bias : op->weight];
  char un[64];
  if (p->layout.kind == TESSEL_LAYOUT_ABSENT) {
    tsl_error(TESSEL_E_INTERNAL, "%s runs on this rank, but its %s uses %s, which the layout makes ABSENT here",
              unit_name(m, u, un, sizeof un), tsl_op_kind_name(op->kind), p->name);
    return tsl_hook_refuse(m->rt, "layout(%s)", p->name);
  }
  /* a plugin-stored part is computed with what the plugin binds */
  if (p->layout.store != TESSEL_STORE_CORE || !tsl_core_runs(m, op, -1)) return TESSEL_OK;
  int64_t need[2];
  shape_needed(m, u, k, which, need);
  if (need[0] == p->local_shape[0] && need[1] == p->local_shape[1]) return TESSEL_OK;
  const tessel_geometry *g = &m->geo;
  tsl_error(TESSEL_E_INTERNAL,
            "the core's %s in %s reads this rank's part of %s as [%lld, %lld] by the geometry (width %lld, heads "
            "%lld, kv_heads %lld, ffn %lld), but the layout keeps [%lld, %lld]: give the part that shape, or the "
            "geometry that fits it, or compute the op in layer_ops",
            tsl_op_kind_name(op->kind), unit_name(m, u, un, sizeof un), p->name, (long long)need[0],
            (long long)need[1], (long long)g->width, (long long)g->heads, (long long)g->kv_heads, (long long)g->ffn,
            (long long)p->local_shape[0], (long long)p->local_shape[1]);
  return tsl_hook_refuse(m->rt, "layout(%s) with geometry", p->name);
}

tsl_status tsl_fit_check(tsl_model *m) {
  tsl_status st;
  char why[256], un[64];
  for (int u = m->geo.unit_first; u <= m->geo.unit_last; u++) {
    for (int k = 0; k < m->units[u].info.n_ops; k++) {
      const tessel_op *op = &m->units[u].ops[k];
      if (op->weight >= 0) TSL_TRY(st, fit_param(m, u, k, 0));
      if (op->bias >= 0) TSL_TRY(st, fit_param(m, u, k, 1));
      if (!tsl_core_runs(m, op, -1) || !rows_misfit(m, u, k, why, sizeof why)) continue;
      tsl_error(TESSEL_E_INTERNAL, "the core's %s in %s does not fit the geometry: %s", tsl_op_kind_name(op->kind),
                unit_name(m, u, un, sizeof un), why);
      return tsl_hook_refuse(m->rt, "geometry");
    }
  }
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_fit_bound(tsl_model *m, int unit, int backward) {
  char un[64];
  const tsl_unit *u = &m->units[unit];
  for (int k = 0; k < u->info.n_ops; k++) {
    const tessel_op *op = &u->ops[k];
    /* the head's backward runs with its forward, in training */
    int head = op->kind == TESSEL_OP_HEAD, grads = head ? m->training : backward;
    if ((head && backward) || !tsl_core_runs(m, op, backward)) continue;
    for (int which = 0; which < 2; which++) {
      int i = which ? op->bias : op->weight;
      if (i < 0) continue;
      const tsl_param *p = &m->params.p[i];
      if (p->layout.store != TESSEL_STORE_PLUGIN || (p->data && (!grads || p->grad))) continue;
      tsl_error(TESSEL_E_INTERNAL,
                "%s is STORE_PLUGIN and has no %s bound when %s runs %s (the core's %s reads it): bind it with "
                "model->bind before the unit, e.g. in before_%s",
                p->name, p->data ? "gradient" : "data", unit_name(m, unit, un, sizeof un),
                backward ? "backward" : "forward", tsl_op_kind_name(op->kind), backward ? "backward" : "forward");
      return tsl_hook_refuse(m->rt, "before_%s", backward ? "backward" : "forward");
    }
  }
  return TESSEL_OK;
}
