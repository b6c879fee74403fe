/*
** plugins/hybrid/zero.c — AdamW over this rank's share of the local part,
** and the moments in checkpoints.
**
** The core keeps this rank's (tensor- and pipeline-local) parameters and
** gradients in flat buffers of `numel` elements, identical in layout on
** every data-parallel rank. The data-parallel partition cuts that range
** into chunks of about bucket_size, each made of dp equal pieces, rank r
** owning piece r of every chunk; the few elements past the last chunk
** (fewer than dp) are everybody's. Chunks let ZeRO-2 reduce-scatter and
** ZeRO-1/2 all-gather a bucket at a time, in place in the core's buffers,
** through a scratch of one piece. With ZeRO the moments cover the owned
** pieces and the tail, and after the step each chunk's updated pieces are
** all-gathered so every replica holds the whole local part again; ZeRO
** stage 0 keeps the moments of the whole part. Weight decay is per
** parameter, so a piece is updated parameter by parameter.
*/
#include <stdlib.h>
#include <string.h>

#include "hybrid.h"

static int sharded(const hybrid *h) { return h->zero >= 1 && h->dp > 1; }

/* Piece r of every chunk, then the tail when `tail` is set; moments laid
** out one after the other when `packed`, else at the element's offset. */
static int list_pieces(const hybrid *h, int tail, int packed, hybrid_range *out) {
  int n = 0;
  uint64_t moment = 0;
  for (int c = 0; c < h->n_chunks; c++) {
    uint64_t begin = h->chunks[c].begin + (uint64_t)h->dp_rank * h->chunks[c].share;
    out[n++] = (hybrid_range){begin, begin + h->chunks[c].share, packed ? moment : begin};
    moment += h->chunks[c].share;
  }
  if (tail && h->tail < h->numel) out[n++] = (hybrid_range){h->tail, h->numel, packed ? moment : h->tail};
  return n;
}

tessel_status hybrid_plan_partition(hybrid *h) {
  uint64_t dp = (uint64_t)h->dp;
  if (dp > 1) {
    uint64_t share = h->bucket_bytes / sizeof(float) / dp, full, last;
    if (share == 0) share = 1;
    full = h->numel / (share * dp);
    last = (h->numel - full * share * dp) / dp;
    h->chunks = calloc((size_t)full + 1, sizeof *h->chunks);
    if (!h->chunks) goto nomem;
    for (uint64_t c = 0; c < full; c++) h->chunks[h->n_chunks++] = (hybrid_chunk){c * share * dp, share};
    if (last) h->chunks[h->n_chunks++] = (hybrid_chunk){full * share * dp, last};
    h->tail = full * share * dp + last * dp;
  }
  h->owned = calloc((size_t)h->n_chunks + 1, sizeof *h->owned);
  h->counted = calloc((size_t)h->n_chunks + 1, sizeof *h->counted);
  if (!h->owned || !h->counted) goto nomem;
  if (dp == 1) {
    h->owned[0] = h->counted[0] = (hybrid_range){0, h->numel, 0};
    h->n_owned = h->n_counted = 1;
  } else if (sharded(h)) {
    h->n_owned = list_pieces(h, 1, 1, h->owned);
    h->n_counted = list_pieces(h, h->dp_rank == 0, 1, h->counted);
  } else { /* replicas reduce whole gradients and keep whole moments */
    h->owned[0] = (hybrid_range){0, h->numel, 0};
    h->n_owned = 1;
    h->n_counted = list_pieces(h, h->dp_rank == 0, 0, h->counted);
  }
  h->moments = 0;
  for (int i = 0; i < h->n_owned; i++) h->moments += h->owned[i].end - h->owned[i].begin;
  return TESSEL_OK;
nomem:
  return h->api->set_error(h->host, TESSEL_E_NOMEM, "hybrid: out of host memory for the ZeRO partition");
}

tessel_status hybrid_each_piece(hybrid *h, const hybrid_range *r, int nr, int only, hybrid_piece_fn fn, void *ctx) {
  for (int k = 0; k < nr; k++) {
    for (int i = 0; i < h->n_params; i++) {
      const hybrid_param *p = &h->params[i];
      if (only >= 0 && p->index != only) continue;
      uint64_t lo = p->offset > r[k].begin ? p->offset : r[k].begin;
      uint64_t hi = p->offset + p->numel < r[k].end ? p->offset + p->numel : r[k].end;
      if (lo >= hi) continue;
      tessel_status st = fn(h, p, lo, hi, r[k].moment + (lo - r[k].begin), ctx);
      if (st < 0) return st;
    }
  }
  return TESSEL_OK;
}

static tessel_status adam_piece(hybrid *h, const hybrid_param *p, uint64_t lo, uint64_t hi, uint64_t moment, void *ctx) {
  const tessel_optim_step *hp = ctx;
  float *master = h->master + lo;
  void *work = h->work == (void *)h->master ? (void *)master : (char *)h->work + lo * h->act_size;
  return h->api->kernels->adamw(h->host, h->api->stream->compute(h->host), master, work, h->grad + lo,
                                h->m + moment, h->v + moment, (int64_t)(hi - lo), hp->lr, hp->beta1, hp->beta2, hp->eps,
                                hp->weight_decay * p->wd_scale, hp->grad_scale, hp->step);
}

/* Every replica puts its updated pieces of a chunk where the others'
** copies of them are: an in-place all-gather per chunk, of the fp32
** master and of a 16-bit working copy beside it. */
static tessel_status gather_chunks(hybrid *h) {
  const tessel_comm_api *comm = h->api->comm;
  int separate = h->work != (void *)h->master;
  for (int c = 0; c < h->n_chunks; c++) {
    uint64_t begin = h->chunks[c].begin, share = h->chunks[c].share, mine = begin + (uint64_t)h->dp_rank * share;
    tessel_status st = comm->all_gather(h->host, h->g_dp, h->master + mine, h->master + begin, share, TESSEL_F32, NULL);
    if (st >= 0 && separate)
      st = comm->all_gather(h->host, h->g_dp, (char *)h->work + mine * h->act_size,
                            (char *)h->work + begin * h->act_size, share, h->dims.act_dtype, NULL);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}

tessel_status hybrid_optimizer_step(void *inst, const tessel_optim_step *hp) {
  hybrid *h = inst;
  tessel_status st = hybrid_each_piece(h, h->owned, h->n_owned, -1, adam_piece, (void *)hp);
  return st < 0 || !sharded(h) ? st : gather_chunks(h);
}

/* ---- checkpoints: a moment in the parameter's (tensor-parallel) layout ---- */

typedef struct state_io {
  float *moments;
  float *host;
  const float *src;
} state_io;

static tessel_status read_piece(hybrid *h, const hybrid_param *p, uint64_t lo, uint64_t hi, uint64_t moment, void *ctx) {
  state_io *io = ctx;
  return h->api->mem->copy(h->host, TESSEL_TIER_HOST, io->host, (lo - p->offset) * sizeof(float), TESSEL_TIER_DEVICE,
                           io->moments, moment * sizeof(float), (hi - lo) * sizeof(float), NULL);
}

static tessel_status write_piece(hybrid *h, const hybrid_param *p, uint64_t lo, uint64_t hi, uint64_t moment, void *ctx) {
  state_io *io = ctx;
  return h->api->mem->copy(h->host, TESSEL_TIER_DEVICE, io->moments, moment * sizeof(float), TESSEL_TIER_HOST, io->src,
                           (lo - p->offset) * sizeof(float), (hi - lo) * sizeof(float), NULL);
}

static const hybrid_param *find_param(const hybrid *h, int index) {
  for (int i = 0; i < h->n_params; i++)
    if (h->params[i].index == index) return &h->params[i];
  return NULL;
}

static tessel_status moments_of(hybrid *h, int param, tessel_state which, float **moments, const hybrid_param **p) {
  *moments = which == TESSEL_STATE_ADAM_M ? h->m : which == TESSEL_STATE_ADAM_V ? h->v : NULL;
  *p = find_param(h, param);
  if (!*moments || !*p)
    return h->api->set_error(h->host, TESSEL_E_INTERNAL,
                             "hybrid: asked for %s of parameter %d, which this rank does not keep",
                             which == TESSEL_STATE_PARAM ? "the values (the core keeps those)" : "an AdamW moment", param);
  return TESSEL_OK;
}

/* With ZeRO every data-parallel rank of the part takes part: each fills in
** the elements it answers for, zeros elsewhere, and a sum over dp (exact:
** every element has one non-zero term) assembles the whole part. */
tessel_status hybrid_state_read(void *inst, int param, tessel_state which, float *host_dst) {
  hybrid *h = inst;
  const hybrid_param *p;
  state_io io = {.host = host_dst};
  tessel_stream *s = h->api->stream->compute(h->host);
  tessel_status st = moments_of(h, param, which, &io.moments, &p);
  if (st < 0) return st;
  const hybrid_range *r = sharded(h) ? h->counted : h->owned;
  int nr = sharded(h) ? h->n_counted : h->n_owned;
  uint64_t bytes = p->numel * sizeof(float);
  if (sharded(h)) memset(host_dst, 0, bytes);
  if ((st = hybrid_each_piece(h, r, nr, param, read_piece, &io)) < 0 || (st = h->api->stream->sync(h->host, s)) < 0 ||
      !sharded(h))
    return st;
  if ((st = h->api->mem->copy(h->host, TESSEL_TIER_DEVICE, h->state_tmp, 0, TESSEL_TIER_HOST, host_dst, 0, bytes, s)) < 0 ||
      (st = h->api->comm->all_reduce(h->host, h->g_dp, h->state_tmp, h->state_tmp, p->numel, TESSEL_F32, TESSEL_SUM,
                                     NULL)) < 0 ||
      (st = h->api->mem->copy(h->host, TESSEL_TIER_HOST, host_dst, 0, TESSEL_TIER_DEVICE, h->state_tmp, 0, bytes, s)) < 0)
    return st;
  return h->api->stream->sync(h->host, s);
}

tessel_status hybrid_state_write(void *inst, int param, tessel_state which, const float *host_src) {
  hybrid *h = inst;
  const hybrid_param *p;
  state_io io = {.src = host_src};
  tessel_status st = moments_of(h, param, which, &io.moments, &p);
  if (st < 0) return st;
  if ((st = hybrid_each_piece(h, h->owned, h->n_owned, param, write_piece, &io)) < 0) return st;
  return h->api->stream->sync(h->host, h->api->stream->compute(h->host));
}
