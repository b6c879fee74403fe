/*
** plugins/gemini/placement.c — which tier holds what, and what the device keeps.
**
** static: the fractions, applied over chunk memory in chunk order (a chunk
** goes to the host while less than the fraction has gone before it):
**   offload_optim_frac  master, gradient and moments on the host;
**   offload_param_frac  of those, no device copy of the parameter shard
**                       (gathers read the host master);
**   nvme_optim_frac     of those, the moments on the NVMe tier;
**   shard_param_frac    the share of chunks released after every use; the
**                       last (1 − frac) — those used latest in forward and
**                       earliest in backward — stay gathered from their
**                       forward until their gradient is reduced, which saves
**                       the backward all-gather (ZeRO-2-like).
** Each unit's chunks are released after it unless the next unit uses them.
**
** auto: every chunk starts on the host (its moments on NVMe for
** nvme_optim_frac). The first step is a warm-up that releases after every
** use and records the device's non-model bytes around every unit. From
** then on the budget for model data is device.memory_limit × steady_ratio
** minus the largest non-model reading; gathered chunks stay on the device
** until a unit needs room, and then the one whose next use is furthest
** away goes first (Belady). If a step that never evicts would leave room,
** chunks' optimizer state moves to the device, first chunk first, while it
** keeps fitting.
**
** In tessel activations are allocated once by the core before training,
** and the only non-model memory that grows later is the core's reduction
** scratch (first step); so "measuring non-model memory" is reading the
** ledger: exact at setup, and checked around every unit of the warm-up.
*/
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "gemini.h"

const char *gm_bytes(uint64_t bytes, char buf[32]) {
  if (bytes == UINT64_MAX) snprintf(buf, 32, "unbounded");
  else if (bytes >= (1ull << 20)) snprintf(buf, 32, "%.2f MiB", (double)bytes / (1 << 20));
  else snprintf(buf, 32, "%.1f KiB", (double)bytes / 1024);
  return buf;
}

tessel_status gm_max_over_dp(gemini *g, double *v, int n) {
  const tessel_host_api *api = g->api;
  uint64_t bytes = sizeof *v * (uint64_t)n;
  tessel_status st;
  if (g->world == 1) return TESSEL_OK;
  if ((st = api->mem->copy(g->host, TESSEL_TIER_DEVICE, g->norm, 0, TESSEL_TIER_HOST, v, 0, bytes, NULL)) < 0 ||
      (st = api->comm->all_reduce(g->host, g->dp, g->norm, g->norm, (uint64_t)n, TESSEL_F64, TESSEL_MAX, NULL)) < 0 ||
      (st = api->mem->copy(g->host, TESSEL_TIER_HOST, v, 0, TESSEL_TIER_DEVICE, g->norm, 0, bytes, NULL)) < 0)
    return st;
  return api->stream->sync(g->host, g->s);
}

void gm_place(gemini *g) {
  uint64_t total = 0, before = 0;
  for (int k = 0; k < g->cs.nc; k++) total += g->cs.c[k].size;
  int fixed = g->o.placement == GM_STATIC;
  double optim = fixed ? g->o.offload_optim_frac : 1.0, param = fixed ? g->o.offload_param_frac : 1.0;
  double keep = fixed ? 1.0 - g->o.shard_param_frac : 0.0;
  for (int k = 0; k < g->cs.nc; k++) {
    gm_chunk *c = &g->cs.c[k];
    double at = (double)before;
    c->otier = at < optim * (double)total ? TESSEL_TIER_HOST : TESSEL_TIER_DEVICE;
    c->param_dev = c->otier == TESSEL_TIER_HOST && !(at < param * (double)total);
    c->nvme = c->otier == TESSEL_TIER_HOST && at < g->o.nvme_optim_frac * (double)total;
    before += c->size;
    c->keep = (double)(total - before) < keep * (double)total;
  }
}

uint64_t gm_limit(const gemini *g) {
  if (g->cap == UINT64_MAX) return UINT64_MAX;
  return g->o.placement == GM_AUTO && !g->headroom ? (uint64_t)((double)g->cap * g->o.steady_ratio) : g->cap;
}

uint64_t gm_budget(const gemini *g) {
  uint64_t limit = gm_limit(g);
  if (limit == UINT64_MAX) return UINT64_MAX;
  return limit > g->nonmodel ? limit - g->nonmodel : 0;
}

tessel_status gm_make_room(gemini *g, int pos, uint64_t demand) {
  uint64_t budget = gm_budget(g);
  tessel_status st;
  if (g->policy != GM_CACHE || g->dev_bytes + demand <= budget) return TESSEL_OK;
  /* finished gradients leave first: no traffic lost */
  if ((st = gm_reduces_complete(g, INT_MAX)) < 0) return st;
  while (g->dev_bytes + demand > budget) {
    int victim = -1, far = -1;
    for (int k = 0; k < g->cs.nc; k++) {
      if (!g->cs.c[k].gathered || gm_uses(g, g->sch, pos, k)) continue;
      int next = gm_next_use(g, g->sch, pos, k);
      if (next >= far) {
        far = next;
        victim = k;
      }
    }
    if (victim < 0) {
      char a[32], b[32], c[32], d[32], e[32];
      return g->api->set_error(g->host, TESSEL_E_NOMEM,
                               "unit %d needs %s more on the device, which holds %s of model data, and "
                               "placement auto's budget is %s (%s of the device − %s non-model)",
                               gm_visit_at(g->sch, pos).unit, gm_bytes(demand, a), gm_bytes(g->dev_bytes, b), gm_bytes(budget, c),
                               gm_bytes(gm_limit(g), e), gm_bytes(g->nonmodel, d));
    }
    if ((st = gm_release(g, victim)) < 0) return st;
  }
  return TESSEL_OK;
}

tessel_status gm_prefetch_ahead(gemini *g, int pos) {
  const gm_schedule *s = g->sch;
  tessel_status st;
  if (g->prefetch <= 0 || !s || pos + 1 >= s->n) return TESSEL_OK;
  int next = pos + 1, fetched = 0;
  gm_visit nv = gm_visit_at(s, next);
  const gm_unit *u = &g->units[nv.unit];
  /* the next visit's own needs come first */
  uint64_t need = 0, budget = gm_budget(g);
  for (int i = 0; i < u->nc; i++) {
    const gm_chunk *c = &g->cs.c[u->chunks[i]];
    need += (c->gathered ? 0 : 4 * c->size) + (nv.grads && !c->grad_live ? 4 * c->size : 0);
  }
  /* what does not fit is gathered by the visit itself, after making room */
  if (budget != UINT64_MAX && g->dev_bytes + need > budget) return TESSEL_OK;
  uint64_t room = budget == UINT64_MAX ? UINT64_MAX : budget - g->dev_bytes - need;
  /* one micro-batch ahead at most: every later visit repeats one of those,
  ** whose chunks were met there first (gathered, or the end of the look) */
  int end = next + s->per_micro < s->n ? next + s->per_micro : s->n;
  for (int q = next; q < end && fetched < g->prefetch; q++) {
    gm_visit w = gm_visit_at(s, q);
    const gm_unit *wu = &g->units[w.unit];
    for (int i = 0; i < wu->nc && fetched < g->prefetch; i++) {
      int k = wu->chunks[i];
      if (g->cs.c[k].gathered) continue;
      uint64_t extra = q == next ? 0 : 4 * g->cs.c[k].size;
      if (extra > room) return TESSEL_OK; /* in order of use, or not at all */
      if (room != UINT64_MAX) room -= extra;
      if ((st = gm_gather(g, k, w.backward)) < 0) return st;
      fetched++;
    }
  }
  return TESSEL_OK;
}

/* Auto keeps a step under limit × steady_ratio, the headroom left for
** what the ledger does not see (fragmentation, a library's own buffers).
** When only the whole device holds the smallest step, auto takes the
** headroom rather than refuse what a static placement would train, and
** says so. */
static void take_headroom(gemini *g, uint64_t need) {
  char a[32], b[32], c[32];
  g->headroom = 1;
  g->api->log(g->host, TESSEL_LOG_WARN,
              "placement auto: a step needs at least %s on the device, more than device.memory_limit × "
              "steady_ratio (%s × %g = %s): using the headroom, up to the whole device",
              gm_bytes(need, a), gm_bytes(g->cap, b), g->o.steady_ratio,
              gm_bytes((uint64_t)((double)g->cap * g->o.steady_ratio), c));
}

tessel_status gm_refuse_least(gemini *g, uint64_t other, uint64_t least, uint64_t have) {
  char a[32], b[32], c[32], d[32], advice[512] = "";
  const tessel_model_dims *dims = &g->dims;
  int all_full = gm_acts_all_full(g);
  /* what is left to try: auto with auto_recompute has recomputed all it
  ** would, and a smaller chunk cannot help activations that fill the device
  ** on their own */
  const char *left[] = {
      "raise device.memory_limit",
      dims->micro_batch > 1 ? "lower train.micro_batch_size" : NULL,
      "shorten model.seq_len",
      dims->micro_steps == 1 && dims->micro_batch > 1 ? "run on more ranks (they split the batch)" : NULL,
      other < have ? "set a smaller plugin.chunk_size" : NULL,
      !all_full && !gm_auto_places_acts(g)
          ? "recompute activations (train.recompute: full)"
          : NULL};
  int n = 0, total = 0;
  for (size_t i = 0; i < sizeof left / sizeof *left; i++) total += left[i] != NULL;
  for (size_t i = 0; i < sizeof left / sizeof *left; i++) {
    if (!left[i]) continue;
    size_t at = strlen(advice);
    snprintf(advice + at, sizeof advice - at, "%s%s", n == 0 ? "" : n == total - 1 ? " or " : ", ", left[i]);
    n++;
  }
  advice[0] = (char)toupper((unsigned char)advice[0]);
  return g->api->set_error(
      g->host, TESSEL_E_NOMEM,
      "this model cannot train on this device even with every chunk offloaded%s: a step needs at least %s on the "
      "device (%s of activations and scratch, %s for the chunks of the largest unit and their gradients), and %s is "
      "available. %s.",
      all_full ? " and every unit's activations recomputed in full" : "", gm_bytes(other + least, a),
      gm_bytes(other, b), gm_bytes(least, c), gm_bytes(have, d), advice);
}

tessel_status gm_check_fit(gemini *g) {
  tessel_status st;
  gm_sim least, planned;
  char a[32], b[32], c[32], d[32], e[32];
  if (g->cap == UINT64_MAX) return TESSEL_OK;
  int automatic = g->o.placement == GM_AUTO;
  uint64_t other = g->nonmodel;
  if ((st = gm_simulate(g, GM_RELEASE, 0, 1, 0, &least)) < 0) return st;
  if (automatic && other + least.peak > gm_limit(g) && other + least.peak <= g->cap)
    take_headroom(g, other + least.peak);
  uint64_t limit = gm_limit(g);
  /* auto would have taken the headroom up to the whole device: that is
  ** what it had, not limit × steady_ratio */
  if (other + least.peak > limit) return gm_refuse_least(g, other, least.peak, automatic ? g->cap : limit);
  if (automatic) return TESSEL_OK;
  if ((st = gm_simulate(g, GM_RELEASE, g->o.prefetch, 0, 0, &planned)) < 0) return st;
  if (other + planned.peak > limit)
    return g->api->set_error(g->host, TESSEL_E_NOMEM,
                             "static placement needs %s on the device (%s of activations and scratch, %s of "
                             "chunks), and the device has %s. With everything offloaded a step needs %s: raise "
                             "offload_optim_frac and offload_param_frac, recompute activations (train.recompute), "
                             "or use placement: auto.",
                             gm_bytes(other + planned.peak, a), gm_bytes(other, b), gm_bytes(planned.peak, c),
                             gm_bytes(limit, d), gm_bytes(other + least.peak, e));
  return TESSEL_OK;
}

void gm_warmup_sample(gemini *g, int unit) {
  tessel_tier_stats s = {.size = sizeof s};
  if (!g->warmup || g->dry || g->api->mem->stats(g->host, TESSEL_TIER_DEVICE, &s) < 0) return;
  if (s.non_model > g->warm_unit[unit]) g->warm_unit[unit] = s.non_model;
}

/* The budget takes the largest reading of any unit: non-model memory only
** grows in tessel (the core's scratch, once), so in later steps every
** unit sees what the last one of the warm-up saw. */
tessel_status gm_warmup_end(gemini *g) {
  tessel_status st;
  gm_sim steady;
  char a[32], b[32], c[32];
  double measured = 0;
  for (int u = 0; u < g->nunits; u++) {
    g->api->log(g->host, TESSEL_LOG_DEBUG, "warm-up: %s of non-model device memory around unit %d",
                gm_bytes(g->warm_unit[u], a), u);
    if ((double)g->warm_unit[u] > measured) measured = (double)g->warm_unit[u];
  }
  if ((st = gm_max_over_dp(g, &measured, 1)) < 0) return st;
  g->warmup = 0;
  g->nonmodel = (uint64_t)measured;
  int promoted;
  if ((st = gm_settle(g, &promoted, &steady)) < 0) return st;
  g->api->log(g->host, TESSEL_LOG_INFO,
              "auto placement after the warm-up: non-model %s on the device, budget %s for model data; optimizer "
              "state of %d of %d chunk(s) moved to the device; steady step: model data peak %s, all-gather %llu + "
              "%llu B, reduce-scatter %llu B per rank (payload)",
              gm_bytes(g->nonmodel, a), gm_bytes(gm_budget(g), b), promoted, g->cs.nc, gm_bytes(steady.peak, c),
              (unsigned long long)steady.ag_bytes[0], (unsigned long long)steady.ag_bytes[1],
              (unsigned long long)steady.rs_bytes);
  return TESSEL_OK;
}

tessel_status gm_settle(gemini *g, int *promoted, gm_sim *steady) {
  tessel_status st;
  gm_sim all;
  g->policy = GM_CACHE;
  g->prefetch = g->o.prefetch;
  uint64_t budget = gm_budget(g), extra = 0;
  *promoted = 0;
  /* optimizer state moves to the device only into room that a step which
  ** never evicts a chunk leaves free */
  if ((st = gm_simulate(g, GM_CACHE, g->prefetch, 0, 1, &all)) < 0) return st;
  for (int k = 0; k < g->cs.nc; k++) {
    gm_chunk *ch = &g->cs.c[k];
    uint64_t bytes = 16 * ch->shard; /* master, gradient, m, v */
    if (ch->otier != TESSEL_TIER_HOST || ch->nvme) continue;
    if (budget != UINT64_MAX && all.peak + extra + bytes > budget) break;
    if ((st = gm_store_promote(g, k)) < 0) return st;
    extra += bytes;
    (*promoted)++;
  }
  if ((st = gm_simulate(g, GM_CACHE, g->prefetch, 0, 0, steady)) < 0) return st;
  if (budget == UINT64_MAX || steady->peak <= budget) return TESSEL_OK;
  /* keeping chunks gathered (and prefetching) would pass the budget: release
  ** each after use, as the warm-up step did */
  char a[32], b[32];
  g->api->log(g->host, TESSEL_LOG_INFO,
              "placement auto: keeping chunks gathered would peak at %s of model data, over the budget of %s: "
              "each chunk is released after use, without prefetch, as in the warm-up",
              gm_bytes(steady->peak, a), gm_bytes(budget, b));
  g->policy = GM_RELEASE;
  g->prefetch = 0;
  if ((st = gm_simulate(g, GM_RELEASE, 0, 0, 0, steady)) < 0) return st;
  if (g->nonmodel + steady->peak > gm_limit(g) && g->nonmodel + steady->peak <= g->cap)
    take_headroom(g, g->nonmodel + steady->peak);
  return TESSEL_OK;
}
