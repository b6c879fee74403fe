/* core/model/model.c — building the model, units with their hooks, steps. */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "compute/compute.h"
#include "model/internal.h"
#include "model/optime.h"
#include "optim/optim.h"
#include "plugin/host.h"

/* Run a strategy hook if it has one; its failure is framed by the core. */
#define HOOK(st, m, hook, ...)                                                           \
  do {                                                                                   \
    if ((m)->rt->plugin && (m)->rt->plugin->vt.hook) {                                   \
      tsl_hook_enter((m)->rt);                                                           \
      if (((st) = (m)->rt->plugin->vt.hook((m)->rt->inst, ##__VA_ARGS__)) != TESSEL_OK) { \
        (st) = tsl_hook_failed((m)->rt, st, #hook);                                      \
        goto fail;                                                                       \
      }                                                                                  \
    }                                                                                    \
  } while (0)

/* ---- accessors ---- */

tsl_runtime *tsl_model_runtime(const tsl_model *m) { return m->rt; }
const tessel_model_dims *tsl_model_dims(const tsl_model *m) { return &m->dims; }
const tessel_geometry *tsl_model_geometry(const tsl_model *m) { return &m->geo; }
const tsl_arch *tsl_model_arch(const tsl_model *m) { return &m->arch; }
tsl_params *tsl_model_params(tsl_model *m) { return &m->params; }
tsl_state *tsl_model_state(tsl_model *m) { return &m->state; }
const tsl_layouts *tsl_model_layouts(const tsl_model *m) { return &m->layouts; }
const tessel_unit_info *tsl_model_unit(const tsl_model *m, int unit) { return &m->units[unit].info; }
const tessel_op *tsl_model_op(const tsl_model *m, int unit, int op) { return &m->units[unit].ops[op]; }

void tsl_model_set_batch(tsl_model *m, tsl_batch_fn fn, void *ctx) {
  m->batch = fn;
  m->batch_ctx = ctx;
}

void tsl_model_view(const tsl_model *m, int index, tessel_param_view *out) {
  const tsl_param *p = &m->params.p[index];
  *out = (tessel_param_view){.size = sizeof *out, .data = p->data, .grad = p->grad, .master = p->master,
                             .local_shape = {p->local_shape[0], p->local_shape[1]}, .local_numel = p->local_numel,
                             .flat_offset = p->offset};
}

/* ---- dimensions, geometry, units ---- */

/* The backend's activation dtype; before devices exist (check, plan), the
** one the configured backend computes in: bf16 under CUDA. */
static tessel_dtype act_dtype(const tsl_runtime *rt) {
  if (rt->be_ready) return rt->be.act_dtype;
  return rt->settings.device.kind == TSL_DEVICE_CUDA ? TESSEL_BF16 : TESSEL_F32;
}

void tsl_model_dims_single(const tsl_runtime *rt, tessel_model_dims *d) {
  const tsl_settings *s = &rt->settings;
  *d = (tessel_model_dims){.size = sizeof *d, .layers = s->model.layers, .units = s->model.layers + 2,
                           .seq_len = s->model.seq_len, .micro_batch = 1, .micro_steps = 1, .data_ranks = 1,
                           .act_dtype = act_dtype(rt),
                           .vocab_valid = s->model.vocab_size};
  int tp = rt->plugin && (rt->plugin->vt.caps & TESSEL_CAP_TENSOR_PARALLEL);
  tsl_model_dim_sizes(s, tp, d->dim);
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
  tsl_model_dims_single(rt, d);
  d->micro_batch = micro;
  d->micro_steps = B / D / micro;
  d->data_ranks = D;
  return TESSEL_OK;
}

/* The first field of a completed geometry that does not fit the model, or
** NULL. */
static const char *geometry_fault(const tessel_model_dims *d, const tessel_geometry *g) {
  if (g->rows < 1) return "rows is below 1";
  if (g->width < 1) return "width is below 1";
  if (g->batch * d->seq_len != g->inner_rows) return "inner_rows is not batch × seq";
  if (g->heads < 1 || g->kv_heads < 1) return "heads and kv_heads must be at least 1";
  if (g->heads % g->kv_heads != 0) return "heads is not a multiple of kv_heads";
  if (g->ffn < 1) return "ffn is below 1";
  if (g->vocab < 1 || g->vocab_begin < 0 || g->vocab_begin + g->vocab > d->dim[TESSEL_DIM_VOCAB])
    return "the vocabulary rows are outside the vocabulary";
  if (g->act_slots < 1) return "act_slots is below 1";
  if (g->unit_first < 0 || g->unit_last >= d->units || g->unit_first > g->unit_last)
    return "the units are outside the model";
  return NULL;
}

tsl_status tsl_geometry_complete(const tessel_model_dims *d, tessel_geometry *g) {
  int64_t BT = (int64_t)d->micro_batch * d->seq_len;
  if (!g->rows) g->rows = BT;
  if (!g->width) g->width = d->dim[TESSEL_DIM_HIDDEN];
  if (!g->inner_rows) g->inner_rows = BT;
  if (!g->batch) g->batch = d->micro_batch;
  if (!g->heads) g->heads = d->dim[TESSEL_DIM_HEADS];
  if (!g->kv_heads) g->kv_heads = g->heads * d->dim[TESSEL_DIM_KV_HEADS] / d->dim[TESSEL_DIM_HEADS];
  if (!g->ffn) g->ffn = d->dim[TESSEL_DIM_FFN];
  if (!g->vocab) g->vocab = d->dim[TESSEL_DIM_VOCAB];
  if (!g->act_slots) g->act_slots = 1;
  if (!g->unit_last && !g->unit_first) g->unit_last = d->units - 1;
  const char *fault = geometry_fault(d, g);
  if (fault)
    return tsl_error(TESSEL_E_INTERNAL,
                     "inconsistent geometry: %s (rows %lld, width %lld, inner_rows %lld, batch %lld × seq %d, "
                     "heads %lld, kv_heads %lld, ffn %lld, vocabulary rows %lld..%lld of %lld, act_slots %d, "
                     "units %d..%d of %d)",
                     fault, (long long)g->rows, (long long)g->width, (long long)g->inner_rows, (long long)g->batch,
                     d->seq_len, (long long)g->heads, (long long)g->kv_heads, (long long)g->ffn,
                     (long long)g->vocab_begin, (long long)(g->vocab_begin + g->vocab),
                     (long long)d->dim[TESSEL_DIM_VOCAB], g->act_slots, g->unit_first, g->unit_last, d->units);
  return TESSEL_OK;
}

static tsl_status geometry(tsl_model *m) {
  tessel_geometry g = {.size = sizeof g};
  if (m->rt->plugin && m->rt->plugin->vt.geometry) {
    tsl_hook_enter(m->rt);
    tsl_status st = tsl_hook_status(m->rt, m->rt->plugin->vt.geometry(m->rt->inst, &g), "geometry");
    if (st < 0) return st;
  }
  if (tsl_geometry_complete(&m->dims, &g) < 0) return tsl_hook_refuse(m->rt, "geometry");
  /* a strategy built before ABI 2.3 would not sum a per-head norm's
  ** gradient over the ranks that share out the heads */
  uint32_t abi = m->rt->plugin ? m->rt->plugin->vt.abi_version : TESSEL_ABI_VERSION;
  if (m->rt->settings.model.qk_norm && g.heads < m->dims.dim[TESSEL_DIM_HEADS] && TESSEL_ABI_MINOR(abi) < 3)
    return tsl_error(TESSEL_E_VERSION,
                     "strategy '%s' splits the attention heads and was built for plugin ABI %u.%u, before the "
                     "per-head q/k norms of model.qk_norm (ABI 2.3), whose gradients such a strategy must sum over "
                     "the heads' ranks: rebuild it against this tessel's plugin.h, or train without splitting heads",
                     m->rt->plugin->name, TESSEL_ABI_MAJOR(abi), TESSEL_ABI_MINOR(abi));
  m->geo = g;
  return TESSEL_OK;
}

/* A sliding window (model.sliding_window) needs a backend whose attention
** takes one, and a strategy whose own attention, if it has one, knows of
** it (ABI 2.4): one built before would attend to every earlier key. */
static tsl_status window_support(tsl_model *m) {
  const tsl_runtime *rt = m->rt;
  if (!rt->settings.model.sliding_window) return TESSEL_OK;
  /* `tessel check` loads no backend: of tessel's, the CPU's alone has one */
  const int windowed = rt->be.name ? rt->be.attention_window : rt->settings.device.kind == TSL_DEVICE_CPU;
  if (!windowed) {
    tsl_cfg *device = NULL;
    tsl_cfg_section(tsl_config_root(rt->config), "device", 0, &device);
    return tsl_cfg_error(device, "kind",
                         "the %s backend's attention has no sliding window, which this model has "
                         "(model.sliding_window %d): train it on `kind: cpu`, or set model.sliding_window: 0 for "
                         "full causal attention (not the model's own)",
                         rt->be.name ? rt->be.name : "cuda", rt->settings.model.sliding_window);
  }
  const uint32_t abi = rt->plugin ? rt->plugin->vt.abi_version : TESSEL_ABI_VERSION;
  if ((m->plugin_ops.attention_forward || m->plugin_ops.attention_backward) && TESSEL_ABI_MINOR(abi) < 4)
    return tsl_error(TESSEL_E_VERSION,
                     "strategy '%s' computes attention itself and was built for plugin ABI %u.%u, before the "
                     "sliding window of model.sliding_window (ABI 2.4): rebuild it against this tessel's plugin.h",
                     rt->plugin->name, TESSEL_ABI_MAJOR(abi), TESSEL_ABI_MINOR(abi));
  return TESSEL_OK;
}

/* Each unit's ops in their public form: global parameter indices. */
static tsl_status build_units(tsl_model *m) {
  int L = m->dims.layers, U = m->dims.units;
  const int32_t window = m->rt->settings.model.sliding_window;
  m->units = calloc((size_t)U, sizeof *m->units);
  if (!m->units) return tsl_error(TESSEL_E_NOMEM, "out of host memory for the units");
  for (int u = 0; u < U; u++) {
    tsl_unit *un = &m->units[u];
    un->decl = tsl_arch_unit(&m->arch, L, u);
    un->kind_index = u == 0 ? 0 : u == L + 1 ? 2 : 1;
    un->info = (tessel_unit_info){.size = sizeof un->info, .kind = un->decl->kind,
                                  .layer = un->decl->kind == TESSEL_UNIT_BLOCK ? u - 1 : -1,
                                  .n_ops = un->decl->n_ops};
    for (int k = 0; k < un->decl->n_ops; k++) {
      const tsl_op_decl *od = &un->decl->ops[k];
      un->ops[k] = (tessel_op){.size = sizeof un->ops[k], .kind = od->kind, .index = k, .variant = od->variant,
                               .weight = tsl_params_index(&m->params, L, u, od->weight),
                               .bias = tsl_params_index(&m->params, L, u, od->bias), .eps = m->arch.norm_eps,
                               .theta = m->arch.rope.theta, .rope_factor = m->arch.rope.factor,
                               .rope_low_freq_factor = m->arch.rope.low_freq_factor,
                               .rope_high_freq_factor = m->arch.rope.high_freq_factor,
                               .rope_original_positions = (int32_t)m->arch.rope.original_positions,
                               .window = od->kind == TESSEL_OP_ATTENTION ? window : 0};
    }
  }
  return TESSEL_OK;
}

/* ---- building ---- */

tsl_status tsl_model_plan(tsl_runtime *rt, const tessel_model_dims *dims, tsl_model **out) {
  tsl_status st;
  tsl_model *m = calloc(1, sizeof *m);
  if (!m) return tsl_error(TESSEL_E_NOMEM, "out of host memory for the model");
  m->rt = rt;
  rt->model = m;
  rt->vocab_valid = dims->vocab_valid;
  m->dims = *dims;
  m->dims.size = sizeof m->dims;
  m->dims.act_dtype = act_dtype(rt);
  m->dloss = 1.0f / ((float)dims->micro_batch * (float)dims->micro_steps * (float)dims->data_ranks * (float)dims->seq_len);
  if (rt->plugin && rt->plugin->vt.layer_ops) {
    const tessel_layer_ops *ops = rt->plugin->vt.layer_ops;
    memcpy(&m->plugin_ops, ops, TSL_MIN((size_t)ops->size, sizeof m->plugin_ops));
  }
  TSL_TRY(st, window_support(m));
  TSL_TRY(st, tsl_arch_for(&rt->settings, &m->arch));
  TSL_TRY(st, tsl_params_register(&m->params, &m->arch, dims->layers, m->dims.dim, dims->vocab_valid,
                                  rt->settings.model.arch == TSL_ARCH_LLAMA));
  TSL_TRY(st, build_units(m));
  TSL_TRY(st, tsl_params_layout(rt, &m->params));
  TSL_TRY(st, geometry(m));
  TSL_TRY(st, tsl_fit_check(m));
  tessel_optimizer_info oi;
  tsl_optimizer_describe(&rt->settings, &oi);
  int core_optim = !rt->inference && !(rt->plugin && (rt->plugin->vt.caps & TESSEL_CAP_OWNS_OPTIMIZER));
  TSL_TRY(st, tsl_state_plan(rt, &m->state, m->dims.units, core_optim ? oi.n_slots : 0, oi.slot_names));
  TSL_TRY(st, tsl_optime_open(m));
  *out = m;
  return TESSEL_OK;
fail:
  tsl_model_destroy(m);
  return st;
}

tsl_status tsl_model_materialize(tsl_model *m, const uint64_t *seed) {
  tsl_status st;
  tessel_layout *mine = calloc((size_t)m->params.n + 1, sizeof *mine);
  if (!mine) return tsl_error(TESSEL_E_NOMEM, "out of host memory for layouts");
  for (int i = 0; i < m->params.n; i++) mine[i] = m->params.p[i].layout;
  st = tsl_layouts_share(&m->rt->world, mine, m->params.n, &m->layouts);
  free(mine);
  TSL_TRY(st, st);
  TSL_TRY(st, tsl_params_check_cover(m->rt, &m->params, &m->layouts));
  TSL_TRY(st, tsl_state_allocate(&m->state, &m->params));
  if (seed) TSL_TRY(st, tsl_state_init(&m->state, &m->params, *seed));
  TSL_TRY(st, tsl_acts_allocate(m));
  if (m->rt->plugin && m->rt->plugin->vt.setup) {
    tsl_hook_enter(m->rt);
    if ((st = m->rt->plugin->vt.setup(m->rt->inst)) != TESSEL_OK) {
      /* setup is the first hook that sees the backend: "not possible here"
      ** in the strategy's own words (set_error) means it declines this
      ** device, which is not a failure of the run; the same status from a
      ** host call it passed on is a mistake in its calls, which is */
      int declines = st == TESSEL_E_UNSUPPORTED && tsl_hook_said(m->rt, st);
      st = tsl_hook_failed(m->rt, st, "setup");
      return declines ? TSL_E_DECLINED : st;
    }
  }
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_create(tsl_runtime *rt, const tessel_model_dims *dims, const uint64_t *seed, tsl_model **out) {
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
  tsl_optime_free(m);
  tsl_decode_free(m);
  tsl_acts_free(m);
  tsl_state_free(&m->state);
  tsl_layouts_free(&m->layouts);
  tsl_params_free(&m->params);
  free(m->units);
  if (rt->model == m) rt->model = NULL;
  free(m);
}

/* ---- units ---- */

/* Make sure the slot holds micro-batch `micro` of the current step. */
static tsl_status load_batch(tsl_model *m, tsl_slot *s, int micro) {
  tsl_status st;
  if (s->loaded_step == m->step_serial && s->loaded_micro == micro) return TESSEL_OK;
  if (!m->batch) return tsl_error(TESSEL_E_INTERNAL, "the model has no batch source");
  uint64_t bytes = (uint64_t)m->dims.micro_batch * (uint64_t)m->dims.seq_len * sizeof(int32_t);
  TSL_TRY(st, m->batch(m->batch_ctx, micro, m->host_inputs, m->host_targets));
  TSL_TRY(st, tsl_mem_copy(&m->rt->ledger, TESSEL_TIER_DEVICE, s->tokens, 0, TESSEL_TIER_HOST, m->host_inputs, 0, bytes, m->rt->compute));
  TSL_TRY(st, tsl_mem_copy(&m->rt->ledger, TESSEL_TIER_DEVICE, s->targets, 0, TESSEL_TIER_HOST, m->host_targets, 0, bytes, m->rt->compute));
  s->loaded_step = m->step_serial;
  s->loaded_micro = micro;
  return TESSEL_OK;
fail:
  return st;
}

/* Check that a unit of a micro-batch can run here and describe it for the
** layer primitives. */
static tsl_status unit_begin(const tsl_model *m, int micro, int slot, int unit, tessel_op_ctx *c) {
  if (unit < 0 || unit >= m->dims.units || !tsl_act_on_rank(m, unit) || slot < 0 || slot >= m->n_slots || micro < 0 ||
      micro >= m->dims.micro_steps)
    return tsl_error(TESSEL_E_INTERNAL, "unit %d, micro-batch %d, slot %d is not on this rank (units %d..%d, %d slots, %d micro-batches)",
                     unit, micro, slot, m->geo.unit_first, m->geo.unit_last, m->n_slots, m->dims.micro_steps);
  *c = (tessel_op_ctx){.size = sizeof *c, .unit = unit, .micro = micro, .slot = slot,
                       .stream = (tessel_stream *)m->rt->compute};
  return TESSEL_OK;
}

tsl_status tsl_model_forward(tsl_model *m, int micro, int slot, int unit) {
  tsl_status st;
  tessel_op_ctx c;
  TSL_TRY(st, unit_begin(m, micro, slot, unit, &c));
  HOOK(st, m, before_forward, unit, micro);
  TSL_TRY(st, tsl_fit_bound(m, unit, 0));
  tessel_unit_kind kind = m->units[unit].info.kind;
  if (kind != TESSEL_UNIT_BLOCK) TSL_TRY(st, load_batch(m, &m->slots[slot], micro));
  TSL_TRY(st, tsl_exec_forward(m, &c, slot, unit, micro));
  HOOK(st, m, after_forward, unit, micro);
  if (unit < m->geo.unit_last) HOOK(st, m, prefetch, unit + 1, TESSEL_PHASE_FORWARD);
  if (m->rt->comm) tsl_comm_progress(m->rt->comm);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_backward(tsl_model *m, int micro, int slot, int unit) {
  tsl_status st;
  tessel_op_ctx c;
  TSL_TRY(st, unit_begin(m, micro, slot, unit, &c));
  HOOK(st, m, before_backward, unit, micro);
  TSL_TRY(st, tsl_fit_bound(m, unit, 1));
  TSL_TRY(st, tsl_exec_backward(m, &c, slot, unit));
  HOOK(st, m, after_backward, unit, micro);
  if (unit > m->geo.unit_first) HOOK(st, m, prefetch, unit - 1, TESSEL_PHASE_BACKWARD);
  if (m->rt->comm) tsl_comm_progress(m->rt->comm);
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_boundary(tsl_model *m, int slot, int unit, void **act, void **grad, uint64_t *count) {
  if (slot < 0 || slot >= m->n_slots || unit < 1 || unit >= m->dims.units || !m->slots[slot].resid[unit])
    return tsl_error(TESSEL_E_INTERNAL, "no boundary buffer for unit %d in slot %d on this rank", unit, slot);
  *act = m->slots[slot].resid[unit];
  *grad = m->dres;
  *count = (uint64_t)(m->geo.rows * m->geo.width);
  return TESSEL_OK;
}

/* ---- steps ---- */

static tsl_status zero_grads(tsl_model *m) {
  tsl_backend *be = &m->rt->be;
  if (!m->state.numel) return TESSEL_OK;
  int rc = be->memset_zero(be, m->state.grad, m->state.numel * sizeof(float), m->rt->compute);
  return rc < 0 ? tsl_error_wrap(rc, "zeroing gradients") : TESSEL_OK;
}

tsl_status tsl_model_train_step(tsl_model *m) {
  tsl_status st;
  int micro_steps = m->dims.micro_steps;
  m->step_serial++;
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
  /* the optimizer reads the gradients next: a transfer still in flight
  ** would race with it */
  int busy = m->rt->comm ? tsl_comm_outstanding(m->rt->comm) : 0;
  if (busy) {
    tsl_error(TESSEL_E_INTERNAL,
              "it returned with %d non-blocking transfer(s) still in flight: wait for each (comm->wait) before it "
              "returns, since all gradient communication of the step must be complete then", busy);
    return tsl_hook_refuse(m->rt, "grads_finish");
  }
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_model_eval_step(tsl_model *m, int micro_steps) {
  tsl_status st;
  m->step_serial++;
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
  if (!tsl_act_on_rank(m, m->dims.units - 1) || m->geo.loss_replica) return TESSEL_OK;
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

tsl_status tsl_model_logits(tsl_model *m, const void **logits, int64_t *rows, int64_t *vocab) {
  if (!m->logits) return tsl_error(TESSEL_E_INTERNAL, "the head does not run on this rank");
  *rows = m->geo.rows;
  *vocab = m->geo.vocab;
  if (m->plugin_ops.head || tsl_op_head_block_rows(m) >= m->geo.rows) {
    *logits = m->logits;
    return TESSEL_OK;
  }
  /* the core's head went block by block: make every row's logits again
  ** from its input, which the last evaluation left in slot 0 */
  tsl_status st;
  int head = m->dims.units - 1;
  const tsl_unit *u = &m->units[head];
  int k = u->info.n_ops - 1;
  int64_t ld;
  tessel_param_view w;
  if (!m->all_logits)
    TSL_TRY(st, tsl_mem_alloc(&m->rt->ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_ACT,
                              (uint64_t)(m->geo.rows * m->geo.vocab) * tessel_dtype_size(m->dims.act_dtype),
                              "logits for sampling", &m->all_logits));
  tsl_model_view(m, u->ops[k].weight, &w);
  TSL_TRY(st, tsl_op_head_logits(m, tsl_act_ptr(m, 0, head, u->decl->ops[k].in[0], &ld), &w, m->geo.rows,
                                 m->all_logits));
  *logits = m->all_logits;
  return TESSEL_OK;
fail:
  return st;
}
