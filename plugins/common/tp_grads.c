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
** Buckets follow ddp: one per (unit, set of axes), launched asynchronously
** as soon as backward has finished the lowest unit that uses its
** parameters, so the reductions overlap the backward of the units below;
** grads_finish waits for them. A bucket whose gradients are not adjacent in
** the core's flat gradient buffer travels through a staging copy. */
#include <stdlib.h>
#include <string.h>

#include "tp_common.h"

/* The lowest unit that uses a parameter: its gradient is final after that
** unit's backward (wte is used by the embedding and by the head). */
static int ready_unit(tp_base *b, int param, int units, int *scratch, int cap) {
  for (int u = 0; u < units; u++) {
    int n = b->api->model->unit_params(b->host, u, scratch, cap);
    for (int i = 0; i < n && i < cap; i++)
      if (scratch[i] == param) return u;
  }
  return 0;
}

static int has_bucket(const tp_grads *g, int unit, uint32_t axes) {
  for (int k = 0; k < g->n_buckets; k++)
    if (g->buckets[k].ready_unit == unit && g->buckets[k].axes == axes) return 1;
  return 0;
}

/* One bucket: the parameters ready after `unit` whose real reduction axes
** are `axes`, in registration order (so adjacent gradients stay adjacent). */
static tessel_status add_bucket(tp_base *b, int unit, uint32_t axes, const int *ready, uint64_t *pack_count) {
  tp_grads *g = &b->grads;
  tp_bucket *bk = &g->buckets[g->n_buckets];
  memset(bk, 0, sizeof *bk);
  bk->axes = axes;
  bk->ready_unit = unit;
  bk->first = g->n_buckets ? g->buckets[g->n_buckets - 1].first + g->buckets[g->n_buckets - 1].n : 0;
  g->n_buckets++;
  float *next = NULL;
  int contiguous = 1;
  for (int j = 0; j < g->n_params; j++) {
    if (ready[j] != unit || tp_real_axes(b, g->replicated[j]) != axes) continue;
    tessel_param_view v = {.size = sizeof v};
    tessel_status st = b->api->model->view(b->host, j, &v);
    if (st < 0) return st;
    if (!v.grad || !v.local_numel) continue;
    if (next && v.grad != next) contiguous = 0;
    if (!bk->range) bk->range = v.grad;
    next = v.grad + v.local_numel;
    g->params[bk->first + bk->n++] = j;
    bk->count += v.local_numel;
  }
  bk->packed = !contiguous;
  if (bk->packed) {
    bk->range = NULL; /* placed in the staging area once its size is known */
    *pack_count += bk->count;
  }
  return b->api->comm->group(b->host, axes, &bk->group);
}

tessel_status tp_grads_plan(tp_base *b, uint32_t (*replicated)(tp_role)) {
  tp_grads *g = &b->grads;
  tessel_status st = TESSEL_OK;
  uint64_t pack_count = 0, at = 0;
  int n = b->api->model->param_count(b->host), cap = n + 8;
  int *ready = malloc((size_t)n * sizeof *ready), *scratch = malloc((size_t)cap * sizeof *scratch);
  g->params = malloc((size_t)n * sizeof *g->params);
  g->replicated = malloc((size_t)n * sizeof *g->replicated);
  g->buckets = calloc((size_t)n, sizeof *g->buckets); /* at most one per parameter */
  if (!ready || !scratch || !g->params || !g->replicated || !g->buckets) {
    st = b->api->set_error(b->host, TESSEL_E_NOMEM, "%s: out of host memory planning gradient buckets", b->name);
    goto done;
  }
  g->n_params = n;
  g->sync = 1;
  for (int i = 0; i < n; i++) {
    tessel_param_info info = {.size = sizeof info};
    if ((st = b->api->model->param_info(b->host, i, &info)) < 0) goto done;
    g->replicated[i] = replicated(tp_param_role(info.name));
    ready[i] = ready_unit(b, i, b->dims.units, scratch, cap);
  }
  /* backward meets units last to first: buckets in that order */
  for (int u = b->dims.units - 1; u >= 0 && st >= 0; u--) {
    for (int i = 0; i < n && st >= 0; i++) {
      uint32_t axes = tp_real_axes(b, g->replicated[i]);
      if (ready[i] == u && axes && !has_bucket(g, u, axes)) st = add_bucket(b, u, axes, ready, &pack_count);
    }
  }
  if (st >= 0 && pack_count)
    st = tp_alloc(b, TESSEL_MEM_SCRATCH, pack_count * sizeof(float), "gradient staging", (void **)&g->pack);
  for (int k = 0; st >= 0 && k < g->n_buckets; k++) {
    if (!g->buckets[k].packed) continue;
    g->buckets[k].range = g->pack + at;
    at += g->buckets[k].count;
  }
  if (st >= 0) st = b->api->comm->group(b->host, (1u << b->mesh.naxes) - 1, &g->world);
  if (st >= 0) st = tp_alloc(b, TESSEL_MEM_SCRATCH, sizeof(double), "gradient norm", (void **)&g->norm);
done:
  free(ready);
  free(scratch);
  return st;
}

void tp_grads_free(tp_base *b) {
  tp_grads *g = &b->grads;
  tp_free(b, g->pack);
  tp_free(b, g->norm);
  free(g->buckets);
  free(g->params);
  free(g->replicated);
  memset(g, 0, sizeof *g);
}

tessel_status tp_set_grad_sync(void *inst, int on) {
  ((tp_base *)inst)->grads.sync = on;
  return TESSEL_OK;
}

/* Copy a bucket's gradients into (to_pack) or out of its staging range. */
static tessel_status move_pack(tp_base *b, const tp_bucket *bk, int to_pack) {
  uint64_t at = 0;
  for (int k = 0; k < bk->n; k++) {
    tessel_param_view v = {.size = sizeof v};
    tessel_status st = b->api->model->view(b->host, b->grads.params[bk->first + k], &v);
    if (st < 0) return st;
    uint64_t bytes = v.local_numel * sizeof(float);
    st = to_pack ? b->api->mem->copy(b->host, TESSEL_TIER_DEVICE, bk->range, at, TESSEL_TIER_DEVICE, v.grad, 0, bytes, NULL)
                 : b->api->mem->copy(b->host, TESSEL_TIER_DEVICE, v.grad, 0, TESSEL_TIER_DEVICE, bk->range, at, bytes, NULL);
    if (st < 0) return st;
    at += bytes;
  }
  return TESSEL_OK;
}

tessel_status tp_after_backward(void *inst, int unit, int micro) {
  tp_base *b = inst;
  tp_grads *g = &b->grads;
  (void)micro;
  if (!g->sync) return TESSEL_OK;
  for (int k = 0; k < g->n_buckets; k++) {
    tp_bucket *bk = &g->buckets[k];
    if (bk->launched || bk->ready_unit < unit) continue;
    tessel_status st = bk->packed ? move_pack(b, bk, 1) : TESSEL_OK;
    if (st >= 0)
      st = b->api->comm->all_reduce(b->host, bk->group, bk->range, bk->range, bk->count, TESSEL_F32, TESSEL_SUM,
                                    &bk->work);
    if (st < 0) return st;
    bk->launched = 1;
  }
  return TESSEL_OK;
}

tessel_status tp_grads_finish(void *inst) {
  tp_base *b = inst;
  tp_grads *g = &b->grads;
  tessel_status first = TESSEL_OK;
  for (int k = 0; k < g->n_buckets; k++) {
    tp_bucket *bk = &g->buckets[k];
    tessel_status st = TESSEL_OK;
    if (bk->launched) {
      st = tp_wait_all(b, &bk->work, 1);
      if (st >= 0 && bk->packed) st = move_pack(b, bk, 0);
    } else if (g->sync) {
      st = b->api->set_error(b->host, TESSEL_E_INTERNAL,
                             "%s: gradient bucket %d (unit %d) was never reduced: no backward reached its unit",
                             b->name, k, bk->ready_unit);
    }
    if (st < 0 && first == TESSEL_OK) first = st;
    bk->launched = 0;
  }
  return first;
}

static int owns(const tp_base *b, uint32_t replicated) {
  for (int a = 0; a < b->mesh.naxes; a++)
    if ((replicated & (1u << a)) && b->coord[a] != 0) return 0;
  return 1;
}

tessel_status tp_grad_norm(void *inst, double *sumsq) {
  tp_base *b = inst;
  tp_grads *g = &b->grads;
  const tessel_host_api *api = b->api;
  tessel_stream *s = api->stream->compute(b->host);
  double zero = 0;
  tessel_status st = api->mem->copy(b->host, TESSEL_TIER_DEVICE, g->norm, 0, TESSEL_TIER_HOST, &zero, 0, sizeof zero, s);
  for (int i = 0; i < g->n_params && st >= 0; i++) {
    if (!owns(b, g->replicated[i])) continue;
    tessel_param_view v = {.size = sizeof v};
    if ((st = api->model->view(b->host, i, &v)) < 0) break;
    if (v.grad && v.local_numel) st = api->kernels->sumsq(b->host, s, g->norm, v.grad, (int64_t)v.local_numel);
  }
  if (st >= 0) st = api->comm->all_reduce(b->host, g->world, g->norm, g->norm, 1, TESSEL_F64, TESSEL_SUM, NULL);
  if (st >= 0) st = api->mem->copy(b->host, TESSEL_TIER_HOST, sumsq, 0, TESSEL_TIER_DEVICE, g->norm, 0, sizeof *sumsq, s);
  if (st >= 0) st = api->stream->sync(b->host, s);
  return st;
}
