/* core/plugin/host.c — tessel_host_api: what a plugin may ask of the core:
** log and errors, the world, configuration, memory and streams (the
** communication, kernel, model and state tables live beside the modules
** they serve). */
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

static const char *plugin_name(const tsl_runtime *rt) { return rt->plugin ? rt->plugin->name : "plugin"; }

/* ---- hooks and errors ---- */

void tsl_hook_enter(tsl_runtime *rt) {
  tessel_host *h = &rt->host;
  pthread_mutex_lock(&h->lock);
  h->err[0] = '\0';
  h->err_status = 0;
  pthread_mutex_unlock(&h->lock);
  tsl_error_clear();
}

/* Frame `msg`, what went wrong in `hook`, as the strategy's failure. */
static tsl_status frame(tsl_runtime *rt, tsl_status st, const char *hook, const char *msg) {
  if (st == TESSEL_E_CONFIG && !tsl_has_position(msg) && rt->settings.plugin.section)
    return tsl_cfg_error(rt->settings.plugin.section, NULL, "%s", msg);
  tsl_error(st, "%s", msg);
  /* a plan has no ranks running: its hooks name the rank they describe */
  if (rt->world.size > 1 && !rt->plan)
    return tsl_error_wrap(st, "strategy '%s' failed in %s on rank %d", plugin_name(rt), hook, rt->world.rank);
  return tsl_error_wrap(st, "strategy '%s' failed in %s", plugin_name(rt), hook);
}

tsl_status tsl_hook_failed(tsl_runtime *rt, tsl_status st, const char *hook_fmt, ...) {
  tessel_host *h = &rt->host;
  char hook[256], msg[4096];
  va_list ap;
  va_start(ap, hook_fmt);
  vsnprintf(hook, sizeof hook, hook_fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&h->lock);
  snprintf(msg, sizeof msg, "%s", h->err[0] ? h->err : tsl_error_message());
  pthread_mutex_unlock(&h->lock);
  /* a status outside tessel_status is the plugin's bug; it must not pass for
  ** one of the core's own (TSL_E_DECLINED is -100), nor a positive one for
  ** success */
  if (st < TESSEL_E_NUMERIC || st > TESSEL_OK) {
    char own[4096];
    snprintf(own, sizeof own, "returned %d, which is not a tessel_status (0, or TESSEL_E_CONFIG .. TESSEL_E_NUMERIC)%s%s",
             (int)st, msg[0] ? ": " : "", msg);
    snprintf(msg, sizeof msg, "%s", own);
    st = TESSEL_E_INTERNAL;
  }
  if (!msg[0]) snprintf(msg, sizeof msg, "%s", tsl_status_name(st));
  return frame(rt, st, hook, msg);
}

tsl_status tsl_hook_refuse(tsl_runtime *rt, const char *hook_fmt, ...) {
  char hook[256], msg[4096];
  va_list ap;
  va_start(ap, hook_fmt);
  vsnprintf(hook, sizeof hook, hook_fmt, ap);
  va_end(ap);
  snprintf(msg, sizeof msg, "%s", tsl_error_message());
  return frame(rt, TESSEL_E_INTERNAL, hook, msg);
}

tsl_status tsl_hook_status(tsl_runtime *rt, tsl_status st, const char *hook) {
  return st != TESSEL_OK ? tsl_hook_failed(rt, st, "%s", hook) : st;
}

int tsl_hook_said(tsl_runtime *rt, tsl_status st) {
  tessel_host *h = &rt->host;
  pthread_mutex_lock(&h->lock);
  int said = h->err_status == st;
  pthread_mutex_unlock(&h->lock);
  return said;
}

static void host_log(tessel_host *h, int level, const char *fmt, ...) {
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (level == TESSEL_LOG_WARN && RT(h)->hush_plugin_warnings) level = TESSEL_LOG_DEBUG;
  tsl_log(level, "%s: %s", plugin_name(RT(h)), msg);
}

static tsl_status host_set_error(tessel_host *h, tessel_status st, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pthread_mutex_lock(&h->lock);
  vsnprintf(h->err, sizeof h->err, fmt, ap);
  h->err_status = st;
  pthread_mutex_unlock(&h->lock);
  va_end(ap);
  return st;
}

static tsl_status host_world(tessel_host *h, int *rank, int *size) {
  if (rank) *rank = RT(h)->world.rank;
  if (size) *size = RT(h)->world.size;
  return TESSEL_OK;
}

/* ---- configuration ---- */

static tsl_status cfg_child(tessel_host *h, const tessel_cfg *node, const char *key, const tessel_cfg **out) {
  (void)h;
  tsl_cfg *child = NULL;
  *out = NULL;
  if (!tsl_cfg_has((tsl_cfg *)node, key)) return TESSEL_OK;
  tsl_status st = tsl_cfg_section((tsl_cfg *)node, key, 0, &child);
  *out = (const tessel_cfg *)child;
  return st;
}

static tsl_status cfg_has(tessel_host *h, const tessel_cfg *node, const char *key, int *out) {
  (void)h;
  *out = tsl_cfg_has((tsl_cfg *)node, key);
  return TESSEL_OK;
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
  tsl_status st = tsl_cfg_int_list((tsl_cfg *)n, key, out, cap, count);
  if (st >= 0 && *count > cap)
    return tsl_cfg_error((tsl_cfg *)n, key, "lists %d values; at most %d are allowed here", *count, cap);
  return st;
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

/* A tier or memory kind from the plugin, checked before it indexes the
** ledger's per-tier and per-kind arrays: C converts enums silently, so a
** swapped or stray value compiles. `call` and `which` name it. */
static tsl_status check_tier(const char *call, const char *which, tessel_tier tier) {
  if ((unsigned)tier < TESSEL_TIER_COUNT) return TESSEL_OK;
  return tsl_error(TESSEL_E_INTERNAL, "mem->%s: %stier %d is not a tessel_tier (DEVICE 0, HOST 1 or NVME 2)", call,
                   which, (int)tier);
}

static tsl_status check_kind(const char *call, tessel_mem_kind kind) {
  if ((unsigned)kind < TESSEL_MEM_KIND_COUNT) return TESSEL_OK;
  return tsl_error(TESSEL_E_INTERNAL, "mem->%s: memory kind %d is not a tessel_mem_kind (PARAM 0 .. SCRATCH %d)",
                   call, (int)kind, TESSEL_MEM_KIND_COUNT - 1);
}

static tsl_status mem_alloc(tessel_host *h, tessel_tier tier, tessel_mem_kind kind, uint64_t bytes, const char *name,
                            void **out) {
  tsl_status st;
  if (!RT(h)->be_ready) return not_ready("memory allocation");
  if ((st = check_tier("alloc", "", tier)) < 0 || (st = check_kind("alloc", kind)) < 0) return st;
  return tsl_mem_alloc(&RT(h)->ledger, tier, kind, bytes, name, out);
}

static tsl_status mem_free(tessel_host *h, tessel_tier tier, void *ptr) {
  tsl_status st = check_tier("free", "", tier);
  if (st >= 0 && ptr && RT(h)->be_ready) tsl_mem_free(&RT(h)->ledger, tier, ptr);
  return st;
}

/* One side of a copy inside the allocation that holds it, when the ledger
** has one: a copy past its end would write over (or read) whatever lies
** next in memory, far from the call that did it. Memory the ledger does not
** know (the caller's own) cannot be checked. */
static tsl_status check_extent(const tsl_ledger *l, const char *which, tessel_tier tier, const void *p, uint64_t off,
                               uint64_t bytes) {
  tsl_mem_extent e;
  if (bytes == 0 || !tsl_mem_find(l, tier, p, &e)) return TESSEL_OK;
  uint64_t room = e.bytes - e.into;
  if (off <= room && bytes <= room - off) return TESSEL_OK;
  char at[64] = "";
  if (e.into) snprintf(at, sizeof at, ", the pointer %llu bytes into it", (unsigned long long)e.into);
  return tsl_error(TESSEL_E_INTERNAL,
                   "mem->copy: %llu bytes at offset %llu run past the end of the %s '%s', %llu bytes on the %s "
                   "tier%s: copy at most %llu bytes there",
                   (unsigned long long)bytes, (unsigned long long)off, which, e.name, (unsigned long long)e.bytes,
                   tsl_tier_name(tier), at, (unsigned long long)(off < room ? room - off : 0));
}

static tsl_status mem_copy(tessel_host *h, tessel_tier dt, void *dst, uint64_t doff, tessel_tier st, const void *src,
                           uint64_t soff, uint64_t bytes, tessel_stream *s) {
  tsl_status bad;
  if (!RT(h)->be_ready) return not_ready("memory copy");
  if ((bad = check_tier("copy", "the destination's ", dt)) < 0 || (bad = check_tier("copy", "the source's ", st)) < 0)
    return bad;
  if ((bad = check_extent(&RT(h)->ledger, "destination", dt, dst, doff, bytes)) < 0 ||
      (bad = check_extent(&RT(h)->ledger, "source", st, src, soff, bytes)) < 0)
    return bad;
  return tsl_mem_copy(&RT(h)->ledger, dt, dst, doff, st, src, soff, bytes, s ? (tsl_stream *)s : RT(h)->compute);
}

static tsl_status mem_stats(tessel_host *h, tessel_tier tier, tessel_tier_stats *out) {
  if (!RT(h)->be_ready) return not_ready("memory statistics");
  tsl_status st = check_tier("stats", "", tier);
  if (st < 0) return st;
  tessel_tier_stats full;
  tsl_mem_stats(&RT(h)->ledger, tier, &full);
  return tsl_copy_out(out, &full, sizeof full);
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

static tsl_status stream_compute(tessel_host *h, tessel_stream **out) {
  *out = (tessel_stream *)RT(h)->compute;
  return RT(h)->be_ready ? TESSEL_OK : not_ready("streams");
}

static tsl_status stream_comm(tessel_host *h, tessel_stream **out) {
  *out = (tessel_stream *)RT(h)->comm_stream;
  return RT(h)->be_ready ? TESSEL_OK : not_ready("streams");
}

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

static tsl_status stream_event_free(tessel_host *h, tessel_event *e) {
  if (RT(h)->be_ready) RT(h)->be.event_free(&RT(h)->be, (tsl_event *)e);
  return TESSEL_OK;
}

static const tessel_stream_api stream_api = {.size = sizeof(tessel_stream_api),
                                             .compute = stream_compute,
                                             .comm = stream_comm,
                                             .record = stream_record,
                                             .wait_event = stream_wait_event,
                                             .sync = stream_sync,
                                             .event_free = stream_event_free};

const tessel_host_api *tsl_host_api(void) {
  static tessel_host_api api;
  if (!api.size) {
    api = (tessel_host_api){.size = sizeof api,
                            .abi_version = TESSEL_ABI_VERSION,
                            .core_version = TESSEL_VERSION_STRING,
                            .log = host_log,
                            .set_error = host_set_error,
                            .world = host_world,
                            .cfg = &cfg_api,
                            .mem = &mem_api,
                            .stream = &stream_api,
                            .comm = tsl_host_comm(),
                            .kernels = tsl_host_kernels(),
                            .model = tsl_host_model(),
                            .state = tsl_host_state()};
  }
  return &api;
}
