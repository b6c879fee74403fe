/* plugins/common/tp_grads.c — summing the gradients of replicated parameters.
**
** A parameter replicated along some axes (a bias on every row of a 2D grid,
** every weight across data-parallel replicas and 2.5D depth layers) gets a
** partial gradient on each replica, from the rows that replica saw. The
** gradient of the loss is their sum, so after the last micro-batch each
** such gradient is all-reduced (SUM) over exactly those axes. The core
** scales every micro-batch's loss by 1/(tokens of the global batch), so no
** averaging is needed.
**
** One SDK bucket per (unit, set of axes), launched as soon as backward has
** finished the unit that first uses its parameters, so the reductions
** overlap the backward of the units below; grads_finish waits for them. */
#include "tp_common.h"

/* A parameter's bucket class: its unit and the axes it is summed over, or
** −1 when it is replicated along no axis longer than one rank. */
int tp_grads_key(void *ctx, const tessel_param_info *p) {
  tp_base *b = ctx;
  uint32_t axes = tessel_mesh_real_axes(&b->mesh, b->replicated(p->role));
  return axes ? (p->first_unit << 8) | (int)axes : -1;
}

tessel_status tp_grads_plan(tp_base *b) { return tessel_buckets_plan(&b->grads, &b->x, UINT64_MAX, tp_grads_key, b); }

static tessel_status launch(void *ctx, tessel_bucket *bk) {
  tp_base *b = ctx;
  tessel_group *g;
  TESSEL_TRY(b->x.api->comm->group(b->x.host, (uint32_t)bk->key & 0xffu, &g));
  return b->x.api->comm->all_reduce(b->x.host, g, bk->range, bk->range, bk->count, TESSEL_F32, TESSEL_SUM, &bk->work);
}

tessel_status tp_after_backward(void *inst, int unit, int micro) {
  tp_base *b = inst;
  return tessel_buckets_ready(&b->grads, unit, micro, launch, b);
}

tessel_status tp_grads_finish(void *inst) { return tessel_buckets_finish(&((tp_base *)inst)->grads); }
