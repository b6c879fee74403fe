/*
** plugins/hybrid/grads.c — finishing the gradients of a step, and their norm.
**
** After backward each rank holds the gradient of its local part, summed
** over its micro-batches. What remains, in this order:
**   dp  without ZeRO-2, buckets of the flat buffer are all-reduced as soon
**       as the last micro-batch's backward has finished them, overlapping
**       the units below; ZeRO-2 instead reduce-scatters the buffer chunk
**       by chunk (the partition of zero.c) at the end, after the two sums
**       below (sums commute, so the order of the three is free; only their
**       buffers must not be in use at once);
**   tp  under sequence parallelism each rank's layer norms saw only its row
**       shard: their gradients are summed over the group;
**   pp  the tied wte's gradient from the embedding (first stage) and from
**       the head (last stage) is exchanged and summed on both, so the two
**       copies take identical steps.
** The core scales every micro-batch's loss by 1/(tokens in the global
** batch), so every one of these is a plain sum.
*/
#include <stdlib.h>

#include "hybrid.h"

static int dp_all_reduce(const hybrid *h) { return h->dp > 1 && h->zero < 2; }

tessel_status hybrid_plan_buckets(hybrid *h) {
  if (!dp_all_reduce(h) || h->n_params == 0) return TESSEL_OK;
  h->buckets = calloc((size_t)h->n_params, sizeof *h->buckets);
  if (!h->buckets) return h->api->set_error(h->host, TESSEL_E_NOMEM, "hybrid: out of host memory for buckets");
  hybrid_bucket *b = NULL;
  /* backward finishes gradients last to first; consecutive parameters are
  ** adjacent in the flat buffer, so a bucket is one range */
  for (int i = h->n_params - 1; i >= 0; i--) {
    const hybrid_param *p = &h->params[i];
    if (!b || b->count * sizeof(float) >= h->bucket_bytes) {
      b = &h->buckets[h->n_buckets++];
      b->ready_unit = p->ready_unit;
    }
    b->offset = p->offset;
    b->count += p->numel;
    if (p->ready_unit < b->ready_unit) b->ready_unit = p->ready_unit;
  }
  return TESSEL_OK;
}

/* After the last micro-batch's backward of `unit`, a bucket whose lowest
** user is at or above it is final: start its all-reduce. */
tessel_status hybrid_after_backward(void *inst, int unit, int micro) {
  hybrid *h = inst;
  if (micro != h->dims.micro_steps - 1) return TESSEL_OK;
  for (int i = 0; i < h->n_buckets; i++) {
    hybrid_bucket *b = &h->buckets[i];
    if (b->launched || b->ready_unit < unit) continue;
    float *g = h->grad + b->offset;
    tessel_status st = h->api->comm->all_reduce(h->host, h->g_dp, g, g, b->count, TESSEL_F32, TESSEL_SUM, &b->work);
    if (st < 0) return st;
    b->launched = 1;
  }
  return TESSEL_OK;
}

static tessel_status wait_buckets(hybrid *h) {
  tessel_status first = TESSEL_OK;
  for (int i = 0; i < h->n_buckets; i++) {
    hybrid_bucket *b = &h->buckets[i];
    if (b->launched) {
      tessel_status st = h->api->comm->wait(h->host, b->work);
      if (st < 0 && first >= 0) first = st;
    } else if (first >= 0) {
      first = h->api->set_error(h->host, TESSEL_E_INTERNAL,
                                "hybrid: gradient bucket %d (elements %llu..%llu) was never reduced over dp", i,
                                (unsigned long long)b->offset, (unsigned long long)(b->offset + b->count));
    }
    b->launched = 0;
    b->work = NULL;
  }
  return first;
}

/* Sum the layer-norm gradients over the tensor group, one call per run of
** adjacent ones (a norm's weight and bias). */
static tessel_status sum_partial_over_tp(hybrid *h) {
  for (int i = 0; i < h->n_params;) {
    if (!h->params[i].partial_over_tp) {
      i++;
      continue;
    }
    uint64_t begin = h->params[i].offset, end = begin;
    for (; i < h->n_params && h->params[i].partial_over_tp && h->params[i].offset == end; i++) end += h->params[i].numel;
    float *g = h->grad + begin;
    tessel_status st = h->api->comm->all_reduce(h->host, h->g_tp, g, g, end - begin, TESSEL_F32, TESSEL_SUM, NULL);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}

/* The first and the last stage swap their wte gradients and add the other's. */
static tessel_status sum_tied_wte(hybrid *h) {
  if (!h->peer_wte) return TESSEL_OK;
  const hybrid_param *w = &h->params[h->wte];
  int peer = h->stage == 0 ? h->pp - 1 : 0;
  float *g = h->grad + w->offset;
  tessel_work *sent, *got;
  tessel_status st = h->api->comm->send(h->host, h->g_pp, g, w->numel, TESSEL_F32, peer, &sent);
  if (st < 0) return st;
  st = h->api->comm->recv(h->host, h->g_pp, h->peer_wte, w->numel, TESSEL_F32, peer, &got);
  tessel_status s2 = st >= 0 ? h->api->comm->wait(h->host, got) : st;
  tessel_status s1 = h->api->comm->wait(h->host, sent);
  if (s1 < 0) return s1;
  if (s2 < 0) return s2;
  return h->api->kernels->axpy(h->host, h->api->stream->compute(h->host), TESSEL_F32, g, 1.0f, h->peer_wte,
                               (int64_t)w->numel);
}

/* ZeRO-2: chunk by chunk, this rank's piece of the gradient summed over
** dp replaces its own in the flat buffer (the other pieces are not read
** again this step); the tail is all-reduced for everyone. */
static tessel_status reduce_scatter_dp(hybrid *h) {
  tessel_stream *s = h->api->stream->compute(h->host);
  tessel_status st = TESSEL_OK;
  for (int c = 0; c < h->n_chunks && st >= 0; c++) {
    uint64_t begin = h->chunks[c].begin, share = h->chunks[c].share, mine = begin + (uint64_t)h->dp_rank * share;
    st = h->api->comm->reduce_scatter(h->host, h->g_dp, h->grad + begin, h->rs_scratch, share, TESSEL_F32, TESSEL_SUM,
                                      NULL);
    if (st >= 0)
      st = h->api->mem->copy(h->host, TESSEL_TIER_DEVICE, h->grad, mine * sizeof(float), TESSEL_TIER_DEVICE,
                             h->rs_scratch, 0, share * sizeof(float), s);
  }
  if (st >= 0 && h->tail < h->numel)
    st = h->api->comm->all_reduce(h->host, h->g_dp, h->grad + h->tail, h->grad + h->tail, h->numel - h->tail,
                                  TESSEL_F32, TESSEL_SUM, NULL);
  return st;
}

tessel_status hybrid_grads_finish(void *inst) {
  hybrid *h = inst;
  tessel_status st;
  if ((st = wait_buckets(h)) < 0) return st;
  if (h->sp && (st = sum_partial_over_tp(h)) < 0) return st;
  if ((st = sum_tied_wte(h)) < 0) return st;
  if (h->zero == 2 && h->dp > 1) return reduce_scatter_dp(h);
  return TESSEL_OK;
}

static tessel_status add_sumsq(hybrid *h, const hybrid_param *p, uint64_t lo, uint64_t hi, uint64_t moment, void *ctx) {
  (void)moment;
  (void)ctx;
  if (!p->in_norm) return TESSEL_OK;
  return h->api->kernels->sumsq(h->host, h->api->stream->compute(h->host), h->norm_dev, h->grad + lo, (int64_t)(hi - lo));
}

/* Every logical gradient element is counted by exactly one rank: a split
** tensor's pieces are disjoint over tp, a replicated one is counted by tp
** rank 0; stages hold disjoint units except wte, counted on the first
** stage; over dp each rank counts its slice (the tail on dp rank 0). */
tessel_status hybrid_grad_norm(void *inst, double *sumsq) {
  hybrid *h = inst;
  const double zero = 0.0;
  tessel_stream *s = h->api->stream->compute(h->host);
  tessel_status st = h->api->mem->copy(h->host, TESSEL_TIER_DEVICE, h->norm_dev, 0, TESSEL_TIER_HOST, &zero, 0,
                                       sizeof zero, s);
  if (st < 0 || (st = hybrid_each_piece(h, h->counted, h->n_counted, -1, add_sumsq, NULL)) < 0 ||
      (st = h->api->comm->all_reduce(h->host, h->g_all, h->norm_dev, h->norm_dev, 1, TESSEL_F64, TESSEL_SUM, NULL)) < 0 ||
      (st = h->api->mem->copy(h->host, TESSEL_TIER_HOST, sumsq, 0, TESSEL_TIER_DEVICE, h->norm_dev, 0, sizeof *sumsq,
                              s)) < 0)
    return st;
  return h->api->stream->sync(h->host, s);
}
