/* core/comm/host_comm.c — tessel_comm_api: collectives as a plugin calls
** them, through the counting front end (comm.c). */
#include "comm/comm.h"
#include "plugin/host.h"

#define RT(h) ((h)->rt)
#define COMM_READY(h)                                                                                   \
  do {                                                                                                  \
    if (!RT(h)->comm)                                                                                   \
      return tsl_error(TESSEL_E_UNSUPPORTED, "communication is not available yet: communicators are "   \
                                             "built after the layouts, before `setup`");                 \
  } while (0)

/* Communication is ready and `g` is a group: a NULL one (a group never
** fetched) would be dereferenced by the counting front end. */
#define GROUP_READY(h, g, call)                                                                 \
  do {                                                                                          \
    COMM_READY(h);                                                                              \
    if (!(g)) return tsl_error(TESSEL_E_INTERNAL, "comm->%s: the group is NULL (get one with comm->group, " \
                                                  "from setup on)", call);                      \
  } while (0)

static tsl_status c_group(tessel_host *h, uint32_t axes, tessel_group **out) {
  COMM_READY(h);
  return tsl_comm_group(RT(h)->comm, axes, out);
}

static tsl_status c_group_info(tessel_host *h, const tessel_group *g, int *rank, int *nranks) {
  (void)h;
  if (!g) return tsl_error(TESSEL_E_INTERNAL, "group_info of a NULL group");
  if (rank) *rank = tsl_group_rank(g);
  if (nranks) *nranks = tsl_group_size(g);
  return TESSEL_OK;
}

/* Until `mesh` has returned and its answer is checked, rt->mesh is the
** hook's own half-filled out-struct (sizes of 0 among them). */
static tsl_status c_coord(tessel_host *h, int axis, int *out) {
  const tessel_mesh *m = &RT(h)->mesh;
  if (!RT(h)->mesh_ready)
    return tsl_error(TESSEL_E_UNSUPPORTED, "comm->coord is not available yet: a rank's coordinates exist once the "
                                           "mesh hook has returned (from layout on)");
  if (axis < 0 || axis >= m->naxes)
    return tsl_error(TESSEL_E_INTERNAL, "the mesh has no axis %d (it has %d)", axis, m->naxes);
  int rem = RT(h)->world.rank;
  for (int a = m->naxes - 1; a > axis; a--) rem /= m->sizes[a];
  *out = rem % m->sizes[axis];
  return TESSEL_OK;
}

static tsl_status c_all_reduce(tessel_host *h, tessel_group *g, const void *s, void *r, uint64_t n, tessel_dtype dt,
                               tessel_redop op, tessel_work **w) {
  GROUP_READY(h, g, "all_reduce");
  return tsl_all_reduce(RT(h)->comm, g, s, r, n, dt, op, w);
}

static tsl_status c_reduce_scatter(tessel_host *h, tessel_group *g, const void *s, void *r, uint64_t n,
                                   tessel_dtype dt, tessel_redop op, tessel_work **w) {
  GROUP_READY(h, g, "reduce_scatter");
  return tsl_reduce_scatter(RT(h)->comm, g, s, r, n, dt, op, w);
}

static tsl_status c_all_gather(tessel_host *h, tessel_group *g, const void *s, void *r, uint64_t n, tessel_dtype dt,
                               tessel_work **w) {
  GROUP_READY(h, g, "all_gather");
  return tsl_all_gather(RT(h)->comm, g, s, r, n, dt, w);
}

static tsl_status c_all_to_all(tessel_host *h, tessel_group *g, const void *s, void *r, uint64_t n, tessel_dtype dt,
                               tessel_work **w) {
  GROUP_READY(h, g, "all_to_all");
  return tsl_all_to_all(RT(h)->comm, g, s, r, n, dt, w);
}

static tsl_status c_broadcast(tessel_host *h, tessel_group *g, void *b, uint64_t n, tessel_dtype dt, int root,
                              tessel_work **w) {
  GROUP_READY(h, g, "broadcast");
  return tsl_broadcast(RT(h)->comm, g, b, n, dt, root, w);
}

static tsl_status c_reduce(tessel_host *h, tessel_group *g, const void *s, void *r, uint64_t n, tessel_dtype dt,
                           tessel_redop op, int root, tessel_work **w) {
  GROUP_READY(h, g, "reduce");
  return tsl_reduce(RT(h)->comm, g, s, r, n, dt, op, root, w);
}

static tsl_status c_send(tessel_host *h, tessel_group *g, const void *b, uint64_t n, tessel_dtype dt, int peer,
                         tessel_work **w) {
  GROUP_READY(h, g, "send");
  return tsl_send(RT(h)->comm, g, b, n, dt, peer, w);
}

static tsl_status c_recv(tessel_host *h, tessel_group *g, void *b, uint64_t n, tessel_dtype dt, int peer,
                         tessel_work **w) {
  GROUP_READY(h, g, "recv");
  return tsl_recv(RT(h)->comm, g, b, n, dt, peer, w);
}

static tsl_status c_barrier(tessel_host *h, tessel_group *g) {
  GROUP_READY(h, g, "barrier");
  return tsl_barrier(RT(h)->comm, g);
}

static tsl_status c_wait(tessel_host *h, tessel_work *w) {
  COMM_READY(h);
  return tsl_work_wait(RT(h)->comm, w);
}

static tsl_status c_test(tessel_host *h, tessel_work *w, int *done) {
  COMM_READY(h);
  return tsl_work_test(RT(h)->comm, w, done);
}

const tessel_comm_api *tsl_host_comm(void) {
  static const tessel_comm_api api = {.size = sizeof(tessel_comm_api),
                                      .group = c_group,
                                      .group_info = c_group_info,
                                      .coord = c_coord,
                                      .all_reduce = c_all_reduce,
                                      .reduce_scatter = c_reduce_scatter,
                                      .all_gather = c_all_gather,
                                      .all_to_all = c_all_to_all,
                                      .broadcast = c_broadcast,
                                      .reduce = c_reduce,
                                      .send = c_send,
                                      .recv = c_recv,
                                      .barrier = c_barrier,
                                      .wait = c_wait,
                                      .test = c_test};
  return &api;
}
