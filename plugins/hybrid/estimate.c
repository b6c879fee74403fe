/*
** plugins/hybrid/estimate.c — what dp × pp × tp with ZeRO costs a rank,
** from the formulas of docs/hybrid.md.
**
** A rank is planned as the rank it would be: a copy of the instance set to
** its tensor rank and stage runs the same layout and geometry hooks, so its
** parts, its activations and its scratch are the run's. Traffic per step:
**   tp  per micro-batch, Megatron's f and g by weight role: a column-
**       parallel linear all-reduces its input gradient, a row-parallel one
**       its output (b·s·h each); with sequence parallelism each becomes a
**       reduce-scatter plus an all-gather and backward gathers a column-
**       parallel input again; the vocabulary-parallel embedding sums its
**       lookup, the head its input gradient, and the cross-entropy a row
**       maximum (fp32) and two sums (fp64) per row; under sequence
**       parallelism the norm gradients once per step; an op recomputed
**       before backward (op_reruns) repeats its forward collectives;
**   pp  per micro-batch the boundary activation forward and its gradient
**       back (b·s·h, /tp under sequence parallelism), the tied table's
**       gradient once per step;
**   dp  the gradients once per step: all-reduced in buckets behind backward
**       (ZeRO 0/1) or reduce-scattered chunk by chunk after it (ZeRO-2);
**       the core's all-gather of updated pieces (ZeRO-1/2) is the core's.
** FLOPs: the stage's units over the data rank's tokens, split tp ways.
** Bubble: 1F1B idles (pp − 1) micro-batches' worth of a stage's compute.
*/
#include <stdio.h>
#include <stdlib.h>

#include "hybrid.h"

enum { AXIS_MASK_DP = 1u << AXIS_DP, AXIS_MASK_PP = 1u << AXIS_PP, AXIS_MASK_TP = 1u << AXIS_TP };

/* Traffic counts of one step, by group and kind, before they become lines. */
typedef struct tally {
  uint64_t calls[3][TESSEL_COLL_COUNT], bytes[3][TESSEL_COLL_COUNT]; /* [axis][kind] */
} tally;

static void add(tally *t, int axis, tessel_collective k, uint64_t calls, uint64_t bytes) {
  t->calls[axis][k] += calls;
  t->bytes[axis][k] += bytes;
}

/* One micro-batch of the tensor-parallel primitives of one unit; forward
** ones once per pass (tessel_est_op_passes). */
static tessel_status unit_tp(const hybrid *h, int unit, tally *t) {
  const tessel_model_api *model = h->x.api->model;
  const tessel_model_dims *d = &h->dims;
  uint64_t tokens = (uint64_t)d->micro_batch * (uint64_t)d->seq_len, es = h->act_size;
  uint64_t bsh = tokens * (uint64_t)d->dim[TESSEL_DIM_HIDDEN] * es, n;
  tessel_unit_info u = {.size = sizeof u};
  TESSEL_TRY(model->unit_info(h->x.host, unit, &u));
  for (int k = 0; k < u.n_ops; k++) {
    tessel_op op = {.size = sizeof op};
    tessel_param_info w = {.size = sizeof w};
    TESSEL_TRY(model->unit_op(h->x.host, unit, k, &op));
    TESSEL_TRY(tessel_est_op_passes(&h->x, unit, k, &n));
    if (op.kind == TESSEL_OP_LINEAR) {
      TESSEL_TRY(model->param_info(h->x.host, op.weight, &w));
      uint64_t in = tokens * (uint64_t)w.shape[0] * es, out = tokens * (uint64_t)w.shape[1] * es;
      if (w.role == TESSEL_ROLE_LINEAR_IN && !h->sp) add(t, AXIS_TP, TESSEL_COLL_ALL_REDUCE, 1, in);
      if (w.role == TESSEL_ROLE_LINEAR_IN && h->sp) {
        add(t, AXIS_TP, TESSEL_COLL_ALL_GATHER, n + 1, (n + 1) * in); /* forward, and again for the weight gradient */
        add(t, AXIS_TP, TESSEL_COLL_REDUCE_SCATTER, 1, in);
      }
      if (w.role == TESSEL_ROLE_LINEAR_OUT && !h->sp) add(t, AXIS_TP, TESSEL_COLL_ALL_REDUCE, n, n * out);
      if (w.role == TESSEL_ROLE_LINEAR_OUT && h->sp) {
        add(t, AXIS_TP, TESSEL_COLL_REDUCE_SCATTER, n, n * out);
        add(t, AXIS_TP, TESSEL_COLL_ALL_GATHER, 1, out);
      }
    } else if (op.kind == TESSEL_OP_EMBEDDING) {
      if (!h->sp) add(t, AXIS_TP, TESSEL_COLL_ALL_REDUCE, n, n * bsh);
      if (h->sp) {
        add(t, AXIS_TP, TESSEL_COLL_REDUCE_SCATTER, n, n * bsh);
        add(t, AXIS_TP, TESSEL_COLL_ALL_GATHER, 1, bsh);
      }
    } else if (op.kind == TESSEL_OP_HEAD) {
      /* the vocabulary-parallel cross-entropy: a row maximum, two row sums */
      add(t, AXIS_TP, TESSEL_COLL_ALL_REDUCE, 2, tokens * (4 + 16));
      if (!h->sp) add(t, AXIS_TP, TESSEL_COLL_ALL_REDUCE, 1, bsh);
      if (h->sp) {
        add(t, AXIS_TP, TESSEL_COLL_ALL_GATHER, n, n * bsh);
        add(t, AXIS_TP, TESSEL_COLL_REDUCE_SCATTER, 1, bsh);
      }
    }
  }
  return TESSEL_OK;
}

/* The 1F1B boundary transfers of a step and the tied table's exchange. */
static void pipeline(const hybrid *h, const tessel_geometry *g, tally *t) {
  uint64_t m = (uint64_t)h->dims.micro_steps;
  uint64_t boundary = (uint64_t)g->rows * (uint64_t)h->dims.dim[TESSEL_DIM_HIDDEN] * h->act_size;
  int first = h->stage == 0, last = h->stage == h->pp - 1;
  if (!last) { /* activations out, their gradients back in */
    add(t, AXIS_PP, TESSEL_COLL_SEND, m, m * boundary);
    add(t, AXIS_PP, TESSEL_COLL_RECV, m, 0);
  }
  if (!first) {
    add(t, AXIS_PP, TESSEL_COLL_RECV, m, 0);
    add(t, AXIS_PP, TESSEL_COLL_SEND, m, m * boundary);
  }
  if (h->pp > 1 && h->tied.count) {
    add(t, AXIS_PP, TESSEL_COLL_SEND, 1, 4 * h->tied.count);
    add(t, AXIS_PP, TESSEL_COLL_RECV, 1, 0);
  }
}

/* The data-parallel sums of the gradients (and the staging of packed buckets). */
static tessel_status data_parallel(const hybrid *h, const tessel_plan_query *q, const tessel_parts *parts,
                                   tessel_estimate *out) {
  if (h->dp == 1) return TESSEL_OK;
  uint64_t numel = parts->core_numel;
  if (h->zero == 2) {
    uint64_t chunks, covered;
    TESSEL_TRY(q->shard_cut(h->x.host, numel, h->dp, h->bucket_bytes, &chunks, &covered));
    TESSEL_TRY(tessel_est_traffic(&h->x, q, AXIS_MASK_DP, TESSEL_COLL_REDUCE_SCATTER, TESSEL_OVERLAP_NONE, chunks,
                                  4 * covered));
    return tessel_est_traffic(&h->x, q, AXIS_MASK_DP, TESSEL_COLL_ALL_REDUCE, TESSEL_OVERLAP_NONE,
                              numel > covered ? 1 : 0, 4 * (numel - covered));
  }
  tessel_buckets bs;
  TESSEL_TRY(tessel_buckets_plan_parts(&bs, &h->x, h->bucket_bytes, tessel_bucket_key_all, NULL, parts->offset,
                                       parts->numel));
  out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH] += 4 * bs.staged;
  tessel_status st = tessel_est_traffic(&h->x, q, AXIS_MASK_DP, TESSEL_COLL_ALL_REDUCE, TESSEL_OVERLAP_BACKWARD,
                                        (uint64_t)bs.n, 4 * numel);
  tessel_buckets_free(&bs);
  return st;
}

static tessel_status flush(const hybrid *h, const tessel_plan_query *q, const tally *t) {
  static const uint32_t masks[3] = {AXIS_MASK_DP, AXIS_MASK_PP, AXIS_MASK_TP};
  for (int a = 0; a < 3; a++)
    for (int k = 0; k < TESSEL_COLL_COUNT; k++)
      TESSEL_TRY(tessel_est_traffic(&h->x, q, masks[a], (tessel_collective)k, TESSEL_OVERLAP_NONE, t->calls[a][k],
                                    t->bytes[a][k]));
  return TESSEL_OK;
}

/* Everything but the core's storage, for the rank `at` was set up as. */
static tessel_status own_costs(hybrid *at, const tessel_plan_query *q, const tessel_parts *parts,
                               const tessel_geometry *g, tessel_estimate *out) {
  uint64_t scratch[HYBRID_SCRATCH];
  tally t = {0};
  hybrid_scratch_bytes(at, scratch);
  for (int i = 0; i < HYBRID_SCRATCH; i++) out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH] += scratch[i];
  if (at->pp > 1) out->memory[TESSEL_TIER_DEVICE][TESSEL_MEM_SCRATCH] += 4 * at->tied.count;
  if (at->tp > 1) {
    for (int u = at->unit_first; u <= at->unit_last; u++) TESSEL_TRY(unit_tp(at, u, &t));
    for (int k = 0; k < TESSEL_COLL_COUNT; k++) {
      t.calls[AXIS_TP][k] *= (uint64_t)at->dims.micro_steps;
      t.bytes[AXIS_TP][k] *= (uint64_t)at->dims.micro_steps;
    }
    for (int i = 0; i < at->n_norms; i++) add(&t, AXIS_TP, TESSEL_COLL_ALL_REDUCE, 1, 4 * at->norms[i].count);
  }
  if (at->pp > 1) pipeline(at, g, &t);
  TESSEL_TRY(flush(at, q, &t));
  TESSEL_TRY(data_parallel(at, q, parts, out));
  TESSEL_TRY(tessel_est_step_flops(&at->x, at->unit_first, at->unit_last, &out->flops));
  out->flops /= at->tp;
  out->bubble = (double)(at->pp - 1) / at->dims.micro_steps;
  return TESSEL_OK;
}

tessel_status hybrid_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out) {
  hybrid at = *(hybrid *)inst;
  at.tp_rank = q->rank % at.tp;
  at.stage = q->rank / at.tp % at.pp;
  at.planned = 0;
  at.norms = NULL;
  TESSEL_TRY(hybrid_plan(&at));
  tessel_geometry g = {.size = sizeof g};
  tessel_parts parts;
  TESSEL_TRY(hybrid_geometry(&at, &g));
  TESSEL_TRY(tessel_parts_of(&at.x, hybrid_layout, &at, &parts));
  tessel_status st = tessel_est_core(&at.x, q, &g, parts.core_numel, out);
  if (st >= 0) st = hybrid_ranges(&at, parts.info, parts.offset, parts.numel, parts.n);
  if (st >= 0) st = own_costs(&at, q, &parts, &g, out);
  free(at.norms);
  tessel_parts_free(&parts);
  return st;
}

/* Every tp × pp × dp the model splits into, with every ZeRO stage where
** there are replicas and sequence parallelism where there is a tensor
** group. */
tessel_status hybrid_enumerate(void *inst, const tessel_plan_query *q) {
  hybrid *h = inst;
  const tessel_model_dims *d = q->dims;
  const int64_t *dim = d->dim;
  int world = q->world_size;
  for (int tp = 1; tp <= world; tp++) {
    if (world % tp || dim[TESSEL_DIM_HEADS] % tp || dim[TESSEL_DIM_KV_HEADS] % tp || dim[TESSEL_DIM_FFN] % tp ||
        dim[TESSEL_DIM_VOCAB] % tp)
      continue;
    for (int pp = 1; pp <= world / tp && pp <= d->layers; pp++) {
      if ((world / tp) % pp) continue;
      int dp = world / tp / pp;
      for (int zero = 0; zero <= (dp > 1 ? 2 : 0); zero++)
        for (int sp = 0; sp <= (tp > 1); sp++) {
          char opts[160];
          snprintf(opts, sizeof opts, "tp: %d, pp: %d, dp: %d%s%s", tp, pp, dp,
                   zero ? (zero == 1 ? ", zero_stage: 1" : ", zero_stage: 2") : "",
                   sp ? ", sequence_parallel: true" : "");
          TESSEL_TRY(q->option_set(h->x.host, opts));
        }
    }
  }
  return TESSEL_OK;
}
