/* core/ckpt/gather.c */
#include "ckpt/gather.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

tsl_status tsl_layouts_share(tsl_model *m, tsl_layouts *t) {
  const tsl_world *w = &m->rt->world;
  int n = m->params.n;
  t->world = w->size;
  t->n = n;
  t->all = calloc((size_t)w->size * (size_t)n, sizeof(tessel_layout));
  tessel_layout *mine = calloc((size_t)n, sizeof(tessel_layout));
  if (!t->all || !mine) {
    free(mine);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory exchanging layouts");
  }
  for (int i = 0; i < n; i++) mine[i] = m->params.p[i].layout;
  int bytes = (int)(sizeof(tessel_layout) * (size_t)n);
  tsl_status st = TESSEL_OK;
  if (w->active && w->size > 1) {
    if (MPI_Allgather(mine, bytes, MPI_BYTE, t->all, bytes, MPI_BYTE, MPI_COMM_WORLD) != MPI_SUCCESS)
      st = tsl_error(TESSEL_E_COMM, "exchanging parameter layouts failed");
  } else {
    memcpy(t->all, mine, (size_t)bytes);
  }
  free(mine);
  return st;
}

void tsl_layouts_free(tsl_layouts *t) {
  free(t->all);
  memset(t, 0, sizeof *t);
}

static int same_part(const tessel_layout *a, const tessel_layout *b) {
  if (a->kind != b->kind) return 0;
  switch (a->kind) {
    case TESSEL_LAYOUT_REPLICATED:
    case TESSEL_LAYOUT_ABSENT: return 1;
    case TESSEL_LAYOUT_FLAT: return a->flat_begin == b->flat_begin && a->flat_end == b->flat_end;
    case TESSEL_LAYOUT_SPLIT:
      if (a->nsplit != b->nsplit) return 0;
      for (int i = 0; i < a->nsplit; i++)
        if (a->split[i].dim != b->split[i].dim || a->split[i].parts != b->split[i].parts ||
            a->split[i].index != b->split[i].index)
          return 0;
      return 1;
  }
  return 0;
}

/* Does rank r supply parameter i? Only if it holds something and no lower
** rank holds the same part. */
static int supplies(const tsl_layouts *t, int r, int i) {
  const tessel_layout *l = &t->all[(size_t)r * t->n + i];
  if (l->kind == TESSEL_LAYOUT_ABSENT) return 0;
  for (int q = 0; q < r; q++)
    if (same_part(&t->all[(size_t)q * t->n + i], l)) return 0;
  return 1;
}

/* The parameter as rank r lays it out (for its local shape and indexing). */
static tsl_status param_as(tsl_model *m, const tsl_layouts *t, int r, int i, tsl_param *out) {
  *out = m->params.p[i];
  out->layout = t->all[(size_t)r * t->n + i];
  const tessel_layout *l = &out->layout;
  int64_t s0 = out->info.shape[0], s1 = out->info.shape[1];
  if (l->kind == TESSEL_LAYOUT_FLAT) {
    s0 = 1;
    s1 = (int64_t)(l->flat_end - l->flat_begin);
  } else if (l->kind == TESSEL_LAYOUT_SPLIT) {
    for (int k = 0; k < l->nsplit; k++) {
      if (l->split[k].dim == 0) s0 /= l->split[k].parts;
      else s1 /= l->split[k].parts;
    }
  } else if (l->kind == TESSEL_LAYOUT_ABSENT) {
    s0 = s1 = 0;
  }
  out->local_shape[0] = s0;
  out->local_shape[1] = s1;
  out->local_numel = (uint64_t)s0 * (uint64_t)s1;
  return TESSEL_OK;
}

/* Does the strategy keep this state of parameter p itself? */
static int plugin_owned(const tsl_runtime *rt, const tsl_param *p, tessel_state which) {
  return p->layout.store == TESSEL_STORE_PLUGIN ||
         (which != TESSEL_STATE_PARAM && rt->plugin && (rt->plugin->vt.caps & TESSEL_CAP_OWNS_OPTIMIZER));
}

/* This rank's local part of a state into host memory. */
static tsl_status read_local(tsl_model *m, int i, tessel_state which, float *host) {
  tsl_runtime *rt = m->rt;
  tsl_param *p = &m->params.p[i];
  if (plugin_owned(rt, p, which)) {
    if (!rt->plugin->vt.state_read)
      return tsl_error(TESSEL_E_INTERNAL, "strategy '%s' keeps %s itself but has no state_read hook", rt->plugin->name,
                       p->name);
    tsl_error_clear();
    tsl_status st = rt->plugin->vt.state_read(rt->inst, i, which, host);
    return st < 0 ? tsl_error_wrap(st, "%s.state_read(%s)", rt->plugin->name, p->name) : TESSEL_OK;
  }
  const float *src = which == TESSEL_STATE_PARAM ? p->master : which == TESSEL_STATE_ADAM_M ? p->m : p->v;
  tsl_status st = tsl_mem_copy(&rt->ledger, TESSEL_TIER_HOST, host, 0, TESSEL_TIER_DEVICE, src, 0,
                               p->local_numel * sizeof(float), rt->compute);
  if (st < 0) return st;
  return rt->be.stream_sync(&rt->be, rt->compute);
}

tsl_status tsl_gather_state(tsl_model *m, const tsl_layouts *t, int i, tessel_state which, float *global) {
  const tsl_world *w = &m->rt->world;
  tsl_status st = TESSEL_OK;
  tsl_param as;
  float *part = NULL;
  uint64_t most = 0;
  for (int r = 0; r < t->world; r++) {
    param_as(m, t, r, i, &as);
    most = TSL_MAX(most, as.local_numel);
  }
  part = malloc(TSL_MAX(most, 1) * sizeof(float));
  if (!part) return tsl_error(TESSEL_E_NOMEM, "out of host memory gathering %s", m->params.p[i].name);
  /* State a strategy keeps may be spread over the replicas of a part (ZeRO
  ** moments over data-parallel ranks) and put together by a collective
  ** inside its state_read: so every rank that holds a part reads it, in
  ** this same parameter order on all ranks, and only the suppliers send. */
  int mine = supplies(t, w->rank, i);
  int held = t->all[(size_t)w->rank * t->n + i].kind != TESSEL_LAYOUT_ABSENT;
  if (mine || (held && plugin_owned(m->rt, &m->params.p[i], which))) TSL_TRY(st, read_local(m, i, which, part));
  /* global is NULL on rank 0 too once its file write failed: the parts
  ** still travel (no rank may be left waiting) and are dropped */
  if (w->rank == 0 && mine && global) {
    param_as(m, t, 0, i, &as);
    tsl_param_insert(&as, part, global);
  }
  for (int r = 1; r < t->world; r++) {
    if (!supplies(t, r, i)) continue;
    param_as(m, t, r, i, &as);
    if (w->rank == r) {
      if (MPI_Send(part, (int)as.local_numel, MPI_FLOAT, 0, i, MPI_COMM_WORLD) != MPI_SUCCESS)
        st = tsl_error(TESSEL_E_COMM, "sending %s to rank 0 for a checkpoint failed", as.name);
    } else if (w->rank == 0) {
      if (MPI_Recv(part, (int)as.local_numel, MPI_FLOAT, r, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        st = tsl_error(TESSEL_E_COMM, "receiving %s from rank %d for a checkpoint failed", as.name, r);
      else if (global)
        tsl_param_insert(&as, part, global);
    }
    if (st < 0) goto fail;
  }
fail:
  free(part);
  return st;
}

tsl_status tsl_scatter_state(tsl_model *m, int i, tessel_state which, const float *global) {
  tsl_runtime *rt = m->rt;
  tsl_param *p = &m->params.p[i];
  tsl_status st = TESSEL_OK;
  if (p->layout.kind == TESSEL_LAYOUT_ABSENT || p->local_numel == 0) return TESSEL_OK;
  float *part = malloc(p->local_numel * sizeof(float));
  if (!part) return tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", p->name);
  tsl_param_extract(p, global, part);
  if (plugin_owned(rt, p, which)) {
    if (!rt->plugin->vt.state_write) {
      st = tsl_error(TESSEL_E_INTERNAL, "strategy '%s' keeps %s itself but has no state_write hook", rt->plugin->name,
                     p->name);
    } else {
      tsl_error_clear();
      st = rt->plugin->vt.state_write(rt->inst, i, which, part);
      if (st < 0) tsl_error_wrap(st, "%s.state_write(%s)", rt->plugin->name, p->name);
    }
    goto done;
  }
  float *dst = which == TESSEL_STATE_PARAM ? p->master : which == TESSEL_STATE_ADAM_M ? p->m : p->v;
  TSL_TRY(st, tsl_mem_copy(&rt->ledger, TESSEL_TIER_DEVICE, dst, 0, TESSEL_TIER_HOST, part, 0,
                           p->local_numel * sizeof(float), rt->compute));
  if (which == TESSEL_STATE_PARAM && p->data != (void *)p->master)
    TSL_TRY(st, rt->be.convert(&rt->be, rt->compute, p->data, rt->be.act_dtype, p->master, TESSEL_F32,
                               (int64_t)p->local_numel));
  TSL_TRY(st, rt->be.stream_sync(&rt->be, rt->compute));
done:
fail:
  free(part);
  return st;
}
