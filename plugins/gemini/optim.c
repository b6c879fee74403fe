/*
** plugins/gemini/optim.c — AdamW on the shards, and the gradient norm.
**
** Each rank updates its own shard of every chunk, tensor by tensor (a shard
** may span several tensors, and only matrices decay; the chunk's padding is
** never touched), with the backend's AdamW on the tier where the shard's
** state lives: device memory, or host memory — which kernels can address on
** the CPU backend and, pinned, under CUDA — or, for moments on NVMe, a host
** staging buffer they are read into and written back from. A host chunk
** whose parameters keep a device copy refreshes it afterwards.
*/
#include "gemini.h"

tessel_status gm_grad_norm(void *inst, double *sumsq) {
  gemini *g = inst;
  const tessel_host_api *api = g->api;
  tessel_stream *s = g->s;
  const double zero = 0.0;
  tessel_status st =
      api->mem->copy(g->host, TESSEL_TIER_DEVICE, g->norm, 0, TESSEL_TIER_HOST, &zero, 0, sizeof zero, NULL);
  for (int k = 0; k < g->cs.nc && st >= 0; k++) {
    const gm_chunk *c = &g->cs.c[k];
    for (int i = 0; i < c->nsegs && st >= 0; i++)
      st = api->kernels->sumsq(g->host, s, g->norm, c->gshard + c->segs[i].shard_off, (int64_t)c->segs[i].n);
  }
  if (st >= 0 && g->world > 1)
    st = api->comm->all_reduce(g->host, g->dp, g->norm, g->norm, 1, TESSEL_F64, TESSEL_SUM, NULL);
  if (st >= 0)
    st = api->mem->copy(g->host, TESSEL_TIER_HOST, sumsq, 0, TESSEL_TIER_DEVICE, g->norm, 0, sizeof *sumsq, NULL);
  if (st >= 0) st = api->stream->sync(g->host, s);
  return st;
}

/* Copy chunk c's moments between the NVMe tier and the host staging buffer. */
static tessel_status moments(gemini *g, gm_chunk *c, int to_nvme) {
  const tessel_host_api *api = g->api;
  float *stage_m = g->host_stage, *stage_v = g->host_stage + g->stage_elems;
  uint64_t bytes = 4 * c->shard;
  tessel_status st;
  if (to_nvme) {
    if ((st = api->stream->sync(g->host, g->s)) < 0 ||
        (st = api->mem->copy(g->host, TESSEL_TIER_NVME, c->m, 0, TESSEL_TIER_HOST, stage_m, 0, bytes, NULL)) < 0)
      return st;
    return api->mem->copy(g->host, TESSEL_TIER_NVME, c->v, 0, TESSEL_TIER_HOST, stage_v, 0, bytes, NULL);
  }
  if ((st = api->mem->copy(g->host, TESSEL_TIER_HOST, stage_m, 0, TESSEL_TIER_NVME, c->m, 0, bytes, NULL)) < 0)
    return st;
  return api->mem->copy(g->host, TESSEL_TIER_HOST, stage_v, 0, TESSEL_TIER_NVME, c->v, 0, bytes, NULL);
}

static tessel_status step_chunk(gemini *g, int k, const tessel_optim_step *hp) {
  const tessel_host_api *api = g->api;
  tessel_stream *s = g->s;
  gm_chunk *c = &g->cs.c[k];
  tessel_status st;
  if (!c->acc)
    return api->set_error(g->host, TESSEL_E_INTERNAL, "chunk %d has no gradient for this step", k);
  c->acc = 0; /* the next step's first micro-batch overwrites the shard */
  if (c->nsegs == 0) return TESSEL_OK;
  float *m = c->m, *v = c->v;
  if (c->nvme) {
    if ((st = moments(g, c, 0)) < 0) return st;
    m = g->host_stage;
    v = g->host_stage + g->stage_elems;
  }
  for (int i = 0; i < c->nsegs; i++) {
    const gm_segment *seg = &c->segs[i];
    float *p = c->master + seg->shard_off;
    tessel_optim_update u = {.size = sizeof u, .master = p, .work = p, .grad = c->gshard + seg->shard_off,
                             .slots = {m + seg->shard_off, v + seg->shard_off}, .n = (int64_t)seg->n,
                             .no_decay = (g->cs.t[seg->tensor].flags & TESSEL_PARAM_NO_DECAY) != 0};
    TESSEL_TRY(api->kernels->optimizer_update(g->host, s, &u, hp));
  }
  if (c->nvme && (st = moments(g, c, 1)) < 0) return st;
  if (c->param_dev)
    return api->mem->copy(g->host, TESSEL_TIER_DEVICE, c->pshard, 0, c->otier, c->master, 0, 4 * c->shard, NULL);
  return TESSEL_OK;
}

tessel_status gm_optimizer_step(void *inst, const tessel_optim_step *hp) {
  gemini *g = inst;
  /* gathered copies would be stale after the update */
  tessel_status st = gm_release_all(g);
  for (int k = 0; k < g->cs.nc && st >= 0; k++) st = step_chunk(g, k, hp);
  if (st >= 0) st = g->api->stream->sync(g->host, g->s);
  if (st >= 0 && g->warmup) st = gm_warmup_end(g);
  return st;
}
