/*
** tools/plan/commbench.c — measuring the collectives for a machine profile.
**
** For every group size n the world can be cut into (the powers of two up
** to the world, and the world), the ranks form groups of n consecutive
** ranks — the way a mesh's fastest axis groups them — and every group runs
** each collective at a few message sizes at once. A size is timed over
** enough calls to take tens of milliseconds, after a warm-up, and the
** slowest rank's median timing is kept. The two largest sizes give the
** bus bandwidth, the smallest what α is beyond its bytes (fit): the α–β
** model `tessel plan` times traffic with. Sends are timed as the
** pipeline uses them: both ranks of a pair send and receive at once.
*/
#include "plan/commbench.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "plan/plan.h"
#include "plan/profile.h"
#include "runtime/build.h"
#include "train/peak.h"

#define SIZES 5
#define KINDS 7

static const tessel_collective kinds[KINDS] = {TESSEL_COLL_ALL_REDUCE, TESSEL_COLL_REDUCE_SCATTER,
                                               TESSEL_COLL_ALL_GATHER, TESSEL_COLL_ALL_TO_ALL,
                                               TESSEL_COLL_BROADCAST,  TESSEL_COLL_REDUCE,
                                               TESSEL_COLL_SEND};

typedef struct bench {
  tsl_runtime rt;
  tsl_comm *comm;
  tessel_group *g;
  int n, rank;      /* the group's size and this rank's place in it */
  float *send, *recv;
} bench;

/* One call of `kind` moving `payload` bytes as the core counts them. */
static tsl_status call(bench *b, tessel_collective kind, uint64_t payload) {
  uint64_t count = payload / sizeof(float), block = count / (uint64_t)b->n;
  tsl_comm *c = b->comm;
  switch (kind) {
    case TESSEL_COLL_ALL_REDUCE: return tsl_all_reduce(c, b->g, b->send, b->recv, count, TESSEL_F32, TESSEL_SUM, NULL);
    case TESSEL_COLL_REDUCE_SCATTER:
      return tsl_reduce_scatter(c, b->g, b->send, b->recv, block, TESSEL_F32, TESSEL_SUM, NULL);
    case TESSEL_COLL_ALL_GATHER: return tsl_all_gather(c, b->g, b->send, b->recv, block, TESSEL_F32, NULL);
    case TESSEL_COLL_ALL_TO_ALL: return tsl_all_to_all(c, b->g, b->send, b->recv, block, TESSEL_F32, NULL);
    case TESSEL_COLL_BROADCAST: return tsl_broadcast(c, b->g, b->send, count, TESSEL_F32, 0, NULL);
    case TESSEL_COLL_REDUCE: return tsl_reduce(c, b->g, b->send, b->recv, count, TESSEL_F32, TESSEL_SUM, 0, NULL);
    default: {
      tessel_work *sent, *got;
      int peer = b->rank ^ 1;
      if (peer >= b->n) return TESSEL_OK; /* an odd group's last rank sits out */
      tsl_status st = tsl_send(c, b->g, b->send, count, TESSEL_F32, peer, &sent);
      if (st < 0) return st;
      st = tsl_recv(c, b->g, b->recv, count, TESSEL_F32, peer, &got);
      tsl_status s2 = st >= 0 ? tsl_work_wait(c, got) : st, s1 = tsl_work_wait(c, sent);
      return s1 < 0 ? s1 : s2;
    }
  }
}

/* Seconds per call of the slowest rank: the median of three timings, each
** a mean over enough calls to take tens of milliseconds (the machine may be
** shared; the median ignores one disturbed timing). */
static tsl_status time_calls(bench *b, tessel_collective kind, uint64_t payload, double *seconds) {
  tsl_status st;
  int iters = (int)TSL_MAX(3, TSL_MIN(50, (32u << 20) / TSL_MAX(payload, 1)));
  double t[3];
  for (int i = 0; i < 2; i++) TSL_TRY(st, call(b, kind, payload));
  for (int r = 0; r < 3; r++) {
    TSL_TRY(st, tsl_world_barrier(&b->rt.world));
    double t0 = tsl_now();
    for (int i = 0; i < iters; i++) TSL_TRY(st, call(b, kind, payload));
    int rc = b->rt.be.stream_sync(&b->rt.be, b->rt.compute);
    if (rc < 0) return tsl_error_wrap(rc, "waiting for the collectives");
    t[r] = (tsl_now() - t0) / iters;
    TSL_TRY(st, tsl_comm_world_reduce(b->comm, &t[r], 1, TESSEL_MAX));
  }
  double lo = TSL_MIN(t[0], TSL_MIN(t[1], t[2])), hi = TSL_MAX(t[0], TSL_MAX(t[1], t[2]));
  *seconds = t[0] + t[1] + t[2] - lo - hi;
  return TESSEL_OK;
fail:
  return st;
}

/* α and the bus bandwidth from (bus bytes, seconds) at growing sizes: the
** bandwidth from the two largest (where α no longer counts), α what the
** smallest took beyond its bytes. */
static void fit(const double *x, const double *y, int n, double *alpha, double *busbw) {
  double dx = x[n - 1] - x[n - 2], dy = y[n - 1] - y[n - 2];
  *busbw = dy > 0 ? dx / dy : x[n - 1] / y[n - 1];
  *alpha = TSL_MAX(0.0, y[0] - x[0] / *busbw);
}

/* Every collective on groups of n ranks; one link per collective. */
static tsl_status measure_size(bench *b, int n, const tsl_commbench_opts *o, cJSON *links, FILE *log) {
  tsl_status st;
  int world = b->rt.world.size;
  tessel_mesh mesh = {.size = sizeof mesh, .naxes = 2, .names = {"others", "group"}, .sizes = {world / n, n},
                      .data_axes = 1};
  tsl_comm_device dev = {.be = &b->rt.be, .compute = b->rt.compute, .comm = b->rt.comm_stream};
  TSL_TRY(st, tsl_comm_create(&b->rt.world, &mesh, &dev, &b->comm));
  TSL_TRY(st, tsl_comm_group(b->comm, 1u << 1, &b->g));
  b->n = n;
  b->rank = tsl_group_rank(b->g);
  /* spans machines when a group holds more ranks than a machine runs */
  int spans = n > b->rt.world.local_size;
  for (int k = 0; k < KINDS; k++) {
    double x[SIZES], y[SIZES];
    for (int s = 0; s < SIZES; s++) {
      uint64_t payload = (uint64_t)(o->max_bytes / pow(8.0, SIZES - 1 - s));
      payload = TSL_MAX(payload / (4u * (uint64_t)n) * 4u * (uint64_t)n, 4u * (uint64_t)n);
      TSL_TRY(st, time_calls(b, kinds[k], payload, &y[s]));
      x[s] = (double)payload * tsl_plan_bus_factor(kinds[k], n);
    }
    double alpha, busbw;
    fit(x, y, SIZES, &alpha, &busbw);
    cJSON *l = cJSON_CreateObject();
    cJSON_AddStringToObject(l, "within", spans ? "cluster" : "node");
    cJSON_AddStringToObject(l, "collective", tsl_collective_key(kinds[k]));
    cJSON_AddNumberToObject(l, "ranks", n);
    cJSON_AddNumberToObject(l, "world", world);
    cJSON_AddNumberToObject(l, "alpha_us", alpha * 1e6);
    cJSON_AddNumberToObject(l, "busbw_gbps", busbw / 1e9);
    cJSON_AddItemToArray(links, l);
    if (log)
      fprintf(log, "%-14s %5d  %10.1f  %10.3f   (%.0f B: %.1f us ... %.0f B: %.1f us)\n", tsl_collective_key(kinds[k]),
              n, alpha * 1e6, busbw / 1e9, x[0], y[0] * 1e6, x[SIZES - 1], y[SIZES - 1] * 1e6);
  }
fail:
  tsl_comm_destroy(b->comm);
  b->comm = NULL;
  return st;
}

/* Bytes per second one rank reads and writes while every rank copies
** (the slowest rank's): what streaming optimizer state runs at. */
static tsl_status memory_rate(bench *b, double *rate) {
  size_t bytes = 64u << 20;
  char *a = malloc(bytes), *c = malloc(bytes);
  if (!a || !c) {
    free(a);
    free(c);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory measuring memory bandwidth");
  }
  memset(a, 1, bytes);
  memset(c, 0, bytes);
  tsl_status st = tsl_world_barrier(&b->rt.world);
  double t0 = tsl_now();
  for (int i = 0; i < 5; i++) memcpy(i % 2 ? a : c, i % 2 ? c : a, bytes);
  double r = 5.0 * 2.0 * (double)bytes / (tsl_now() - t0);
  free(a);
  free(c);
  double slowest = -r; /* the slowest rank: the largest negative */
  if (st >= 0) {
    tessel_mesh one = {.size = sizeof one, .naxes = 1, .names = {"world"}, .sizes = {b->rt.world.size}, .data_axes = 1};
    if ((st = tsl_comm_create(&b->rt.world, &one, NULL, &b->comm)) >= 0)
      st = tsl_comm_world_reduce(b->comm, &slowest, 1, TESSEL_MAX);
    tsl_comm_destroy(b->comm);
    b->comm = NULL;
  }
  *rate = -slowest;
  return st;
}

/* Append the entries of a previous profile's list `key` measured at other
** world sizes. */
static void keep_other_worlds(const char *previous, const char *key, int world, cJSON *list) {
  cJSON *old = previous ? cJSON_Parse(previous) : NULL, *l;
  cJSON_ArrayForEach(l, cJSON_GetObjectItemCaseSensitive(old, key)) {
    const cJSON *w = cJSON_GetObjectItemCaseSensitive(l, "world");
    if (cJSON_IsNumber(w) && (int)w->valuedouble != world) cJSON_AddItemToArray(list, cJSON_Duplicate(l, 1));
  }
  cJSON_Delete(old);
}

static cJSON *profile_json(const bench *b, const tsl_commbench_opts *o, double memory_bw, cJSON *links) {
  cJSON *streams = cJSON_CreateArray(), *one = cJSON_CreateObject();
  cJSON_AddNumberToObject(one, "world", b->rt.world.size);
  cJSON_AddNumberToObject(one, "gbps", memory_bw / 1e9);
  cJSON_AddItemToArray(streams, one);
  keep_other_worlds(o->previous, "streams", b->rt.world.size, streams);
  keep_other_worlds(o->previous, "links", b->rt.world.size, links);
  char host[256] = "this machine";
  gethostname(host, sizeof host - 1);
  cJSON *root = cJSON_CreateObject();
  char *name = tsl_asprintf("%s, %s, measured by tessel bench comm", host,
                            o->device == TSL_DEVICE_CUDA ? "NCCL" : "MPI");
  cJSON_AddStringToObject(root, "name", name ? name : host);
  free(name);
  cJSON_AddNumberToObject(root, "ranks_per_node", b->rt.world.local_size);
  cJSON *compute = cJSON_AddObjectToObject(root, "compute");
  cJSON_AddStringToObject(compute, "device", o->device == TSL_DEVICE_CUDA ? "gpu" : "cpu");
  /* the GEMM rate on record (`tessel bench peak`, or measured above): a device's, or one thread's */
  tsl_settings s = {0};
  s.device.kind = o->device;
  double peak = tsl_peak_flops(&s, 1.0);
  if (peak > 0 && o->device == TSL_DEVICE_CUDA) cJSON_AddNumberToObject(compute, "peak_tflops", peak / 1e12);
  if (peak > 0 && o->device != TSL_DEVICE_CUDA) cJSON_AddNumberToObject(compute, "gflops_per_core", peak / 1e9);
  if (o->device != TSL_DEVICE_CUDA) cJSON_AddNumberToObject(compute, "cores", (double)sysconf(_SC_NPROCESSORS_ONLN));
  cJSON_AddItemToObject(root, "streams", streams);
  cJSON_AddItemToObject(root, "links", links);
  return root;
}

tsl_status tsl_commbench_run(const tsl_world *w, const tsl_commbench_opts *o, FILE *log, char **json) {
  bench b = {0};
  tsl_status st;
  *json = NULL;
  b.rt.world = *w;
  b.rt.settings.device.kind = o->device;
  b.rt.settings.device.threads = o->threads;
  if (w->size < 2)
    return tsl_error(TESSEL_E_CONFIG, "collectives need two ranks or more: run `mpirun -n N tessel bench comm` "
                                      "(or srun), N the most ranks you will plan for");
  cJSON *links = cJSON_CreateArray();
  double memory_bw = 0;
  TSL_TRY(st, tsl_runtime_devices(&b.rt));
  /* the profile's compute rate: without it `tessel plan` cannot time a step */
  TSL_TRY(st, tsl_peak_ensure(&b.rt));
  uint64_t bytes = (uint64_t)o->max_bytes;
  TSL_TRY(st, tsl_mem_alloc(&b.rt.ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, bytes, "send buffer", (void **)&b.send));
  TSL_TRY(st, tsl_mem_alloc(&b.rt.ledger, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, bytes, "receive buffer",
                            (void **)&b.recv));
  if (log && w->rank == 0)
    fprintf(log, "%-14s %5s  %10s  %10s\n", "collective", "ranks", "alpha us", "busbw GB/s");
  for (int n = 2; n <= w->size; n = n < w->size && 2 * n > w->size ? w->size : 2 * n) {
    if (w->size % n == 0) TSL_TRY(st, measure_size(&b, n, o, links, w->rank == 0 ? log : NULL));
    if (n == w->size) break;
  }
  TSL_TRY(st, memory_rate(&b, &memory_bw));
  if (w->rank == 0) {
    cJSON *root = profile_json(&b, o, memory_bw, links);
    links = NULL;
    *json = cJSON_Print(root);
    cJSON_Delete(root);
    if (!*json) st = tsl_error(TESSEL_E_NOMEM, "out of host memory writing the profile");
  }
fail:
  cJSON_Delete(links);
  if (b.send) tsl_mem_free(&b.rt.ledger, TESSEL_TIER_DEVICE, b.send);
  if (b.recv) tsl_mem_free(&b.rt.ledger, TESSEL_TIER_DEVICE, b.recv);
  tsl_runtime_destroy(&b.rt);
  return st;
}
