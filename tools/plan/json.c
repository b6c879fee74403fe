/* tools/plan/json.c — the plan as JSON, for scripts and tests. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"
#include "common/util.h"
#include "plan/plan.h"

static const char *const tier_keys[TESSEL_TIER_COUNT] = {"device", "host", "nvme"};
static const char *const kind_keys[TESSEL_MEM_KIND_COUNT] = {"params", "grads", "optim", "acts", "scratch"};
static const char *const overlap_keys[] = {"none", "backward", "compute"};
static const char *const state_keys[] = {"ok", "refused", "no_estimate"};

static cJSON *memory(const tsl_plan_cand *c) {
  cJSON *o = cJSON_CreateObject();
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) {
    cJSON *tier = cJSON_AddObjectToObject(o, tier_keys[t]);
    const tsl_plan_rank *r = &c->ranks[c->peak_rank[t]];
    cJSON_AddNumberToObject(tier, "peak", (double)c->peak[t]);
    cJSON_AddNumberToObject(tier, "rank", c->peak_rank[t]);
    for (int k = 0; k < TESSEL_MEM_KIND_COUNT; k++) cJSON_AddNumberToObject(tier, kind_keys[k], (double)r->memory[t][k]);
  }
  return o;
}

/* Rank 0's lines: the rank whose counters metrics.jsonl reports. */
static cJSON *traffic(const tsl_plan_cand *c) {
  cJSON *a = cJSON_CreateArray();
  const tsl_plan_rank *r = &c->ranks[0];
  for (int i = 0; i < r->n_lines; i++) {
    const tsl_plan_line *l = &r->lines[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "group", l->group);
    cJSON_AddNumberToObject(o, "ranks", l->ranks);
    cJSON_AddStringToObject(o, "collective", tsl_collective_key(l->kind));
    cJSON_AddStringToObject(o, "overlap", overlap_keys[l->overlap]);
    cJSON_AddNumberToObject(o, "calls", (double)l->calls);
    cJSON_AddNumberToObject(o, "payload", (double)l->payload);
    cJSON_AddItemToArray(a, o);
  }
  return a;
}

static cJSON *candidate(const tsl_plan_cand *c, int position) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "position", position);
  cJSON_AddStringToObject(o, "strategy", c->strategy);
  cJSON_AddStringToObject(o, "options", c->options);
  cJSON_AddBoolToObject(o, "as_configured", c->as_configured);
  cJSON_AddStringToObject(o, "state", state_keys[c->state]);
  if (c->state == TSL_CAND_REFUSED) cJSON_AddStringToObject(o, "error", c->error);
  if (c->state != TSL_CAND_OK) return o;
  cJSON_AddStringToObject(o, "mesh", c->mesh_text);
  cJSON_AddBoolToObject(o, "fits", c->fits);
  cJSON_AddItemToObject(o, "memory", memory(c));
  cJSON_AddItemToObject(o, "traffic", traffic(c));
  double flops = 0;
  for (int r = 0; r < c->world; r++) flops += c->ranks[r].flops;
  cJSON_AddNumberToObject(o, "flops", flops);
  if (!c->timed) return o;
  cJSON *t = cJSON_AddObjectToObject(o, "time");
  cJSON_AddNumberToObject(t, "step", c->time.step);
  cJSON_AddNumberToObject(t, "compute", c->time.compute);
  cJSON_AddNumberToObject(t, "optimizer", c->time.optimizer);
  cJSON_AddNumberToObject(t, "comm", c->time.comm);
  cJSON_AddNumberToObject(t, "exposed", c->time.exposed);
  cJSON_AddNumberToObject(t, "bubble", c->time.bubble);
  cJSON_AddNumberToObject(t, "slowest_rank", c->slowest);
  cJSON_AddNumberToObject(o, "tokens_per_s", c->tokens_per_s);
  return o;
}

tsl_status tsl_plan_json(const tsl_plan *p, const char *path) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "world", p->world);
  cJSON_AddStringToObject(root, "config", p->config);
  if (p->have_profile) cJSON_AddStringToObject(root, "profile", p->profile.name);
  cJSON *all = cJSON_AddArrayToObject(root, "candidates");
  for (int i = 0; i < p->n; i++) cJSON_AddItemToArray(all, candidate(&p->c[p->order[i]], i + 1));
  char *text = cJSON_Print(root);
  cJSON_Delete(root);
  char *line = text ? tsl_asprintf("%s\n", text) : NULL;
  free(text);
  if (!line) return tsl_error(TESSEL_E_NOMEM, "out of host memory writing %s", path);
  tsl_status st = tsl_atomic_write_file(path, line, strlen(line));
  free(line);
  return st;
}
