/* core/comm/comm.c — groups, counting, the MPI engine, and the routing of
** device buffers to the backend's device engine (see comm.h). */
#include "comm.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mpi_reduce.h"
#include "runtime/mpi_wait.h"
#include "runtime/mpi_where.h"
#include "common/util.h"

#define TSL_MAX_WORK 1024
#define TSL_CORE_AXES 0xffffffffu /* no mesh has 32 axes, so no plugin can ask for it */

struct tessel_group {
  MPI_Comm comm;
  MPI_Comm gathers;  /* a copy for the reductions' second phase (mpi_reduce.h) */
  tessel_work *reds; /* outstanding MPI reductions, oldest first */
  uint32_t axes;
  int rank, size;
  char name[64];
  tsl_comm_counts step, total;
  tsl_dcomm *dcomm; /* device communicator (groups of 2+ ranks, device engine only) */
  int owns_dcomm;   /* 0 when shared with an earlier group of the same ranks */
};

struct tessel_work {
  MPI_Request req;
  tsl_mpi_reduce *red;    /* an MPI reduction in rank order (mpi_reduce.h) */
  tessel_group *group;    /* its group (a reduction: whose list it is on) */
  const char *what;       /* the call's name, for a wait that times out */
  tessel_work *next_red;
  tsl_status failed;      /* a reduction that failed while advancing, and why */
  char why[256];
  int in_use;
  int p2p;         /* a send or receive: waiting for it is pipeline idle time */
  int device;      /* a device collective: done when `done` is */
  int batched;     /* a device send/receive in the open batch (no event yet) */
  tsl_event *done; /* recorded on the comm stream after it; NULL: nothing to wait for */
};

struct tsl_comm {
  int naxes;
  int sizes[TESSEL_MESH_MAX_AXES], coords[TESSEL_MESH_MAX_AXES];
  char names[TESSEL_MESH_MAX_AXES][32];
  uint32_t data_axes;
  tessel_group groups[TSL_COMM_MAX_GROUPS];
  int n_groups;
  tessel_work works[TSL_MAX_WORK];
  tsl_comm_device dev; /* dev.be NULL: MPI only */
  int batch_open;      /* an open group of non-blocking device sends/receives */
  tsl_comm_times step_times; /* host time blocked in communication this step */
};

static tsl_status mpi_status(int rc, const char *what, const tessel_group *g) {
  if (rc == MPI_SUCCESS) return TESSEL_OK;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return tsl_error(TESSEL_E_COMM, "%s on group '%s' failed: %s", what, g ? g->name : "world", msg);
}

static void group_name(const tsl_comm *c, uint32_t axes, char *buf, size_t cap) {
  buf[0] = '\0';
  if (axes == 0) snprintf(buf, cap, "self");
  for (int a = 0; a < c->naxes; a++) {
    if (!(axes & (1u << a))) continue;
    if (buf[0]) strncat(buf, "+", cap - strlen(buf) - 1);
    strncat(buf, c->names[a], cap - strlen(buf) - 1);
  }
}

/* Take the next group slot once MPI has made its communicator (rc is the
** MPI call's result): errors come back as codes, and rank and size cached. */
static tsl_status adopt_group(tsl_comm *c, tessel_group *g, int rc, const char *what) {
  tsl_status st = mpi_status(rc, what, g);
  if (st < 0) return st;
  MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(g->comm, &g->rank);
  MPI_Comm_size(g->comm, &g->size);
  tsl_where_group(g->name, g->comm); /* its ranks' counts compare, not those of another group of its name */
  MPI_Request req;
  int rc_dup = tsl_mpi_finish(MPI_Comm_idup(g->comm, &g->gathers, &req), &req, "building the communicators", g->name);
  if ((st = mpi_status(rc_dup, "MPI_Comm_idup", g)) < 0) {
    tsl_where_group_gone(g->name);
    MPI_Comm_free(&g->comm);
    return st;
  }
  c->n_groups++;
  return TESSEL_OK;
}

/* Split the world into the groups over `axes`: ranks that agree on every
** other axis share a communicator, ordered by their coordinates on `axes`.
** MPI_Comm_split has no non-blocking form, so it waits with no deadline;
** every rank comes to it straight from tsl_comm_create's first exchange,
** which waits within train.comm_timeout, with no file, device or plugin
** work between them in which a rank could stall. */
static tsl_status add_group(tsl_comm *c, uint32_t axes) {
  for (int i = 0; i < c->n_groups; i++)
    if (c->groups[i].axes == axes) return TESSEL_OK;
  if (c->n_groups == TSL_COMM_MAX_GROUPS) return tsl_error(TESSEL_E_CONFIG, "the mesh asks for too many groups");
  int color = 0, key = 0;
  for (int a = 0; a < c->naxes; a++) {
    if (axes & (1u << a))
      key = key * c->sizes[a] + c->coords[a];
    else
      color = color * c->sizes[a] + c->coords[a];
  }
  tessel_group *g = &c->groups[c->n_groups];
  memset(g, 0, sizeof *g);
  g->axes = axes;
  group_name(c, axes, g->name, sizeof g->name);
  return adopt_group(c, g, MPI_Comm_split(MPI_COMM_WORLD, color, key, &g->comm), "MPI_Comm_split");
}

/* The core's own communicator over the world (groups[0]), for its per-step
** scalars, so that what the strategy's groups count is the strategy's alone. */
static tsl_status add_core_group(tsl_comm *c) {
  tessel_group *g = &c->groups[c->n_groups];
  memset(g, 0, sizeof *g);
  g->axes = TSL_CORE_AXES;
  snprintf(g->name, sizeof g->name, "core");
  MPI_Request req;
  int rc = tsl_mpi_finish(MPI_Comm_idup(MPI_COMM_WORLD, &g->comm, &req), &req, "building the communicators", g->name);
  return adopt_group(c, g, rc, "MPI_Comm_idup");
}

/* ---- the device engine ---- */

static int has_device_engine(const tsl_backend *be) {
  return be && be->dcomm_create && be->dcomm_destroy && be->dcomm_post && be->dcomm_group && be->is_device_memory &&
         be->event_query && be->last_error;
}

/* The backend's bootstrap, over the group's MPI communicator: a broadcast
** from the group's rank 0, and the agreement on every rank's status. */
static int bcast_group(void *arg, void *buf, int bytes) {
  tessel_group *g = arg;
  MPI_Request req;
  int rc = tsl_mpi_finish(MPI_Ibcast(buf, bytes, MPI_BYTE, 0, g->comm, &req), &req, "creating the device communicator",
                          g->name);
  return rc == MPI_SUCCESS ? TESSEL_OK : TESSEL_E_COMM;
}

static int agree_group(void *arg, int status) {
  tessel_group *g = arg;
  int lowest = status;
  MPI_Request req;
  int rc = tsl_mpi_finish(MPI_Iallreduce(&status, &lowest, 1, MPI_INT, MPI_MIN, g->comm, &req), &req,
                          "creating the device communicator", g->name);
  return rc == MPI_SUCCESS ? lowest : TESSEL_E_COMM;
}

static tsl_status device_error(const tsl_comm *c, tsl_status st, const char *what, const tessel_group *g) {
  return tsl_error(st, "%s on group '%s' failed: %s", what, g ? g->name : "world", c->dev.be->last_error(c->dev.be));
}

/* One device communicator per group of two or more ranks, made in group
** order on every rank (each is collective over its group); a group with the
** same ranks as an earlier one shares that one's. The core's own group
** (groups[0]) carries host scalars only and stays on MPI. */
static tsl_status add_device_comms(tsl_comm *c) {
  tsl_backend *be = c->dev.be;
  for (int i = 1; i < c->n_groups; i++) {
    tessel_group *g = &c->groups[i];
    if (g->size == 1) continue;
    for (int j = 1; j < i && !g->dcomm; j++) {
      int same = MPI_UNEQUAL;
      if (c->groups[j].dcomm && MPI_Comm_compare(g->comm, c->groups[j].comm, &same) == MPI_SUCCESS &&
          (same == MPI_IDENT || same == MPI_CONGRUENT))
        g->dcomm = c->groups[j].dcomm;
    }
    if (g->dcomm) continue;
    tsl_dcomm_boot boot = {bcast_group, agree_group, g};
    int rc = be->dcomm_create(be, g->rank, g->size, &boot, &g->dcomm);
    if (rc < 0) return device_error(c, rc, "creating the device communicator", g);
    g->owns_dcomm = 1;
  }
  return TESSEL_OK;
}

tsl_status tsl_comm_create(const tsl_world *w, const tessel_mesh *mesh, const tsl_comm_device *dev,
                           tsl_comm **out) {
  tsl_status st;
  tsl_comm *c = calloc(1, sizeof *c);
  if ((st = tsl_world_all_allocated(w, c != NULL, "building communicators")) < 0) {
    free(c);
    return st;
  }
  c->naxes = mesh->naxes;
  c->data_axes = mesh->data_axes;
  int rem = w->rank;
  for (int a = c->naxes - 1; a >= 0; a--) {
    c->sizes[a] = mesh->sizes[a];
    c->coords[a] = rem % mesh->sizes[a];
    rem /= mesh->sizes[a];
    snprintf(c->names[a], sizeof c->names[a], "%s", mesh->names[a] ? mesh->names[a] : "axis");
  }
  uint32_t all = (1u << c->naxes) - 1;
  TSL_TRY(st, add_core_group(c));
  TSL_TRY(st, add_group(c, all));
  for (int a = 0; a < c->naxes; a++) TSL_TRY(st, add_group(c, 1u << a));
  TSL_TRY(st, add_group(c, c->data_axes));
  for (int i = 0; i < mesh->n_groups; i++) TSL_TRY(st, add_group(c, mesh->groups[i] & all));
  if (c->groups[1].size != w->size) {
    st = tsl_error(TESSEL_E_INTERNAL, "mesh groups cover %d ranks, the world has %d", c->groups[1].size, w->size);
    goto fail;
  }
  if (dev && has_device_engine(dev->be)) {
    c->dev = *dev;
    TSL_TRY(st, add_device_comms(c));
  }
  *out = c;
  return TESSEL_OK;
fail:
  tsl_comm_destroy(c);
  return st;
}

void tsl_comm_destroy(tsl_comm *c) {
  if (!c) return;
  tsl_backend *be = c->dev.be;
  if (be && c->batch_open) be->dcomm_group(be, 0);
  for (int i = 0; i < TSL_MAX_WORK; i++) {
    tessel_work *w = &c->works[i];
    if (w->in_use && w->device) be->event_free(be, w->done);
    else if (w->in_use && w->red) tsl_mpi_reduce_cancel(w->red);
    else if (w->in_use) MPI_Cancel(&w->req);
  }
  for (int i = 0; i < c->n_groups; i++) {
    if (c->groups[i].owns_dcomm) be->dcomm_destroy(be, c->groups[i].dcomm);
    tsl_where_group_gone(c->groups[i].name);
    MPI_Comm_free(&c->groups[i].gathers);
    MPI_Comm_free(&c->groups[i].comm);
  }
  free(c);
}

tsl_status tsl_comm_group(tsl_comm *c, uint32_t axes, tessel_group **out) {
  for (int i = 0; i < c->n_groups; i++) {
    if (c->groups[i].axes == axes) {
      *out = &c->groups[i];
      return TESSEL_OK;
    }
  }
  char name[64];
  group_name(c, axes, name, sizeof name);
  if (axes >> c->naxes)
    return tsl_error(TESSEL_E_INTERNAL, "no communicator over the axis set 0x%x: the mesh has %d axes (bits 0x%x)",
                     axes, c->naxes, (1u << c->naxes) - 1);
  return tsl_error(TESSEL_E_INTERNAL,
                   "no communicator over the axes '%s': list that axis set in tessel_mesh.groups so it is "
                   "created with the others", name);
}

int tsl_group_rank(const tessel_group *g) { return g->rank; }
int tsl_group_size(const tessel_group *g) { return g->size; }
const char *tsl_group_name(const tessel_group *g) { return g->name; }
int tsl_comm_coord(const tsl_comm *c, int axis) { return axis >= 0 && axis < c->naxes ? c->coords[axis] : -1; }

int tsl_comm_data_rank(const tsl_comm *c) {
  int r = 0;
  for (int a = 0; a < c->naxes; a++)
    if (c->data_axes & (1u << a)) r = r * c->sizes[a] + c->coords[a];
  return r;
}

int tsl_comm_data_size(const tsl_comm *c) {
  int n = 1;
  for (int a = 0; a < c->naxes; a++)
    if (c->data_axes & (1u << a)) n *= c->sizes[a];
  return n;
}

static MPI_Datatype mpi_type(tessel_dtype dt) {
  switch (dt) {
    case TESSEL_F32: return MPI_FLOAT;
    case TESSEL_F64: return MPI_DOUBLE;
    case TESSEL_I32: return MPI_INT32_T;
    case TESSEL_BF16:
    case TESSEL_F16: return MPI_UINT16_T;
    case TESSEL_U8: return MPI_BYTE;
  }
  return MPI_BYTE;
}

static int type_size(tessel_dtype dt) { return (int)tessel_dtype_size(dt); }

static void count(tessel_group *g, uint64_t payload, double factor) {
  uint64_t bus = (uint64_t)((double)payload * factor + 0.5);
  g->step.calls++;
  g->step.payload += payload;
  g->step.bus += bus;
  g->total.calls++;
  g->total.payload += payload;
  g->total.bus += bus;
}

/* Charge the host time since t0 to waiting: point-to-point transfers are
** the stage boundaries of a pipeline, so time blocked in them is the
** pipeline's idle time (its bubble); everything else is collective wait. */
static void charge(tsl_comm *c, double t0, int p2p) {
  double dt = tsl_now() - t0;
  if (p2p) c->step_times.p2p_wait += dt;
  else c->step_times.coll_wait += dt;
}

static int is_p2p(tsl_coll_kind kind) { return kind == TSL_COLL_SEND || kind == TSL_COLL_RECV; }

/* A free handle for a non-blocking collective. */
static tsl_status take_work(tsl_comm *c, tessel_work **out) {
  for (int i = 0; i < TSL_MAX_WORK; i++) {
    tessel_work *w = &c->works[i];
    if (!w->in_use) {
      memset(w, 0, sizeof *w);
      w->in_use = 1;
      *out = w;
      return TESSEL_OK;
    }
  }
  return tsl_error(TESSEL_E_INTERNAL, "more than %d collectives outstanding; wait for some first", TSL_MAX_WORK);
}

/* A slot for a non-blocking request, or the caller's local request for a
** blocking call. */
static tsl_status work_slot(tsl_comm *c, tessel_work **work, MPI_Request **req, MPI_Request *local) {
  *req = local;
  if (!work) return TESSEL_OK;
  tsl_status st = take_work(c, work);
  if (st >= 0) *req = &(*work)->req;
  return st;
}

/* The kinds are the backend's (kernels/backend.h), so a device collective
** passes through unchanged. */
typedef struct coll {
  tsl_coll_kind kind;
  const char *name;
  const void *send;
  void *recv;
  uint64_t n; /* elements per rank's block, as each call's contract counts them */
  tessel_dtype dt;
  tessel_redop op;
  int peer; /* root or peer */
} coll;

/* Count a collective by the conventions of comm.h: payload is the caller's
** buffer, bus what a ring moves per rank. */
static void account(tessel_group *g, const coll *k) {
  uint64_t block = k->n * (uint64_t)type_size(k->dt), whole = block * (uint64_t)g->size;
  double ring = (double)(g->size - 1) / g->size;
  switch (k->kind) {
    case TSL_COLL_ALL_REDUCE: count(g, block, 2.0 * ring); break;
    case TSL_COLL_REDUCE_SCATTER:
    case TSL_COLL_ALL_GATHER:
    case TSL_COLL_ALL_TO_ALL: count(g, whole, ring); break;
    case TSL_COLL_RECV: count(g, 0, 1.0); break; /* a transfer counts once, at its sender */
    default: count(g, block, 1.0); break;
  }
}

/* Launch the open batch of device sends and receives together; each of
** them then gets its own completion event. */
static tsl_status flush(tsl_comm *c) {
  if (!c->batch_open) return TESSEL_OK;
  tsl_backend *be = c->dev.be;
  c->batch_open = 0;
  tsl_status st = be->dcomm_group(be, 0);
  for (int i = 0; i < TSL_MAX_WORK; i++) {
    tessel_work *w = &c->works[i];
    if (!w->in_use || !w->batched) continue;
    w->batched = 0;
    if (st >= 0) st = be->event_record(be, c->dev.comm, &w->done);
  }
  return st < 0 ? device_error(c, st, "launching the batched sends and receives", NULL) : TESSEL_OK;
}

/* Device buffers go to the device engine, host buffers to MPI; a mix is a
** caller error (MPI cannot read device memory here). */
static tsl_status route(const tsl_comm *c, const tessel_group *g, const coll *k, int *device) {
  tsl_backend *be = c->dev.be;
  *device = 0;
  if (!be) return TESSEL_OK;
  int ds = k->send && be->is_device_memory(be, k->send), dr = k->recv && be->is_device_memory(be, k->recv);
  if ((ds && k->recv && !dr) || (dr && k->send && !ds))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s on group '%s': one buffer is device memory and the other is not",
                     k->name, g->name);
  *device = ds || dr;
  return TESSEL_OK;
}

/* A one-rank group needs no device communicator: the collective is a copy
** from send to recv, or nothing, ordered on the compute stream. */
static tsl_status post_local(tsl_comm *c, tessel_group *g, const coll *k, tessel_work **work) {
  tsl_backend *be = c->dev.be;
  tessel_work *w = NULL;
  tsl_status st;
  if (k->kind == TSL_COLL_SEND || k->kind == TSL_COLL_RECV)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s within the one-rank group '%s'", k->name, g->name);
  if (work && (st = take_work(c, &w)) < 0) return st;
  account(g, k);
  if (k->send != k->recv &&
      (st = be->copy(be, k->recv, k->send, k->n * (uint64_t)type_size(k->dt), TSL_COPY_D2D, c->dev.compute)) < 0) {
    if (w) w->in_use = 0;
    return device_error(c, st, k->name, g);
  }
  if (w) {
    w->device = 1;
    *work = w;
  }
  return TESSEL_OK;
}

/* A device collective: on the comm stream after the compute stream's queued
** work (which wrote the send buffer, or may still read the receive buffer);
** then either a handle with an event recorded after it, or, for a blocking
** call, the compute stream waits for that event. A non-blocking send or
** receive joins the open batch instead (see flush). */
static tsl_status post_device(tsl_comm *c, tessel_group *g, const coll *k, tessel_work **work) {
  tsl_backend *be = c->dev.be;
  const int batch = work && (k->kind == TSL_COLL_SEND || k->kind == TSL_COLL_RECV);
  tessel_work *w = NULL;
  tsl_event *ev = NULL;
  tsl_status st;
  if (!batch && (st = flush(c)) < 0) return st;
  if (g->size == 1) return post_local(c, g, k, work);
  if (!g->dcomm) return tsl_error(TESSEL_E_INTERNAL, "group '%s' has no device communicator", g->name);
  if (work && (st = take_work(c, &w)) < 0) return st;
  account(g, k);
  tsl_coll op = {k->kind, k->send, k->recv, k->n, k->dt, k->op, k->peer};
  if ((st = be->event_record(be, c->dev.compute, &ev)) < 0) goto fail;
  st = be->event_wait(be, c->dev.comm, ev);
  be->event_free(be, ev);
  if (st < 0) goto fail;
  if (batch && !c->batch_open) {
    if ((st = be->dcomm_group(be, 1)) < 0) goto fail;
    c->batch_open = 1;
  }
  if ((st = be->dcomm_post(be, g->dcomm, &op, c->dev.comm)) < 0) goto fail;
  if (batch) {
    w->device = w->batched = 1;
    *work = w;
    return TESSEL_OK;
  }
  if ((st = be->event_record(be, c->dev.comm, &ev)) < 0) goto fail;
  if (w) {
    w->device = 1;
    w->done = ev;
    *work = w;
    return TESSEL_OK;
  }
  st = be->event_wait(be, c->dev.compute, ev);
  be->event_free(be, ev);
  if (st >= 0) return TESSEL_OK;
fail:
  if (w) w->in_use = 0;
  return device_error(c, st, k->name, g);
}

/* ---- MPI reductions, in posting order ---- */

static void unlink_red(tessel_work *w) {
  tessel_work **at = &w->group->reds;
  while (*at && *at != w) at = &(*at)->next_red;
  if (*at) *at = w->next_red;
  w->red = NULL;
}

/* Move a group's reductions out of their exchange in the order they were
** posted, so every rank starts their gathers (a second collective on the
** same communicator) in the same order. With `until`, wait for the
** exchanges up to and including it; otherwise stop at the first one not
** done yet. */
static tsl_status order_exchanges(tessel_group *g, tessel_work *until) {
  for (tessel_work *w = g->reds; w; w = w->next_red) {
    int done;
    tsl_status st = tsl_mpi_reduce_exchange(w->red, until != NULL, &done, w->what, g->name);
    if (st < 0) { /* the reduction freed itself; its owner hears why when it waits */
      unlink_red(w);
      w->failed = tsl_error_wrap(st, "a reduction on group '%s'", g->name);
      snprintf(w->why, sizeof w->why, "%s", tsl_error_message());
      return w->failed;
    }
    if (!done || w == until) return TESSEL_OK;
  }
  return TESSEL_OK;
}

static tsl_status finish_red(tessel_work *w, int block, int *done) {
  tessel_group *g = w->group;
  tsl_status st = tsl_mpi_reduce_finish(w->red, block, done, w->what, g->name);
  if (st < 0 || *done) {
    unlink_red(w);
    w->in_use = 0;
  }
  return st < 0 ? tsl_error_wrap(st, "a reduction on group '%s'", g->name) : TESSEL_OK;
}

/* A reduction that failed while another call advanced it. */
static tsl_status report_failed(tessel_work *w) {
  w->in_use = 0;
  return tsl_error(w->failed, "%s", w->why);
}

static tsl_status wait_red(tsl_comm *c, tessel_work *w) {
  int done;
  double t0 = tsl_now();
  tsl_status st = order_exchanges(w->group, w);
  if (w->failed) st = report_failed(w);
  else if (st >= 0) st = finish_red(w, 1, &done);
  charge(c, t0, 0);
  return st;
}

/* A reduction on MPI: rank-ordered, through mpi_reduce.c; a blocking one
** takes its place in the group's order like the others. */
static tsl_status post_mpi_reduce(tsl_comm *c, tessel_group *g, const coll *k, tessel_work **work) {
  tessel_work *w = NULL;
  tsl_status st = tsl_mpi_reduce_supported(k->dt, k->op);
  if (st < 0) return tsl_error_wrap(st, "%s on group '%s'", k->name, g->name);
  if ((st = take_work(c, &w)) < 0) return st;
  account(g, k);
  st = tsl_mpi_reduce_start(g->comm, g->gathers, k->kind, k->send, k->recv, k->n, k->dt, k->op, k->peer, &w->red);
  if (st < 0) {
    w->in_use = 0;
    return tsl_error_wrap(st, "%s on group '%s'", k->name, g->name);
  }
  w->group = g;
  w->what = k->name;
  tessel_work **tail = &g->reds;
  while (*tail) tail = &(*tail)->next_red;
  *tail = w;
  if (!work) return wait_red(c, w);
  *work = w;
  return TESSEL_OK;
}

/* Count a collective, post it to its engine, and (MPI) wait for it unless
** the caller asked for a handle. One place for the bookkeeping of every
** kind. */
static tsl_status post(tsl_comm *c, tessel_group *g, const coll *k, tessel_work **work) {
  MPI_Request local, *req;
  int device;
  tsl_status st = route(c, g, k, &device);
  if (st < 0) return st;
  if (device) return post_device(c, g, k, work);
  if (!is_p2p(k->kind)) tsl_where_posted(g->name); /* what the ranks compare at a timeout */
  if ((st = flush(c)) < 0) return st;
  /* MPI reads the buffers as soon as it is called: kernels already queued
  ** that write them (e.g. an update of pinned host state) must be done */
  if (c->dev.be && (st = c->dev.be->stream_sync(c->dev.be, c->dev.compute)) < 0)
    return device_error(c, st, "waiting for the compute stream before an MPI collective", g);
  if (k->kind == TSL_COLL_ALL_REDUCE || k->kind == TSL_COLL_REDUCE_SCATTER || k->kind == TSL_COLL_REDUCE)
    return post_mpi_reduce(c, g, k, work);
  if ((st = work_slot(c, work, &req, &local)) < 0) return st;
  uint64_t block = k->n * (uint64_t)type_size(k->dt);
  MPI_Datatype t = mpi_type(k->dt);
  int n = (int)k->n, rc;
  double t0 = tsl_now();
  account(g, k);
  switch (k->kind) {
    case TSL_COLL_ALL_GATHER:
      /* in place when the send block already sits at this rank's slot of recv */
      rc = MPI_Iallgather((const char *)k->recv + (uint64_t)g->rank * block == k->send ? MPI_IN_PLACE : k->send, n, t,
                          k->recv, n, t, g->comm, req);
      break;
    case TSL_COLL_ALL_TO_ALL:
      rc = MPI_Ialltoall(k->send, n, t, k->recv, n, t, g->comm, req);
      break;
    case TSL_COLL_BROADCAST:
      rc = MPI_Ibcast(k->recv, n, t, k->peer, g->comm, req);
      break;
    case TSL_COLL_SEND:
      rc = MPI_Isend(k->send, n, t, k->peer, 0, g->comm, req);
      break;
    default:
      rc = MPI_Irecv(k->recv, n, t, k->peer, 0, g->comm, req);
      break;
  }
  st = mpi_status(rc, k->name, g);
  if (st < 0) {
    if (work) (*work)->in_use = 0;
    return st;
  }
  if (work) {
    (*work)->p2p = is_p2p(k->kind);
    (*work)->group = g;
    (*work)->what = k->name;
    return TESSEL_OK;
  }
  /* a blocking call: the whole call is waiting (MPI moves the data inside it) */
  st = mpi_status(tsl_mpi_wait(req, k->name, g->name), k->name, g);
  charge(c, t0, is_p2p(k->kind));
  return st;
}

tsl_status tsl_all_reduce(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t n, tessel_dtype dt,
                          tessel_redop op, tessel_work **work) {
  coll k = {TSL_COLL_ALL_REDUCE, "all-reduce", send, recv, n, dt, op, 0};
  return post(c, g, &k, work);
}

tsl_status tsl_reduce_scatter(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t n,
                              tessel_dtype dt, tessel_redop op, tessel_work **work) {
  coll k = {TSL_COLL_REDUCE_SCATTER, "reduce-scatter", send, recv, n, dt, op, 0};
  return post(c, g, &k, work);
}

tsl_status tsl_all_gather(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t n, tessel_dtype dt,
                          tessel_work **work) {
  coll k = {TSL_COLL_ALL_GATHER, "all-gather", send, recv, n, dt, TESSEL_SUM, 0};
  return post(c, g, &k, work);
}

tsl_status tsl_all_to_all(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t n, tessel_dtype dt,
                          tessel_work **work) {
  if (send == recv) return tsl_error(TESSEL_E_INTERNAL, "all-to-all on group '%s' in place (use two buffers)", g->name);
  coll k = {TSL_COLL_ALL_TO_ALL, "all-to-all", send, recv, n, dt, TESSEL_SUM, 0};
  return post(c, g, &k, work);
}

tsl_status tsl_broadcast(tsl_comm *c, tessel_group *g, void *buf, uint64_t n, tessel_dtype dt, int root,
                         tessel_work **work) {
  coll k = {TSL_COLL_BROADCAST, "broadcast", buf, buf, n, dt, TESSEL_SUM, root};
  return post(c, g, &k, work);
}

tsl_status tsl_reduce(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t n, tessel_dtype dt,
                      tessel_redop op, int root, tessel_work **work) {
  coll k = {TSL_COLL_REDUCE, "reduce", send, recv, n, dt, op, root};
  return post(c, g, &k, work);
}

tsl_status tsl_send(tsl_comm *c, tessel_group *g, const void *buf, uint64_t n, tessel_dtype dt, int peer,
                    tessel_work **work) {
  coll k = {TSL_COLL_SEND, "send", buf, NULL, n, dt, TESSEL_SUM, peer};
  return post(c, g, &k, work);
}

tsl_status tsl_recv(tsl_comm *c, tessel_group *g, void *buf, uint64_t n, tessel_dtype dt, int peer,
                    tessel_work **work) {
  coll k = {TSL_COLL_RECV, "recv", NULL, buf, n, dt, TESSEL_SUM, peer};
  return post(c, g, &k, work);
}

tsl_status tsl_barrier(tsl_comm *c, tessel_group *g) {
  tsl_status st = flush(c);
  if (st < 0) return st;
  double t0 = tsl_now();
  MPI_Request req;
  tsl_where_posted(g->name);
  st = mpi_status(tsl_mpi_finish(MPI_Ibarrier(g->comm, &req), &req, "barrier", g->name), "barrier", g);
  charge(c, t0, 0);
  return st;
}

tsl_status tsl_comm_world_reduce(tsl_comm *c, double *values, int n, tessel_redop op) {
  return tsl_all_reduce(c, &c->groups[0], values, values, (uint64_t)n, TESSEL_F64, op, NULL);
}

/* A device collective is done for the compute stream once it waits for
** the collective's event: later kernels see the result, the host goes on. */
static tsl_status device_wait(tsl_comm *c, tessel_work *w) {
  tsl_backend *be = c->dev.be;
  tsl_status st = w->batched ? flush(c) : TESSEL_OK;
  if (st >= 0 && w->done && (st = be->event_wait(be, c->dev.compute, w->done)) < 0)
    st = device_error(c, st, "wait", NULL);
  be->event_free(be, w->done);
  w->done = NULL;
  w->in_use = 0;
  return st;
}

tsl_status tsl_work_wait(tsl_comm *c, tessel_work *w) {
  if (!w || !w->in_use) return tsl_error(TESSEL_E_INTERNAL, "waiting on a collective that is not outstanding");
  if (w->device) return device_wait(c, w);
  if (w->red || w->failed) return wait_red(c, w);
  double t0 = tsl_now();
  int rc = tsl_mpi_wait(&w->req, w->what, w->group->name);
  charge(c, t0, w->p2p);
  w->in_use = 0;
  return mpi_status(rc, "wait", NULL);
}

tsl_status tsl_work_test(tsl_comm *c, tessel_work *w, int *done) {
  if (!w || !w->in_use) return tsl_error(TESSEL_E_INTERNAL, "testing a collective that is not outstanding");
  if (w->device) {
    tsl_backend *be = c->dev.be;
    tsl_status st = w->batched ? flush(c) : TESSEL_OK;
    int q = st < 0 ? st : w->done ? be->event_query(be, w->done) : 1;
    *done = q == 1;
    if (q < 0) {
      device_wait(c, w);
      return st < 0 ? st : device_error(c, q, "test", NULL);
    }
    return q == 1 ? device_wait(c, w) : TESSEL_OK;
  }
  if (w->red || w->failed) {
    tsl_status st = order_exchanges(w->group, NULL);
    *done = 0;
    if (w->failed) return report_failed(w);
    if (st < 0 || !tsl_mpi_reduce_exchanged(w->red)) return st;
    return finish_red(w, 0, done);
  }
  int rc = MPI_Test(&w->req, done, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS || *done) w->in_use = 0;
  return mpi_status(rc, "test", NULL);
}

/* Reductions move to their gather phase once their exchange is done. */
void tsl_comm_progress(tsl_comm *c) {
  int flag;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->groups[0].comm, &flag, MPI_STATUS_IGNORE);
  for (int i = 0; i < c->n_groups; i++)
    if (c->groups[i].reds) order_exchanges(&c->groups[i], NULL);
}

int tsl_comm_outstanding(const tsl_comm *c) {
  int n = 0;
  for (int i = 0; i < TSL_MAX_WORK; i++) n += c->works[i].in_use;
  return n;
}

int tsl_comm_group_count(const tsl_comm *c) { return c->n_groups; }
tessel_group *tsl_comm_group_at(tsl_comm *c, int i) { return &c->groups[i]; }
tsl_comm_counts tsl_group_step_counts(const tessel_group *g) { return g->step; }
tsl_comm_counts tsl_group_total_counts(const tessel_group *g) { return g->total; }

tsl_comm_times tsl_comm_step_times(const tsl_comm *c) { return c->step_times; }

void tsl_comm_new_step(tsl_comm *c) {
  for (int i = 0; i < c->n_groups; i++) memset(&c->groups[i].step, 0, sizeof c->groups[i].step);
  memset(&c->step_times, 0, sizeof c->step_times);
}
