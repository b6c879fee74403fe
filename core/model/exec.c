/* core/model/exec.c — the interpreter: a unit's ops forward, then in
** reverse backward.
**
** Forward runs each op on its buffers. Backward walks the ops in reverse;
** each op reads the gradients of its outputs and writes those of its
** inputs. A gradient buffer may receive several contributions (a norm's
** output feeding three projections, the residual stream): the first one
** overwrites it, later ones go through a scratch buffer and are added.
** The residual stream and every residual branch share one gradient buffer
** (d(branch) = d(stream after the add)), so a residual op's backward is
** nothing at all. Parameter gradients are always accumulated.
**
** Around both, the unit's activations are brought where compute reads them
** (offload.c), and before backward the forward ops the unit's plan reruns
** remake what it did not keep (recompute.c). */
#include <string.h>

#include "common/util.h"
#include "compute/compute.h"
#include "model/internal.h"
#include "model/optime.h"
#include "plugin/host.h"

/* Dispatch a layer primitive to the strategy, or the core's version. */
#define OP(m, name, ctx, args)                                                                                  \
  ((m)->plugin_ops.name ? tsl_hook_status((m)->rt, (m)->plugin_ops.name((m)->rt->inst, ctx, args), #name)      \
                        : tsl_op_##name(m, ctx, args))

static tsl_status be_status(int rc, const char *what) { return rc < 0 ? tsl_error_wrap(rc, "%s", what) : TESSEL_OK; }

static tessel_param_view view_of(const tsl_model *m, int index) {
  tessel_param_view v;
  tsl_model_view(m, index, &v);
  return v;
}

typedef struct run {
  tsl_model *m;
  const tessel_op_ctx *c;
  int slot, unit;
  const tsl_unit_decl *d;
  const tessel_op *op;
  const tsl_op_decl *od;
  int64_t es;
} run;

static void *act(const run *r, int a, int64_t *ld) { return tsl_act_ptr(r->m, r->slot, r->unit, a, ld); }
static int64_t rows(const run *r, int a) { return tsl_act_rows(r->m, &r->d->acts[a]); }
static int64_t width(const run *r, int a) { return tsl_act_width(r->m, r->d, a); }

/* ---- forward ---- */

/* A per-head norm runs as a plain RMS norm over the rows tsl_norm_shape
** gives (its buffers are contiguous). */
static tsl_status norm_args(const run *r, tessel_param_view *w, tessel_param_view *b, tessel_norm_args *a) {
  int64_t ld, n, cols;
  tsl_unit_acts *ua = &r->m->slots[r->slot].units[r->unit];
  *w = view_of(r->m, r->op->weight);
  if (r->op->bias >= 0) *b = view_of(r->m, r->op->bias);
  tsl_norm_shape(r->m, r->d, r->od, &n, &cols);
  *a = (tessel_norm_args){.size = sizeof *a,
                          .variant = r->op->variant == TESSEL_NORM_RMS_HEADS ? TESSEL_NORM_RMS : r->op->variant,
                          .eps = r->op->eps, .w = w, .b = r->op->bias >= 0 ? b : NULL,
                          .inp = act(r, r->od->in[0], &ld), .mean = ua->saved[r->op->index][0],
                          .rstd = ua->saved[r->op->index][1], .rows = n, .cols = cols};
  return TESSEL_OK;
}

/* The strategy's norm hook, or the core's where tsl_core_runs says the core
** runs the op whatever the hooks (a per-head norm, plugin.h). */
#define NORM_OP(r, name, backward, args)                                                                        \
  (tsl_core_runs((r)->m, (r)->op, backward) ? tsl_op_##name((r)->m, (r)->c, args)                             \
                                            : OP((r)->m, name, (r)->c, args))

static void linear_args(const run *r, tessel_param_view *w, tessel_param_view *b, tessel_linear_args *a) {
  int64_t ld;
  *w = view_of(r->m, r->op->weight);
  if (r->op->bias >= 0) *b = view_of(r->m, r->op->bias);
  int in = r->od->in[0], out = r->od->out[0];
  *a = (tessel_linear_args){.size = sizeof *a, .role = r->m->params.p[r->op->weight].info.role, .w = w,
                            .b = r->op->bias >= 0 ? b : NULL, .inp = act(r, in, &ld), .inp_rows = rows(r, in),
                            .inp_cols = width(r, in), .out_rows = rows(r, out), .out_cols = width(r, out)};
}

static void attention_args(const run *r, tessel_attention_args *a) {
  const tsl_model *m = r->m;
  const int *in = r->od->in;
  *a = (tessel_attention_args){.size = sizeof *a, .batch = m->geo.batch, .seq = m->dims.seq_len,
                               .heads = m->geo.heads, .kv_heads = m->geo.kv_heads,
                               .head_size = m->dims.dim[TESSEL_DIM_HEAD_SIZE],
                               .window = r->op->window};
  int64_t ld;
  a->q = act(r, in[0], &a->ldq);
  a->k = act(r, in[1], &a->ldk);
  a->v = act(r, in[2], &a->ldv);
  a->out = act(r, r->od->out[0], &ld);
  a->lse = r->m->slots[r->slot].units[r->unit].saved[r->op->index][1];
}

/* Rotary on queries (in[0]) and keys (in[1]), forward or back. */
static tsl_status rotary(const run *r, void *q, int64_t ldq, void *k, int64_t ldk, int inverse) {
  const tsl_model *m = r->m;
  tsl_backend *be = &m->rt->be;
  int64_t hs = m->dims.dim[TESSEL_DIM_HEAD_SIZE], B = m->geo.batch, T = m->dims.seq_len;
  /* the frequencies the op describes to strategies, as the model holds them */
  const tsl_rope_freqs f = m->arch.rope;
  int64_t past = tsl_decode_past(m);
  int rc = be->rope(be, m->rt->compute, q, B, T, m->geo.heads, hs, ldq, past, f, inverse);
  if (rc >= 0) rc = be->rope(be, m->rt->compute, k, B, T, m->geo.kv_heads, hs, ldk, past, f, inverse);
  return be_status(rc, "rotary positions");
}

static tsl_status forward_op(const run *r, int micro) {
  tsl_model *m = r->m;
  tsl_backend *be = &m->rt->be;
  tsl_stream *s = m->rt->compute;
  const tsl_op_decl *od = r->od;
  tessel_param_view w, b, pos;
  int64_t ld, ld2;
  switch (r->op->kind) {
    case TESSEL_OP_NORM: {
      tessel_norm_args a;
      norm_args(r, &w, &b, &a);
      a.out = act(r, od->out[0], &ld);
      return NORM_OP(r, norm_forward, 0, &a);
    }
    case TESSEL_OP_LINEAR: {
      tessel_linear_args a;
      linear_args(r, &w, &b, &a);
      a.out = act(r, od->out[0], &ld);
      return OP(m, linear_forward, r->c, &a);
    }
    case TESSEL_OP_ROTARY: {
      void *q = act(r, od->in[0], &ld), *k = act(r, od->in[1], &ld2);
      return rotary(r, q, ld, k, ld2, 0);
    }
    case TESSEL_OP_ATTENTION: {
      tessel_attention_args a;
      attention_args(r, &a);
      if (tsl_decoding(m)) return tsl_decode_attention(m, r->unit, &a);
      return OP(m, attention_forward, r->c, &a);
    }
    case TESSEL_OP_ACTIVATION: {
      int64_t n = rows(r, od->out[0]) * width(r, od->out[0]);
      const void *b_in = od->in[1] >= 0 ? act(r, od->in[1], &ld2) : NULL;
      return tsl_activation_forward(m->rt, s, r->op->variant, act(r, od->out[0], &ld), act(r, od->in[0], &ld2), b_in,
                                    n);
    }
    case TESSEL_OP_RESIDUAL: {
      int64_t n = rows(r, od->out[0]) * width(r, od->out[0]);
      return be_status(be->add(be, s, act(r, od->out[0], &ld), act(r, od->in[0], &ld), act(r, od->in[1], &ld2), n),
                       "residual add");
    }
    case TESSEL_OP_EMBEDDING: {
      w = view_of(m, r->op->weight);
      if (r->op->bias >= 0) {
        pos = view_of(m, r->op->bias); /* decoding: from the row of the first new position */
        pos.data = (char *)pos.data + (uint64_t)(tsl_decode_past(m) * m->geo.width) * tessel_dtype_size(m->dims.act_dtype);
      }
      tessel_embedding_args a = {.size = sizeof a, .table = &w, .positions = r->op->bias >= 0 ? &pos : NULL,
                                 .tokens = m->slots[r->slot].tokens, .out = act(r, od->out[0], &ld),
                                 .batch = m->dims.micro_batch, .seq = m->dims.seq_len};
      return OP(m, embedding_forward, r->c, &a);
    }
    case TESSEL_OP_HEAD: {
      w = view_of(m, r->op->weight);
      if (tsl_decoding(m)) /* the last row's logits: the next token's */
        return tsl_op_head_logits(m, (const char *)act(r, od->in[0], &ld) + (uint64_t)((rows(r, od->in[0]) - 1) * ld) *
                                                                               tessel_dtype_size(m->dims.act_dtype),
                                  &w, 1, m->logits);
      tessel_head_args a = {.size = sizeof a, .weight = &w, .inp = act(r, od->in[0], &ld),
                            .targets = m->slots[r->slot].targets,
                            .losses = m->losses + (int64_t)micro * m->geo.rows, .logits = m->logits,
                            .dinp = m->training ? tsl_act_grad(m, r->unit, od->in[0], &ld2) : NULL,
                            .dloss = m->dloss, .rows = rows(r, od->in[0]), .width = width(r, od->in[0])};
      return OP(m, head, r->c, &a);
    }
  }
  return tsl_error(TESSEL_E_INTERNAL, "unknown op kind %d", (int)r->op->kind);
}

/* Run forward op k of a unit, naming it if it fails. */
static tsl_status forward_at(tsl_model *m, const tessel_op_ctx *c, int slot, int unit, int micro, int k) {
  const tsl_unit *u = &m->units[unit];
  tessel_op_ctx ck = *c;
  ck.op = &u->ops[k];
  run r = {m, &ck, slot, unit, u->decl, &u->ops[k], &u->decl->ops[k], 0};
  tsl_status st = forward_op(&r, micro);
  if (st < 0) {
    const tsl_op_decl *od = &u->decl->ops[k];
    return tsl_error_wrap(st, "unit %d, %s of '%s'", unit, tsl_op_kind_name(u->ops[k].kind),
                          u->decl->acts[od->out[0] >= 0 ? od->out[0] : od->in[0]].name);
  }
  return TESSEL_OK;
}

/* ---- fusions ----
** Two consecutive ops that the backend runs in one pass when it has the
** kernel and the strategy leaves both ops to the core: a linear layer and
** the GELU of its output; a residual add and the layer norm of its sum.
** The fused kernels do the parts' arithmetic, so a GELU or a norm
** recomputed alone gives the bits the fused forward made. */
typedef enum { FUSE_NONE = 0, FUSE_LINEAR_GELU, FUSE_ADD_NORM } fusion;

static fusion fusable(const tsl_model *m, const tsl_unit *u, int k) {
  const tsl_backend *be = &m->rt->be;
  if (k + 1 >= u->info.n_ops) return FUSE_NONE;
  const tsl_op_decl *a = &u->decl->ops[k], *b = &u->decl->ops[k + 1];
  if (b->in[0] != a->out[0] || a->out[1] >= 0) return FUSE_NONE;
  if (a->kind == TESSEL_OP_LINEAR && b->kind == TESSEL_OP_ACTIVATION && b->variant == TESSEL_ACT_GELU &&
      b->in[1] < 0 && be->linear_gelu_forward && !m->plugin_ops.linear_forward)
    return FUSE_LINEAR_GELU;
  if (a->kind == TESSEL_OP_RESIDUAL && b->kind == TESSEL_OP_NORM && b->variant == TESSEL_NORM_LAYER &&
      b->bias >= 0 && be->add_layernorm_forward && !m->plugin_ops.norm_forward)
    return FUSE_ADD_NORM;
  return FUSE_NONE;
}

/* Ops k and k + 1 of a unit, fused as `f`. */
static tsl_status forward_fused(tsl_model *m, const tessel_op_ctx *c, int slot, int unit, int k, fusion f) {
  const tsl_unit *u = &m->units[unit];
  tsl_backend *be = &m->rt->be;
  run r1 = {m, c, slot, unit, u->decl, &u->ops[k], &u->decl->ops[k], 0};
  run r2 = {m, c, slot, unit, u->decl, &u->ops[k + 1], &u->decl->ops[k + 1], 0};
  tessel_param_view w, b;
  int64_t ld, ld2;
  int rc;
  if (f == FUSE_LINEAR_GELU) {
    tessel_linear_args a;
    linear_args(&r1, &w, &b, &a);
    rc = be->linear_gelu_forward(be, m->rt->compute, act(&r1, r1.od->out[0], &ld), act(&r2, r2.od->out[0], &ld2),
                                 a.inp, w.data, a.b ? b.data : NULL, a.inp_rows, a.inp_cols, a.out_cols);
  } else {
    tessel_norm_args a;
    norm_args(&r2, &w, &b, &a);
    rc = be->add_layernorm_forward(be, m->rt->compute, act(&r1, r1.od->out[0], &ld), act(&r2, r2.od->out[0], &ld2),
                                   a.mean, a.rstd, act(&r1, r1.od->in[0], &ld), act(&r1, r1.od->in[1], &ld2),
                                   w.data, b.data, a.rows, a.cols, a.eps);
  }
  if (rc < 0)
    return tsl_error_wrap(rc, "unit %d, %s and %s of '%s'", unit, tsl_op_kind_name(u->ops[k].kind),
                          tsl_op_kind_name(u->ops[k + 1].kind), u->decl->acts[r2.od->out[0]].name);
  return TESSEL_OK;
}

tsl_status tsl_exec_forward(tsl_model *m, const tessel_op_ctx *c, int slot, int unit, int micro) {
  tsl_status st;
  const tsl_unit *u = &m->units[unit];
  TSL_TRY(st, tsl_offload_enter(m, slot, unit, 0));
  for (int k = 0; k < u->info.n_ops; k++) {
    fusion f = fusable(m, u, k);
    TSL_TRY(st, tsl_optime_start(m));
    if (f) TSL_TRY(st, forward_fused(m, c, slot, unit, k, f));
    else TSL_TRY(st, forward_at(m, c, slot, unit, micro, k));
    TSL_TRY(st, tsl_optime_stop(m, unit, k, f != FUSE_NONE, TSL_OPTIME_FORWARD));
    if (f) k++;
  }
  return tsl_offload_leave(m, slot, unit, 0);
fail:
  return st;
}

/* The unit's forward ops its plan reruns, before its backward; a fusable
** pair reruns fused when both rerun. */
static tsl_status recompute(tsl_model *m, const tessel_op_ctx *c, int slot, int unit) {
  tsl_status st;
  const tsl_unit *u = &m->units[unit];
  for (int k = 0; k < u->info.n_ops; k++) {
    if (!u->plan.rerun[k]) continue;
    fusion f = fusable(m, u, k);
    if (f && !u->plan.rerun[k + 1]) f = FUSE_NONE;
    TSL_TRY(st, tsl_optime_start(m));
    if (f) TSL_TRY(st, forward_fused(m, c, slot, unit, k, f));
    else TSL_TRY(st, forward_at(m, c, slot, unit, c->micro, k));
    TSL_TRY(st, tsl_optime_stop(m, unit, k, f != FUSE_NONE, TSL_OPTIME_RECOMPUTE));
    if (f) k++;
  }
  return TESSEL_OK;
fail:
  return st;
}

/* ---- backward ---- */

/* Which gradient buffers already hold a contribution in this backward,
** and which linear's bias gradient a fused GELU backward already summed. */
typedef struct written {
  const void *buf[TSL_UNIT_MAX_ACTS + 1];
  int n;
  int bias_done; /* op index, -1: none */
} written;

static int was_written(const written *w, const void *g) {
  for (int i = 0; i < w->n; i++)
    if (w->buf[i] == g) return 1;
  return 0;
}

static void mark(written *w, const void *g) {
  if (!was_written(w, g) && w->n < TSL_UNIT_MAX_ACTS + 1) w->buf[w->n++] = g;
}

/* Where an op writes the gradient of its input `a`: the buffer itself when
** nothing is there yet, else the scratch (then `add` is set). */
static void *grad_target(const run *r, written *w, int a, int *add) {
  int64_t ld;
  void *g = tsl_act_grad(r->m, r->unit, a, &ld);
  *add = was_written(w, g);
  return *add ? r->m->dtmp : g;
}

static tsl_status finish_target(const run *r, written *w, int a, int add) {
  int64_t ld;
  void *g = tsl_act_grad(r->m, r->unit, a, &ld);
  mark(w, g);
  if (!add) return TESSEL_OK;
  tsl_backend *be = &r->m->rt->be;
  return be_status(be->axpy(be, r->m->rt->compute, be->act_dtype, g, 1.0f, r->m->dtmp, rows(r, a) * width(r, a)),
                   "adding a gradient contribution");
}

/* An op that writes several input gradients at once needs each of them
** fresh: the descriptions are built so (attention, SwiGLU). */
static tsl_status need_fresh(const run *r, written *w, int a) {
  int64_t ld;
  if (!was_written(w, tsl_act_grad(r->m, r->unit, a, &ld))) return TESSEL_OK;
  return tsl_error(TESSEL_E_INTERNAL, "model description: '%s' takes a second gradient through a %s",
                   r->d->acts[a].name, tsl_op_kind_name(r->op->kind));
}

/* The layer norm's backward adds its input gradient in place (fusion)
** when the backend can and the strategy leaves norms to the core. */
static int norm_adds(const tsl_model *m, const tessel_norm_args *a) {
  return a->variant == TESSEL_NORM_LAYER && a->b && m->rt->be.layernorm_backward_add && !m->plugin_ops.norm_backward;
}

static tsl_status norm_backward_add(const run *r, written *w, const tessel_norm_args *a) {
  int64_t ld;
  tsl_backend *be = &r->m->rt->be;
  void *g = tsl_act_grad(r->m, r->unit, r->od->in[0], &ld);
  int rc = be->layernorm_backward_add(be, r->m->rt->compute, g, a->w->grad, a->b->grad, a->dout, a->inp, a->w->data,
                                      a->mean, a->rstd, a->rows, a->cols);
  mark(w, g);
  return be_status(rc, "layer norm backward");
}

/* The bias gradient of the linear before a GELU, for the fused GELU
** backward to sum (and the linear's backward then to skip), or NULL. */
static float *gelu_bias_grad(const run *r, written *w) {
  const tsl_model *m = r->m;
  int k = r->op->index;
  if (r->op->variant != TESSEL_ACT_GELU || k == 0 || !m->rt->be.gelu_backward_bias || m->plugin_ops.linear_backward)
    return NULL;
  const tsl_op_decl *prev = &r->d->ops[k - 1];
  const tessel_op *pop = &m->units[r->unit].ops[k - 1];
  if (prev->kind != TESSEL_OP_LINEAR || prev->out[0] != r->od->in[0] || pop->bias < 0) return NULL;
  float *g = view_of(m, pop->bias).grad;
  if (g) w->bias_done = k - 1;
  return g;
}

static tsl_status backward_op(const run *r, written *w) {
  tsl_model *m = r->m;
  tsl_stream *s = m->rt->compute;
  const tsl_op_decl *od = r->od;
  tessel_param_view wv, bv;
  int64_t ld, ld2;
  int add;
  tsl_status st;
  switch (r->op->kind) {
    case TESSEL_OP_NORM: {
      tessel_norm_args a;
      norm_args(r, &wv, &bv, &a);
      a.dout = tsl_act_grad(m, r->unit, od->out[0], &ld);
      a.dinp = grad_target(r, w, od->in[0], &add);
      if (add && norm_adds(m, &a)) return norm_backward_add(r, w, &a);
      if ((st = NORM_OP(r, norm_backward, 1, &a)) < 0) return st;
      return finish_target(r, w, od->in[0], add);
    }
    case TESSEL_OP_LINEAR: {
      tessel_linear_args a;
      linear_args(r, &wv, &bv, &a);
      if (w->bias_done == r->op->index) a.b = NULL;
      a.dout = tsl_act_grad(m, r->unit, od->out[0], &ld);
      a.dinp = grad_target(r, w, od->in[0], &add);
      if ((st = OP(m, linear_backward, r->c, &a)) < 0) return st;
      return finish_target(r, w, od->in[0], add);
    }
    case TESSEL_OP_ROTARY: {
      void *dq = tsl_act_grad(m, r->unit, od->in[0], &ld), *dk = tsl_act_grad(m, r->unit, od->in[1], &ld2);
      return rotary(r, dq, ld, dk, ld2, 1);
    }
    case TESSEL_OP_ATTENTION: {
      tessel_attention_args a;
      attention_args(r, &a);
      for (int i = 0; i < 3; i++)
        if ((st = need_fresh(r, w, od->in[i])) < 0) return st;
      a.dout = tsl_act_grad(m, r->unit, od->out[0], &ld);
      a.dq = tsl_act_grad(m, r->unit, od->in[0], &ld);
      a.dk = tsl_act_grad(m, r->unit, od->in[1], &ld);
      a.dv = tsl_act_grad(m, r->unit, od->in[2], &ld);
      if ((st = OP(m, attention_backward, r->c, &a)) < 0) return st;
      for (int i = 0; i < 3; i++) mark(w, tsl_act_grad(m, r->unit, od->in[i], &ld));
      return TESSEL_OK;
    }
    case TESSEL_OP_ACTIVATION: {
      int two = od->in[1] >= 0;
      if ((st = need_fresh(r, w, od->in[0])) < 0 || (two && (st = need_fresh(r, w, od->in[1])) < 0)) return st;
      int64_t n = rows(r, od->out[0]) * width(r, od->out[0]);
      void *da = tsl_act_grad(m, r->unit, od->in[0], &ld), *db = two ? tsl_act_grad(m, r->unit, od->in[1], &ld2) : NULL;
      float *dbias = gelu_bias_grad(r, w);
      if (dbias)
        st = be_status(m->rt->be.gelu_backward_bias(&m->rt->be, s, da, dbias, act(r, od->in[0], &ld),
                                                     tsl_act_grad(m, r->unit, od->out[0], &ld2),
                                                     rows(r, od->out[0]), width(r, od->out[0])),
                       "GELU backward with the bias gradient");
      else
        st = tsl_activation_backward(m->rt, s, r->op->variant, da, db, tsl_act_grad(m, r->unit, od->out[0], &ld),
                                     act(r, od->in[0], &ld), two ? act(r, od->in[1], &ld2) : NULL, n);
      if (st < 0) return st;
      mark(w, da);
      if (db) mark(w, db);
      return TESSEL_OK;
    }
    case TESSEL_OP_RESIDUAL: return TESSEL_OK; /* its gradients are the stream's: shared buffers */
    case TESSEL_OP_EMBEDDING: {
      wv = view_of(m, r->op->weight);
      if (r->op->bias >= 0) bv = view_of(m, r->op->bias);
      tessel_embedding_args a = {.size = sizeof a, .table = &wv, .positions = r->op->bias >= 0 ? &bv : NULL,
                                 .tokens = m->slots[r->slot].tokens,
                                 .dout = tsl_act_grad(m, r->unit, od->out[0], &ld),
                                 .batch = m->dims.micro_batch, .seq = m->dims.seq_len};
      return OP(m, embedding_backward, r->c, &a);
    }
    case TESSEL_OP_HEAD: /* its backward ran with its forward */
      mark(w, tsl_act_grad(m, r->unit, od->in[0], &ld));
      return TESSEL_OK;
  }
  return tsl_error(TESSEL_E_INTERNAL, "unknown op kind %d", (int)r->op->kind);
}

tsl_status tsl_exec_backward(tsl_model *m, const tessel_op_ctx *c, int slot, int unit) {
  tsl_status st;
  const tsl_unit *u = &m->units[unit];
  written w = {.n = 0, .bias_done = -1};
  TSL_TRY(st, tsl_offload_enter(m, slot, unit, 1));
  TSL_TRY(st, recompute(m, c, slot, unit));
  /* the stream's gradient holds d(output) on entry, except at the head,
  ** where backward starts */
  if (u->info.kind != TESSEL_UNIT_HEAD) mark(&w, m->dres);
  for (int k = u->info.n_ops - 1; k >= 0; k--) {
    tessel_op_ctx ck = *c;
    ck.op = &u->ops[k];
    run r = {m, &ck, slot, unit, u->decl, &u->ops[k], &u->decl->ops[k], 0};
    TSL_TRY(st, tsl_optime_start(m));
    st = backward_op(&r, &w);
    if (st < 0) return tsl_error_wrap(st, "unit %d, backward of %s", unit, tsl_op_kind_name(u->ops[k].kind));
    TSL_TRY(st, tsl_optime_stop(m, unit, k, 0, TSL_OPTIME_BACKWARD));
  }
  TSL_TRY(st, tsl_offload_leave(m, slot, unit, 1));
  return tsl_offload_prefetch(m, slot, unit - 1);
fail:
  return st;
}
