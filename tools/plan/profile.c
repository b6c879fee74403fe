/* tools/plan/profile.c — machine profiles: reading, composing, looking up. */
#include "plan/profile.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "runtime/settings.h"
#include "train/peak.h"

static const char *const collective_keys[TESSEL_COLL_COUNT] = {
    "all_reduce", "reduce_scatter", "all_gather", "all_to_all", "broadcast", "reduce", "send", "recv"};

const char *tsl_collective_key(tessel_collective k) {
  return (unsigned)k < TESSEL_COLL_COUNT ? collective_keys[k] : "?";
}

int tsl_collective_parse(const char *s) {
  if (!strcmp(s, "any")) return -2;
  for (int k = 0; k < TESSEL_COLL_COUNT; k++)
    if (!strcmp(s, collective_keys[k])) return k;
  return -1;
}

char *tsl_comm_profile_path(const char *backend) {
  char name[64];
  snprintf(name, sizeof name, "comm-%s.json", backend);
  return tsl_cache_file(name);
}

void tsl_profile_free(tsl_profile *p) {
  free(p->links);
  p->links = NULL;
  p->n_links = 0;
}

/* ---- reading ---- */

typedef struct reader {
  const char *path;
  tsl_status st;
} reader;

static tsl_status bad(reader *r, const char *key, const char *what) {
  if (r->st >= 0) r->st = tsl_error(TESSEL_E_CONFIG, "%s: %s: %s", r->path, key, what);
  return r->st;
}

/* A positive number at obj.key into *out; absent: *out untouched. */
static void number(reader *r, const cJSON *obj, const char *key, double lo, double hi, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) return;
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= lo && v->valuedouble <= hi)) {
    char what[128];
    snprintf(what, sizeof what, "expected a number from %g to %g", lo, hi);
    bad(r, key, what);
    return;
  }
  *out = v->valuedouble;
}

/* A size ("80GiB" or a number of bytes); a number past what a uint64_t
** holds is refused, as tsl_parse_size refuses such a text (converting it
** would be undefined). */
static void size(reader *r, const cJSON *obj, const char *key, uint64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (!v) return;
  if (cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble <= 1.8e19) *out = (uint64_t)v->valuedouble;
  else if (!cJSON_IsString(v) || tsl_parse_size(v->valuestring, out) != 0)
    bad(r, key, "expected a size such as 80GiB");
}

/* The compute section; `measured`: the peak comes from `tessel bench peak`. */
static void read_compute(reader *r, const cJSON *c, tsl_profile *p, int measured) {
  const cJSON *dev = cJSON_GetObjectItemCaseSensitive(c, "device");
  if (!cJSON_IsString(dev) || (strcmp(dev->valuestring, "gpu") && strcmp(dev->valuestring, "cpu"))) {
    bad(r, "compute.device", "expected \"gpu\" or \"cpu\"");
    return;
  }
  p->gpu = !strcmp(dev->valuestring, "gpu");
  double tflops = 0, gflops = 0, gbps = 0;
  if (p->gpu) {
    number(r, c, "peak_tflops", 1e-6, 1e6, &tflops);
    if (tflops <= 0 && !measured) bad(r, "compute.peak_tflops", "a gpu profile needs the device's peak");
    p->peak = tflops * 1e12;
  } else {
    number(r, c, "gflops_per_core", 1e-6, 1e9, &gflops);
    number(r, c, "cores", 1, 1e6, &p->cores);
    if (gflops <= 0 && !measured) bad(r, "compute.gflops_per_core", "a cpu profile needs the GEMM rate of one core");
    if (p->cores <= 0) bad(r, "compute.cores", "a cpu profile needs the cores of one machine");
    p->peak = gflops * 1e9;
  }
  number(r, c, "efficiency", 1e-3, 1, &p->efficiency);
  number(r, c, "memory_gbps", 1e-3, 1e6, &gbps);
  if (gbps > 0) p->memory_bw = gbps * 1e9;
}

static void read_link(reader *r, const cJSON *o, tsl_link *l) {
  const cJSON *within = cJSON_GetObjectItemCaseSensitive(o, "within");
  const cJSON *coll = cJSON_GetObjectItemCaseSensitive(o, "collective");
  double ranks = 0, world = 0, alpha_us = -1, busbw = -1;
  if (!cJSON_IsString(within) || (strcmp(within->valuestring, "node") && strcmp(within->valuestring, "cluster"))) {
    bad(r, "links[].within", "expected \"node\" or \"cluster\"");
    return;
  }
  l->within = strcmp(within->valuestring, "node") ? TSL_WITHIN_CLUSTER : TSL_WITHIN_NODE;
  l->kind = -1;
  if (coll) {
    int k = cJSON_IsString(coll) ? tsl_collective_parse(coll->valuestring) : -1;
    if (k == -1) {
      bad(r, "links[].collective", "expected any, all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, "
                                   "reduce or send");
      return;
    }
    l->kind = k < 0 ? -1 : k;
  }
  number(r, o, "ranks", 0, 1 << 24, &ranks);
  number(r, o, "world", 0, 1 << 24, &world);
  number(r, o, "alpha_us", 0, 1e9, &alpha_us);
  number(r, o, "busbw_gbps", 1e-9, 1e9, &busbw);
  if (alpha_us < 0 || busbw <= 0) bad(r, "links[]", "each link needs alpha_us and busbw_gbps");
  l->ranks = (int)ranks;
  l->world = (int)world;
  l->alpha = alpha_us * 1e-6;
  l->busbw = busbw * 1e9;
}

static void read_streams(reader *r, const cJSON *streams, tsl_profile *p) {
  const cJSON *o;
  cJSON_ArrayForEach(o, streams) {
    double world = 0, gbps = 0;
    number(r, o, "world", 1, 1 << 24, &world);
    number(r, o, "gbps", 1e-6, 1e9, &gbps);
    if (world < 1 || gbps <= 0) bad(r, "streams[]", "each needs world and gbps");
    if (p->n_streams == (int)(sizeof p->stream_bw / sizeof p->stream_bw[0])) {
      bad(r, "streams", "at most 8 measurements");
      return;
    }
    p->stream_world[p->n_streams] = (int)world;
    p->stream_bw[p->n_streams++] = gbps * 1e9;
  }
}

static void read_profile(reader *r, const cJSON *root, tsl_profile *p, int measured) {
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(root, "name");
  const cJSON *compute = cJSON_GetObjectItemCaseSensitive(root, "compute");
  const cJSON *memory = cJSON_GetObjectItemCaseSensitive(root, "memory");
  const cJSON *links = cJSON_GetObjectItemCaseSensitive(root, "links");
  const cJSON *streams = cJSON_GetObjectItemCaseSensitive(root, "streams");
  double per_node = 0;
  if (cJSON_IsString(name)) snprintf(p->name, sizeof p->name, "%s", name->valuestring);
  number(r, root, "ranks_per_node", 0, 1 << 24, &per_node);
  number(r, root, "overlap", 0, 1, &p->overlap);
  p->ranks_per_node = (int)per_node;
  if (!cJSON_IsObject(compute)) bad(r, "compute", "missing: how fast a rank computes");
  else read_compute(r, compute, p, measured);
  if (cJSON_IsObject(memory)) {
    size(r, memory, "device", &p->device_memory);
    size(r, memory, "host", &p->host_memory);
  }
  if (cJSON_IsArray(streams)) read_streams(r, streams, p);
  if (!cJSON_IsArray(links) || cJSON_GetArraySize(links) == 0) {
    bad(r, "links", "missing: the α–β of the collectives (a list of links)");
    return;
  }
  p->n_links = cJSON_GetArraySize(links);
  p->links = calloc((size_t)p->n_links, sizeof *p->links);
  if (!p->links) {
    r->st = tsl_error(TESSEL_E_NOMEM, "out of host memory reading %s", r->path);
    return;
  }
  int i = 0;
  for (const cJSON *l = links->child; l; l = l->next) read_link(r, l, &p->links[i++]);
}

/* Defaults a profile may leave out: a GEMM-bound step reaches about half of
** the peak; a rank streams its optimizer state at 10 GB/s (CPU) or 1 TB/s
** (GPU); NCCL hides overlappable transfers, MPI on a CPU only partly (it
** progresses inside MPI calls). */
static void defaults(tsl_profile *p) {
  memset(p, 0, sizeof *p);
  p->efficiency = 0.5;
  p->overlap = -1;
}

static void finish_defaults(tsl_profile *p) {
  if (p->memory_bw <= 0) p->memory_bw = p->gpu ? 1e12 : 1e10;
  if (p->overlap < 0) p->overlap = p->gpu ? 0.9 : 0.5;
}

static tsl_status parse(const char *path, const char *text, int measured, tsl_profile *out) {
  reader r = {path, TESSEL_OK};
  cJSON *root = cJSON_Parse(text);
  if (!cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return tsl_error(TESSEL_E_CONFIG, "%s: not a JSON object (a machine profile: docs/plan.md)", path);
  }
  read_profile(&r, root, out, measured);
  cJSON_Delete(root);
  return r.st;
}

tsl_status tsl_profile_load(const char *path, tsl_profile *out) {
  char *text = NULL;
  defaults(out);
  snprintf(out->source, sizeof out->source, "%s", path);
  tsl_status st = tsl_read_file(path, &text, NULL);
  if (st >= 0) st = parse(path, text, 0, out);
  free(text);
  if (st < 0) {
    tsl_profile_free(out);
    return st;
  }
  if (!out->name[0]) snprintf(out->name, sizeof out->name, "%s", path);
  finish_defaults(out);
  return TESSEL_OK;
}

tsl_status tsl_profile_local(const char *backend, tsl_profile *out) {
  char *path = tsl_comm_profile_path(backend), *text = NULL;
  int gpu = !strcmp(backend, "cuda");
  defaults(out);
  tsl_status st = path ? TESSEL_OK : TESSEL_E_NOMEM;
  if (st >= 0 && !tsl_path_exists(path))
    st = tsl_error(TESSEL_E_CONFIG,
                   "no measured profile of this machine's collectives (%s): run `mpirun -n N tessel bench comm%s` (N "
                   "the most ranks you plan for), or give --profile FILE",
                   path, gpu ? " --device cuda" : "");
  if (st >= 0) st = tsl_read_file(path, &text, NULL);
  if (st >= 0) st = parse(path, text, 1, out);
  free(text);
  if (st >= 0 && !(out->peak > 0)) {
    /* the GEMM rate `tessel bench peak` recorded: per thread on a CPU */
    tsl_settings s = {0};
    s.device.kind = gpu ? TSL_DEVICE_CUDA : TSL_DEVICE_CPU;
    out->peak = tsl_peak_flops(&s, 1.0);
    if (out->peak <= 0)
      st = tsl_error(TESSEL_E_CONFIG, "no measured GEMM peak for the %s backend: run `tessel bench peak`, or give "
                                      "--profile FILE", backend);
  }
  if (st < 0) {
    tsl_profile_free(out);
    free(path);
    return st;
  }
  snprintf(out->source, sizeof out->source, "%s", path);
  free(path);
  finish_defaults(out);
  return TESSEL_OK;
}

/* ---- lookup ---- */

double tsl_profile_stream(const tsl_profile *p, int world) {
  double best = p->memory_bw, gap_best = INFINITY;
  for (int i = 0; i < p->n_streams; i++) {
    double g = fabs(log((double)p->stream_world[i] / (double)world));
    if (g < gap_best) {
      gap_best = g;
      best = p->stream_bw[i];
    }
  }
  return best;
}

/* How far apart two counts are, as a ratio; an entry for any count is as
** near as one a factor 1.65 off (an exact one is nearer). */
static double gap(int have, int want) { return have > 0 ? fabs(log((double)have / (double)want)) : 0.5; }

const tsl_link *tsl_profile_link(const tsl_profile *p, tessel_collective kind, int ranks, int nodes, int world) {
  tsl_within want = nodes > 1 ? TSL_WITHIN_CLUSTER : TSL_WITHIN_NODE;
  const tsl_link *best = NULL;
  double best_score = INFINITY;
  for (int i = 0; i < p->n_links; i++) {
    const tsl_link *l = &p->links[i];
    if (l->within != want || (l->kind >= 0 && l->kind != (int)kind)) continue;
    double score = (l->kind >= 0 ? 0.0 : 1e4) + 100.0 * gap(l->world, world) + gap(l->ranks, ranks);
    if (score < best_score) {
      best_score = score;
      best = l;
    }
  }
  /* a profile of one machine serves groups that would span several */
  return best || want == TSL_WITHIN_NODE ? best : tsl_profile_link(p, kind, ranks, 1, world);
}
