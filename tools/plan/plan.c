/* tools/plan/plan.c — candidates, their figures over ranks, and the ranking. */
#include "plan/plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

tsl_status tsl_plan_add(tsl_plan *p, const char *strategy, const char *options, int as_configured) {
  if (strlen(options) >= sizeof p->c[0].options || strlen(strategy) >= sizeof p->c[0].strategy)
    return tsl_error(TESSEL_E_INTERNAL, "strategy '%s' offered an option set of more than %zu characters", strategy,
                     sizeof p->c[0].options - 1);
  for (int i = 0; i < p->n; i++)
    if (p->c[i].as_configured == as_configured && !strcmp(p->c[i].strategy, strategy) &&
        !strcmp(p->c[i].options, options))
      return TESSEL_OK;
  if (p->n == p->cap) {
    int cap = p->cap ? 2 * p->cap : 64;
    tsl_plan_cand *c = realloc(p->c, sizeof *c * (size_t)cap);
    if (!c) return tsl_error(TESSEL_E_NOMEM, "out of host memory for candidates");
    p->c = c;
    p->cap = cap;
  }
  tsl_plan_cand *c = &p->c[p->n++];
  memset(c, 0, sizeof *c);
  snprintf(c->strategy, sizeof c->strategy, "%s", strategy);
  snprintf(c->options, sizeof c->options, "%s", options);
  c->as_configured = as_configured;
  return TESSEL_OK;
}

tsl_status tsl_plan_estimate_all(tsl_plan *p) {
  for (int i = 0; i < p->n; i++) {
    if (p->c[i].state == TSL_CAND_REFUSED) continue; /* refused while enumerating */
    tsl_status st = tsl_plan_candidate(p, &p->c[i]);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}

/* Machines the group over `axes` that holds `rank` spans, with
** ranks_per_node consecutive ranks per machine (0: one machine). */
static int group_nodes(const tessel_mesh *m, int rank, uint32_t axes, int per_node) {
  if (per_node <= 0) return 1;
  int stride[TESSEL_MESH_MAX_AXES], base = rank, span = 0;
  for (int a = m->naxes - 1, s = 1; a >= 0; a--) {
    stride[a] = s;
    s *= m->sizes[a];
  }
  /* the group's lowest and highest world ranks bound the machines it touches */
  for (int a = 0; a < m->naxes; a++) {
    if (!(axes & (1u << a))) continue;
    int coord = rank / stride[a] % m->sizes[a];
    base -= coord * stride[a];
    span += (m->sizes[a] - 1) * stride[a];
  }
  return (base + span) / per_node - base / per_node + 1;
}

/* The device: what the estimate was told it has, so that a candidate fits
** the memory it was planned for. */
static uint64_t capacity(const tsl_plan *p, const tsl_plan_cand *c, tessel_tier t) {
  if (t == TESSEL_TIER_DEVICE) return c->device_capacity;
  if (t == TESSEL_TIER_HOST && p->have_profile && p->profile.host_memory) {
    int per_node = p->profile.ranks_per_node > 0 ? p->profile.ranks_per_node : c->world;
    return p->profile.host_memory / (uint64_t)TSL_MIN(per_node, c->world);
  }
  return UINT64_MAX;
}

static void figures(const tsl_plan *p, tsl_plan_cand *c) {
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) {
    c->peak[t] = 0;
    for (int r = 0; r < c->world; r++) {
      uint64_t sum = 0;
      for (int k = 0; k < TESSEL_MEM_KIND_COUNT; k++) sum += c->ranks[r].memory[t][k];
      if (sum > c->peak[t]) {
        c->peak[t] = sum;
        c->peak_rank[t] = r;
      }
    }
  }
  c->fits = c->peak[TESSEL_TIER_DEVICE] <= capacity(p, c, TESSEL_TIER_DEVICE) &&
            c->peak[TESSEL_TIER_HOST] <= capacity(p, c, TESSEL_TIER_HOST);
  if (!p->have_profile) return;
  c->timed = 1;
  for (int r = 0; r < c->world; r++) {
    tsl_plan_rank *pr = &c->ranks[r];
    for (int i = 0; i < pr->n_lines; i++)
      pr->lines[i].nodes = group_nodes(&c->mesh, r, pr->lines[i].axes, p->profile.ranks_per_node);
    tsl_plan_time t;
    tsl_plan_time_rank(p, c, r, &t);
    if (isnan(t.step)) c->timed = 0;
    if (r == 0 || t.step > c->time.step) {
      c->time = t;
      c->slowest = r;
    }
  }
  c->tokens_per_s = c->timed && c->time.step > 0 ? tsl_plan_tokens_per_step(c) / c->time.step : 0;
}

double tsl_plan_tokens_per_step(const tsl_plan_cand *c) {
  return (double)c->dims.micro_batch * c->dims.micro_steps * c->dims.data_ranks * c->dims.seq_len;
}

const tsl_plan_cand *tsl_plan_fitting(const tsl_plan *p, int i) {
  for (int k = 0; k < p->n; k++) {
    const tsl_plan_cand *c = &p->c[p->order[k]];
    if (c->state == TSL_CAND_OK && c->fits && i-- == 0) return c;
  }
  return NULL;
}

/* 0 estimated and fitting, 1 estimated, 2 no estimate, 3 refused. */
static int rank_group(const tsl_plan_cand *c) {
  if (c->state == TSL_CAND_OK) return c->fits ? 0 : 1;
  return c->state == TSL_CAND_NO_ESTIMATE ? 2 : 3;
}

/* Estimated and fitting first, faster (or, untimed, smaller) first. */
static int better(const void *a, const void *b, void *ctx) {
  const tsl_plan *p = ctx;
  const tsl_plan_cand *x = &p->c[*(const int *)a], *y = &p->c[*(const int *)b];
  int gx = rank_group(x), gy = rank_group(y);
  if (gx != gy) return gx - gy;
  if (gx > 1) return 0;
  if (x->timed && y->timed && x->time.step != y->time.step) return x->time.step < y->time.step ? -1 : 1;
  if (x->peak[0] != y->peak[0]) return x->peak[0] < y->peak[0] ? -1 : 1;
  return *(const int *)a - *(const int *)b;
}

void tsl_plan_rank_all(tsl_plan *p) {
  for (int i = 0; i < p->n; i++)
    if (p->c[i].state == TSL_CAND_OK) figures(p, &p->c[i]);
  free(p->order);
  p->order = malloc(sizeof *p->order * (size_t)(p->n ? p->n : 1));
  if (!p->order) return;
  for (int i = 0; i < p->n; i++) p->order[i] = i;
  qsort_r(p->order, (size_t)p->n, sizeof *p->order, better, p);
}

void tsl_plan_cand_free(tsl_plan_cand *c) {
  for (int r = 0; c->ranks && r < c->world; r++) free(c->ranks[r].lines);
  free(c->ranks);
  free(c->yaml);
  c->ranks = NULL;
  c->yaml = NULL;
}

void tsl_plan_free(tsl_plan *p) {
  for (int i = 0; i < p->n; i++) tsl_plan_cand_free(&p->c[i]);
  free(p->c);
  free(p->order);
  if (p->have_profile) tsl_profile_free(&p->profile);
  p->c = NULL;
  p->order = NULL;
  p->n = p->cap = 0;
}
