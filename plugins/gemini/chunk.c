/* plugins/gemini/chunk.c — packing tensors into chunks, and their states. */
#include <stdlib.h>
#include <string.h>

#include "gemini.h"

uint64_t gm_align(int world) { return 16u * (uint64_t)world; }

static uint64_t round_up(uint64_t x, uint64_t m) { return (x + m - 1) / m * m; }

int gm_pack(const uint64_t *numel, int n, uint64_t size, uint64_t align, int *chunk, uint64_t *offset,
            uint64_t *sizes, uint64_t *capacity) {
  int nc = 0;
  uint64_t fill = 0, room = 0, total = 0; /* room: the open chunk's size, 0 when none is open */
  for (int i = 0; i < n; i++) {
    uint64_t k = numel[i];
    if (k > size) { /* a chunk of its own; the next tensor opens a new one */
      uint64_t s = round_up(k, align);
      if (sizes) sizes[nc] = s;
      if (chunk) chunk[i] = nc;
      if (offset) offset[i] = 0;
      nc++;
      total += s;
      room = fill = 0;
      continue;
    }
    if (room == 0 || fill + k > room) {
      if (sizes) sizes[nc] = size;
      nc++;
      total += size;
      room = size;
      fill = 0;
    }
    if (chunk) chunk[i] = nc - 1;
    if (offset) offset[i] = fill;
    fill += k;
  }
  *capacity = total;
  return nc;
}

void gm_tensor_part(const gm_chunks *cs, int t, int rank, uint64_t *begin, uint64_t *end) {
  const gm_tensor *x = &cs->t[t];
  const gm_chunk *c = &cs->c[x->chunk];
  uint64_t lo = (uint64_t)rank * c->shard, hi = lo + c->shard;
  uint64_t b = x->offset > lo ? x->offset : lo, e = x->offset + x->numel < hi ? x->offset + x->numel : hi;
  if (b >= e) {
    *begin = *end = 0;
    return;
  }
  *begin = b - x->offset;
  *end = e - x->offset;
}

/* The runs of `rank`'s shard of chunk k that hold tensors. */
static tessel_status segments(gm_chunks *cs, int k, int rank) {
  gm_chunk *c = &cs->c[k];
  c->segs = calloc((size_t)c->count, sizeof *c->segs);
  if (!c->segs) return cs->api->set_error(cs->host, TESSEL_E_NOMEM, "out of host memory for chunk segments");
  for (int t = c->first; t < c->first + c->count; t++) {
    uint64_t b, e;
    gm_tensor_part(cs, t, rank, &b, &e);
    if (b == e) continue;
    c->segs[c->nsegs++] = (gm_segment){t, cs->t[t].offset + b - (uint64_t)rank * c->shard, e - b};
  }
  return TESSEL_OK;
}

tessel_status gm_chunks_build(gm_chunks *cs, const tessel_host_api *api, tessel_host *host, gm_tensor *tensors,
                              int n, uint64_t chunk_elems, int world, int rank) {
  tessel_status st = TESSEL_OK;
  memset(cs, 0, sizeof *cs);
  cs->api = api;
  cs->host = host;
  cs->t = tensors;
  cs->nt = n;
  cs->chunk_elems = chunk_elems;
  cs->align = gm_align(world);
  uint64_t *numel = malloc(sizeof *numel * (size_t)n), *offset = malloc(sizeof *offset * (size_t)n);
  uint64_t *sizes = malloc(sizeof *sizes * (size_t)n), total;
  int *chunk = malloc(sizeof *chunk * (size_t)n);
  if (!numel || !offset || !sizes || !chunk) {
    st = api->set_error(host, TESSEL_E_NOMEM, "out of host memory packing chunks");
    goto done;
  }
  for (int i = 0; i < n; i++) numel[i] = tensors[i].numel;
  cs->nc = gm_pack(numel, n, chunk_elems, cs->align, chunk, offset, sizes, &total);
  if (!(cs->c = calloc((size_t)cs->nc, sizeof *cs->c))) {
    st = api->set_error(host, TESSEL_E_NOMEM, "out of host memory for %d chunks", cs->nc);
    goto done;
  }
  for (int k = 0; k < cs->nc; k++) {
    cs->c[k].size = sizes[k];
    cs->c[k].shard = sizes[k] / (uint64_t)world;
    cs->c[k].first = -1;
    cs->c[k].otier = TESSEL_TIER_DEVICE;
  }
  for (int i = 0; i < n; i++) {
    gm_chunk *c = &cs->c[chunk[i]];
    tensors[i].chunk = chunk[i];
    tensors[i].offset = offset[i];
    tensors[i].state = GM_FREE;
    if (c->first < 0) c->first = i;
    c->count++;
    c->used += numel[i];
    c->in_state[GM_FREE]++;
  }
  for (int k = 0; k < cs->nc && st >= 0; k++) st = segments(cs, k, rank);
done:
  free(numel);
  free(offset);
  free(sizes);
  free(chunk);
  return st;
}

void gm_chunks_free(gm_chunks *cs) {
  for (int k = 0; cs->c && k < cs->nc; k++) free(cs->c[k].segs);
  free(cs->c);
  free(cs->t);
  cs->c = NULL;
  cs->t = NULL;
  cs->nc = cs->nt = 0;
}

const char *gm_state_name(gm_state s) {
  static const char *const names[GM_STATES] = {"FREE", "COMPUTE", "HOLD", "HOLD_AFTER_BWD", "READY_FOR_REDUCE"};
  return (unsigned)s < GM_STATES ? names[s] : "?";
}

static int allowed(gm_state from, gm_state to) {
  switch (from) {
    case GM_FREE: return to == GM_HOLD;
    case GM_HOLD: return to == GM_FREE || to == GM_COMPUTE;
    case GM_COMPUTE: return to == GM_HOLD || to == GM_HOLD_AFTER_BWD;
    case GM_HOLD_AFTER_BWD: return to == GM_COMPUTE || to == GM_READY_FOR_REDUCE;
    case GM_READY_FOR_REDUCE: return to == GM_HOLD;
  }
  return 0;
}

tessel_status gm_set_state(gm_chunks *cs, int t, gm_state to) {
  gm_tensor *x = &cs->t[t];
  if (!allowed(x->state, to))
    return cs->api->set_error(cs->host, TESSEL_E_INTERNAL, "tensor %s (chunk %d) cannot go from %s to %s",
                              x->name, x->chunk, gm_state_name(x->state), gm_state_name(to));
  gm_chunk *c = &cs->c[x->chunk];
  c->in_state[x->state]--;
  c->in_state[to]++;
  x->state = to;
  return TESSEL_OK;
}
