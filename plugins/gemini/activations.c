/*
** plugins/gemini/activations.c — where the core keeps activations, under
** placement auto.
**
** Chunks bring model data down to one unit's working set; what is left on
** the device is the core's non-model memory, mostly activations. When the
** device cannot hold them next to the smallest working set (every chunk
** offloaded, released after each use), placement auto recomputes or
** offloads the activations of blocks, the cheapest way that fits:
**
**   1. selective recompute (Megatron-LM's: keep what a GEMM made, redo the
**      norms, attention and activations) for the first k blocks, k = 1..L;
**   2. then also their kept part on the host (copied out after forward and
**      fetched back ahead of backward), first k blocks;
**   3. then full recompute (keep only the block's input), first k blocks;
**   4. last, full recompute of every unit, the embedding and the head too
**      (what train.recompute: full does: the head's final norm is then
**      not kept either).
**
** A placement the run asked for (train.recompute, train.offload_activations,
** read before any unit is answered for) is never undone: each candidate is
** merged with it, each unit getting the more frugal of the two per field,
** and weighed as merged, exactly: the core sizes its activation storage for
** any placement (model->act_memory). The first candidate that fits under
** device.memory_limit × steady_ratio wins; if none does, the first that
** fits under the whole device, whose headroom gm_check_fit then gives up.
** Blocks early in the model go first: their activations wait longest for
** their backward. The choice is logged.
**
** When not even the last candidate (or, placed statically or without
** auto_recompute, the run's own placement) fits the whole device beside
** the least model data, the run stops here, before the core allocates
** activations, with what a step needs and what is available.
**
** The decision is rank-local (no collective is possible while placements
** are asked for); recomputation changes no collective of gemini's, and the
** non-model bytes every rank plans with are reduced over dp at setup.
*/
#include <stdio.h>
#include <stdlib.h>

#include "gemini.h"

/* The escalation's last candidate: every unit in full. */
#define GM_LAST_CANDIDATE(L) (3 * (L) + 1)

/* The model data a step needs on the device at the least. */
static tessel_status least_model(gemini *g, uint64_t *out) {
  gm_sim least;
  if (!g->units) {
    g->dims.size = sizeof g->dims;
    TESSEL_TRY(g->api->model->dims(g->host, &g->dims));
    TESSEL_TRY(gm_units_build(g));
    TESSEL_TRY(gm_schedules_build(g));
  }
  TESSEL_TRY(gm_simulate(g, GM_RELEASE, 0, 1, 0, &least));
  *out = least.peak;
  return TESSEL_OK;
}

/* Candidate c of the escalation (0: nothing) merged with the run's own
** placement, into tier/rec. Returns 0 past the last one. */
static int candidate(const gemini *g, int c, int32_t *tier, int32_t *rec) {
  int L = g->dims.layers;
  if (c > GM_LAST_CANDIDATE(L)) return 0;
  int level = c == 0 ? 0 : (c - 1) / L + 1, k = c == 0 ? 0 : (c - 1) % L + 1;
  for (int u = 0; u < g->dims.units; u++) {
    int block = u >= 1 && u <= L, l = level == 0 ? 0 : level > 3 ? 3 : !block ? 0 : u <= k ? level : level - 1;
    tier[u] = l == 2 || g->run_tier[u] == TESSEL_TIER_HOST ? TESSEL_TIER_HOST : TESSEL_TIER_DEVICE;
    rec[u] = l == 0 ? TESSEL_RECOMPUTE_NONE : l == 3 ? TESSEL_RECOMPUTE_FULL : TESSEL_RECOMPUTE_SELECTIVE;
    if (g->run_rec[u] > rec[u]) rec[u] = g->run_rec[u];
  }
  return 1;
}

/* The run's own placement of every unit's activations, as the core asks
** the `place` hook with it; and room for the choice beside it. */
static tessel_status read_run_placement(gemini *g) {
  int U = g->dims.units;
  if (!g->act_tier && !(g->act_tier = calloc(4 * (size_t)U, sizeof *g->act_tier)))
    return g->api->set_error(g->host, TESSEL_E_NOMEM, "out of host memory for the activation plan");
  g->act_rec = g->act_tier + U;
  g->run_tier = g->act_tier + 2 * U;
  g->run_rec = g->act_tier + 3 * U;
  for (int u = 0; u < U; u++) {
    tessel_placement p = {.size = sizeof p};
    TESSEL_TRY(g->api->state->placement(g->host, (tessel_state_ref){TESSEL_STATE_ACT, u}, &p));
    g->run_tier[u] = p.tier;
    g->run_rec[u] = p.recompute;
  }
  return TESSEL_OK;
}

int gm_acts_all_full(const gemini *g) {
  if (!g->act_rec) return 0;
  for (int u = 0; u < g->dims.units; u++)
    if (g->act_rec[u] != TESSEL_RECOMPUTE_FULL) return 0;
  return 1;
}

/* Unit u keeps part of its activations on the host (one recomputed in
** full keeps nothing, wherever it is placed). */
static int kept_on_host(const gemini *g, int u) {
  return g->act_tier[u] == TESSEL_TIER_HOST && g->act_rec[u] != TESSEL_RECOMPUTE_FULL;
}

/* "blocks 1-3 selective recompute, block 4 everything kept" */
static const char *describe(const gemini *g, char *buf, size_t cap) {
  static const char *const how[] = {"everything kept", "selective recompute", "full recompute"};
  size_t n = 0;
  buf[0] = 0;
  for (int u = 1, first = 1; u <= g->dims.layers && n < cap; u++) {
    int same = u < g->dims.layers && g->act_rec[u + 1] == g->act_rec[u] && kept_on_host(g, u + 1) == kept_on_host(g, u);
    if (same) continue;
    n += (size_t)snprintf(buf + n, cap - n, "%s%s %d%s%.0d %s%s", n ? ", " : "", u > first ? "blocks" : "block",
                          first, u > first ? "-" : "", u > first ? u : 0, how[g->act_rec[u]],
                          kept_on_host(g, u) ? " with the rest on the host" : "");
    first = u + 1;
  }
  if (g->act_rec[g->dims.units - 1] == TESSEL_RECOMPUTE_FULL && n < cap)
    snprintf(buf + n, cap - n, ", and the embedding and head full recompute too");
  return buf;
}

/* Try every candidate under `limit`; the first that fits is taken. */
static tessel_status first_fit(gemini *g, uint64_t limit, uint64_t model, int *found, uint64_t *bytes) {
  const tessel_model_api *api = g->api->model;
  uint64_t dev, host;
  *found = 0;
  for (int c = 0; candidate(g, c, g->act_tier, g->act_rec); c++) {
    TESSEL_TRY(api->act_memory(g->host, g->act_tier, g->act_rec, &dev, &host));
    if (dev + GM_OWN_SCRATCH + model <= limit) {
      *found = 1;
      *bytes = dev;
      return TESSEL_OK;
    }
  }
  return TESSEL_OK;
}

tessel_status gm_acts_choose(gemini *g, uint64_t capacity, gm_acts_choice *out) {
  const tessel_model_api *api = g->api->model;
  int search = gm_auto_places_acts(g);
  int fits;
  *out = (gm_acts_choice){0};
  if (!TESSEL_HAS(api, tessel_model_api, act_memory) || !api->act_memory || capacity == UINT64_MAX) return TESSEL_OK;
  TESSEL_TRY(least_model(g, &out->model));
  TESSEL_TRY(read_run_placement(g));
  candidate(g, 0, g->act_tier, g->act_rec);
  TESSEL_TRY(api->act_memory(g->host, g->act_tier, g->act_rec, &out->plain_device, &out->plain_host));
  fits = out->plain_device + GM_OWN_SCRATCH + out->model <= capacity;
  if (search) {
    TESSEL_TRY(first_fit(g, (uint64_t)((double)capacity * g->o.steady_ratio), out->model, &fits, &out->device));
    if (!fits) TESSEL_TRY(first_fit(g, capacity, out->model, &fits, &out->device));
    if (!fits) /* the least of all, refused below */
      candidate(g, GM_LAST_CANDIDATE(g->dims.layers), g->act_tier, g->act_rec);
  }
  TESSEL_TRY(api->act_memory(g->host, g->act_tier, g->act_rec, &out->device, &out->host));
  out->changed = out->device != out->plain_device;
  return fits ? TESSEL_OK : gm_refuse_least(g, out->device + GM_OWN_SCRATCH, out->model, capacity);
}

static tessel_status decide(gemini *g) {
  tessel_tier_stats dev = {.size = sizeof dev};
  gm_acts_choice choice;
  char a[32], b[32], c[32], d[256];
  g->acts_decided = 1;
  /* no bounded device to fit (or none yet: `tessel check`): keep everything */
  if (g->api->mem->stats(g->host, TESSEL_TIER_DEVICE, &dev) < 0) return TESSEL_OK;
  TESSEL_TRY(gm_acts_choose(g, dev.capacity, &choice));
  if (!choice.changed) return TESSEL_OK;
  g->api->log(g->host, TESSEL_LOG_INFO,
              "placement auto: activations do not fit beside the chunks, so %s: the core's non-model memory is %s "
              "on the device instead of %s, next to at least %s of chunks",
              describe(g, d, sizeof d), gm_bytes(choice.device, a), gm_bytes(choice.plain_device, b),
              gm_bytes(choice.model, c));
  return TESSEL_OK;
}

tessel_status gm_place_state(void *inst, tessel_state_ref what, tessel_placement *out) {
  gemini *g = inst;
  if (what.kind != TESSEL_STATE_ACT) return TESSEL_OK;
  if (!g->acts_decided) TESSEL_TRY(decide(g));
  if (!gm_auto_places_acts(g)) return TESSEL_OK;
  if (!g->act_rec || what.index < 0 || what.index >= g->dims.units) return TESSEL_OK;
  if (g->act_rec[what.index] > out->recompute) out->recompute = g->act_rec[what.index];
  if (g->act_tier[what.index] == TESSEL_TIER_HOST) out->tier = TESSEL_TIER_HOST;
  return TESSEL_OK;
}
