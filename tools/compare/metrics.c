/* tools/compare/metrics.c — reading each trial's metrics and summary back,
** and the figures of each configuration over its trials. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/stats.h"
#include "common/util.h"
#include "compare/compare.h"

static double number(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static const cJSON *at(const cJSON *o, const char *a, const char *b) {
  return cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);
}

static tsl_cmp_group *group_named(tsl_cmp_trial *t, const char *name, int64_t steps) {
  for (int i = 0; i < t->n_groups; i++)
    if (!strcmp(t->groups[i].name, name)) return &t->groups[i];
  if (t->n_groups == TSL_CMP_MAX_GROUPS) return NULL;
  tsl_cmp_group *g = &t->groups[t->n_groups];
  memset(g, 0, sizeof *g);
  g->payload_steps = calloc((size_t)steps, sizeof(double));
  g->bus_steps = calloc((size_t)steps, sizeof(double));
  if (!g->payload_steps || !g->bus_steps) {
    free(g->payload_steps);
    free(g->bus_steps);
    return NULL;
  }
  snprintf(g->name, sizeof g->name, "%s", name);
  t->n_groups++;
  return g;
}

/* Per-step figures kept while reading, for the measured steps. */
typedef struct series {
  double *mfu, *split[6]; /* step, compute, comm_wait, bubble means; comm_wait, bubble max */
  char *validated;        /* the step also validated: its time and traffic are not a training step's */
  int n;
} series;

/* One metrics line: per-step series and (after warm-up) traffic and time. */
static void take_line(tsl_cmp_trial *t, const cJSON *o, int measured, int64_t steps, series *m) {
  int i = t->n_steps++;
  t->loss[i] = number(o, "loss");
  t->tps[i] = number(o, "tokens_per_s");
  t->step_s[i] = number(o, "step_time_s");
  if (!isnan(number(o, "val_loss"))) t->val_loss = number(o, "val_loss");
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "lossy"))) t->lossy = 1;
  if (!measured) return;
  m->validated[m->n] = !isnan(number(o, "val_loss"));
  const cJSON *split = cJSON_GetObjectItemCaseSensitive(o, "time_split_s");
  static const char *const parts[] = {"step", "compute", "comm_wait", "bubble"};
  for (int p = 0; p < 4; p++) m->split[p][m->n] = number(cJSON_GetObjectItemCaseSensitive(split, parts[p]), "mean");
  m->split[4][m->n] = number(cJSON_GetObjectItemCaseSensitive(split, "comm_wait"), "max");
  m->split[5][m->n] = number(cJSON_GetObjectItemCaseSensitive(split, "bubble"), "max");
  m->mfu[m->n] = number(o, "mfu");
  const cJSON *comm = cJSON_GetObjectItemCaseSensitive(o, "comm"), *g;
  cJSON_ArrayForEach(g, comm) {
    tsl_cmp_group *acc = group_named(t, g->string, steps);
    if (!acc) continue;
    acc->payload_steps[m->n] = number(g, "payload_bytes");
    acc->bus_steps[m->n] = number(g, "bus_bytes");
  }
  m->n++;
}

/* Mean of the n values whose step counts (NAN as 0: a group silent on a
** step moved nothing then); 0 for none. */
static double mean(const double *v, const char *skip, int n) {
  double sum = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (!skip[i]) sum += isnan(v[i]) ? 0 : v[i], k++;
  return k ? sum / k : 0;
}

/* The mean training step of a trial: its time, each part of it and each
** group's traffic averaged over the measured steps, so the parts add up to
** the time. A cost paid every few steps (a periodic synchronisation, a
** spill) counts at its share; at the median, or over the middle half of
** the steps, it vanished once fewer than half of the steps paid it. Steps
** that also validated are left out (unless every one did): validation is
** not training, and sends more in some strategies. */
static void mean_step(tsl_cmp_trial *t, series *m) {
  int all = 1, first = t->n_steps - m->n; /* the first measured step */
  for (int i = 0; i < m->n; i++) all &= m->validated[i];
  for (int i = 0; all && i < m->n; i++) m->validated[i] = 0;
  double step = mean(t->step_s + first, m->validated, m->n);
  t->step_ms = 1e3 * step;
  t->tokens_per_s = tsl_rate_at(t->tps[first], t->step_s[first], step);
  t->mfu = tsl_rate_at(m->mfu[0], t->step_s[first], step);
  double part[6];
  for (int p = 0; p < 6; p++) part[p] = mean(m->split[p], m->validated, m->n);
  t->split = (tsl_cmp_split){part[0], part[1], part[2], part[3], part[4], part[5]};
  for (int g = 0; g < t->n_groups; g++) {
    t->groups[g].payload = mean(t->groups[g].payload_steps, m->validated, m->n);
    t->groups[g].bus = mean(t->groups[g].bus_steps, m->validated, m->n);
  }
}

static tsl_status read_summary(tsl_cmp_trial *t) {
  char path[4300], *text = NULL;
  static const char *const tiers[] = {"device", "host", "nvme"};
  static const char *const kinds[TSL_CMP_KINDS] = {"params", "grads", "optim", "activations", "scratch"};
  snprintf(path, sizeof path, "%s/summary.json", t->dir);
  tsl_status st = tsl_read_file(path, &text, NULL);
  if (st < 0) return st;
  cJSON *o = cJSON_Parse(text);
  free(text);
  if (!o) return tsl_error(TESSEL_E_IO, "%s: not JSON", path);
  for (int k = 0; k < 3; k++) {
    const cJSON *m = at(o, "memory_peak", tiers[k]);
    t->memory[k].peak = m ? number(m, "peak") : 0;
    t->memory[k].rank = m ? (int)number(m, "rank") : 0;
    for (int j = 0; j < TSL_CMP_KINDS; j++) t->memory[k].kind[j] = m ? number(m, kinds[j]) : 0;
  }
  t->oversubscribed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "oversubscribed"));
  if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "lossy"))) t->lossy = 1;
  cJSON_Delete(o);
  return TESSEL_OK;
}

static tsl_status read_trial(const tsl_compare *c, tsl_cmp_trial *t) {
  char path[4300], *text = NULL;
  snprintf(path, sizeof path, "%s/metrics.jsonl", t->dir);
  tsl_status st = tsl_read_file(path, &text, NULL);
  if (st < 0) return st;
  series m = {0};
  size_t n = (size_t)c->steps;
  t->loss = calloc(n, sizeof(double));
  t->tps = calloc(n, sizeof(double));
  t->step_s = calloc(n, sizeof(double));
  m.mfu = calloc(n, sizeof(double));
  m.validated = calloc(n, 1);
  int ok = t->loss && t->tps && t->step_s && m.mfu && m.validated;
  for (int p = 0; p < 6; p++) ok &= (m.split[p] = calloc(n, sizeof(double))) != NULL;
  t->val_loss = NAN;
  if (!ok) st = tsl_error(TESSEL_E_NOMEM, "out of host memory reading %s", path);
  for (char *line = strtok(text, "\n"); st >= 0 && line && t->n_steps < c->steps; line = strtok(NULL, "\n")) {
    cJSON *o = cJSON_Parse(line);
    if (!o) continue;
    take_line(t, o, t->n_steps >= c->warmup, c->steps, &m);
    cJSON_Delete(o);
  }
  free(text);
  if (st >= 0 && t->n_steps < c->steps)
    st = tsl_error(TESSEL_E_IO, "%s has %d of %lld steps", path, t->n_steps, (long long)c->steps);
  if (st >= 0) {
    mean_step(t, &m);
    st = read_summary(t);
  }
  free(m.mfu);
  free(m.validated);
  for (int p = 0; p < 6; p++) free(m.split[p]);
  return st;
}

static int by_tps(const void *a, const void *b) {
  double x = (*(const tsl_cmp_trial *const *)a)->tokens_per_s, y = (*(const tsl_cmp_trial *const *)b)->tokens_per_s;
  return (x > y) - (x < y);
}

/* Median, range and spread of the trials' throughput, and the typical
** trial: the median one (of an even number, the slower of the two in the
** middle). Its throughput is the run's, so that the row's tokens/s, ms/step,
** MFU, time split and memory all describe that one trial (the mean of the
** two middle throughputs once sat beside another trial's step time). */
static void over_trials(const tsl_compare *c, tsl_cmp_run *run) {
  const tsl_cmp_trial *ok[TSL_CMP_MAX_TRIALS];
  double v[TSL_CMP_MAX_TRIALS];
  int n = 0;
  for (int k = 0; k < c->repeat; k++)
    if (!run->trials[k].failed) ok[n++] = &run->trials[k];
  if (!n) {
    run->failed = 1;
    snprintf(run->error, sizeof run->error, "%s", run->trials[0].error);
    return;
  }
  qsort(ok, (size_t)n, sizeof ok[0], by_tps);
  run->n_ok = n;
  run->typical = (int)(ok[(n - 1) / 2] - run->trials);
  for (int i = 0; i < n; i++) v[i] = ok[i]->tokens_per_s;
  run->tps = ok[(n - 1) / 2]->tokens_per_s;
  tsl_min_max(v, n, &run->tps_lo, &run->tps_hi);
  run->spread = run->tps > 0 ? (run->tps_hi - run->tps_lo) / run->tps : NAN;
  run->reproducible = 1;
  for (int i = 0; i < n; i++) {
    run->lossy |= ok[i]->lossy;
    run->oversubscribed |= ok[i]->oversubscribed;
    run->reproducible &= !memcmp(ok[i]->loss, ok[0]->loss, sizeof(double) * (size_t)c->steps);
  }
}

/* A loss as a report shows it: NaN, inf, or its value. */
static const char *loss_text(double x, char *buf, size_t cap) {
  if (isnan(x)) return "NaN";
  if (isinf(x)) return x > 0 ? "inf" : "-inf";
  snprintf(buf, cap, "%.6g", x);
  return buf;
}

/* Says step `step`'s losses, one of them not finite, into run->nonfinite.
** Both NaN is no agreement: two runs that diverged alike prove nothing
** about training the same function. */
static void say_nonfinite(tsl_cmp_run *run, int self, int64_t step, double mine, double ref) {
  char a[32], b[32];
  const char *x = loss_text(mine, a, sizeof a), *y = loss_text(ref, b, sizeof b);
  if (self)
    snprintf(run->nonfinite, sizeof run->nonfinite, "its loss at step %lld is %s", (long long)step, x);
  else if (!isfinite(mine) && !isfinite(ref))
    snprintf(run->nonfinite, sizeof run->nonfinite, "its loss at step %lld is %s, and the reference's is %s too",
             (long long)step, x, y);
  else
    snprintf(run->nonfinite, sizeof run->nonfinite, "its loss at step %lld is %s, the reference's %s",
             (long long)step, x, y);
}

/* The differences are taken where both losses are finite: fmax drops a
** NaN, and a NaN or infinite loss once passed as "equivalent". Such a step
** is named instead, and makes the run differ. */
void tsl_compare_judge(const tsl_compare *c, tsl_cmp_run *run, const tsl_cmp_run *ref) {
  const tsl_cmp_trial *t = &run->trials[run->typical], *r = &ref->trials[ref->typical];
  run->final_loss = t->loss[t->n_steps - 1];
  run->max_dloss = run->max_rel = 0;
  run->nonfinite[0] = '\0';
  for (int i = 0; i < t->n_steps && i < r->n_steps; i++) {
    if (!isfinite(t->loss[i]) || !isfinite(r->loss[i])) {
      if (!run->nonfinite[0]) say_nonfinite(run, run == ref, i + 1, t->loss[i], r->loss[i]);
      continue;
    }
    double d = fabs(t->loss[i] - r->loss[i]);
    run->max_dloss = fmax(run->max_dloss, d);
    if (d > 0) run->max_rel = fmax(run->max_rel, d / fabs(r->loss[i]));
  }
  run->val_rel = fabs(t->val_loss - r->val_loss) / fabs(r->val_loss);
  run->equivalent = !run->nonfinite[0] && (run->lossy ? run->val_rel <= c->val_tolerance
                                                       : run->max_rel <= c->tolerance);
}

tsl_status tsl_compare_measure(tsl_compare *c) {
  const tsl_cmp_run *ref = NULL;
  for (int r = 0; r < c->n_runs; r++) {
    tsl_cmp_run *run = &c->runs[r];
    for (int k = 0; k < c->repeat && !run->failed; k++) {
      tsl_cmp_trial *t = &run->trials[k];
      if (!t->failed && read_trial(c, t) < 0) {
        t->failed = 1;
        snprintf(t->error, sizeof t->error, "%s", tsl_error_message());
      }
    }
    if (run->failed) continue;
    over_trials(c, run);
    if (run->failed) continue;
    if (!ref) ref = run;
    tsl_compare_judge(c, run, ref);
  }
  return TESSEL_OK;
}

void tsl_compare_free(tsl_compare *c) {
  for (int r = 0; r < c->n_runs; r++) {
    free(c->runs[r].resolved);
    for (int k = 0; k < TSL_CMP_MAX_TRIALS; k++) {
      tsl_cmp_trial *t = &c->runs[r].trials[k];
      free(t->loss);
      free(t->tps);
      free(t->step_s);
      for (int g = 0; g < t->n_groups; g++) {
        free(t->groups[g].payload_steps);
        free(t->groups[g].bus_steps);
      }
    }
  }
}
