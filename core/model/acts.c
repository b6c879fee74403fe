/* core/model/acts.c — activation and gradient buffers from the geometry. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "model/internal.h"

int64_t tsl_act_rows(const tsl_model *m, const tsl_act_decl *a) {
  return a->rows == TSL_ROWS_RESID ? m->geo.rows : m->geo.inner_rows;
}

/* Local columns of one run of role d. */
static int64_t run_cols(const tsl_model *m, tessel_dim d) {
  const tessel_geometry *g = &m->geo;
  int64_t hs = m->dims.dim[TESSEL_DIM_HEAD_SIZE];
  switch (d) {
    case TESSEL_DIM_HIDDEN: return g->width;
    case TESSEL_DIM_HEADS: return g->heads * hs;
    case TESSEL_DIM_KV_HEADS: return g->kv_heads * hs;
    case TESSEL_DIM_FFN: return g->ffn;
    case TESSEL_DIM_VOCAB: return g->vocab;
    default: return 0;
  }
}

int64_t tsl_act_width(const tsl_model *m, const tsl_unit_decl *u, int act) {
  const tsl_act_decl *a = &u->acts[act];
  int64_t w = 0;
  for (int r = 0; r < a->ncols; r++) w += run_cols(m, a->cols[r]);
  return w;
}

/* Columns before run `run` of activation `act`. */
static int64_t run_offset(const tsl_model *m, const tsl_unit_decl *u, int act, int run) {
  int64_t off = 0;
  for (int r = 0; r < run; r++) off += run_cols(m, u->acts[act].cols[r]);
  return off;
}

static uint64_t act_bytes(const tsl_model *m, const tsl_unit_decl *u, int act) {
  return (uint64_t)(tsl_act_rows(m, &u->acts[act]) * tsl_act_width(m, u, act)) * tessel_dtype_size(m->dims.act_dtype);
}

int tsl_act_on_rank(const tsl_model *m, int unit) { return unit >= m->geo.unit_first && unit <= m->geo.unit_last; }

void *tsl_act_ptr(const tsl_model *m, int slot, int unit, int act, int64_t *ld) {
  const tsl_unit_decl *u = m->units[unit].decl;
  const tsl_act_decl *a = &u->acts[act];
  if (a->view_of >= 0) {
    int64_t parent_ld;
    char *base = tsl_act_ptr(m, slot, unit, a->view_of, &parent_ld);
    *ld = parent_ld;
    return base + run_offset(m, u, a->view_of, a->view_run) * (int64_t)tessel_dtype_size(m->dims.act_dtype);
  }
  *ld = tsl_act_width(m, u, act);
  const tsl_slot *s = &m->slots[slot];
  if (act == TSL_ACT_IN) return s->resid[unit];
  if (act == TSL_ACT_OUT) return s->resid[unit + 1];
  return s->units[unit].buf[act];
}

/* The gradient of a stream activation, or of a residual branch (d(branch)
** = d(stream after the add)), is the one residual-gradient buffer. */
static int grad_is_stream(const tsl_unit_decl *u, int act) {
  if (u->acts[act].stream) return 1;
  for (int k = 0; k < u->n_ops; k++)
    if (u->ops[k].kind == TESSEL_OP_RESIDUAL && u->ops[k].in[1] == act) return 1;
  return 0;
}

void *tsl_act_grad(const tsl_model *m, int unit, int act, int64_t *ld) {
  const tsl_unit *un = &m->units[unit];
  const tsl_act_decl *a = &un->decl->acts[act];
  if (a->view_of >= 0) {
    int64_t parent_ld;
    char *base = tsl_act_grad(m, unit, a->view_of, &parent_ld);
    *ld = parent_ld;
    return base + run_offset(m, un->decl, a->view_of, a->view_run) * (int64_t)tessel_dtype_size(m->dims.act_dtype);
  }
  *ld = tsl_act_width(m, un->decl, act);
  if (grad_is_stream(un->decl, act)) return m->dres;
  return m->grads[un->kind_index].buf[act];
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

static int own_buffer(const tsl_unit_decl *u, int act) {
  return act != TSL_ACT_IN && act != TSL_ACT_OUT && u->acts[act].view_of < 0;
}

/* Statistics an op saves for its backward. */
static void carve_saved(const tsl_model *m, carver *c, const tsl_unit_decl *u, tsl_unit_acts *ua) {
  const tessel_geometry *g = &m->geo;
  for (int k = 0; k < u->n_ops; k++) {
    const tsl_op_decl *op = &u->ops[k];
    uint64_t rows = (uint64_t)tsl_act_rows(m, &u->acts[op->in[0] >= 0 ? op->in[0] : 0]) * sizeof(float);
    if (op->kind == TESSEL_OP_NORM) {
      ua->saved[k][0] = op->variant == TESSEL_NORM_LAYER ? carve(c, rows) : NULL;
      ua->saved[k][1] = carve(c, rows);
    } else if (op->kind == TESSEL_OP_ATTENTION) {
      ua->saved[k][1] = carve(c, (uint64_t)(g->batch * g->heads) * (uint64_t)m->dims.seq_len * sizeof(float));
    }
  }
}

static void carve_slot(tsl_model *m, carver *c, tsl_slot *s) {
  uint64_t es = tessel_dtype_size(m->dims.act_dtype);
  uint64_t resid = (uint64_t)(m->geo.rows * m->geo.width) * es;
  uint64_t tokens = (uint64_t)m->dims.micro_batch * (uint64_t)m->dims.seq_len * sizeof(int32_t);
  int U = m->dims.units;
  s->tokens = carve(c, tokens);
  s->targets = carve(c, tokens);
  for (int u = 1; u < U; u++) s->resid[u] = tsl_act_on_rank(m, u) || tsl_act_on_rank(m, u - 1) ? carve(c, resid) : NULL;
  for (int u = 0; u < U; u++) {
    tsl_unit_acts *ua = &s->units[u];
    memset(ua, 0, sizeof *ua);
    if (!tsl_act_on_rank(m, u)) continue;
    const tsl_unit_decl *d = m->units[u].decl;
    for (int a = 0; a < d->n_acts; a++)
      if (own_buffer(d, a)) ua->buf[a] = carve(c, act_bytes(m, d, a));
    carve_saved(m, c, d, ua);
  }
}

static void carve_grads(tsl_model *m, carver *c) {
  uint64_t es = tessel_dtype_size(m->dims.act_dtype), largest = (uint64_t)(m->geo.rows * m->geo.width) * es;
  int present[3] = {0, 0, 0};
  for (int u = m->geo.unit_first; u <= m->geo.unit_last; u++) present[m->units[u].kind_index] = 1;
  for (int k = 0; k < 3; k++) {
    memset(&m->grads[k], 0, sizeof m->grads[k]);
    if (!present[k]) continue;
    const tsl_unit_decl *d = k == 0 ? &m->arch.embed : k == 1 ? &m->arch.block : &m->arch.head;
    for (int a = 0; a < d->n_acts; a++) {
      if (!own_buffer(d, a)) continue;
      largest = TSL_MAX(largest, act_bytes(m, d, a));
      if (!grad_is_stream(d, a)) m->grads[k].buf[a] = carve(c, act_bytes(m, d, a));
    }
  }
  m->dres = carve(c, (uint64_t)(m->geo.rows * m->geo.width) * es);
  m->dtmp = carve(c, largest);
  m->logits = present[2] ? carve(c, (uint64_t)(m->geo.rows * m->geo.vocab) * es) : NULL;
  m->losses = carve(c, (uint64_t)m->dims.micro_steps * (uint64_t)m->geo.rows * sizeof(float));
}

tsl_status tsl_acts_allocate(tsl_model *m) {
  tsl_status st;
  tsl_runtime *rt = m->rt;
  int U = m->dims.units;
  m->n_slots = m->geo.act_slots;
  m->slots = calloc((size_t)m->n_slots, sizeof *m->slots);
  if (!m->slots) return tsl_error(TESSEL_E_NOMEM, "out of host memory for activation tables");
  for (int i = 0; i < m->n_slots; i++) {
    tsl_slot *s = &m->slots[i];
    s->resid = calloc((size_t)U + 1, sizeof(void *));
    s->units = calloc((size_t)U, sizeof *s->units);
    if (!s->resid || !s->units) return tsl_error(TESSEL_E_NOMEM, "out of host memory for activation tables");
    carver c = {0};
    carve_slot(m, &c, s);
    char name[64];
    snprintf(name, sizeof name, "activations (slot %d)", i);
    TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_ACT, c.used, name, &s->arena));
    c = (carver){s->arena, 0};
    carve_slot(m, &c, s);
    s->loaded_step = -1;
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

void tsl_acts_free(tsl_model *m) {
  tsl_runtime *rt = m->rt;
  for (int i = 0; m->slots && i < m->n_slots; i++) {
    if (m->slots[i].arena) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, m->slots[i].arena);
    free(m->slots[i].resid);
    free(m->slots[i].units);
  }
  if (m->grad_arena) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, m->grad_arena);
  free(m->slots);
  free(m->host_inputs);
  free(m->host_targets);
  free(m->host_losses);
  m->slots = NULL;
  m->grad_arena = NULL;
  m->host_inputs = m->host_targets = NULL;
  m->host_losses = NULL;
}

tsl_status tsl_model_act_bytes(const tsl_model *m, const tessel_geometry *g, uint64_t *per_slot, uint64_t *grads) {
  tsl_model at = *m;
  at.geo = *g;
  int U = m->dims.units;
  void **resid = calloc((size_t)U + 1, sizeof *resid);
  tsl_unit_acts *units = calloc((size_t)U, sizeof *units);
  tsl_status st = resid && units ? TESSEL_OK : tsl_error(TESSEL_E_NOMEM, "out of host memory sizing activations");
  if (st >= 0) {
    tsl_slot s = {.resid = resid, .units = units};
    carver c = {0};
    carve_slot(&at, &c, &s);
    *per_slot = c.used;
    c = (carver){0};
    carve_grads(&at, &c);
    *grads = c.used;
  }
  free(resid);
  free(units);
  return st;
}
