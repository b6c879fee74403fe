/* core/plugin/host.c — tessel_host_api: what a plugin may ask of the core. */
#include "host.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "compute/compute.h"

#define RT(h) ((h)->rt)

static tsl_status not_ready(const char *what) {
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s is not available yet: it exists once a run has built its devices "
                                         "(not during `tessel check` or the create/mesh/layout hooks)", what);
}

/* ---- log, errors, world ---- */

static void host_log(tessel_host *h, int level, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tsl_log(level, "%s: %s", RT(h)->plugin ? RT(h)->plugin->name : "plugin", msg);
}

static tsl_status host_set_error(tessel_host *h, tessel_status st, const char *fmt, ...) {
  (void)h;
  va_list ap;
  va_start(ap, fmt);
  tsl_verror(st, fmt, ap);
  va_end(ap);
  return st;
}

static int host_world_size(tessel_host *h) { return RT(h)->world.size; }
static int host_world_rank(tessel_host *h) { return RT(h)->world.rank; }

/* ---- configuration ---- */

static const tessel_cfg *cfg_child(tessel_host *h, const tessel_cfg *node, const char *key) {
  (void)h;
  tsl_cfg *out = NULL;
  if (!tsl_cfg_has((tsl_cfg *)node, key)) return NULL;
  return tsl_cfg_section((tsl_cfg *)node, key, 0, &out) < 0 ? NULL : out;
}

static int cfg_has(tessel_host *h, const tessel_cfg *node, const char *key) {
  (void)h;
  return tsl_cfg_has((tsl_cfg *)node, key);
}

static tsl_status cfg_int(tessel_host *h, const tessel_cfg *n, const char *key, int64_t dflt, int64_t min, int64_t max,
                          int64_t *out) {
  (void)h;
  return tsl_cfg_int((tsl_cfg *)n, key, dflt, min, max, out);
}

static tsl_status cfg_float(tessel_host *h, const tessel_cfg *n, const char *key, double dflt, double min, double max,
                            double *out) {
  (void)h;
  return tsl_cfg_float((tsl_cfg *)n, key, dflt, min, max, out);
}

static tsl_status cfg_bool(tessel_host *h, const tessel_cfg *n, const char *key, int dflt, int *out) {
  (void)h;
  return tsl_cfg_bool((tsl_cfg *)n, key, dflt, out);
}

static tsl_status cfg_size(tessel_host *h, const tessel_cfg *n, const char *key, uint64_t dflt, uint64_t *out) {
  (void)h;
  return tsl_cfg_size((tsl_cfg *)n, key, dflt, out);
}

static tsl_status cfg_string(tessel_host *h, const tessel_cfg *n, const char *key, const char *dflt, const char **out) {
  (void)h;
  return tsl_cfg_string((tsl_cfg *)n, key, dflt, out);
}

static tsl_status cfg_enum(tessel_host *h, const tessel_cfg *n, const char *key, const char *const *choices, int dflt,
                           int *out) {
  (void)h;
  return tsl_cfg_enum((tsl_cfg *)n, key, choices, dflt, out);
}

static tsl_status cfg_int_list(tessel_host *h, const tessel_cfg *n, const char *key, int64_t *out, int cap, int *count) {
  (void)h;
  return tsl_cfg_int_list((tsl_cfg *)n, key, out, cap, count);
}

static tsl_status cfg_error_at(tessel_host *h, const tessel_cfg *n, const char *key, const char *fmt, ...) {
  (void)h;
  va_list ap;
  va_start(ap, fmt);
  tsl_status st = tsl_cfg_verror((tsl_cfg *)n, key && tsl_cfg_has((tsl_cfg *)n, key) ? key : NULL, fmt, ap);
  va_end(ap);
  return st;
}

static const tessel_cfg_api cfg_api = {
    .size = sizeof(tessel_cfg_api),
    .child = cfg_child,
    .has = cfg_has,
    .get_int = cfg_int,
    .get_float = cfg_float,
    .get_bool = cfg_bool,
    .get_size = cfg_size,
    .get_string = cfg_string,
    .get_enum = cfg_enum,
    .get_int_list = cfg_int_list,
    .error_at = cfg_error_at,
};

/* ---- memory ---- */

static tsl_status mem_alloc(tessel_host *h, tessel_tier tier, tessel_mem_kind kind, uint64_t bytes, const char *name,
                            void **out) {
  if (!RT(h)->be_ready) return not_ready("memory allocation");
  return tsl_mem_alloc(&RT(h)->ledger, tier, kind, bytes, name, out);
}

static void mem_free(tessel_host *h, tessel_tier tier, void *ptr) {
  if (RT(h)->be_ready) tsl_mem_free(&RT(h)->ledger, tier, ptr);
}

static tsl_status mem_copy(tessel_host *h, tessel_tier dt, void *dst, uint64_t doff, tessel_tier st, const void *src,
                           uint64_t soff, uint64_t bytes, tessel_stream *s) {
  if (!RT(h)->be_ready) return not_ready("memory copy");
  return tsl_mem_copy(&RT(h)->ledger, dt, dst, doff, st, src, soff, bytes, s ? (tsl_stream *)s : RT(h)->compute);
}

static tsl_status mem_stats(tessel_host *h, tessel_tier tier, tessel_tier_stats *out) {
  if (!RT(h)->be_ready) return not_ready("memory statistics");
  tsl_mem_stats(&RT(h)->ledger, tier, out);
  return TESSEL_OK;
}

static tsl_status mem_set_nvme_dir(tessel_host *h, const char *dir) {
  if (!RT(h)->be_ready) return not_ready("the nvme tier");
  return tsl_ledger_set_nvme_dir(&RT(h)->ledger, dir);
}

static const tessel_mem_api mem_api = {.size = sizeof(tessel_mem_api),
                                       .alloc = mem_alloc,
                                       .free = mem_free,
                                       .copy = mem_copy,
                                       .stats = mem_stats,
                                       .set_nvme_dir = mem_set_nvme_dir};

/* ---- streams ---- */

static tessel_stream *stream_compute(tessel_host *h) { return (tessel_stream *)RT(h)->compute; }
static tessel_stream *stream_comm(tessel_host *h) { return (tessel_stream *)RT(h)->comm_stream; }

static tsl_status stream_record(tessel_host *h, tessel_stream *s, tessel_event **out) {
  if (!RT(h)->be_ready) return not_ready("stream events");
  tsl_backend *be = &RT(h)->be;
  return be->event_record(be, (tsl_stream *)s, (tsl_event **)out);
}

static tsl_status stream_wait_event(tessel_host *h, tessel_stream *waiter, tessel_event *e) {
  if (!RT(h)->be_ready) return not_ready("stream events");
  tsl_backend *be = &RT(h)->be;
  return be->event_wait(be, (tsl_stream *)waiter, (tsl_event *)e);
}

static tsl_status stream_sync(tessel_host *h, tessel_stream *s) {
  if (!RT(h)->be_ready) return not_ready("stream sync");
  tsl_backend *be = &RT(h)->be;
  return be->stream_sync(be, (tsl_stream *)s);
}

static void stream_event_free(tessel_host *h, tessel_event *e) {
  if (RT(h)->be_ready) RT(h)->be.event_free(&RT(h)->be, (tsl_event *)e);
}

static const tessel_stream_api stream_api = {.size = sizeof(tessel_stream_api),
                                             .compute = stream_compute,
                                             .comm = stream_comm,
                                             .record = stream_record,
                                             .wait_event = stream_wait_event,
                                             .sync = stream_sync,
                                             .event_free = stream_event_free};

/* ---- communication ---- */

#define COMM_READY(h)                                               \
  do {                                                              \
    if (!RT(h)->comm) return not_ready("communication");            \
  } while (0)

static tsl_status comm_group(tessel_host *h, uint32_t axes, tessel_group **out) {
  COMM_READY(h);
  return tsl_comm_group(RT(h)->comm, axes, out);
}
static int comm_rank(tessel_host *h, const tessel_group *g) { (void)h; return tsl_group_rank(g); }
static int comm_nranks(tessel_host *h, const tessel_group *g) { (void)h; return tsl_group_size(g); }
static int comm_coord(tessel_host *h, int axis) { return RT(h)->comm ? tsl_comm_coord(RT(h)->comm, axis) : 0; }

static tsl_status comm_all_reduce(tessel_host *h, tessel_group *g, const void *s, void *r, uint64_t n, tessel_dtype dt,
                                  tessel_redop op, tessel_work **w) {
  COMM_READY(h);
  return tsl_all_reduce(RT(h)->comm, g, s, r, n, dt, op, w);
}
static tsl_status comm_reduce_scatter(tessel_host *h, tessel_group *g, const void *s, void *r, uint64_t n,
                                      tessel_dtype dt, tessel_redop op, tessel_work **w) {
  COMM_READY(h);
  return tsl_reduce_scatter(RT(h)->comm, g, s, r, n, dt, op, w);
}
static tsl_status comm_all_gather(tessel_host *h, tessel_group *g, const void *s, void *r, uint64_t n, tessel_dtype dt,
                                  tessel_work **w) {
  COMM_READY(h);
  return tsl_all_gather(RT(h)->comm, g, s, r, n, dt, w);
}
static tsl_status comm_broadcast(tessel_host *h, tessel_group *g, void *b, uint64_t n, tessel_dtype dt, int root,
                                 tessel_work **w) {
  COMM_READY(h);
  return tsl_broadcast(RT(h)->comm, g, b, n, dt, root, w);
}
static tsl_status comm_reduce(tessel_host *h, tessel_group *g, const void *s, void *r, uint64_t n, tessel_dtype dt,
                              tessel_redop op, int root, tessel_work **w) {
  COMM_READY(h);
  return tsl_reduce(RT(h)->comm, g, s, r, n, dt, op, root, w);
}
static tsl_status comm_send(tessel_host *h, tessel_group *g, const void *b, uint64_t n, tessel_dtype dt, int peer,
                            tessel_work **w) {
  COMM_READY(h);
  return tsl_send(RT(h)->comm, g, b, n, dt, peer, w);
}
static tsl_status comm_recv(tessel_host *h, tessel_group *g, void *b, uint64_t n, tessel_dtype dt, int peer,
                            tessel_work **w) {
  COMM_READY(h);
  return tsl_recv(RT(h)->comm, g, b, n, dt, peer, w);
}
static tsl_status comm_barrier(tessel_host *h, tessel_group *g) {
  COMM_READY(h);
  return tsl_barrier(RT(h)->comm, g);
}
static tsl_status comm_wait(tessel_host *h, tessel_work *w) {
  COMM_READY(h);
  return tsl_work_wait(RT(h)->comm, w);
}
static tsl_status comm_test(tessel_host *h, tessel_work *w, int *done) {
  COMM_READY(h);
  return tsl_work_test(RT(h)->comm, w, done);
}

static const tessel_comm_api comm_api = {.size = sizeof(tessel_comm_api),
                                         .group = comm_group,
                                         .rank = comm_rank,
                                         .nranks = comm_nranks,
                                         .coord = comm_coord,
                                         .all_reduce = comm_all_reduce,
                                         .reduce_scatter = comm_reduce_scatter,
                                         .all_gather = comm_all_gather,
                                         .broadcast = comm_broadcast,
                                         .reduce = comm_reduce,
                                         .send = comm_send,
                                         .recv = comm_recv,
                                         .barrier = comm_barrier,
                                         .wait = comm_wait,
                                         .test = comm_test};

const tessel_host_api *tsl_host_api(void) {
  static tessel_host_api api;
  if (!api.size) {
    api = (tessel_host_api){.size = sizeof api,
                            .abi_version = TESSEL_ABI_VERSION,
                            .core_version = TESSEL_VERSION_STRING,
                            .log = host_log,
                            .set_error = host_set_error,
                            .world_size = host_world_size,
                            .world_rank = host_world_rank,
                            .cfg = &cfg_api,
                            .mem = &mem_api,
                            .stream = &stream_api,
                            .comm = &comm_api,
                            .kernels = tsl_host_kernels(),
                            .model = tsl_host_model()};
  }
  return &api;
}
