/* core/model/gpt.c — units, activations and the default schedule. */
#include "model/gpt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "compute/compute.h"

/* Parameter index of block l's k-th tensor (registration order, params.c). */
#define BLOCK_PARAM(l, k) (2 + 12 * (l) + (k))
enum { P_LN1_W, P_LN1_B, P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B, P_LN2_W, P_LN2_B, P_FC_W, P_FC_B, P_FCP_W, P_FCP_B };
#define P_WTE 0
#define P_WPE 1
#define P_LNF_W(L) (2 + 12 * (L))
#define P_LNF_B(L) (3 + 12 * (L))

/* Dispatch a layer primitive to the strategy, or the core's version. */
#define OP(m, name, ctx, args) \
  ((m)->plugin_ops.name ? (m)->plugin_ops.name((m)->rt->inst, ctx, args) : tsl_op_##name(m, ctx, args))

/* Run a strategy hook if it has one; its error is reported with its name. */
#define HOOK(st, m, hook, ...)                                                              \
  do {                                                                                      \
    if ((m)->rt->plugin && (m)->rt->plugin->vt.hook) {                                      \
      tsl_error_clear();                                                                    \
      if (((st) = (m)->rt->plugin->vt.hook((m)->rt->inst, ##__VA_ARGS__)) < 0) {            \
        tsl_error_wrap(st, "%s.%s", (m)->rt->plugin->name, #hook);                          \
        goto fail;                                                                          \
      }                                                                                     \
    }                                                                                       \
  } while (0)

void tsl_model_view(const tsl_model *m, int index, tessel_param_view *out) {
  const tsl_param *p = &m->params.p[index];
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  out->data = p->data;
  out->grad = p->grad;
  out->master = p->master;
  out->local_shape[0] = p->local_shape[0];
  out->local_shape[1] = p->local_shape[1];
  out->local_numel = p->local_numel;
}

int tsl_model_unit_params(const tsl_model *m, int unit, int *out, int cap) {
  int n = 0, L = m->dims.layers;
  for (int i = 0; i < m->params.n; i++) {
    int u = m->params.p[i].info.unit;
    int used = u == unit || (i == P_WTE && unit == L + 1);
    if (used && n < cap) out[n] = i;
    n += used;
  }
  return n;
}

/* ---- geometry and buffers ---- */

static tsl_status geometry(tsl_model *m) {
  const tessel_model_dims *d = &m->dims;
  tessel_geometry g = {.size = sizeof g};
  if (m->rt->plugin && m->rt->plugin->vt.geometry) {
    tsl_error_clear();
    tsl_status st = m->rt->plugin->vt.geometry(m->rt->inst, &g);
    if (st < 0) return tsl_error_wrap(st, "%s.geometry", m->rt->plugin->name);
  }
  int64_t BT = (int64_t)d->micro_batch * d->seq_len, C = d->channels;
  if (!g.rows) g.rows = BT;
  if (!g.width) g.width = C;
  if (!g.inner_rows) g.inner_rows = BT;
  if (!g.batch) g.batch = d->micro_batch;
  if (!g.heads) g.heads = d->heads;
  if (!g.qkv_width) g.qkv_width = 3 * C;
  if (!g.attn_width) g.attn_width = C;
  if (!g.fc_width) g.fc_width = 4 * C;
  if (!g.vocab) g.vocab = d->vocab_size;
  if (!g.act_slots) g.act_slots = 1;
  if (!g.unit_last && !g.unit_first) g.unit_last = d->units - 1;
  int64_t hs = C / d->heads;
  if (g.batch * d->seq_len != g.inner_rows || g.heads * hs != g.attn_width || 3 * g.attn_width != g.qkv_width ||
      g.unit_first < 0 || g.unit_last >= d->units || g.unit_first > g.unit_last || g.act_slots < 1)
    return tsl_error(TESSEL_E_INTERNAL,
                     "%s: inconsistent geometry (inner_rows %lld, batch %lld × seq %d, heads %lld, attn_width %lld, "
                     "qkv_width %lld, units %d..%d of %d)",
                     m->rt->plugin ? m->rt->plugin->name : "core", (long long)g.inner_rows, (long long)g.batch,
                     d->seq_len, (long long)g.heads, (long long)g.attn_width, (long long)g.qkv_width, g.unit_first,
                     g.unit_last, d->units);
  m->geo = g;
  return TESSEL_OK;
}

/* Bump allocator over a byte count, so one pass sizes an arena and a
** second pass carves it. */
typedef struct carver {
  char *base;
  uint64_t used;
} carver;

static void *carve(carver *c, uint64_t bytes) {
  void *p = c->base ? c->base + c->used : NULL;
  c->used += (bytes + 63) & ~63ull;
  return p;
}

static int on_rank(const tsl_model *m, int unit) { return unit >= m->geo.unit_first && unit <= m->geo.unit_last; }

/* Lay out one slot's activations (sizing pass when c->base is NULL). */
static void carve_slot(tsl_model *m, carver *c, tsl_slot *s) {
  const tessel_geometry *g = &m->geo;
  uint64_t es = m->rt->be.act_dtype == TESSEL_F32 ? 4 : 2;
  uint64_t res = (uint64_t)(g->rows * g->width) * es, T = (uint64_t)m->dims.seq_len;
  int L = m->dims.layers;
  uint64_t tokens = (uint64_t)m->dims.micro_batch * T * sizeof(int32_t);
  s->tokens = carve(c, tokens);
  s->targets = carve(c, tokens);
  for (int u = 1; u <= L + 1; u++)
    s->resid[u] = on_rank(m, u) || on_rank(m, u - 1) ? carve(c, res) : NULL;
  for (int l = 0; l < L; l++) {
    tsl_block_acts *a = &s->blocks[l];
    memset(a, 0, sizeof *a);
    if (!on_rank(m, l + 1)) continue;
    uint64_t stats = (uint64_t)g->rows * sizeof(float);
    a->ln1 = carve(c, res);
    a->ln1_mean = carve(c, stats);
    a->ln1_rstd = carve(c, stats);
    a->qkv = carve(c, (uint64_t)(g->inner_rows * g->qkv_width) * es);
    a->att = carve(c, (uint64_t)g->batch * (uint64_t)g->heads * T * T * es);
    a->atty = carve(c, (uint64_t)(g->inner_rows * g->attn_width) * es);
    a->attproj = carve(c, res);
    a->res2 = carve(c, res);
    a->ln2 = carve(c, res);
    a->ln2_mean = carve(c, stats);
    a->ln2_rstd = carve(c, stats);
    a->fch = carve(c, (uint64_t)(g->inner_rows * g->fc_width) * es);
    a->fch_gelu = carve(c, (uint64_t)(g->inner_rows * g->fc_width) * es);
    a->fcproj = carve(c, res);
  }
  if (on_rank(m, L + 1)) {
    s->lnf = carve(c, res);
    s->lnf_mean = carve(c, (uint64_t)g->rows * sizeof(float));
    s->lnf_rstd = carve(c, (uint64_t)g->rows * sizeof(float));
  }
}

/* Gradient buffers, shared by every block and slot. */
static void carve_grads(tsl_model *m, carver *c) {
  const tessel_geometry *g = &m->geo;
  uint64_t es = m->rt->be.act_dtype == TESSEL_F32 ? 4 : 2;
  uint64_t res = (uint64_t)(g->rows * g->width) * es;
  m->dres = carve(c, res);
  m->dtmp = carve(c, res);
  m->dln = carve(c, res);
  m->dlnf = carve(c, res);
  m->dfc = carve(c, (uint64_t)(g->inner_rows * g->fc_width) * es);
  m->dfc_gelu = carve(c, (uint64_t)(g->inner_rows * g->fc_width) * es);
  m->datty = carve(c, (uint64_t)(g->inner_rows * g->attn_width) * es);
  m->dqkv = carve(c, (uint64_t)(g->inner_rows * g->qkv_width) * es);
  m->logits = on_rank(m, m->dims.layers + 1) ? carve(c, (uint64_t)(g->rows * g->vocab) * es) : NULL;
  m->losses = carve(c, (uint64_t)m->dims.micro_steps * (uint64_t)g->rows * sizeof(float));
}

static tsl_status allocate_buffers(tsl_model *m) {
  tsl_status st;
  tsl_runtime *rt = m->rt;
  int L = m->dims.layers;
  m->n_slots = m->geo.act_slots;
  m->slots = calloc((size_t)m->n_slots, sizeof *m->slots);
  if (!m->slots) return tsl_error(TESSEL_E_NOMEM, "out of host memory for activation tables");
  for (int i = 0; i < m->n_slots; i++) {
    tsl_slot *s = &m->slots[i];
    s->resid = calloc((size_t)L + 3, sizeof(void *));
    s->blocks = calloc((size_t)L, sizeof *s->blocks);
    if (!s->resid || !s->blocks) return tsl_error(TESSEL_E_NOMEM, "out of host memory for activation tables");
    carver c = {0};
    carve_slot(m, &c, s);
    char name[64];
    snprintf(name, sizeof name, "activations (slot %d)", i);
    TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_ACT, c.used, name, &s->arena));
    c = (carver){s->arena, 0};
    carve_slot(m, &c, s);
    s->loaded_serial = UINT64_MAX;
  }
  carver c = {0};
  carve_grads(m, &c);
  TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_ACT, c.used, "activation gradients", &m->grad_arena));
  c = (carver){m->grad_arena, 0};
  carve_grads(m, &c);
  size_t tokens = (size_t)m->dims.micro_batch * (size_t)m->dims.seq_len;
  m->host_inputs = malloc(tokens * sizeof(int32_t));
  m->host_targets = malloc(tokens * sizeof(int32_t));
  m->host_losses = malloc((size_t)m->dims.micro_steps * (size_t)m->geo.rows * sizeof(float));
  if (!m->host_inputs || !m->host_targets || !m->host_losses)
    return tsl_error(TESSEL_E_NOMEM, "out of host memory for batch staging");
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_plan(tsl_runtime *rt, const tessel_model_dims *dims, tsl_model **out) {
  tsl_status st;
  tsl_model *m = calloc(1, sizeof *m);
  if (!m) return tsl_error(TESSEL_E_NOMEM, "out of host memory for the model");
  m->rt = rt;
  rt->model = m;
  m->dims = *dims;
  m->dims.size = sizeof m->dims;
  m->dims.units = dims->layers + 2;
  m->dims.act_dtype = rt->be_ready ? rt->be.act_dtype : TESSEL_F32;
  m->dloss = 1.0f / ((float)dims->micro_batch * (float)dims->micro_steps * (float)dims->data_ranks * (float)dims->seq_len);
  if (rt->plugin && rt->plugin->vt.layer_ops) {
    const tessel_layer_ops *ops = rt->plugin->vt.layer_ops;
    memcpy(&m->plugin_ops, ops, TSL_MIN((size_t)ops->size, sizeof m->plugin_ops));
  }
  TSL_TRY(st, tsl_params_register(&m->params, dims->layers, dims->channels, dims->seq_len, dims->vocab_size));
  TSL_TRY(st, tsl_params_layout(rt, &m->params));
  TSL_TRY(st, geometry(m));
  *out = m;
  return TESSEL_OK;
fail:
  tsl_model_destroy(m);
  return st;
}

tsl_status tsl_model_materialize(tsl_model *m, uint64_t seed) {
  tsl_status st;
  TSL_TRY(st, tsl_params_allocate(m->rt, &m->params));
  TSL_TRY(st, tsl_params_init(m->rt, &m->params, seed));
  TSL_TRY(st, allocate_buffers(m));
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_create(tsl_runtime *rt, const tessel_model_dims *dims, uint64_t seed, tsl_model **out) {
  tsl_model *m;
  tsl_status st = tsl_model_plan(rt, dims, &m);
  if (st < 0) return st;
  st = tsl_model_materialize(m, seed);
  if (st < 0) {
    tsl_model_destroy(m);
    return st;
  }
  *out = m;
  return TESSEL_OK;
}

void tsl_model_destroy(tsl_model *m) {
  if (!m) return;
  tsl_runtime *rt = m->rt;
  for (int i = 0; m->slots && i < m->n_slots; i++) {
    if (m->slots[i].arena) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, m->slots[i].arena);
    free(m->slots[i].resid);
    free(m->slots[i].blocks);
  }
  if (m->grad_arena) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, m->grad_arena);
  tsl_params_free(rt, &m->params);
  free(m->slots);
  free(m->host_inputs);
  free(m->host_targets);
  free(m->host_losses);
  if (rt->model == m) rt->model = NULL;
  free(m);
}

/* ---- units ---- */

/* Make sure the slot holds micro-batch `micro` of the current step. */
static tsl_status load_batch(tsl_model *m, tsl_slot *s, int micro) {
  tsl_status st;
  if (s->loaded_serial == m->serial && s->loaded_micro == micro) return TESSEL_OK;
  if (!m->batch) return tsl_error(TESSEL_E_INTERNAL, "the model has no batch source");
  uint64_t bytes = (uint64_t)m->dims.micro_batch * (uint64_t)m->dims.seq_len * sizeof(int32_t);
  TSL_TRY(st, m->batch(m->batch_ctx, micro, m->host_inputs, m->host_targets));
  TSL_TRY(st, tsl_mem_copy(&m->rt->ledger, TESSEL_TIER_DEVICE, s->tokens, 0, TESSEL_TIER_HOST, m->host_inputs, 0, bytes, m->rt->compute));
  TSL_TRY(st, tsl_mem_copy(&m->rt->ledger, TESSEL_TIER_DEVICE, s->targets, 0, TESSEL_TIER_HOST, m->host_targets, 0, bytes, m->rt->compute));
  s->loaded_serial = m->serial;
  s->loaded_micro = micro;
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status residual_add(tsl_model *m, void *out, const void *a, const void *b) {
  tsl_backend *be = &m->rt->be;
  int rc = be->add(be, m->rt->compute, out, a, b, m->geo.rows * m->geo.width);
  return rc < 0 ? tsl_error_wrap(rc, "residual add") : TESSEL_OK;
}

static tsl_status residual_accumulate(tsl_model *m, void *dres, const void *d) {
  tsl_backend *be = &m->rt->be;
  int rc = be->axpy(be, m->rt->compute, be->act_dtype, dres, 1.0f, d, m->geo.rows * m->geo.width);
  return rc < 0 ? tsl_error_wrap(rc, "residual gradient") : TESSEL_OK;
}

typedef struct block_views {
  tessel_param_view w[12];
} block_views;

static void views_of_block(const tsl_model *m, int l, block_views *v) {
  for (int k = 0; k < 12; k++) tsl_model_view(m, BLOCK_PARAM(l, k), &v->w[k]);
}

static tessel_linear_args linear_args(const tsl_model *m, tessel_block_weight which, const tessel_param_view *w,
                                      const tessel_param_view *b) {
  const tessel_geometry *g = &m->geo;
  tessel_linear_args a = {.size = sizeof a, .which = which, .w = w, .b = b};
  switch (which) {
    case TESSEL_W_QKV: a.inp_rows = g->rows, a.inp_cols = g->width, a.out_rows = g->inner_rows, a.out_cols = g->qkv_width; break;
    case TESSEL_W_ATTN_PROJ: a.inp_rows = g->inner_rows, a.inp_cols = g->attn_width, a.out_rows = g->rows, a.out_cols = g->width; break;
    case TESSEL_W_FC: a.inp_rows = g->rows, a.inp_cols = g->width, a.out_rows = g->inner_rows, a.out_cols = g->fc_width; break;
    default: a.inp_rows = g->inner_rows, a.inp_cols = g->fc_width, a.out_rows = g->rows, a.out_cols = g->width; break;
  }
  return a;
}

static tessel_layernorm_args ln_args(const tsl_model *m, const tessel_param_view *w, const tessel_param_view *b,
                                     const void *inp, float *mean, float *rstd) {
  tessel_layernorm_args a = {.size = sizeof a, .w = w, .b = b, .inp = inp, .mean = mean, .rstd = rstd,
                             .rows = m->geo.rows, .cols = m->geo.width};
  return a;
}

static tessel_attention_args attn_args(const tsl_model *m, const tsl_block_acts *acts) {
  tessel_attention_args a = {.size = sizeof a, .qkv = acts->qkv, .att = acts->att, .batch = m->geo.batch,
                             .seq = m->dims.seq_len, .heads = m->geo.heads,
                             .head_size = m->dims.channels / m->dims.heads};
  return a;
}

/* x [rows, width] -> out [rows, width] through one transformer block:
** res2 = x + proj(attn(qkv(ln1(x)))), out = res2 + fcproj(gelu(fc(ln2(res2)))) */
static tsl_status block_forward(tsl_model *m, const tessel_op_ctx *c, tsl_slot *s, int l) {
  tsl_status st;
  tsl_block_acts *a = &s->blocks[l];
  const void *x = s->resid[l + 1];
  void *out = s->resid[l + 2];
  block_views v;
  views_of_block(m, l, &v);
  tessel_layernorm_args ln = ln_args(m, &v.w[P_LN1_W], &v.w[P_LN1_B], x, a->ln1_mean, a->ln1_rstd);
  ln.out = a->ln1;
  TSL_TRY(st, OP(m, layernorm_forward, c, &ln));
  tessel_linear_args lin = linear_args(m, TESSEL_W_QKV, &v.w[P_QKV_W], &v.w[P_QKV_B]);
  lin.inp = a->ln1, lin.out = a->qkv;
  TSL_TRY(st, OP(m, linear_forward, c, &lin));
  tessel_attention_args at = attn_args(m, a);
  at.out = a->atty;
  TSL_TRY(st, OP(m, attention_forward, c, &at));
  lin = linear_args(m, TESSEL_W_ATTN_PROJ, &v.w[P_PROJ_W], &v.w[P_PROJ_B]);
  lin.inp = a->atty, lin.out = a->attproj;
  TSL_TRY(st, OP(m, linear_forward, c, &lin));
  TSL_TRY(st, residual_add(m, a->res2, x, a->attproj));
  ln = ln_args(m, &v.w[P_LN2_W], &v.w[P_LN2_B], a->res2, a->ln2_mean, a->ln2_rstd);
  ln.out = a->ln2;
  TSL_TRY(st, OP(m, layernorm_forward, c, &ln));
  lin = linear_args(m, TESSEL_W_FC, &v.w[P_FC_W], &v.w[P_FC_B]);
  lin.inp = a->ln2, lin.out = a->fch;
  TSL_TRY(st, OP(m, linear_forward, c, &lin));
  int rc = m->rt->be.gelu_forward(&m->rt->be, m->rt->compute, a->fch_gelu, a->fch, m->geo.inner_rows * m->geo.fc_width);
  if (rc < 0) return tsl_error_wrap(rc, "gelu forward");
  lin = linear_args(m, TESSEL_W_FC_PROJ, &v.w[P_FCP_W], &v.w[P_FCP_B]);
  lin.inp = a->fch_gelu, lin.out = a->fcproj;
  TSL_TRY(st, OP(m, linear_forward, c, &lin));
  TSL_TRY(st, residual_add(m, out, a->res2, a->fcproj));
  return TESSEL_OK;
fail:
  return st;
}

/* On entry dres = d(block output); on exit dres = d(block input). The
** residual path passes dres through; each branch adds its contribution. */
static tsl_status block_backward(tsl_model *m, const tessel_op_ctx *c, tsl_slot *s, int l) {
  tsl_status st;
  tsl_block_acts *a = &s->blocks[l];
  block_views v;
  views_of_block(m, l, &v);
  tessel_linear_args lin = linear_args(m, TESSEL_W_FC_PROJ, &v.w[P_FCP_W], &v.w[P_FCP_B]);
  lin.inp = a->fch_gelu, lin.dout = m->dres, lin.dinp = m->dfc_gelu;
  TSL_TRY(st, OP(m, linear_backward, c, &lin));
  int rc = m->rt->be.gelu_backward(&m->rt->be, m->rt->compute, m->dfc, a->fch, m->dfc_gelu,
                                   m->geo.inner_rows * m->geo.fc_width);
  if (rc < 0) return tsl_error_wrap(rc, "gelu backward");
  lin = linear_args(m, TESSEL_W_FC, &v.w[P_FC_W], &v.w[P_FC_B]);
  lin.inp = a->ln2, lin.dout = m->dfc, lin.dinp = m->dln;
  TSL_TRY(st, OP(m, linear_backward, c, &lin));
  tessel_layernorm_args ln = ln_args(m, &v.w[P_LN2_W], &v.w[P_LN2_B], a->res2, a->ln2_mean, a->ln2_rstd);
  ln.dout = m->dln, ln.dinp = m->dtmp;
  TSL_TRY(st, OP(m, layernorm_backward, c, &ln));
  TSL_TRY(st, residual_accumulate(m, m->dres, m->dtmp));
  lin = linear_args(m, TESSEL_W_ATTN_PROJ, &v.w[P_PROJ_W], &v.w[P_PROJ_B]);
  lin.inp = a->atty, lin.dout = m->dres, lin.dinp = m->datty;
  TSL_TRY(st, OP(m, linear_backward, c, &lin));
  tessel_attention_args at = attn_args(m, a);
  at.dout = m->datty, at.dqkv = m->dqkv;
  TSL_TRY(st, OP(m, attention_backward, c, &at));
  lin = linear_args(m, TESSEL_W_QKV, &v.w[P_QKV_W], &v.w[P_QKV_B]);
  lin.inp = a->ln1, lin.dout = m->dqkv, lin.dinp = m->dln;
  TSL_TRY(st, OP(m, linear_backward, c, &lin));
  ln = ln_args(m, &v.w[P_LN1_W], &v.w[P_LN1_B], s->resid[l + 1], a->ln1_mean, a->ln1_rstd);
  ln.dout = m->dln, ln.dinp = m->dtmp;
  TSL_TRY(st, OP(m, layernorm_backward, c, &ln));
  TSL_TRY(st, residual_accumulate(m, m->dres, m->dtmp));
  return TESSEL_OK;
fail:
  return st;
}

static tessel_embedding_args embed_args(tsl_model *m, tsl_slot *s, tessel_param_view *wte, tessel_param_view *wpe) {
  tsl_model_view(m, P_WTE, wte);
  tsl_model_view(m, P_WPE, wpe);
  tessel_embedding_args a = {.size = sizeof a, .wte = wte, .wpe = wpe, .tokens = s->tokens,
                             .batch = m->dims.micro_batch, .seq = m->dims.seq_len};
  return a;
}

/* ln_f, then the head primitive: loss, and in training dlogits and d(ln_f output). */
static tsl_status head_forward(tsl_model *m, const tessel_op_ctx *c, tsl_slot *s, int micro) {
  tsl_status st;
  int L = m->dims.layers;
  tessel_param_view w, b, wte;
  tsl_model_view(m, P_LNF_W(L), &w);
  tsl_model_view(m, P_LNF_B(L), &b);
  tsl_model_view(m, P_WTE, &wte);
  tessel_layernorm_args ln = ln_args(m, &w, &b, s->resid[L + 1], s->lnf_mean, s->lnf_rstd);
  ln.out = s->lnf;
  TSL_TRY(st, OP(m, layernorm_forward, c, &ln));
  tessel_head_args h = {.size = sizeof h, .wte = &wte, .inp = s->lnf, .targets = s->targets,
                        .losses = m->losses + (int64_t)micro * m->geo.rows, .logits = m->logits,
                        .dinp = m->training ? m->dlnf : NULL, .dloss = m->dloss,
                        .rows = m->geo.rows, .width = m->geo.width};
  TSL_TRY(st, OP(m, head, c, &h));
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status head_backward(tsl_model *m, const tessel_op_ctx *c, tsl_slot *s) {
  int L = m->dims.layers;
  tessel_param_view w, b;
  tsl_model_view(m, P_LNF_W(L), &w);
  tsl_model_view(m, P_LNF_B(L), &b);
  tessel_layernorm_args ln = ln_args(m, &w, &b, s->resid[L + 1], s->lnf_mean, s->lnf_rstd);
  ln.dout = m->dlnf, ln.dinp = m->dres; /* the residual gradient starts here */
  return OP(m, layernorm_backward, c, &ln);
}

/* Check that a unit of a micro-batch can run here and describe it for the
** layer primitives. */
static tsl_status unit_begin(const tsl_model *m, int micro, int slot, int unit, tessel_op_ctx *c) {
  if (unit < 0 || unit >= m->dims.units || !on_rank(m, unit) || slot < 0 || slot >= m->n_slots || micro < 0 ||
      micro >= m->dims.micro_steps)
    return tsl_error(TESSEL_E_INTERNAL, "unit %d, micro-batch %d, slot %d is not on this rank (units %d..%d, %d slots, %d micro-batches)",
                     unit, micro, slot, m->geo.unit_first, m->geo.unit_last, m->n_slots, m->dims.micro_steps);
  int L = m->dims.layers;
  *c = (tessel_op_ctx){.size = sizeof *c, .unit = unit, .layer = unit >= 1 && unit <= L ? unit - 1 : -1,
                       .micro = micro, .slot = slot, .stream = (tessel_stream *)m->rt->compute};
  return TESSEL_OK;
}

tsl_status tsl_model_forward(tsl_model *m, int micro, int slot, int unit) {
  tsl_status st;
  tessel_op_ctx c;
  TSL_TRY(st, unit_begin(m, micro, slot, unit, &c));
  tsl_slot *s = &m->slots[slot];
  int L = m->dims.layers;
  HOOK(st, m, before_forward, unit, micro);
  if (unit == 0 || unit == L + 1) TSL_TRY(st, load_batch(m, s, micro));
  if (unit == 0) {
    tessel_param_view wte, wpe;
    tessel_embedding_args e = embed_args(m, s, &wte, &wpe);
    e.out = s->resid[1];
    TSL_TRY(st, OP(m, embedding_forward, &c, &e));
  } else if (unit <= L) {
    TSL_TRY(st, block_forward(m, &c, s, unit - 1));
  } else {
    TSL_TRY(st, head_forward(m, &c, s, micro));
  }
  HOOK(st, m, after_forward, unit, micro);
  if (unit < m->geo.unit_last) HOOK(st, m, prefetch, unit + 1, 0);
  if (m->rt->comm) tsl_comm_progress(m->rt->comm);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_backward(tsl_model *m, int micro, int slot, int unit) {
  tsl_status st;
  tessel_op_ctx c;
  TSL_TRY(st, unit_begin(m, micro, slot, unit, &c));
  tsl_slot *s = &m->slots[slot];
  int L = m->dims.layers;
  HOOK(st, m, before_backward, unit, micro);
  if (unit == L + 1) {
    TSL_TRY(st, head_backward(m, &c, s));
  } else if (unit >= 1) {
    TSL_TRY(st, block_backward(m, &c, s, unit - 1));
  } else {
    tessel_param_view wte, wpe;
    tessel_embedding_args e = embed_args(m, s, &wte, &wpe);
    e.dout = m->dres;
    TSL_TRY(st, OP(m, embedding_backward, &c, &e));
  }
  HOOK(st, m, after_backward, unit, micro);
  if (unit > m->geo.unit_first) HOOK(st, m, prefetch, unit - 1, 1);
  if (m->rt->comm) tsl_comm_progress(m->rt->comm);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_boundary(tsl_model *m, int slot, int unit, void **act, void **grad, uint64_t *count) {
  if (slot < 0 || slot >= m->n_slots || unit < 1 || unit > m->dims.layers + 1 || !m->slots[slot].resid[unit])
    return tsl_error(TESSEL_E_INTERNAL, "no boundary buffer for unit %d in slot %d on this rank", unit, slot);
  *act = m->slots[slot].resid[unit];
  *grad = m->dres;
  *count = (uint64_t)(m->geo.rows * m->geo.width);
  return TESSEL_OK;
}

/* ---- steps ---- */

static tsl_status zero_grads(tsl_model *m) {
  tsl_backend *be = &m->rt->be;
  int rc = be->memset_zero(be, m->params.grad, m->params.core_numel * sizeof(float), m->rt->compute);
  return rc < 0 ? tsl_error_wrap(rc, "zeroing gradients") : TESSEL_OK;
}

tsl_status tsl_model_train_step(tsl_model *m) {
  tsl_status st;
  int micro_steps = m->dims.micro_steps;
  m->serial++;
  m->training = 1;
  TSL_TRY(st, zero_grads(m));
  if (m->rt->plugin && m->rt->plugin->vt.train_step) {
    HOOK(st, m, train_step, micro_steps);
  } else {
    for (int mb = 0; mb < micro_steps; mb++) {
      HOOK(st, m, set_grad_sync, mb == micro_steps - 1);
      for (int u = m->geo.unit_first; u <= m->geo.unit_last; u++) TSL_TRY(st, tsl_model_forward(m, mb, 0, u));
      for (int u = m->geo.unit_last; u >= m->geo.unit_first; u--) TSL_TRY(st, tsl_model_backward(m, mb, 0, u));
    }
  }
  HOOK(st, m, grads_finish);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_eval_step(tsl_model *m, int micro_steps) {
  tsl_status st;
  m->serial++;
  m->training = 0;
  if (m->rt->plugin && m->rt->plugin->vt.eval_step) {
    HOOK(st, m, eval_step, micro_steps);
    return TESSEL_OK;
  }
  for (int mb = 0; mb < micro_steps; mb++)
    for (int u = m->geo.unit_first; u <= m->geo.unit_last; u++) TSL_TRY(st, tsl_model_forward(m, mb, 0, u));
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_loss_sum(tsl_model *m, int micro_steps, double *sum, double *count) {
  tsl_status st;
  *sum = *count = 0;
  if (!on_rank(m, m->dims.layers + 1) || m->geo.loss_replica) return TESSEL_OK;
  uint64_t n = (uint64_t)micro_steps * (uint64_t)m->geo.rows;
  st = tsl_mem_copy(&m->rt->ledger, TESSEL_TIER_HOST, m->host_losses, 0, TESSEL_TIER_DEVICE, m->losses, 0,
                    n * sizeof(float), m->rt->compute);
  if (st < 0) return st;
  int rc = m->rt->be.stream_sync(&m->rt->be, m->rt->compute);
  if (rc < 0) return tsl_error_wrap(rc, "reading losses");
  for (uint64_t i = 0; i < n; i++) *sum += m->host_losses[i];
  *count = (double)n;
  return TESSEL_OK;
}

tsl_status tsl_model_dims_for(const tsl_runtime *rt, tessel_model_dims *d) {
  const tsl_settings *s = &rt->settings;
  tsl_cfg *train = NULL;
  tsl_cfg_section(tsl_config_root(rt->config), "train", 0, &train);
  int D = 1, B = s->train.batch_size;
  for (int a = 0; a < rt->mesh.naxes; a++)
    if (rt->mesh.data_axes & (1u << a)) D *= rt->mesh.sizes[a];
  if (B % D != 0)
    return tsl_cfg_error(train, "batch_size", "%d sequences do not split evenly over %d data-parallel ranks", B, D);
  int micro = s->train.micro_batch_size ? s->train.micro_batch_size : B / D;
  if ((B / D) % micro != 0)
    return tsl_cfg_error(train, "micro_batch_size",
                         "each of the %d data-parallel ranks gets %d sequences per step, not a multiple of %d", D, B / D,
                         micro);
  *d = (tessel_model_dims){.size = sizeof *d, .layers = s->model.layers, .heads = s->model.heads,
                           .channels = s->model.channels, .seq_len = s->model.seq_len,
                           .vocab_size = s->model.vocab_size, .micro_batch = micro, .micro_steps = B / D / micro,
                           .data_ranks = D, .units = s->model.layers + 2, .act_dtype = TESSEL_F32};
  return TESSEL_OK;
}
