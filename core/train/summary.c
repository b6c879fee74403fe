/* core/train/summary.c */
#include "train/summary.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/stats.h"
#include "common/util.h"
#include "mem/ledger.h"
#include "runtime/cpus.h"
#include "train/signals.h"

enum { KINDS = 5, PER_TIER = 1 + KINDS, RANK_VALUES = TESSEL_TIER_COUNT * PER_TIER + 3 };
static const char *const kind_names[KINDS] = {"params", "grads", "optim", "activations", "scratch"};

/* Everything gathered from the ranks: values[rank * RANK_VALUES + i] and
** hosts[rank * 64]. */
typedef struct ranks_info {
  uint64_t *values;
  char *hosts;
  int n;
} ranks_info;

static tsl_status gather(const tsl_runtime *rt, ranks_info *g) {
  const tsl_world *w = &rt->world;
  uint64_t mine[RANK_VALUES], *col = calloc((size_t)w->size, sizeof(uint64_t));
  g->n = w->size;
  g->values = calloc((size_t)w->size * RANK_VALUES, sizeof(uint64_t));
  g->hosts = calloc((size_t)w->size, 64);
  if (!col || !g->values || !g->hosts) {
    free(col);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory for the summary");
  }
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) {
    const tsl_tier_account *a = &rt->ledger.tier[t];
    mine[t * PER_TIER] = a->peak_run;
    for (int k = 0; k < KINDS; k++) mine[t * PER_TIER + 1 + k] = a->peak_run_kind[k];
  }
  mine[RANK_VALUES - 3] = (uint64_t)rt->threads;
  mine[RANK_VALUES - 2] = (uint64_t)w->cpus.cores;
  mine[RANK_VALUES - 1] = (uint64_t)w->cpus.share;
  tsl_status st = TESSEL_OK;
  for (int i = 0; i < RANK_VALUES && st >= 0; i++) {
    st = tsl_world_allgather_u64(w, mine[i], col);
    for (int r = 0; r < w->size; r++) g->values[(size_t)r * RANK_VALUES + i] = col[r];
  }
  if (st >= 0) st = tsl_world_allgather_str(w, w->host, g->hosts, 64);
  free(col);
  return st;
}

static const uint64_t *rank_values(const ranks_info *g, int r) { return g->values + (size_t)r * RANK_VALUES; }

/* The rank with the highest peak on tier t (the lowest such rank). */
static int peak_rank(const ranks_info *g, int t) {
  int best = 0;
  for (int r = 1; r < g->n; r++)
    if (rank_values(g, r)[t * PER_TIER] > rank_values(g, best)[t * PER_TIER]) best = r;
  return best;
}

/* Median over the steps (the first left out when there are more) of one field. */
static double median_of(const tsl_reporter *r, size_t offset) {
  int64_t skip = r->n_steps > 1, n = r->n_steps - skip;
  double *v = malloc(sizeof(double) * (size_t)TSL_MAX(n, 1));
  if (!v) return NAN;
  for (int64_t i = 0; i < n; i++) memcpy(&v[i], (const char *)&r->steps[skip + i] + offset, sizeof(double));
  double m = tsl_median(v, n);
  free(v);
  return m;
}

#define MEDIAN(r, field) median_of(r, offsetof(tsl_step_record, field))

/* A typical step's split: the parts averaged over the middle half of the
** steps by step time (stats.h), so that they add up to its step time. */
static cJSON *split_json(const tsl_reporter *r) {
  static const char *const names[] = {"step", "compute", "comm_wait", "bubble"};
  int64_t skip = r->n_steps > 1, n = r->n_steps - skip, *idx = NULL, count = 0;
  double *key = malloc(sizeof(double) * (size_t)TSL_MAX(n, 1)), sum[2][4] = {{0}};
  cJSON *o = cJSON_CreateObject();
  for (int64_t i = 0; key && i < n; i++) key[i] = r->steps[skip + i].mean.step;
  if (key) tsl_middle_half(key, n, &idx, &count);
  for (int64_t j = 0; j < count; j++) {
    const tsl_step_record *st = &r->steps[skip + idx[j]];
    const tsl_phases *p[2] = {&st->mean, &st->max};
    for (int a = 0; a < 2; a++) {
      const double v[4] = {p[a]->step, p[a]->compute, p[a]->comm_wait, p[a]->bubble};
      for (int k = 0; k < 4; k++) sum[a][k] += v[k];
    }
  }
  for (int k = 0; k < 4; k++) {
    cJSON *e = cJSON_AddObjectToObject(o, names[k]);
    cJSON_AddNumberToObject(e, "mean", count ? sum[0][k] / (double)count : 0);
    cJSON_AddNumberToObject(e, "max", count ? sum[1][k] / (double)count : 0);
  }
  free(key);
  free(idx);
  return o;
}

static cJSON *memory_json(const ranks_info *g) {
  cJSON *mem = cJSON_CreateObject();
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) {
    int r = peak_rank(g, t);
    const uint64_t *v = rank_values(g, r) + t * PER_TIER;
    if (!v[0] && t != TESSEL_TIER_DEVICE) continue;
    cJSON *e = cJSON_AddObjectToObject(mem, tsl_tier_name((tessel_tier)t));
    cJSON_AddNumberToObject(e, "peak", (double)v[0]);
    cJSON_AddNumberToObject(e, "rank", r);
    for (int k = 0; k < KINDS; k++) cJSON_AddNumberToObject(e, kind_names[k], (double)v[1 + k]);
  }
  return mem;
}

static cJSON *ranks_json(const ranks_info *g, int *oversubscribed) {
  cJSON *list = cJSON_CreateArray();
  *oversubscribed = 0;
  for (int r = 0; r < g->n; r++) {
    const uint64_t *v = rank_values(g, r);
    tsl_cpus c = {.cores = (int)v[RANK_VALUES - 2], .share = (int)v[RANK_VALUES - 1]};
    *oversubscribed |= tsl_cpus_oversubscribed(&c, (int)v[RANK_VALUES - 3]);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "host", g->hosts + (size_t)r * 64);
    cJSON_AddNumberToObject(e, "threads", (double)v[RANK_VALUES - 3]);
    cJSON_AddNumberToObject(e, "cores", (double)c.cores);
    cJSON_AddNumberToObject(e, "ranks_sharing_cores", (double)c.share);
    cJSON_AddItemToArray(list, e);
  }
  return list;
}

static void put_number(cJSON *o, const char *key, double v) {
  if (isnan(v)) cJSON_AddNullToObject(o, key);
  else cJSON_AddNumberToObject(o, key, v);
}

static cJSON *summary_json(const tsl_reporter *r, const tsl_runtime *rt, const tsl_run_end *end, const ranks_info *g) {
  cJSON *o = cJSON_CreateObject();
  int over;
  cJSON_AddNumberToObject(o, "world", rt->world.size);
  cJSON_AddStringToObject(o, "strategy", rt->plugin ? rt->plugin->name : "none");
  /* compare judges a lossy strategy by its validation loss */
  cJSON_AddBoolToObject(o, "lossy", rt->plugin && (rt->plugin->vt.caps & TESSEL_CAP_LOSSY));
  cJSON_AddNumberToObject(o, "first_step", (double)r->first_step);
  cJSON_AddNumberToObject(o, "last_step", (double)(r->first_step + r->n_steps));
  cJSON_AddNumberToObject(o, "steps_run", (double)r->n_steps);
  cJSON_AddNumberToObject(o, "wall_s", end->wall_s);
  if (end->stop) cJSON_AddStringToObject(o, "stopped_by", tsl_stop_reason_name(end->stop));
  else cJSON_AddNullToObject(o, "stopped_by");
  put_number(o, "final_loss", end->final_loss);
  put_number(o, "val_loss", end->val_loss);
  double step = MEDIAN(r, step_time), tps = NAN, mfu = NAN;
  if (r->n_steps > 0) {
    const tsl_step_record *last = &r->steps[r->n_steps - 1];
    tps = tsl_rate_at(last->tokens_per_s, last->step_time, step);
    mfu = tsl_rate_at(last->mfu, last->step_time, step);
  }
  put_number(o, "tokens_per_s", tps);
  put_number(o, "tokens_per_s_per_rank", tps / rt->world.size);
  put_number(o, "step_time_s", step);
  put_number(o, "mfu", mfu);
  cJSON_AddNumberToObject(o, "mfu_cores_per_rank", end->mfu_cores);
  cJSON_AddItemToObject(o, "time_split_s", split_json(r));
  cJSON_AddItemToObject(o, "memory_peak", memory_json(g));
  cJSON_AddItemToObject(o, "ranks", ranks_json(g, &over));
  cJSON_AddBoolToObject(o, "oversubscribed", over);
  return o;
}

/* The same, for people. `peak_set`: the peak MFU is taken against came
** from device.peak_tflops rather than a measurement. */
static void print_summary(tsl_reporter *r, const cJSON *o, const ranks_info *g, int peak_set) {
  char wall[32], b[6][32];
  const cJSON *split = cJSON_GetObjectItemCaseSensitive(o, "time_split_s");
  double mfu = cJSON_GetObjectItemCaseSensitive(o, "mfu")->valuedouble;
  int has_mfu = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(o, "mfu"));
  char mfu_text[32] = "-";
  if (has_mfu) snprintf(mfu_text, sizeof mfu_text, "%.1f%%", 100 * mfu);
  int wall_s = (int)cJSON_GetObjectItemCaseSensitive(o, "wall_s")->valuedouble;
  snprintf(wall, sizeof wall, "%dh%02dm%02ds", wall_s / 3600, wall_s / 60 % 60, wall_s % 60);
  tsl_report_line(r, "summary: %lld step(s) in %s wall | %.0f tok/s median (%.0f per rank) | %.1f ms/step | MFU %s",
                  (long long)r->n_steps, wall, cJSON_GetObjectItemCaseSensitive(o, "tokens_per_s")->valuedouble,
                  cJSON_GetObjectItemCaseSensitive(o, "tokens_per_s_per_rank")->valuedouble,
                  1e3 * cJSON_GetObjectItemCaseSensitive(o, "step_time_s")->valuedouble, mfu_text);
  double v[4][2];
  static const char *const parts[] = {"step", "compute", "comm_wait", "bubble"};
  for (int i = 0; i < 4; i++) {
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(split, parts[i]);
    v[i][0] = 1e3 * cJSON_GetObjectItemCaseSensitive(e, "mean")->valuedouble;
    v[i][1] = 1e3 * cJSON_GetObjectItemCaseSensitive(e, "max")->valuedouble;
  }
  tsl_report_line(r, "time per step (mean over ranks, largest in brackets): compute %.1f ms (%.1f) | communication "
                  "wait %.1f ms (%.1f) | pipeline bubble %.1f ms (%.1f) | step %.1f ms (%.1f)",
                  v[1][0], v[1][1], v[2][0], v[2][1], v[3][0], v[3][1], v[0][0], v[0][1]);
  if (has_mfu && mfu > 1.0 && peak_set)
    tsl_warn("MFU above 100%%: device.peak_tflops is below what this run reached; set it to the device's peak, or "
             "leave it out to use the measured one");
  else if (has_mfu && mfu > 1.0)
    tsl_warn("MFU above 100%%: the recorded peak of this machine is too low (measured while it was busy?); "
             "`tessel bench peak` measures it again");
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) {
    int pr = peak_rank(g, t);
    const uint64_t *m = rank_values(g, pr) + t * PER_TIER;
    if (!m[0]) continue;
    for (int k = 0; k < KINDS; k++) tsl_format_bytes(m[1 + k], b[k], sizeof b[k]);
    tsl_format_bytes(m[0], b[5], sizeof b[5]);
    tsl_report_line(r, "%s memory peak %s on rank %d = params %s + grads %s + optimizer %s + activations %s + "
                    "scratch %s", tsl_tier_name((tessel_tier)t), b[5], pr, b[0], b[1], b[2], b[3], b[4]);
  }
}

/* summary.json goes beside log.metrics, or in log.dir when the metrics go
** to a device (/dev/null), whose directory is no place for it. */
static tsl_status write_summary(const tsl_reporter *r, const tsl_runtime *rt, const cJSON *o) {
  char *dir = r->metrics_device ? tsl_strdup(rt->settings.log.dir) : tsl_dirname(rt->settings.log.metrics);
  char *path = dir ? tsl_asprintf("%s/summary.json", dir) : NULL;
  tsl_status st = path ? tsl_write_json_file(path, o) : tsl_error(TESSEL_E_NOMEM, "out of host memory");
  free(path);
  free(dir);
  return st;
}

tsl_status tsl_report_summary(tsl_reporter *r, const tsl_runtime *rt, const tsl_run_end *end) {
  ranks_info g = {0};
  tsl_status st = gather(rt, &g);
  if (st >= 0 && rt->world.rank == 0 && r->n_steps > 0) {
    cJSON *o = summary_json(r, rt, end, &g);
    print_summary(r, o, &g, rt->settings.device.peak_tflops > 0);
    st = write_summary(r, rt, o);
    cJSON_Delete(o);
  }
  free(g.values);
  free(g.hosts);
  return st;
}
