/* core/compare/metrics.c — reading each run's metrics back. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "compare/compare.h"

static double number(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(const double *v, int n) {
  if (n <= 0) return NAN;
  double *s = malloc(sizeof(double) * (size_t)n);
  if (!s) return NAN;
  memcpy(s, v, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof *s, by_value);
  double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  free(s);
  return m;
}

static tsl_cmp_group *group_named(tsl_cmp_run *run, const char *name, int64_t steps) {
  for (int i = 0; i < run->n_groups; i++)
    if (!strcmp(run->groups[i].name, name)) return &run->groups[i];
  if (run->n_groups == TSL_CMP_MAX_GROUPS) return NULL;
  tsl_cmp_group *g = &run->groups[run->n_groups];
  memset(g, 0, sizeof *g);
  g->payload_steps = calloc((size_t)steps, sizeof(double));
  g->bus_steps = calloc((size_t)steps, sizeof(double));
  if (!g->payload_steps || !g->bus_steps) {
    free(g->payload_steps);
    free(g->bus_steps);
    return NULL;
  }
  snprintf(g->name, sizeof g->name, "%s", name);
  run->n_groups++;
  return g;
}

/* One metrics line: per-step series, memory peaks, and (after warm-up)
** traffic per communicator. */
static void take_line(tsl_cmp_run *run, const cJSON *o, int measured, int64_t steps, int warmup) {
  int i = run->n_steps++;
  run->loss[i] = number(o, "loss");
  run->tps[i] = number(o, "tokens_per_s");
  run->step_s[i] = number(o, "step_time_s");
  static const char *const tiers[] = {"device", "host", "nvme"};
  const cJSON *mem = cJSON_GetObjectItemCaseSensitive(o, "memory");
  for (int t = 0; t < 3; t++) {
    double p = number(cJSON_GetObjectItemCaseSensitive(mem, tiers[t]), "peak");
    if (p > run->peak[t]) run->peak[t] = p;
  }
  const cJSON *comm = cJSON_GetObjectItemCaseSensitive(o, "comm"), *g;
  cJSON_ArrayForEach(g, comm) {
    tsl_cmp_group *acc = measured ? group_named(run, g->string, steps) : NULL;
    if (!acc) continue;
    acc->payload_steps[i - warmup] = number(g, "payload_bytes");
    acc->bus_steps[i - warmup] = number(g, "bus_bytes");
  }
}

static tsl_status read_run(tsl_compare *c, tsl_cmp_run *run) {
  char path[4200], *text = NULL;
  snprintf(path, sizeof path, "%s/metrics.jsonl", run->dir);
  tsl_status st = tsl_read_file(path, &text, NULL);
  if (st < 0) return st;
  run->loss = calloc((size_t)c->steps, sizeof(double));
  run->tps = calloc((size_t)c->steps, sizeof(double));
  run->step_s = calloc((size_t)c->steps, sizeof(double));
  double *mfu = calloc((size_t)c->steps, sizeof(double));
  if (!run->loss || !run->tps || !run->step_s || !mfu) {
    free(mfu);
    free(text);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory reading %s", path);
  }
  int n_mfu = 0;
  for (char *line = strtok(text, "\n"); line && run->n_steps < c->steps; line = strtok(NULL, "\n")) {
    cJSON *o = cJSON_Parse(line);
    if (!o) continue;
    int measured = run->n_steps >= c->warmup;
    double m = number(o, "mfu");
    if (measured && !isnan(m)) mfu[n_mfu++] = m;
    take_line(run, o, measured, c->steps, c->warmup);
    cJSON_Delete(o);
  }
  free(text);
  int kept = run->n_steps - c->warmup;
  run->final_loss = run->n_steps ? run->loss[run->n_steps - 1] : NAN;
  run->tps_median = median(run->tps + c->warmup, kept);
  run->step_ms = 1e3 * median(run->step_s + c->warmup, kept);
  run->mfu = median(mfu, n_mfu);
  run->tps_min = INFINITY;
  run->tps_max = 0;
  for (int i = c->warmup; i < run->n_steps; i++) {
    run->tps_min = fmin(run->tps_min, run->tps[i]);
    run->tps_max = fmax(run->tps_max, run->tps[i]);
  }
  for (int g = 0; g < run->n_groups; g++) {
    run->groups[g].payload = median(run->groups[g].payload_steps, kept);
    run->groups[g].bus = median(run->groups[g].bus_steps, kept);
  }
  free(mfu);
  if (run->n_steps < c->steps)
    return tsl_error(TESSEL_E_IO, "%s has %d of %lld steps", path, run->n_steps, (long long)c->steps);
  return TESSEL_OK;
}

tsl_status tsl_compare_measure(tsl_compare *c) {
  tsl_cmp_run *ref = NULL;
  for (int r = 0; r < c->n_runs; r++) {
    tsl_cmp_run *run = &c->runs[r];
    if (run->failed) continue;
    if (read_run(c, run) < 0) {
      run->failed = 1;
      snprintf(run->error, sizeof run->error, "%s", tsl_error_message());
      continue;
    }
    if (!ref) ref = run;
    run->max_dloss = run->max_rel = 0;
    for (int i = 0; i < run->n_steps && i < ref->n_steps; i++) {
      double d = fabs(run->loss[i] - ref->loss[i]);
      run->max_dloss = fmax(run->max_dloss, d);
      run->max_rel = fmax(run->max_rel, d / fabs(ref->loss[i]));
    }
    run->equivalent = run->max_rel <= c->tolerance;
  }
  return TESSEL_OK;
}
