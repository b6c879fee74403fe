/*
** plugins/gemini/state.c — checkpoints: this rank's FLAT part of a tensor.
**
** The layout gemini gives every parameter is FLAT: the elements of the
** tensor that lie in this rank's shard of its chunk. The core assembles
** logical tensors from those parts (and cuts them out again on load), so a
** gemini checkpoint loads under any strategy and world size and back. The
** part is one contiguous run of the shard, wherever the shard lives.
*/
#include "gemini.h"

/* Where parameter `param`'s part of `which` lives: tier, buffer, element
** offset and length. AdamW's slots: 0 is m, 1 is v. */
static tessel_status locate(gemini *g, int param, tessel_state_ref which, tessel_tier *tier, float **base,
                            uint64_t *off, uint64_t *n) {
  int slot = which.kind == TESSEL_STATE_SLOT ? which.index : -1;
  if (!g->cs.c || param < 0 || param >= g->cs.nt || (which.kind != TESSEL_STATE_MASTER && slot != 0 && slot != 1))
    return g->api->set_error(g->host, TESSEL_E_INTERNAL, "no state kind %d/%d of parameter %d in the chunks",
                             (int)which.kind, which.index, param);
  const gm_tensor *t = &g->cs.t[param];
  gm_chunk *c = &g->cs.c[t->chunk];
  uint64_t begin, end;
  gm_tensor_part(&g->cs, param, g->rank, &begin, &end);
  *n = end - begin;
  *off = t->offset + begin - (uint64_t)g->rank * c->shard;
  *tier = slot < 0 || !c->nvme ? c->otier : TESSEL_TIER_NVME;
  *base = slot < 0 ? c->master : slot == 0 ? c->m : c->v;
  return TESSEL_OK;
}

/* Move parameter `param`'s part of `which` between its place and a host
** buffer: out to `out` (a read), or in from `in` (a write). */
static tessel_status transfer(gemini *g, int param, tessel_state_ref which, float *out, const float *in) {
  const tessel_mem_api *mem = g->api->mem;
  tessel_tier tier = TESSEL_TIER_HOST;
  float *base = NULL;
  uint64_t off = 0, n = 0;
  TESSEL_TRY(locate(g, param, which, &tier, &base, &off, &n));
  if (n == 0) return TESSEL_OK;
  if (out) {
    TESSEL_TRY(mem->copy(g->host, TESSEL_TIER_HOST, out, 0, tier, base, 4 * off, 4 * n, NULL));
    return g->api->stream->sync(g->host, g->s);
  }
  gm_chunk *c = &g->cs.c[g->cs.t[param].chunk];
  /* a gathered copy would hold the old values */
  if (which.kind == TESSEL_STATE_MASTER && c->gathered) TESSEL_TRY(gm_release(g, g->cs.t[param].chunk));
  TESSEL_TRY(mem->copy(g->host, tier, base, 4 * off, TESSEL_TIER_HOST, in, 0, 4 * n, NULL));
  if (which.kind == TESSEL_STATE_MASTER && c->param_dev)
    TESSEL_TRY(mem->copy(g->host, TESSEL_TIER_DEVICE, c->pshard, 4 * off, TESSEL_TIER_HOST, in, 0, 4 * n, NULL));
  return g->api->stream->sync(g->host, g->s);
}

tessel_status gm_state_read(void *inst, int param, tessel_state_ref which, float *host_dst) {
  return transfer(inst, param, which, host_dst, NULL);
}

tessel_status gm_state_write(void *inst, int param, tessel_state_ref which, const float *host_src) {
  return transfer(inst, param, which, NULL, host_src);
}
