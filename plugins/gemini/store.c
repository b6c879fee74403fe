/*
** plugins/gemini/store.c — where each shard lives, and the device account.
**
** Per chunk a rank keeps four shards of `shard` fp32 elements: the master
** parameters and the gradient in the chunk's otier (device or host), the
** AdamW moments there too or on the NVMe tier, and — for a host chunk whose
** parameters stay on the device — a device copy of the parameter shard,
** refreshed after every optimizer step, that gathers read from.
**
** Every allocation goes through the core's ledger. Besides, the plugin
** counts its own model data on the device (dev_bytes): the ledger's numbers
** are per rank and include what the core allocates, while decisions must be
** the same on every rank, so they are taken on this count and on non-model
** bytes reduced over the group.
**
** Transient device buffers — gathered chunks, gradient buffers, reduce
** results — come and go with every unit. Handing them back to the ledger
** each time makes the backend map fresh pages each time, and on the CPU
** the page faults cost more than the copies; so released ones wait in a
** pool for the next request of the same size and kind. The pool never
** makes the device hold more than the plugin's own peak: dev_bytes +
** pooled <= dev_peak, trimmed before any fresh allocation — so the device
** holds no more than the simulated plan and the start-up checks counted.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemini.h"

static void count_device(gemini *g, uint64_t bytes, int transient_grad) {
  g->dev_bytes += bytes;
  if (transient_grad) g->grad_bytes += bytes;
  if (g->dev_bytes > g->dev_peak) {
    g->dev_peak = g->dev_bytes;
    g->grad_at_peak = g->grad_bytes;
  }
}

static tessel_status alloc_counted(gemini *g, tessel_tier tier, tessel_mem_kind kind, uint64_t bytes,
                                   const char *what, int chunk, int transient_grad, void **out) {
  *out = NULL;
  if (!g->dry) {
    char name[96];
    snprintf(name, sizeof name, "gemini chunk %d %s", chunk, what);
    tessel_status st = g->api->mem->alloc(g->host, tier, kind, bytes, name, out);
    if (st < 0) return st;
  }
  if (tier == TESSEL_TIER_DEVICE) count_device(g, bytes, transient_grad);
  return TESSEL_OK;
}

tessel_status gm_alloc(gemini *g, tessel_tier tier, tessel_mem_kind kind, uint64_t bytes, const char *what, int chunk,
                       void **out) {
  return alloc_counted(g, tier, kind, bytes, what, chunk, 0, out);
}

void gm_free(gemini *g, tessel_tier tier, void **ptr, uint64_t bytes) {
  if (!g->dry && !*ptr) return;
  if (!g->dry) g->api->mem->free(g->host, tier, *ptr);
  *ptr = NULL;
  if (tier == TESSEL_TIER_DEVICE) g->dev_bytes -= bytes;
}

typedef struct gm_pooled {
  void *ptr;
  uint64_t bytes;
  tessel_mem_kind kind;
} gm_pooled;

static void drop_pooled(gemini *g, int i) {
  g->api->mem->free(g->host, TESSEL_TIER_DEVICE, g->pool[i].ptr);
  g->pooled -= g->pool[i].bytes;
  g->pool[i] = g->pool[--g->npool];
}

tessel_status gm_take(gemini *g, tessel_mem_kind kind, uint64_t bytes, int zero, const char *what, int chunk,
                      void **out) {
  int grad = kind == TESSEL_MEM_GRAD;
  *out = NULL;
  if (g->dry) {
    count_device(g, bytes, grad);
    return TESSEL_OK;
  }
  for (int i = g->npool - 1; i >= 0; i--) {
    if (g->pool[i].bytes != bytes || g->pool[i].kind != kind) continue;
    *out = g->pool[i].ptr;
    g->pooled -= bytes;
    g->pool[i] = g->pool[--g->npool];
    count_device(g, bytes, grad);
    /* A reused buffer held finite values: a gradient or parameters of
    ** this run, which stops at the first non-finite loss or gradient. */
    if (!zero) return TESSEL_OK;
    return g->api->kernels->scale(g->host, g->s, TESSEL_F32, *out, 0.0f,
                                  (int64_t)(bytes / 4));
  }
  uint64_t high = g->dev_bytes + bytes > g->dev_peak ? g->dev_bytes + bytes : g->dev_peak;
  while (g->npool > 0 && g->dev_bytes + g->pooled + bytes > high) drop_pooled(g, g->npool - 1);
  return alloc_counted(g, TESSEL_TIER_DEVICE, kind, bytes, what, chunk, grad, out); /* zero-filled */
}

void gm_give(gemini *g, tessel_mem_kind kind, void **ptr, uint64_t bytes) {
  if (!g->dry && !*ptr) return;
  g->dev_bytes -= bytes;
  if (kind == TESSEL_MEM_GRAD) g->grad_bytes -= bytes;
  if (!g->dry) {
    if (g->npool == g->pool_cap) {
      int cap = g->pool_cap ? 2 * g->pool_cap : 16;
      gm_pooled *p = realloc(g->pool, sizeof *p * (size_t)cap);
      if (!p) { /* no room to remember it: back to the ledger */
        g->api->mem->free(g->host, TESSEL_TIER_DEVICE, *ptr);
        *ptr = NULL;
        return;
      }
      g->pool = p;
      g->pool_cap = cap;
    }
    g->pool[g->npool++] = (gm_pooled){*ptr, bytes, kind};
    g->pooled += bytes;
  }
  *ptr = NULL;
}

uint64_t gm_resident_bytes(const gemini *g) {
  uint64_t n = 0;
  for (int k = 0; k < g->cs.nc; k++) {
    const gm_chunk *c = &g->cs.c[k];
    uint64_t shard = 4 * c->shard;
    if (c->otier == TESSEL_TIER_DEVICE) n += 4 * shard; /* master, gradient, m, v */
    if (c->param_dev) n += shard;
  }
  return n;
}

static tessel_tier moment_tier(const gm_chunk *c) { return c->nvme ? TESSEL_TIER_NVME : c->otier; }

static tessel_status alloc_chunk(gemini *g, int k) {
  gm_chunk *c = &g->cs.c[k];
  uint64_t bytes = 4 * c->shard;
  tessel_status st;
  if ((st = gm_alloc(g, c->otier, TESSEL_MEM_PARAM, bytes, "parameters (fp32 shard)", k, (void **)&c->master)) < 0 ||
      (st = gm_alloc(g, c->otier, TESSEL_MEM_GRAD, bytes, "gradient shard", k, (void **)&c->gshard)) < 0 ||
      (st = gm_alloc(g, moment_tier(c), TESSEL_MEM_OPTIM, bytes, "AdamW m shard", k, (void **)&c->m)) < 0 ||
      (st = gm_alloc(g, moment_tier(c), TESSEL_MEM_OPTIM, bytes, "AdamW v shard", k, (void **)&c->v)) < 0)
    return st;
  if (c->param_dev)
    return gm_alloc(g, TESSEL_TIER_DEVICE, TESSEL_MEM_PARAM, bytes, "parameter shard (device copy)", k,
                    (void **)&c->pshard);
  return TESSEL_OK;
}

/* The initial values of chunk k's shard, element for element what the
** model's layout-independent init gives those elements of each tensor.
** init_flat writes device memory, so a host shard is filled through
** `stage`; padding stays zero. */
static tessel_status init_chunk(gemini *g, int k, float *stage) {
  const tessel_host_api *api = g->api;
  gm_chunk *c = &g->cs.c[k];
  int on_device = c->otier == TESSEL_TIER_DEVICE;
  tessel_status st;
  for (int i = 0; i < c->nsegs; i++) {
    const gm_segment *s = &c->segs[i];
    const gm_tensor *t = &g->cs.t[s->tensor];
    uint64_t begin = s->shard_off + (uint64_t)g->rank * c->shard - t->offset;
    float *dst = (on_device ? c->master : stage) + s->shard_off;
    if ((st = api->model->init_flat(g->host, t->param, begin, begin + s->n, dst)) < 0) return st;
    if (!on_device &&
        (st = api->mem->copy(g->host, TESSEL_TIER_HOST, c->master, 4 * s->shard_off, TESSEL_TIER_DEVICE, stage,
                             4 * s->shard_off, 4 * s->n, NULL)) < 0)
      return st;
  }
  if (c->param_dev)
    return api->mem->copy(g->host, TESSEL_TIER_DEVICE, c->pshard, 0, c->otier, c->master, 0, 4 * c->shard, NULL);
  return TESSEL_OK;
}

tessel_status gm_store_create(gemini *g) {
  const tessel_host_api *api = g->api;
  tessel_status st = TESSEL_OK;
  uint64_t most = 0;
  int any_host = 0, any_nvme = 0;
  for (int k = 0; k < g->cs.nc; k++) {
    gm_chunk *c = &g->cs.c[k];
    if (c->shard > most) most = c->shard;
    any_host |= c->otier != TESSEL_TIER_DEVICE;
    any_nvme |= c->nvme;
    if ((st = alloc_chunk(g, k)) < 0) return st;
  }
  float *stage = NULL;
  if (any_host &&
      (st = api->mem->alloc(g->host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, 4 * most, "gemini init staging",
                            (void **)&stage)) < 0)
    return st;
  for (int k = 0; k < g->cs.nc && st >= 0; k++) st = init_chunk(g, k, stage);
  if (st >= 0) st = api->stream->sync(g->host, g->s);
  api->mem->free(g->host, TESSEL_TIER_DEVICE, stage);
  if (st < 0) return st;
  /* host staging: NVMe moments (m and v halves), or a gradient added into a
  ** host shard when micro-batches accumulate */
  g->stage_elems = most;
  if (any_nvme || (any_host && g->dims.micro_steps > 1))
    st = api->mem->alloc(g->host, TESSEL_TIER_HOST, TESSEL_MEM_SCRATCH, 2 * 4 * most, "gemini host staging",
                         (void **)&g->host_stage);
  return st;
}

tessel_status gm_store_promote(gemini *g, int k) {
  const tessel_host_api *api = g->api;
  gm_chunk *c = &g->cs.c[k];
  uint64_t bytes = 4 * c->shard;
  float *master, *gshard, *m, *v;
  tessel_status st;
  st = gm_alloc(g, TESSEL_TIER_DEVICE, TESSEL_MEM_PARAM, bytes, "parameters (fp32 shard)", k, (void **)&master);
  if (st < 0) return st;
  if ((st = gm_alloc(g, TESSEL_TIER_DEVICE, TESSEL_MEM_GRAD, bytes, "gradient shard", k, (void **)&gshard)) < 0)
    goto fail_gshard;
  if ((st = gm_alloc(g, TESSEL_TIER_DEVICE, TESSEL_MEM_OPTIM, bytes, "AdamW m shard", k, (void **)&m)) < 0) goto fail_m;
  if ((st = gm_alloc(g, TESSEL_TIER_DEVICE, TESSEL_MEM_OPTIM, bytes, "AdamW v shard", k, (void **)&v)) < 0) goto fail_v;
  if (!g->dry &&
      ((st = api->mem->copy(g->host, TESSEL_TIER_DEVICE, master, 0, TESSEL_TIER_HOST, c->master, 0, bytes, NULL)) < 0 ||
       (st = api->mem->copy(g->host, TESSEL_TIER_DEVICE, m, 0, TESSEL_TIER_HOST, c->m, 0, bytes, NULL)) < 0 ||
       (st = api->mem->copy(g->host, TESSEL_TIER_DEVICE, v, 0, TESSEL_TIER_HOST, c->v, 0, bytes, NULL)) < 0))
    goto fail_copy;
  gm_free(g, TESSEL_TIER_HOST, (void **)&c->master, bytes);
  gm_free(g, TESSEL_TIER_HOST, (void **)&c->gshard, bytes);
  gm_free(g, TESSEL_TIER_HOST, (void **)&c->m, bytes);
  gm_free(g, TESSEL_TIER_HOST, (void **)&c->v, bytes);
  if (c->param_dev) gm_free(g, TESSEL_TIER_DEVICE, (void **)&c->pshard, bytes);
  c->master = master;
  c->gshard = gshard;
  c->m = m;
  c->v = v;
  c->otier = TESSEL_TIER_DEVICE;
  c->param_dev = 0;
  return TESSEL_OK;
fail_copy:
  gm_free(g, TESSEL_TIER_DEVICE, (void **)&v, bytes);
fail_v:
  gm_free(g, TESSEL_TIER_DEVICE, (void **)&m, bytes);
fail_m:
  gm_free(g, TESSEL_TIER_DEVICE, (void **)&gshard, bytes);
fail_gshard:
  gm_free(g, TESSEL_TIER_DEVICE, (void **)&master, bytes);
  return st;
}

void gm_store_free(gemini *g) {
  for (int k = 0; g->cs.c && k < g->cs.nc; k++) {
    gm_chunk *c = &g->cs.c[k];
    uint64_t shard = 4 * c->shard, whole = 4 * c->size;
    gm_free(g, c->otier, (void **)&c->master, shard);
    gm_free(g, c->otier, (void **)&c->gshard, shard);
    gm_free(g, moment_tier(c), (void **)&c->m, shard);
    gm_free(g, moment_tier(c), (void **)&c->v, shard);
    gm_free(g, TESSEL_TIER_DEVICE, (void **)&c->pshard, shard);
    gm_free(g, TESSEL_TIER_DEVICE, (void **)&c->data, whole);
    gm_free(g, TESSEL_TIER_DEVICE, (void **)&c->grad, whole);
    gm_free(g, TESSEL_TIER_DEVICE, (void **)&c->recv, shard);
  }
  while (g->npool > 0) drop_pooled(g, g->npool - 1);
  free(g->pool);
  g->pool = NULL;
  g->pool_cap = 0;
  if (g->host_stage) g->api->mem->free(g->host, TESSEL_TIER_HOST, g->host_stage);
  if (g->norm) g->api->mem->free(g->host, TESSEL_TIER_DEVICE, g->norm);
  g->host_stage = NULL;
  g->norm = NULL;
}
