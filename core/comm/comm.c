/* core/comm/comm.c — groups, counting, and the MPI engine. */
#include "comm.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

#define TSL_MAX_WORK 1024
#define TSL_CORE_AXES 0xffffffffu /* no mesh has 32 axes, so no plugin can ask for it */

struct tessel_group {
  MPI_Comm comm;
  uint32_t axes;
  int rank, size;
  char name[64];
  tsl_comm_counts step, total;
};

struct tessel_work {
  MPI_Request req;
  int in_use;
};

struct tsl_comm {
  int naxes;
  int sizes[TESSEL_MESH_MAX_AXES], coords[TESSEL_MESH_MAX_AXES];
  char names[TESSEL_MESH_MAX_AXES][32];
  uint32_t data_axes;
  tessel_group groups[TSL_COMM_MAX_GROUPS];
  int n_groups;
  tessel_work works[TSL_MAX_WORK];
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

/* Split the world into the groups over `axes`: ranks that agree on every
** other axis share a communicator, ordered by their coordinates on `axes`. */
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
  tsl_status st = mpi_status(MPI_Comm_split(MPI_COMM_WORLD, color, key, &g->comm), "MPI_Comm_split", g);
  if (st < 0) return st;
  MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(g->comm, &g->rank);
  MPI_Comm_size(g->comm, &g->size);
  c->n_groups++;
  return TESSEL_OK;
}

/* The core's own communicator over the world (groups[0]), for its per-step
** scalars, so that what the strategy's groups count is the strategy's alone. */
static tsl_status add_core_group(tsl_comm *c) {
  tessel_group *g = &c->groups[c->n_groups];
  memset(g, 0, sizeof *g);
  g->axes = TSL_CORE_AXES;
  snprintf(g->name, sizeof g->name, "core");
  tsl_status st = mpi_status(MPI_Comm_dup(MPI_COMM_WORLD, &g->comm), "MPI_Comm_dup", g);
  if (st < 0) return st;
  MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(g->comm, &g->rank);
  MPI_Comm_size(g->comm, &g->size);
  c->n_groups++;
  return TESSEL_OK;
}

tsl_status tsl_comm_create(const tsl_world *w, const tessel_mesh *mesh, tsl_comm **out) {
  tsl_status st;
  tsl_comm *c = calloc(1, sizeof *c);
  if (!c) return tsl_error(TESSEL_E_NOMEM, "out of host memory building communicators");
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
  *out = c;
  return TESSEL_OK;
fail:
  tsl_comm_destroy(c);
  return st;
}

void tsl_comm_destroy(tsl_comm *c) {
  if (!c) return;
  for (int i = 0; i < TSL_MAX_WORK; i++)
    if (c->works[i].in_use) MPI_Cancel(&c->works[i].req);
  for (int i = 0; i < c->n_groups; i++) MPI_Comm_free(&c->groups[i].comm);
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

static int type_size(tessel_dtype dt) {
  static const int sizes[] = {4, 2, 2, 4, 8, 1};
  return (unsigned)dt < 6 ? sizes[dt] : 1;
}

static tsl_status mpi_op(tessel_dtype dt, tessel_redop op, MPI_Op *out) {
  if (dt == TESSEL_BF16 || dt == TESSEL_F16 || dt == TESSEL_U8)
    return tsl_error(TESSEL_E_UNSUPPORTED, "the MPI engine cannot reduce 16-bit or byte data");
  *out = op == TESSEL_MAX ? MPI_MAX : op == TESSEL_MIN ? MPI_MIN : MPI_SUM;
  return TESSEL_OK;
}

static void count(tessel_group *g, uint64_t payload, double factor) {
  uint64_t bus = (uint64_t)((double)payload * factor + 0.5);
  g->step.calls++;
  g->step.payload += payload;
  g->step.bus += bus;
  g->total.calls++;
  g->total.payload += payload;
  g->total.bus += bus;
}

/* A slot for a non-blocking request, or the caller's local request for a
** blocking call. */
static tsl_status work_slot(tsl_comm *c, tessel_work **work, MPI_Request **req, MPI_Request *local) {
  *req = local;
  if (!work) return TESSEL_OK;
  for (int i = 0; i < TSL_MAX_WORK; i++) {
    if (!c->works[i].in_use) {
      c->works[i].in_use = 1;
      *work = &c->works[i];
      *req = &c->works[i].req;
      return TESSEL_OK;
    }
  }
  return tsl_error(TESSEL_E_INTERNAL, "more than %d collectives outstanding; wait for some first", TSL_MAX_WORK);
}

typedef enum { ALL_REDUCE, REDUCE_SCATTER, ALL_GATHER, BROADCAST, REDUCE, SEND, RECV } coll_kind;

typedef struct coll {
  coll_kind kind;
  const char *name;
  const void *send;
  void *recv;
  uint64_t n; /* elements per rank's block, as each call's contract counts them */
  tessel_dtype dt;
  tessel_redop op;
  int peer; /* root or peer */
} coll;

/* Count a collective, post it to MPI, and wait for it unless the caller
** asked for a handle. One place for the bookkeeping of every kind. */
static tsl_status post(tsl_comm *c, tessel_group *g, const coll *k, tessel_work **work) {
  MPI_Op mop = MPI_SUM;
  MPI_Request local, *req;
  tsl_status st = TESSEL_OK;
  int reducing = k->kind == ALL_REDUCE || k->kind == REDUCE_SCATTER || k->kind == REDUCE;
  if ((reducing && (st = mpi_op(k->dt, k->op, &mop)) < 0) || (st = work_slot(c, work, &req, &local)) < 0) return st;
  uint64_t block = k->n * (uint64_t)type_size(k->dt), whole = block * (uint64_t)g->size;
  double ring = (double)(g->size - 1) / g->size;
  MPI_Datatype t = mpi_type(k->dt);
  int n = (int)k->n, rc;
  switch (k->kind) {
    case ALL_REDUCE:
      count(g, block, 2.0 * ring);
      rc = MPI_Iallreduce(k->send == k->recv ? MPI_IN_PLACE : k->send, k->recv, n, t, mop, g->comm, req);
      break;
    case REDUCE_SCATTER:
      count(g, whole, ring);
      rc = MPI_Ireduce_scatter_block(k->send, k->recv, n, t, mop, g->comm, req);
      break;
    case ALL_GATHER:
      count(g, whole, ring);
      /* in place when the send block already sits at this rank's slot of recv */
      rc = MPI_Iallgather((const char *)k->recv + (uint64_t)g->rank * block == k->send ? MPI_IN_PLACE : k->send, n, t,
                          k->recv, n, t, g->comm, req);
      break;
    case BROADCAST:
      count(g, block, 1.0);
      rc = MPI_Ibcast(k->recv, n, t, k->peer, g->comm, req);
      break;
    case REDUCE:
      count(g, block, 1.0);
      rc = MPI_Ireduce(g->rank == k->peer && k->send == k->recv ? MPI_IN_PLACE : k->send, k->recv, n, t, mop, k->peer,
                       g->comm, req);
      break;
    case SEND:
      count(g, block, 1.0);
      rc = MPI_Isend(k->send, n, t, k->peer, 0, g->comm, req);
      break;
    default:
      count(g, block, 1.0);
      rc = MPI_Irecv(k->recv, n, t, k->peer, 0, g->comm, req);
      break;
  }
  st = mpi_status(rc, k->name, g);
  if (st < 0) {
    if (work) (*work)->in_use = 0;
    return st;
  }
  if (work) return TESSEL_OK;
  return mpi_status(MPI_Wait(req, MPI_STATUS_IGNORE), k->name, g);
}

tsl_status tsl_all_reduce(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t n, tessel_dtype dt,
                          tessel_redop op, tessel_work **work) {
  coll k = {ALL_REDUCE, "all-reduce", send, recv, n, dt, op, 0};
  return post(c, g, &k, work);
}

tsl_status tsl_reduce_scatter(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t n,
                              tessel_dtype dt, tessel_redop op, tessel_work **work) {
  coll k = {REDUCE_SCATTER, "reduce-scatter", send, recv, n, dt, op, 0};
  return post(c, g, &k, work);
}

tsl_status tsl_all_gather(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t n, tessel_dtype dt,
                          tessel_work **work) {
  coll k = {ALL_GATHER, "all-gather", send, recv, n, dt, TESSEL_SUM, 0};
  return post(c, g, &k, work);
}

tsl_status tsl_broadcast(tsl_comm *c, tessel_group *g, void *buf, uint64_t n, tessel_dtype dt, int root,
                         tessel_work **work) {
  coll k = {BROADCAST, "broadcast", buf, buf, n, dt, TESSEL_SUM, root};
  return post(c, g, &k, work);
}

tsl_status tsl_reduce(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t n, tessel_dtype dt,
                      tessel_redop op, int root, tessel_work **work) {
  coll k = {REDUCE, "reduce", send, recv, n, dt, op, root};
  return post(c, g, &k, work);
}

tsl_status tsl_send(tsl_comm *c, tessel_group *g, const void *buf, uint64_t n, tessel_dtype dt, int peer,
                    tessel_work **work) {
  coll k = {SEND, "send", buf, NULL, n, dt, TESSEL_SUM, peer};
  return post(c, g, &k, work);
}

tsl_status tsl_recv(tsl_comm *c, tessel_group *g, void *buf, uint64_t n, tessel_dtype dt, int peer,
                    tessel_work **work) {
  coll k = {RECV, "recv", NULL, buf, n, dt, TESSEL_SUM, peer};
  return post(c, g, &k, work);
}

tsl_status tsl_barrier(tsl_comm *c, tessel_group *g) {
  (void)c;
  return mpi_status(MPI_Barrier(g->comm), "barrier", g);
}

tsl_status tsl_comm_world_reduce(tsl_comm *c, double *values, int n, tessel_redop op) {
  return tsl_all_reduce(c, &c->groups[0], values, values, (uint64_t)n, TESSEL_F64, op, NULL);
}

tsl_status tsl_work_wait(tsl_comm *c, tessel_work *w) {
  (void)c;
  if (!w || !w->in_use) return tsl_error(TESSEL_E_INTERNAL, "waiting on a collective that is not outstanding");
  int rc = MPI_Wait(&w->req, MPI_STATUS_IGNORE);
  w->in_use = 0;
  return mpi_status(rc, "wait", NULL);
}

tsl_status tsl_work_test(tsl_comm *c, tessel_work *w, int *done) {
  (void)c;
  if (!w || !w->in_use) return tsl_error(TESSEL_E_INTERNAL, "testing a collective that is not outstanding");
  int rc = MPI_Test(&w->req, done, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS || *done) w->in_use = 0;
  return mpi_status(rc, "test", NULL);
}

void tsl_comm_progress(tsl_comm *c) {
  int flag;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, c->groups[0].comm, &flag, MPI_STATUS_IGNORE);
}

int tsl_comm_group_count(const tsl_comm *c) { return c->n_groups; }
tessel_group *tsl_comm_group_at(tsl_comm *c, int i) { return &c->groups[i]; }
tsl_comm_counts tsl_group_step_counts(const tessel_group *g) { return g->step; }
tsl_comm_counts tsl_group_total_counts(const tessel_group *g) { return g->total; }

void tsl_comm_new_step(tsl_comm *c) {
  for (int i = 0; i < c->n_groups; i++) memset(&c->groups[i].step, 0, sizeof c->groups[i].step);
}
