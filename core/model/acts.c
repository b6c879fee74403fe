/* core/model/acts.c — activation and gradient buffers from the geometry
** and each unit's plan (recompute.c).
**
** Storage, all in the ledger:
**   slot arena     (device, one per slot) tokens, targets, the residual
**                  stream between units, and the kept part of every unit
**                  placed on the device;
**   host arena     (host, every slot) the kept part of every unit placed on
**                  the host, between its forward and its backward;
**   workspace      (device) the two staging buffers, which hold the kept
**                  part of a host-placed unit while it runs and of its
**                  neighbour on its way to or from the host (offload.c),
**                  then the transient buffers and statistics of the unit
**                  running now (shared_size says where each unit's go);
**   gradients      (device) one set per unit kind, reused unit after unit,
**                  the residual gradient, a scratch, the logits and losses.
** A unit's kept part is its kept buffers then its kept statistics, carved
** in order, so it is one range wherever it lives. */
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "compute/compute.h"
#include "model/internal.h"

int64_t tsl_act_rows(const tsl_model *m, const tsl_act_decl *a) {
  return a->rows == TSL_ROWS_RESID ? m->geo.rows : m->geo.inner_rows;
}

void tsl_norm_shape(const tsl_model *m, const tsl_unit_decl *u, const tsl_op_decl *od, int64_t *rows, int64_t *cols) {
  *rows = tsl_act_rows(m, &u->acts[od->in[0]]);
  *cols = tsl_act_width(m, u, od->in[0]);
  if (od->variant != TESSEL_NORM_RMS_HEADS) return;
  int64_t hs = m->dims.dim[TESSEL_DIM_HEAD_SIZE];
  *rows *= *cols / hs;
  *cols = hs;
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

/* Floats of statistic i (0: mean, 1: rstd or lse) op k saves, 0 if none. */
static uint64_t saved_floats(const tsl_model *m, const tsl_unit_decl *u, int k, int i) {
  const tsl_op_decl *op = &u->ops[k];
  if (op->kind == TESSEL_OP_NORM) {
    int64_t rows, cols;
    if (i == 0 && op->variant != TESSEL_NORM_LAYER) return 0;
    tsl_norm_shape(m, u, op, &rows, &cols);
    return (uint64_t)rows;
  }
  if (op->kind == TESSEL_OP_ATTENTION && i == 1)
    return (uint64_t)(m->geo.batch * m->geo.heads) * (uint64_t)m->dims.seq_len;
  return 0;
}

/* Carve one part of a unit's storage: its kept buffers and statistics
** (kept = 1) or its transient ones (kept = 0). */
static void carve_part(const tsl_model *m, carver *c, const tsl_unit_decl *u, const tsl_unit_plan *p,
                       tsl_unit_acts *ua, int kept) {
  for (int a = 0; a < u->n_acts; a++)
    if (own_buffer(u, a) && p->keep[a] == kept) ua->buf[a] = carve(c, act_bytes(m, u, a));
  for (int k = 0; k < u->n_ops; k++)
    for (int i = 0; i < 2; i++) {
      uint64_t n = saved_floats(m, u, k, i);
      if (n && p->keep_saved[k] == kept) ua->saved[k][i] = carve(c, n * sizeof(float));
    }
}

void tsl_acts_bind_kept(tsl_model *m, int slot, int unit, void *base) {
  carver c = {base, 0};
  carve_part(m, &c, m->units[unit].decl, &m->units[unit].plan, &m->slots[slot].units[unit], 1);
}

/* Bytes of unit u's kept part (kept = 1) or transient part (kept = 0). */
static uint64_t part_size(const tsl_model *m, const tsl_unit_plan *plans, int u, int kept) {
  carver c = {0};
  tsl_unit_acts scratch;
  carve_part(m, &c, m->units[u].decl, &plans[u], &scratch, kept);
  return c.used;
}

/* What one set of plans makes of this rank's units: each one's kept and
** transient bytes (0 for a unit on another rank), measured once, and the
** workspace they share (shared_size). Sizing and carving every slot read
** these. */
typedef struct act_sizes {
  uint64_t *kept, *transient;
  uint64_t stage, workspace;
} act_sizes;

/* A unit whose kept part waits on the host, and so runs in a staging
** buffer. */
static int staged(const tsl_unit_plan *plans, const act_sizes *z, int u) {
  return plans[u].tier == TESSEL_TIER_HOST && z->kept[u] > 0;
}

/* The workspace's size; *stage: each staging buffer's, the largest kept
** part of a staged unit. The buffers come first. A staged unit runs its
** transient part past both: its own buffer and the one its neighbour's
** part is copied through are in use. Any other unit has at most the
** neighbour's copy beside it, so its transient part ends where the
** workspace ends and may lie over buffer 1 (offload.c hands the buffer to
** it while it runs). Recomputing a unit in full next to staged units thus
** costs no more than staging it: what it keeps nothing of, its transient
** part holds in the room of one buffer. */
static uint64_t shared_size(const tsl_model *m, const tsl_unit_plan *plans, const act_sizes *z, uint64_t *stage) {
  uint64_t kept = 0, after = 0, other = 0;
  for (int u = 0; u < m->dims.units; u++) {
    if (!tsl_act_on_rank(m, u)) continue;
    if (staged(plans, z, u)) {
      kept = TSL_MAX(kept, z->kept[u]);
      after = TSL_MAX(after, z->transient[u]);
    } else {
      other = TSL_MAX(other, z->transient[u]);
    }
  }
  *stage = kept;
  return TSL_MAX(2 * kept + after, kept + other);
}

static void sizes_free(act_sizes *z) {
  free(z->kept);
  free(z->transient);
  z->kept = z->transient = NULL;
}

/* Measure *z for `plans`; free it with sizes_free whatever this returns. */
static tsl_status sizes_measure(const tsl_model *m, const tsl_unit_plan *plans, act_sizes *z) {
  *z = (act_sizes){.kept = calloc((size_t)m->dims.units, sizeof *z->kept),
                   .transient = calloc((size_t)m->dims.units, sizeof *z->transient)};
  if (!z->kept || !z->transient) return tsl_error(TESSEL_E_NOMEM, "out of host memory sizing activations");
  for (int u = 0; u < m->dims.units; u++) {
    if (!tsl_act_on_rank(m, u)) continue;
    z->kept[u] = part_size(m, plans, u, 1);
    z->transient[u] = part_size(m, plans, u, 0);
  }
  z->workspace = shared_size(m, plans, z, &z->stage);
  return TESSEL_OK;
}

/* One slot: its arena `c` (device) and its share of the host arena `h`.
** The kept part of a host-placed unit is bound to a staging buffer when
** the unit runs; here it only takes its room in `h`. */
static void carve_slot(const tsl_model *m, const tsl_unit_plan *plans, const act_sizes *z, carver *c, carver *h,
                       tsl_slot *s) {
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
    if (plans[u].tier == TESSEL_TIER_DEVICE) {
      uint64_t at = c->used;
      carve_part(m, c, d, &plans[u], ua, 1);
      ua->kept_bytes = c->used - at;
    } else {
      ua->kept_bytes = z->kept[u];
      ua->host = carve(h, z->kept[u]);
    }
  }
}

/* Bind slot s's transient parts into the workspace at base, laid out as
** shared_size says. */
static void carve_transient(const tsl_model *m, const tsl_unit_plan *plans, const act_sizes *z, void *base,
                            tsl_slot *s) {
  for (int u = 0; u < m->dims.units; u++) {
    if (!tsl_act_on_rank(m, u)) continue;
    int own_stage = staged(plans, z, u);
    uint64_t at = own_stage ? 2 * z->stage : z->workspace - z->transient[u];
    carver c = {base, at};
    carve_part(m, &c, m->units[u].decl, &plans[u], &s->units[u], 0);
    s->units[u].over_stage = !own_stage && at < 2 * z->stage;
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
  int64_t logit_rows = m->plugin_ops.head ? m->geo.rows : tsl_op_head_block_rows(m);
  m->logits = present[2] ? carve(c, (uint64_t)(logit_rows * m->geo.vocab) * es) : NULL;
  m->losses = carve(c, (uint64_t)m->dims.micro_steps * (uint64_t)m->geo.rows * sizeof(float));
}

tsl_status tsl_acts_size(const tsl_model *m, const tsl_unit_plan *plans, uint64_t *device, uint64_t *host) {
  tsl_model probe = *m; /* carving writes pointers: into a copy, with tables of its own */
  tsl_slot s = {0};
  tsl_unit_acts *ua = calloc((size_t)m->dims.units, sizeof *ua);
  void **resid = calloc((size_t)m->dims.units + 1, sizeof *resid);
  carver c = {0}, h = {0}, g = {0};
  act_sizes z;
  tsl_status st = sizes_measure(m, plans, &z);
  *device = *host = 0;
  if (st >= 0 && (!ua || !resid)) st = tsl_error(TESSEL_E_NOMEM, "out of host memory sizing activations");
  if (st < 0) goto done;
  s.units = ua;
  s.resid = resid;
  carve_slot(m, plans, &z, &c, &h, &s);
  carve_grads(&probe, &g);
  *device = c.used * (uint64_t)m->geo.act_slots + z.workspace + g.used;
  *host = h.used * (uint64_t)m->geo.act_slots;
done:
  sizes_free(&z);
  free(ua);
  free(resid);
  return st;
}

/* Each unit's plan from its placement. */
static tsl_status plan_units(tsl_model *m) {
  for (int u = 0; u < m->dims.units; u++) {
    tsl_status st = tsl_unit_plan_for(m->units[u].decl, &m->state.act_at[u], &m->units[u].plan);
    if (st < 0) return tsl_error_wrap(st, "unit %d", u);
  }
  return TESSEL_OK;
}

static tsl_status alloc_slots(tsl_model *m, const tsl_unit_plan *plans, const act_sizes *z) {
  tsl_status st;
  tsl_runtime *rt = m->rt;
  int U = m->dims.units;
  carver h = {0};
  for (int i = 0; i < m->n_slots; i++) {
    tsl_slot *s = &m->slots[i];
    s->resid = calloc((size_t)U + 1, sizeof(void *));
    s->units = calloc((size_t)U, sizeof *s->units);
    if (!s->resid || !s->units) return tsl_error(TESSEL_E_NOMEM, "out of host memory for activation tables");
    carver c = {0};
    carve_slot(m, plans, z, &c, &h, s);
    char name[64];
    snprintf(name, sizeof name, "activations (slot %d)", i);
    TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_ACT, c.used, name, &s->arena));
    s->loaded_step = -1;
  }
  if (h.used)
    TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_HOST, TESSEL_MEM_ACT, h.used, "offloaded activations",
                              &m->host_arena));
  h = (carver){m->host_arena, 0};
  for (int i = 0; i < m->n_slots; i++) {
    carver c = {m->slots[i].arena, 0};
    carve_slot(m, plans, z, &c, &h, &m->slots[i]);
  }
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status alloc_shared(tsl_model *m, const tsl_unit_plan *plans, const act_sizes *z) {
  tsl_status st;
  tsl_runtime *rt = m->rt;
  m->stage_bytes = z->stage;
  if (z->workspace) TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_ACT, z->workspace,
                                              "activation workspace", &m->workspace));
  for (int i = 0; i < m->n_slots; i++) carve_transient(m, plans, z, m->workspace, &m->slots[i]);
  for (int b = 0; b < 2 && m->stage_bytes; b++)
    m->stage[b] = (tsl_stage){.buf = (char *)m->workspace + b * m->stage_bytes, .unit = -1};
  if (m->stage_bytes && rt->be.stream_create(&rt->be, &m->offload) < 0)
    return tsl_error(TESSEL_E_DEVICE, "creating the stream for activation offload");
  carver c = {0};
  carve_grads(m, &c);
  TSL_TRY(st, tsl_mem_alloc(&rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_ACT, c.used, "activation gradients", &m->grad_arena));
  c = (carver){m->grad_arena, 0};
  carve_grads(m, &c);
  return TESSEL_OK;
fail:
  return st;
}

uint64_t tsl_model_scratch_bytes(const tessel_geometry *g) {
  uint64_t rows = (uint64_t)TSL_MAX(g->rows, g->inner_rows);
  uint64_t ce = ((rows * sizeof(float) + 7) & ~7ull) + 2 * sizeof(double) * rows;
  return TSL_MAX(ce, 2 * sizeof(double) * rows);
}

tsl_status tsl_acts_allocate(tsl_model *m) {
  tsl_status st;
  act_sizes z = {0};
  m->n_slots = m->geo.act_slots;
  m->slots = calloc((size_t)m->n_slots, sizeof *m->slots);
  tsl_unit_plan *plans = calloc((size_t)m->dims.units, sizeof *plans);
  if (!m->slots || !plans) {
    free(plans);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory for activation tables");
  }
  TSL_TRY(st, plan_units(m));
  for (int u = 0; u < m->dims.units; u++) plans[u] = m->units[u].plan;
  TSL_TRY(st, sizes_measure(m, plans, &z));
  TSL_TRY(st, alloc_slots(m, plans, &z));
  TSL_TRY(st, alloc_shared(m, plans, &z));
  sizes_free(&z);
  free(plans);
  plans = NULL;
  /* the scratch is taken now so that a strategy that plans memory at
  ** setup sees it in the ledger */
  void *scratch;
  TSL_TRY(st, tsl_scratch(m->rt, tsl_model_scratch_bytes(&m->geo), &scratch));
  size_t tokens = (size_t)m->dims.micro_batch * (size_t)m->dims.seq_len;
  m->host_inputs = malloc(tokens * sizeof(int32_t));
  m->host_targets = malloc(tokens * sizeof(int32_t));
  m->host_losses = malloc((size_t)m->dims.micro_steps * (size_t)m->geo.rows * sizeof(float));
  if (!m->host_inputs || !m->host_targets || !m->host_losses)
    return tsl_error(TESSEL_E_NOMEM, "out of host memory for batch staging");
  return TESSEL_OK;
fail:
  sizes_free(&z);
  free(plans);
  return st;
}

void tsl_acts_free(tsl_model *m) {
  tsl_runtime *rt = m->rt;
  tsl_offload_free(m);
  for (int i = 0; m->slots && i < m->n_slots; i++) {
    if (m->slots[i].arena) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, m->slots[i].arena);
    free(m->slots[i].resid);
    free(m->slots[i].units);
  }
  if (m->grad_arena) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, m->grad_arena);
  if (m->workspace) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, m->workspace);
  if (m->host_arena) tsl_mem_free(&rt->ledger, TESSEL_TIER_HOST, m->host_arena);
  if (m->all_logits) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, m->all_logits);
  free(m->slots);
  free(m->host_inputs);
  free(m->host_targets);
  free(m->host_losses);
  m->slots = NULL;
  m->grad_arena = m->workspace = m->host_arena = m->all_logits = NULL;
  m->host_inputs = m->host_targets = NULL;
  m->host_losses = NULL;
}

tsl_status tsl_model_act_bytes(const tsl_model *m, const tessel_geometry *g, uint64_t *device, uint64_t *host) {
  tsl_model at = *m;
  at.geo = *g;
  tsl_unit_plan *plans = calloc((size_t)m->dims.units, sizeof *plans);
  tsl_status st = plans ? TESSEL_OK : tsl_error(TESSEL_E_NOMEM, "out of host memory sizing activations");
  for (int u = 0; u < m->dims.units && st >= 0; u++)
    if ((st = tsl_unit_plan_for(m->units[u].decl, &m->state.act_at[u], &plans[u])) < 0)
      st = tsl_error_wrap(st, "unit %d", u);
  if (st >= 0) st = tsl_acts_size(&at, plans, device, host);
  free(plans);
  return st;
}
