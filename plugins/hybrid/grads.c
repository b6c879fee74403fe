/*
** plugins/hybrid/grads.c — finishing the gradients of a step.
**
** After backward each rank holds the gradient of its local part, summed
** over its micro-batches. What remains:
**   dp  ZeRO 0/1: buckets of the flat buffer are all-reduced as soon as the
**       last micro-batch's backward has finished them, overlapping the
**       units below. ZeRO-2: the buffer is reduce-scattered chunk by chunk
**       along the partition the core shards gradients by, so each rank's
**       pieces hold its reduced share;
**   tp  under sequence parallelism each rank's norms saw only its row
**       shard, and a per-head norm (Qwen3's q_norm, k_norm) only the
**       rank's heads: their gradients are summed over the group;
**   pp  a tied table's gradient from the embedding (first stage) and from
**       the head (last stage) is exchanged and summed on both, so the two
**       copies take identical steps.
** Sums commute, so the order is free as long as every sum sees whole
** values: the tied exchange must come before a reduce-scatter (the two
** stages lay their flat buffers out differently, so their pieces differ),
** which ZeRO-2 therefore runs after the other two, in grads_finish.
** The core scales every micro-batch's loss by 1/(tokens in the global
** batch), so every one of these is a plain sum.
*/
#include <stdlib.h>

#include "hybrid.h"

tessel_status hybrid_ranges(hybrid *h, const tessel_param_info *info, const uint64_t *offset, const uint64_t *numel,
                            int n) {
  h->n_norms = 0;
  h->tied = (hybrid_range){0, 0};
  h->norms = calloc((size_t)n + 1, sizeof *h->norms);
  if (!h->norms) return h->x.api->set_error(h->x.host, TESSEL_E_NOMEM, "out of host memory");
  for (int i = 0; i < n; i++) {
    const tessel_param_info *in = &info[i];
    if (offset[i] == TESSEL_NO_OFFSET) continue;
    int ends_elsewhere = !hybrid_on_stage(h, in->first_unit) || !hybrid_on_stage(h, in->last_unit);
    if ((in->flags & TESSEL_PARAM_TIED) && ends_elsewhere) h->tied = (hybrid_range){offset[i], numel[i]};
    int partial = (h->sp && in->role == TESSEL_ROLE_NORM) || (h->tp > 1 && in->role == TESSEL_ROLE_HEAD_NORM);
    if (!partial) continue;
    hybrid_range *last = h->n_norms ? &h->norms[h->n_norms - 1] : NULL;
    if (last && last->begin + last->count == offset[i])
      last->count += numel[i];
    else
      h->norms[h->n_norms++] = (hybrid_range){offset[i], numel[i]};
  }
  return TESSEL_OK;
}

/* The ranges of this rank's parts as the core stores them. */
static tessel_status collect(hybrid *h) {
  const tessel_model_api *model = h->x.api->model;
  int n;
  TESSEL_TRY(model->param_count(h->x.host, &n));
  tessel_param_info *info = calloc((size_t)n + 1, sizeof *info);
  uint64_t *offset = calloc((size_t)n + 1, sizeof *offset), *numel = calloc((size_t)n + 1, sizeof *numel);
  tessel_status st = info && offset && numel ? TESSEL_OK
                                             : h->x.api->set_error(h->x.host, TESSEL_E_NOMEM, "out of host memory");
  for (int i = 0; i < n && st >= 0; i++) {
    tessel_param_view v = {.size = sizeof v};
    info[i].size = sizeof info[i];
    if ((st = model->param_info(h->x.host, i, &info[i])) >= 0) st = model->view(h->x.host, i, &v);
    offset[i] = v.flat_offset;
    numel[i] = v.local_numel;
  }
  if (st >= 0) st = hybrid_ranges(h, info, offset, numel, n);
  free(info);
  free(offset);
  free(numel);
  return st;
}

tessel_status hybrid_setup_grads(hybrid *h) {
  uint64_t numel;
  void *grad;
  TESSEL_TRY(h->x.api->state->flat(h->x.host, (tessel_state_ref){TESSEL_STATE_GRAD, 0}, &grad, &numel));
  h->grad = grad;
  TESSEL_TRY(collect(h));
  if (h->tied.count && h->pp > 1)
    TESSEL_TRY(h->x.api->mem->alloc(h->x.host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, h->tied.count * sizeof(float),
                                    "tied table gradient of the other end", (void **)&h->peer_tied));
  if (h->dp == 1) return TESSEL_OK;
  if (h->zero == 2) return tessel_buckets_plan_shards(&h->buckets, &h->x);
  return tessel_buckets_plan(&h->buckets, &h->x, h->bucket_bytes, tessel_bucket_key_all, NULL);
}

void hybrid_free_grads(hybrid *h) {
  tessel_buckets_free(&h->buckets);
  if (h->peer_tied) h->x.api->mem->free(h->x.host, TESSEL_TIER_DEVICE, h->peer_tied);
  free(h->norms);
}

static tessel_status launch(void *ctx, tessel_bucket *b) {
  hybrid *h = ctx;
  return tessel_bucket_sum(&h->buckets, h->g_dp, b);
}

tessel_status hybrid_after_backward(void *inst, int unit, int micro) {
  hybrid *h = inst;
  if (h->dp == 1 || h->zero == 2) return TESSEL_OK;
  /* the stage's lowest unit is the last backward it runs: every gradient
  ** it holds is final there, a tied table used further down included */
  return tessel_buckets_ready(&h->buckets, unit == h->unit_first ? 0 : unit, micro, launch, h);
}

/* Sum the partial norm gradients over the tensor group, one call per run. */
static tessel_status sum_norms_over_tp(hybrid *h) {
  for (int i = 0; i < h->n_norms; i++) {
    float *g = h->grad + h->norms[i].begin;
    TESSEL_TRY(h->x.api->comm->all_reduce(h->x.host, h->g_tp, g, g, h->norms[i].count, TESSEL_F32, TESSEL_SUM, NULL));
  }
  return TESSEL_OK;
}

/* The first and the last stage swap a tied table's gradients and add the other's. */
static tessel_status sum_tied(hybrid *h) {
  if (!h->peer_tied) return TESSEL_OK;
  const tessel_comm_api *comm = h->x.api->comm;
  int peer = h->stage == 0 ? h->pp - 1 : 0;
  float *g = h->grad + h->tied.begin;
  tessel_work *sent, *got;
  tessel_stream *s;
  TESSEL_TRY(comm->send(h->x.host, h->g_pp, g, h->tied.count, TESSEL_F32, peer, &sent));
  tessel_status st = comm->recv(h->x.host, h->g_pp, h->peer_tied, h->tied.count, TESSEL_F32, peer, &got);
  tessel_status s2 = st >= 0 ? comm->wait(h->x.host, got) : st;
  tessel_status s1 = comm->wait(h->x.host, sent);
  TESSEL_TRY(s1);
  TESSEL_TRY(s2);
  TESSEL_TRY(h->x.api->stream->compute(h->x.host, &s));
  return h->x.api->kernels->axpy(h->x.host, s, TESSEL_F32, g, 1.0f, h->peer_tied, (int64_t)h->tied.count);
}

tessel_status hybrid_grads_finish(void *inst) {
  hybrid *h = inst;
  if (h->dp > 1 && h->zero < 2) TESSEL_TRY(tessel_buckets_finish(&h->buckets));
  TESSEL_TRY(sum_norms_over_tp(h));
  TESSEL_TRY(sum_tied(h));
  if (h->dp == 1 || h->zero < 2) return TESSEL_OK;
  TESSEL_TRY(tessel_buckets_ready(&h->buckets, 0, h->dims.micro_steps - 1, launch, h));
  return tessel_buckets_finish(&h->buckets);
}
