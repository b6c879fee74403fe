/*
** plugins/gemini/move.c — gathering, releasing and reducing chunks.
**
** A gather copies this rank's parameter shard from wherever it lives into
** its slot of a chunk-sized device buffer and all-gathers the other slots
** in place. A reduce-scatter sums a chunk's gathered gradient over the
** group into a shard-sized device buffer, which is then added into the
** gradient shard in its tier (copied, for the first micro-batch of a step).
** With one rank there is nothing to exchange: a gather is the copy and a
** reduce the addition.
**
** In a dry run (g->dry) only the bookkeeping happens — tensor states,
** residency flags, the device count and the payload counters — so that a
** simulated step follows exactly the code a real one runs.
*/
#include <string.h>

#include "gemini.h"

static tessel_status internal(gemini *g, const char *what, int k) {
  return g->api->set_error(g->host, TESSEL_E_INTERNAL, "%s (chunk %d)", what, k);
}

/* Where a gather reads this rank's parameter shard from. */
static void shard_source(const gm_chunk *c, tessel_tier *tier, const float **src) {
  if (c->otier == TESSEL_TIER_DEVICE) {
    *tier = TESSEL_TIER_DEVICE;
    *src = c->master;
  } else if (c->param_dev) {
    *tier = TESSEL_TIER_DEVICE;
    *src = c->pshard;
  } else {
    *tier = TESSEL_TIER_HOST;
    *src = c->master;
  }
}

tessel_status gm_gather(gemini *g, int k, int backward) {
  const tessel_host_api *api = g->api;
  gm_chunk *c = &g->cs.c[k];
  tessel_status st;
  if (c->gathered) return internal(g, "gathering a chunk that is already gathered", k);
  for (int t = c->first; t < c->first + c->count; t++) {
    gm_state s = g->cs.t[t].state;
    if (s == GM_HOLD || s == GM_COMPUTE)
      return api->set_error(g->host, TESSEL_E_INTERNAL, "tensor %s is %s while its chunk %d is not gathered",
                            g->cs.t[t].name, gm_state_name(s), k);
    /* a gradient in progress lives in the gradient buffer: its state stays */
    if (s == GM_FREE && (st = gm_set_state(&g->cs, t, GM_HOLD)) < 0) return st;
  }
  if ((st = gm_take(g, TESSEL_MEM_PARAM, 4 * c->size, 0, "gathered parameters", k, (void **)&c->data)) < 0)
    return st;
  c->gathered = 1;
  if (g->world > 1) {
    g->ag_bytes[backward] += 4 * c->size;
    g->ag_calls[backward]++;
  }
  if (g->dry) return TESSEL_OK;
  tessel_tier tier;
  const float *src;
  shard_source(c, &tier, &src);
  float *slot = c->data + (uint64_t)g->rank * c->shard;
  if ((st = api->mem->copy(g->host, TESSEL_TIER_DEVICE, slot, 0, tier, src, 0, 4 * c->shard, NULL)) < 0) return st;
  if (g->world == 1) return TESSEL_OK;
  if ((st = api->comm->all_gather(g->host, g->dp, slot, c->data, c->shard, TESSEL_F32, &c->gather_work)) < 0) return st;
  c->gathering = 1;
  return TESSEL_OK;
}

tessel_status gm_wait_gather(gemini *g, int k) {
  gm_chunk *c = &g->cs.c[k];
  if (!c->gathering) return TESSEL_OK;
  c->gathering = 0;
  tessel_work *w = c->gather_work;
  c->gather_work = NULL;
  return g->api->comm->wait(g->host, w);
}

tessel_status gm_release(gemini *g, int k) {
  gm_chunk *c = &g->cs.c[k];
  tessel_status st;
  if (!c->gathered) return internal(g, "releasing a chunk that is not gathered", k);
  if ((st = gm_wait_gather(g, k)) < 0) return st;
  for (int t = c->first; t < c->first + c->count; t++) {
    gm_state s = g->cs.t[t].state;
    if (s == GM_HOLD_AFTER_BWD || s == GM_READY_FOR_REDUCE) continue; /* its gradient outlives the parameters */
    if ((st = gm_set_state(&g->cs, t, GM_FREE)) < 0) return st;
  }
  gm_give(g, TESSEL_MEM_PARAM, (void **)&c->data, 4 * c->size);
  c->gathered = 0;
  return TESSEL_OK;
}

tessel_status gm_release_all(gemini *g) {
  tessel_status st;
  for (int k = 0; k < g->cs.nc; k++) {
    if (g->cs.c[k].reducing && (st = gm_reduce_complete(g, k)) < 0) return st;
    if (g->cs.c[k].gathered && (st = gm_release(g, k)) < 0) return st;
  }
  return TESSEL_OK;
}

tessel_status gm_grad_buffer(gemini *g, int k) {
  gm_chunk *c = &g->cs.c[k];
  tessel_status st;
  /* the previous micro-batch's reduce still reads the buffer */
  if (c->reducing && (st = gm_reduce_complete(g, k)) < 0) return st;
  if (c->grad_live) return TESSEL_OK;
  /* zeroed: backward kernels add into it */
  if ((st = gm_take(g, TESSEL_MEM_GRAD, 4 * c->size, 1, "gathered gradients", k, (void **)&c->grad)) < 0)
    return st;
  c->grad_live = 1;
  return TESSEL_OK;
}

/* Add a shard's worth of a device buffer into chunk c's gradient shard, or
** copy it for the step's first micro-batch. A host shard takes the sum on the
** host: the device values come over first. */
static tessel_status accumulate(gemini *g, gm_chunk *c, const float *src) {
  const tessel_host_api *api = g->api;
  tessel_stream *s = g->s;
  uint64_t bytes = 4 * c->shard;
  tessel_status st;
  int first = !c->acc;
  c->acc = 1;
  if (g->dry) return TESSEL_OK;
  if (first) return api->mem->copy(g->host, c->otier, c->gshard, 0, TESSEL_TIER_DEVICE, src, 0, bytes, NULL);
  if (c->otier == TESSEL_TIER_DEVICE)
    return api->kernels->axpy(g->host, s, TESSEL_F32, c->gshard, 1.0f, src, (int64_t)c->shard);
  if ((st = api->mem->copy(g->host, TESSEL_TIER_HOST, g->host_stage, 0, TESSEL_TIER_DEVICE, src, 0, bytes, NULL)) < 0 ||
      (st = api->stream->sync(g->host, s)) < 0)
    return st;
  return api->kernels->axpy(g->host, s, TESSEL_F32, c->gshard, 1.0f, g->host_stage, (int64_t)c->shard);
}

/* Chunk k joins or leaves the reduces in flight, kept in chunk order: a
** visit finishes them in that order, as a scan of every chunk did, while
** looking only at the few in flight. */
static void track_reduce(gemini *g, int k, int in_flight) {
  int i = 0;
  while (i < g->n_reduces && g->reduces[i] < k) i++;
  int *at = g->reduces + i;
  size_t after = sizeof *at * (size_t)(g->n_reduces - i);
  if (in_flight) {
    memmove(at + 1, at, after);
    *at = k;
    g->n_reduces++;
  } else if (i < g->n_reduces && *at == k) {
    memmove(at, at + 1, after - sizeof *at);
    g->n_reduces--;
  }
}

tessel_status gm_reduce(gemini *g, int k, int pos) {
  gm_chunk *c = &g->cs.c[k];
  tessel_status st;
  if (!c->gathered || !c->grad_live)
    return internal(g, "reducing a chunk whose parameters or gradients are not on the device", k);
  for (int t = c->first; t < c->first + c->count; t++)
    if ((st = gm_set_state(&g->cs, t, GM_HOLD)) < 0) return st;
  if (g->world == 1) {
    if ((st = accumulate(g, c, c->grad)) < 0) return st;
    gm_give(g, TESSEL_MEM_GRAD, (void **)&c->grad, 4 * c->size);
    c->grad_live = 0;
    return TESSEL_OK;
  }
  if ((st = gm_take(g, TESSEL_MEM_GRAD, 4 * c->shard, 0, "reduced gradient shard", k, (void **)&c->recv)) < 0)
    return st;
  g->rs_bytes += 4 * c->size;
  g->rs_calls++;
  c->reducing = 1;
  c->reduce_pos = pos;
  track_reduce(g, k, 1);
  if (g->dry) return TESSEL_OK;
  return g->api->comm->reduce_scatter(g->host, g->dp, c->grad, c->recv, c->shard, TESSEL_F32, TESSEL_SUM,
                                      &c->reduce_work);
}

tessel_status gm_reduce_complete(gemini *g, int k) {
  gm_chunk *c = &g->cs.c[k];
  tessel_status st;
  if (!c->reducing) return TESSEL_OK;
  c->reducing = 0;
  track_reduce(g, k, 0);
  if (!g->dry) {
    tessel_work *w = c->reduce_work;
    c->reduce_work = NULL;
    if ((st = g->api->comm->wait(g->host, w)) < 0) return st;
  }
  if ((st = accumulate(g, c, c->recv)) < 0) return st;
  gm_give(g, TESSEL_MEM_GRAD, (void **)&c->recv, 4 * c->shard);
  gm_give(g, TESSEL_MEM_GRAD, (void **)&c->grad, 4 * c->size);
  c->grad_live = 0;
  return TESSEL_OK;
}

tessel_status gm_reduces_complete(gemini *g, int before) {
  for (int i = 0; i < g->n_reduces;) {
    int k = g->reduces[i];
    if (g->cs.c[k].reduce_pos >= before) i++;
    else TESSEL_TRY(gm_reduce_complete(g, k)); /* leaves the list */
  }
  return TESSEL_OK;
}
