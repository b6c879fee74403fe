/* core/ckpt/gather.c */
#include "ckpt/gather.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plugin/host.h"
#include "runtime/mpi_wait.h"

/* The parameter as rank r lays it out (for its local shape and indexing). */
static void param_as(tsl_model *m, int r, int i, tsl_param *out) {
  *out = tsl_model_params(m)->p[i];
  out->layout = *tsl_layout_of(tsl_model_layouts(m), r, i);
  tsl_param_local_shape(out, &out->layout, out->local_shape);
  out->local_numel = (uint64_t)out->local_shape[0] * (uint64_t)out->local_shape[1];
}

/* Does the strategy keep this state of parameter p itself? */
static int plugin_owned(const tsl_runtime *rt, const tsl_param *p, tessel_state_ref ref) {
  return (p->layout.store == TESSEL_STORE_PLUGIN && ref.kind != TESSEL_STATE_PRIVATE) ||
         (ref.kind == TESSEL_STATE_SLOT && rt->plugin && (rt->plugin->vt.caps & TESSEL_CAP_OWNS_OPTIMIZER));
}

/* Is the state spread over ranks that hold the same part, so that all of
** them take part in assembling it? */
static int assembled(tsl_model *m, const tsl_param *p, tessel_state_ref ref) {
  return plugin_owned(tsl_model_runtime(m), p, ref) || tsl_state_sharded(tsl_model_state(m), ref);
}

/* This rank's local part of a state into host memory. */
static tsl_status read_local(tsl_model *m, int i, tessel_state_ref ref, float *host) {
  tsl_runtime *rt = tsl_model_runtime(m);
  tsl_param *p = &tsl_model_params(m)->p[i];
  if (!plugin_owned(rt, p, ref)) return tsl_state_read_local(tsl_model_state(m), p, ref, host);
  if (!rt->plugin->vt.state_read)
    return tsl_error(TESSEL_E_INTERNAL, "strategy '%s' keeps %s itself but has no state_read hook", rt->plugin->name,
                     p->name);
  tsl_hook_enter(rt);
  tsl_status st = rt->plugin->vt.state_read(rt->inst, i, ref, host);
  return st != TESSEL_OK ? tsl_hook_failed(rt, st, "state_read(%s)", p->name) : TESSEL_OK;
}

tsl_status tsl_gather_state(tsl_model *m, int i, tessel_state_ref ref, float *global) {
  const tsl_world *w = &tsl_model_runtime(m)->world;
  const tsl_layouts *t = tsl_model_layouts(m);
  tsl_status st = TESSEL_OK;
  tsl_param as;
  float *part = NULL;
  uint64_t most = 0;
  for (int r = 0; r < t->world; r++) {
    param_as(m, r, i, &as);
    most = TSL_MAX(most, as.local_numel);
  }
  part = malloc(TSL_MAX(most, 1) * sizeof(float));
  if (!part) return tsl_error(TESSEL_E_NOMEM, "out of host memory gathering %s", tsl_model_params(m)->p[i].name);
  /* State spread over the replicas of a part (sharded slots, a strategy's
  ** own ZeRO state) is put together by a collective when it is read: so
  ** every rank that holds a part reads it, in this same parameter order on
  ** all ranks, and only the suppliers send. */
  int mine = tsl_layouts_supplies(t, w->rank, i, NULL, NULL);
  int held = tsl_layout_of(t, w->rank, i)->kind != TESSEL_LAYOUT_ABSENT;
  if (mine || (held && assembled(m, &tsl_model_params(m)->p[i], ref))) TSL_TRY(st, read_local(m, i, ref, part));
  /* global is NULL on rank 0 too once its file write failed: the parts
  ** still travel (no rank may be left waiting) and are dropped */
  if (w->rank == 0 && mine && global) {
    param_as(m, 0, i, &as);
    tsl_param_insert(&as, part, global);
  }
  for (int r = 1; r < t->world; r++) {
    if (!tsl_layouts_supplies(t, r, i, NULL, NULL)) continue;
    param_as(m, r, i, &as);
    MPI_Request req;
    char what[256];
    if (w->rank == r) {
      snprintf(what, sizeof what, "sending %s to rank 0 for a checkpoint", as.name);
      int rc = MPI_Isend(part, (int)as.local_numel, MPI_FLOAT, 0, i, MPI_COMM_WORLD, &req);
      if (tsl_mpi_finish(rc, &req, what, "world") != MPI_SUCCESS)
        st = tsl_error(TESSEL_E_COMM, "%s failed", what);
    } else if (w->rank == 0) {
      snprintf(what, sizeof what, "receiving %s from rank %d for a checkpoint", as.name, r);
      int rc = MPI_Irecv(part, (int)as.local_numel, MPI_FLOAT, r, i, MPI_COMM_WORLD, &req);
      if (tsl_mpi_finish(rc, &req, what, "world") != MPI_SUCCESS)
        st = tsl_error(TESSEL_E_COMM, "%s failed", what);
      else if (global)
        tsl_param_insert(&as, part, global);
    }
    if (st < 0) goto fail;
  }
fail:
  free(part);
  return st;
}

tsl_status tsl_scatter_state(tsl_model *m, int i, tessel_state_ref ref, const float *global) {
  tsl_runtime *rt = tsl_model_runtime(m);
  tsl_param *p = &tsl_model_params(m)->p[i];
  tsl_status st = TESSEL_OK;
  if (p->layout.kind == TESSEL_LAYOUT_ABSENT || p->local_numel == 0) return TESSEL_OK;
  float *part = malloc(p->local_numel * sizeof(float));
  if (!part) return tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", p->name);
  tsl_param_extract(p, global, part);
  if (!plugin_owned(rt, p, ref)) {
    st = tsl_state_write_local(tsl_model_state(m), p, ref, part);
  } else if (!rt->plugin->vt.state_write) {
    st = tsl_error(TESSEL_E_INTERNAL, "strategy '%s' keeps %s itself but has no state_write hook", rt->plugin->name,
                   p->name);
  } else {
    tsl_hook_enter(rt);
    st = rt->plugin->vt.state_write(rt->inst, i, ref, part);
    if (st != TESSEL_OK) st = tsl_hook_failed(rt, st, "state_write(%s)", p->name);
  }
  free(part);
  return st;
}
