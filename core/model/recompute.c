/* core/model/recompute.c — what a unit keeps between its forward and its
** backward, and what it runs again.
**
** From a unit's description and its placement (tessel_placement.recompute)
** this derives, once at start-up, which of the unit's own buffers and
** statistics live from its forward to its backward ("kept") and which
** forward ops run again just before its backward ("rerun"). The rest is
** transient: it lives in one workspace that every unit shares, valid only
** while the unit runs.
**
** What backward reads besides gradients: a norm its input and statistics;
** a linear its input (for the weight gradient); attention q, k, v, its
** output and the log-sum-exp; an activation its inputs. Rotary and residual
** ops read nothing (rotary turns the gradients back; a residual branch's
** gradient is the stream's), the head finished its backward within its
** forward, and the embedding reads only the tokens.
**
**   NONE       keeps every buffer and statistic; nothing reruns.
**   SELECTIVE  keeps what backward needs that a GEMM wrote (a linear's
**              output, rotated in place or not) and the statistics of ops
**              that do not rerun; reruns the cheap ops — norms, attention,
**              activations, residual adds — whose results backward needs.
**              Megatron-LM's selective recompute aims at the attention core
**              because its T×T softmax dominates; attention here never
**              stores T×T, so every op that needs no GEMM is recomputed.
**   FULL       keeps nothing but the unit's input (the residual stream,
**              which stays with the unit before) and reruns every forward
**              op whose result backward needs.
**
** The rerun set is closed under inputs: an op reruns when backward needs an
** output or statistic of it that is not kept, and whatever it reads is then
** needed too. Rerun ops run in forward order, with the same kernels, into
** the same buffers, so backward sees bit for bit what the forward made.
*/
#include <string.h>

#include "model/internal.h"

const char *tsl_recompute_name(int recompute) {
  switch (recompute) {
    case TESSEL_RECOMPUTE_NONE: return "none";
    case TESSEL_RECOMPUTE_SELECTIVE: return "selective";
    case TESSEL_RECOMPUTE_FULL: return "full";
  }
  return "?";
}

/* The buffer an activation lives in: a view's parent. */
static int root(const tsl_unit_decl *d, int a) {
  while (a >= 0 && d->acts[a].view_of >= 0) a = d->acts[a].view_of;
  return a;
}

/* A buffer of the unit's own (not the stream it enters or leaves by). */
static int own(const tsl_unit_decl *d, int a) {
  return a != TSL_ACT_IN && a != TSL_ACT_OUT && a >= 0 && d->acts[a].view_of < 0;
}

static int has_saved(tessel_op_kind k) { return k == TESSEL_OP_NORM || k == TESSEL_OP_ATTENTION; }

/* Ops whose result takes a GEMM to remake. */
static int expensive(tessel_op_kind k) {
  return k == TESSEL_OP_LINEAR || k == TESSEL_OP_HEAD || k == TESSEL_OP_EMBEDDING;
}

/* Buffers op's backward reads into reads[] (roots; returns how many), and
** whether it reads the op's statistics. */
static int backward_reads(const tsl_unit_decl *d, const tsl_op_decl *op, int reads[4], int *stats) {
  int n = 0;
  *stats = 0;
  switch (op->kind) {
    case TESSEL_OP_NORM: *stats = 1; reads[n++] = root(d, op->in[0]); break;
    case TESSEL_OP_LINEAR: reads[n++] = root(d, op->in[0]); break;
    case TESSEL_OP_ATTENTION:
      *stats = 1;
      for (int i = 0; i < 3; i++) reads[n++] = root(d, op->in[i]);
      reads[n++] = root(d, op->out[0]);
      break;
    case TESSEL_OP_ACTIVATION:
      reads[n++] = root(d, op->in[0]);
      if (op->in[1] >= 0) reads[n++] = root(d, op->in[1]);
      break;
    default: break;
  }
  return n;
}

static int written_by_gemm(const tsl_unit_decl *d, int a) {
  for (int k = 0; k < d->n_ops; k++)
    for (int o = 0; o < 2; o++)
      if (d->ops[k].out[o] >= 0 && root(d, d->ops[k].out[o]) == a && expensive(d->ops[k].kind)) return 1;
  return 0;
}

/* Mark ops to rerun until nothing more is needed. */
static void close_reruns(const tsl_unit_decl *d, const uint8_t *keepable, int keep_stats, uint8_t *need,
                         const uint8_t *need_saved, tsl_unit_plan *out) {
  for (int changed = 1; changed;) {
    changed = 0;
    for (int k = 0; k < d->n_ops; k++) {
      const tsl_op_decl *op = &d->ops[k];
      if (out->rerun[k]) continue;
      int trigger = need_saved[k] && !keep_stats;
      for (int o = 0; o < 2; o++) {
        int r = op->out[o] >= 0 ? root(d, op->out[o]) : -1;
        if (r >= 0 && own(d, r) && need[r] && !keepable[r]) trigger = 1;
      }
      if (!trigger) continue;
      out->rerun[k] = 1;
      out->n_rerun++;
      changed = 1;
      for (int i = 0; i < 3; i++)
        if (op->in[i] >= 0) need[root(d, op->in[i])] = 1;
    }
  }
}

tsl_status tsl_unit_plan_for(const tsl_unit_decl *d, const tessel_placement *p, tsl_unit_plan *out) {
  uint8_t need[TSL_UNIT_MAX_ACTS] = {0}, need_saved[TSL_UNIT_MAX_OPS] = {0}, keepable[TSL_UNIT_MAX_ACTS] = {0};
  memset(out, 0, sizeof *out);
  out->recompute = p->recompute;
  out->tier = p->tier;
  for (int k = 0; k < d->n_ops; k++) {
    int reads[4], stats, n = backward_reads(d, &d->ops[k], reads, &stats);
    for (int i = 0; i < n; i++) need[reads[i]] = 1;
    need_saved[k] = (uint8_t)stats;
  }
  for (int a = 0; a < d->n_acts; a++)
    keepable[a] = own(d, a) && (p->recompute == TESSEL_RECOMPUTE_NONE ||
                                (p->recompute == TESSEL_RECOMPUTE_SELECTIVE && written_by_gemm(d, a)));
  close_reruns(d, keepable, p->recompute != TESSEL_RECOMPUTE_FULL, need, need_saved, out);
  for (int a = 0; a < d->n_acts; a++)
    out->keep[a] = keepable[a] && (p->recompute == TESSEL_RECOMPUTE_NONE || need[a]);
  for (int k = 0; k < d->n_ops; k++) {
    const tsl_op_decl *op = &d->ops[k];
    out->keep_saved[k] = has_saved(op->kind) && p->recompute != TESSEL_RECOMPUTE_FULL && !out->rerun[k];
    if (!out->rerun[k]) continue;
    /* a rerun writes only transient buffers: what backward sees is what
    ** the forward made, never a kept buffer overwritten */
    for (int o = 0; o < 2; o++) {
      int r = op->out[o] >= 0 ? root(d, op->out[o]) : -1;
      if (r >= 0 && (!own(d, r) || out->keep[r]))
        return tsl_error(TESSEL_E_INTERNAL, "model description: recomputing %s would overwrite '%s', which is kept",
                         tsl_op_kind_name(op->kind), d->acts[r].name);
    }
  }
  return TESSEL_OK;
}
