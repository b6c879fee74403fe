/* sdk/buckets.c — gradient buckets: which gradients travel together, when
** they are final, packing the ones that are not adjacent, and finishing.
**
** A parameter's gradient is final once the last micro-batch's backward has
** passed the lowest unit that uses it (tessel_param_info.first_unit); a
** bucket is final once all of its parameters' are. */
#include <stdlib.h>
#include <string.h>

#include "tessel/sdk.h"

static tessel_status nomem(const tessel_sdk *x) {
  return x->api->set_error(x->host, TESSEL_E_NOMEM, "out of host memory for gradient buckets");
}

/* The step's micro-batch count, the flat gradient buffer when `flat` (a
** run's plan; an estimate has none), and room for `max_buckets` buckets
** (−1: one per parameter). */
static tessel_status begin_plan(tessel_buckets *bs, const tessel_sdk *x, int max_buckets, int flat, int *count) {
  tessel_model_dims d = {.size = sizeof d};
  uint64_t numel;
  void *grad = NULL;
  memset(bs, 0, sizeof *bs);
  bs->x = *x;
  TESSEL_TRY(x->api->model->dims(x->host, &d));
  TESSEL_TRY(x->api->model->param_count(x->host, count));
  if (flat) TESSEL_TRY(x->api->state->flat(x->host, (tessel_state_ref){TESSEL_STATE_GRAD, 0}, &grad, &numel));
  bs->grad = grad;
  bs->micro_steps = d.micro_steps;
  bs->b = calloc((size_t)(max_buckets < 0 ? *count : max_buckets) + 1, sizeof *bs->b);
  bs->params = calloc((size_t)*count + 1, sizeof *bs->params);
  bs->offsets = calloc((size_t)*count + 1, sizeof *bs->offsets);
  bs->numels = calloc((size_t)*count + 1, sizeof *bs->numels);
  if (!bs->b || !bs->params || !bs->offsets || !bs->numels) return nomem(x);
  return TESSEL_OK;
}

/* What packed buckets stage, then (a run's plan) the staging and each
** bucket's range. */
static tessel_status finish_plan(tessel_buckets *bs, int allocate) {
  const tessel_sdk *x = &bs->x;
  bs->staged = 0;
  for (int i = 0; i < bs->n; i++)
    if (bs->b[i].packed) bs->staged += bs->b[i].count;
  if (!allocate) return TESSEL_OK;
  if (bs->staged)
    TESSEL_TRY(x->api->mem->alloc(x->host, TESSEL_TIER_DEVICE, TESSEL_MEM_SCRATCH, bs->staged * sizeof(float),
                                  "gradient bucket staging", (void **)&bs->stage));
  for (int i = 0, at = 0; i < bs->n; i++) {
    tessel_bucket *b = &bs->b[i];
    b->range = b->packed ? bs->stage + at : bs->grad + b->begin;
    if (b->packed) at += (int)b->count;
  }
  return TESSEL_OK;
}

/* A listed parameter while cutting: its index, key, place in the order
** backward finishes them (last to first), and the place where its key
** first appears in that order. */
typedef struct listed_param {
  int index, key, at, first;
} listed_param;

static int by_key(const void *a, const void *b) {
  const listed_param *x = a, *y = b;
  if (x->key != y->key) return x->key < y->key ? -1 : 1;
  return x->at - y->at;
}

static int by_first(const void *a, const void *b) {
  const listed_param *x = a, *y = b;
  return x->first != y->first ? x->first - y->first : x->at - y->at;
}

/* Group the list by key, keys in order of first appearance and each key's
** parameters in their order: two sorts, so that a model whose every unit
** is a key (the tensor-parallel plugins' buckets) costs n log n, not one
** pass over the list per key. */
static void group_by_key(listed_param *l, int n) {
  int one_key = 1;
  for (int j = 1; j < n && one_key; j++) one_key = l[j].key == l[0].key;
  if (one_key) return;
  qsort(l, (size_t)n, sizeof *l, by_key);
  for (int j = 0; j < n; j++) l[j].first = j > 0 && l[j].key == l[j - 1].key ? l[j - 1].first : l[j].at;
  qsort(l, (size_t)n, sizeof *l, by_first);
}

/* Cut the parameters' parts (flat offset off[i], num[i] elements; off
** TESSEL_NO_OFFSET or num 0: none here) into buckets: taken last to first
** (the order backward finishes them), never mixing keys, each at most
** max_bytes unless one part is larger. */
static tessel_status cut(tessel_buckets *bs, uint64_t max_bytes, tessel_bucket_key_fn key, void *ctx,
                         const uint64_t *off, const uint64_t *num, int count) {
  const tessel_sdk *x = &bs->x;
  listed_param *l = calloc((size_t)count + 1, sizeof *l);
  tessel_param_info *infos = calloc((size_t)count + 1, sizeof *infos);
  tessel_status st = !l || !infos ? nomem(x) : TESSEL_OK;
  int listed = 0;
  for (int i = count - 1; i >= 0 && st >= 0; i--) {
    infos[i].size = sizeof infos[i];
    if ((st = x->api->model->param_info(x->host, i, &infos[i])) < 0) break;
    int k = off[i] == TESSEL_NO_OFFSET || num[i] == 0 ? -1 : key(ctx, &infos[i]);
    if (k < 0) continue;
    l[listed] = (listed_param){.index = i, .key = k, .at = listed};
    listed++;
  }
  if (st >= 0) group_by_key(l, listed);
  tessel_bucket *b = NULL;
  for (int j = 0; j < listed && st >= 0; j++) {
    int i = l[j].index;
    if (!b || b->key != l[j].key || b->count * sizeof(float) >= max_bytes) {
      b = &bs->b[bs->n++];
      *b = (tessel_bucket){.key = l[j].key, .ready_unit = infos[i].first_unit, .begin = off[i], .first = j};
    }
    /* backward order: each next parameter must end where the bucket begins */
    if (b->n && off[i] + num[i] != b->begin) b->packed = 1;
    if (off[i] < b->begin) b->begin = off[i];
    b->count += num[i];
    if (infos[i].first_unit < b->ready_unit) b->ready_unit = infos[i].first_unit;
    bs->params[j] = i;
    bs->offsets[j] = off[i];
    bs->numels[j] = num[i];
    b->n++;
  }
  free(l);
  free(infos);
  return st;
}

int tessel_bucket_key_all(void *ctx, const tessel_param_info *p) {
  (void)ctx;
  (void)p;
  return 0;
}

tessel_status tessel_buckets_plan(tessel_buckets *bs, const tessel_sdk *x, uint64_t max_bytes,
                                  tessel_bucket_key_fn key, void *ctx) {
  int count;
  TESSEL_TRY(begin_plan(bs, x, -1, 1, &count));
  uint64_t *off = calloc((size_t)count + 1, sizeof *off), *num = calloc((size_t)count + 1, sizeof *num);
  tessel_status st = !off || !num ? nomem(x) : TESSEL_OK;
  for (int i = 0; i < count && st >= 0; i++) {
    tessel_param_view v = {.size = sizeof v};
    if ((st = x->api->model->view(x->host, i, &v)) < 0) break;
    off[i] = v.flat_offset;
    num[i] = v.local_numel;
  }
  if (st >= 0) st = cut(bs, max_bytes, key, ctx, off, num, count);
  free(off);
  free(num);
  return st < 0 ? st : finish_plan(bs, 1);
}

tessel_status tessel_buckets_plan_parts(tessel_buckets *bs, const tessel_sdk *x, uint64_t max_bytes,
                                        tessel_bucket_key_fn key, void *ctx, const uint64_t *offsets,
                                        const uint64_t *numels) {
  int count;
  TESSEL_TRY(begin_plan(bs, x, -1, 0, &count));
  TESSEL_TRY(cut(bs, max_bytes, key, ctx, offsets, numels, count));
  return finish_plan(bs, 0);
}

tessel_status tessel_buckets_plan_shards(tessel_buckets *bs, const tessel_sdk *x) {
  int count, n_pieces, rank, size;
  tessel_placement p = {.size = sizeof p};
  tessel_group *g;
  tessel_range pieces[1];
  const tessel_state_ref grad = {TESSEL_STATE_GRAD, 0};
  TESSEL_TRY(x->api->state->placement(x->host, grad, &p));
  if (!p.shard_axes)
    return x->api->set_error(x->host, TESSEL_E_INTERNAL, "shard buckets for gradients that are not sharded");
  TESSEL_TRY(x->api->comm->group(x->host, p.shard_axes, &g));
  TESSEL_TRY(x->api->comm->group_info(x->host, g, &rank, &size));
  TESSEL_TRY(x->api->state->pieces(x->host, grad, pieces, 0, &n_pieces));
  TESSEL_TRY(begin_plan(bs, x, n_pieces, 1, &count));
  bs->shard_rank = rank;
  bs->shard_size = size;
  tessel_range *r = calloc((size_t)n_pieces + 1, sizeof *r);
  if (!r) return nomem(x);
  tessel_status st = x->api->state->pieces(x->host, grad, r, n_pieces, &n_pieces);
  uint64_t numel, covered = 0;
  void *flat;
  if (st >= 0) st = x->api->state->flat(x->host, grad, &flat, &numel);
  for (int k = 0; k + 1 < n_pieces; k++) covered += (r[k].end - r[k].begin) * (uint64_t)size;
  /* the last piece is the tail when chunks before it and it cover the space */
  int tail = n_pieces > 0 && size > 1 && covered + (r[n_pieces - 1].end - r[n_pieces - 1].begin) == numel;
  for (int k = 0; k < n_pieces && st >= 0; k++) {
    uint64_t w = r[k].end - r[k].begin;
    tessel_bucket *b = &bs->b[bs->n++];
    int is_tail = tail && k == n_pieces - 1;
    *b = (tessel_bucket){.key = 0, .ready_unit = 1 << 30, .begin = is_tail ? r[k].begin : r[k].begin - (uint64_t)rank * w,
                         .count = is_tail ? w : w * (uint64_t)size, .shard_tail = is_tail};
    for (int i = 0; i < count && st >= 0; i++) {
      tessel_param_info in = {.size = sizeof in};
      tessel_param_view v = {.size = sizeof v};
      if ((st = x->api->model->param_info(x->host, i, &in)) < 0 || (st = x->api->model->view(x->host, i, &v)) < 0) break;
      if (v.flat_offset == TESSEL_NO_OFFSET || v.flat_offset >= b->begin + b->count ||
          v.flat_offset + v.local_numel <= b->begin)
        continue;
      if (in.first_unit < b->ready_unit) b->ready_unit = in.first_unit;
    }
  }
  free(r);
  return st < 0 ? st : finish_plan(bs, 1);
}

tessel_status tessel_bucket_sum(const tessel_buckets *bs, tessel_group *g, tessel_bucket *b) {
  const tessel_comm_api *comm = bs->x.api->comm;
  if (!bs->shard_size || b->shard_tail)
    return comm->all_reduce(bs->x.host, g, b->range, b->range, b->count, TESSEL_F32, TESSEL_SUM, &b->work);
  uint64_t share = b->count / (uint64_t)bs->shard_size;
  return comm->reduce_scatter(bs->x.host, g, b->range, b->range + (uint64_t)bs->shard_rank * share, share, TESSEL_F32,
                              TESSEL_SUM, &b->work);
}

/* Copy a packed bucket's gradients between their places and the staging. */
static tessel_status pack(tessel_buckets *bs, tessel_bucket *b, int to_stage) {
  const tessel_sdk *x = &bs->x;
  uint64_t at = 0, f = sizeof(float);
  for (int j = b->first; j < b->first + b->n; j++) {
    uint64_t src = bs->offsets[j] * f, dst = (uint64_t)(b->range - bs->stage + (int64_t)at) * f;
    TESSEL_TRY(to_stage ? x->api->mem->copy(x->host, TESSEL_TIER_DEVICE, bs->stage, dst, TESSEL_TIER_DEVICE, bs->grad,
                                            src, bs->numels[j] * f, NULL)
                        : x->api->mem->copy(x->host, TESSEL_TIER_DEVICE, bs->grad, src, TESSEL_TIER_DEVICE, bs->stage,
                                            dst, bs->numels[j] * f, NULL));
    at += bs->numels[j];
  }
  return TESSEL_OK;
}

/* Wait for the first launched bucket still in flight (its packed data stay
** staged until tessel_buckets_finish). */
static tessel_status wait_oldest(tessel_buckets *bs) {
  for (int i = 0; i < bs->n; i++) {
    tessel_bucket *b = &bs->b[i];
    if (!b->launched || !b->work) continue;
    tessel_status st = bs->x.api->comm->wait(bs->x.host, b->work);
    b->work = NULL;
    bs->in_flight--;
    return st;
  }
  return TESSEL_OK;
}

tessel_status tessel_buckets_ready(tessel_buckets *bs, int unit, int micro, tessel_bucket_launch_fn launch,
                                   void *ctx) {
  if (micro != bs->micro_steps - 1) return TESSEL_OK;
  for (int i = 0; i < bs->n; i++) {
    tessel_bucket *b = &bs->b[i];
    if (b->launched || b->ready_unit < unit) continue;
    if (bs->in_flight >= TESSEL_BUCKETS_IN_FLIGHT) TESSEL_TRY(wait_oldest(bs));
    if (b->packed) TESSEL_TRY(pack(bs, b, 1));
    TESSEL_TRY(launch(ctx, b));
    b->launched = 1;
    if (b->work) bs->in_flight++;
  }
  return TESSEL_OK;
}

tessel_status tessel_buckets_finish(tessel_buckets *bs) {
  const tessel_sdk *x = &bs->x;
  tessel_status first = TESSEL_OK;
  for (int i = 0; i < bs->n; i++) {
    tessel_bucket *b = &bs->b[i];
    tessel_status st = TESSEL_OK;
    if (b->launched && b->work) st = x->api->comm->wait(x->host, b->work);
    if (st >= 0 && b->launched && b->packed) st = pack(bs, b, 0);
    if (st >= 0 && !b->launched)
      st = x->api->set_error(x->host, TESSEL_E_INTERNAL,
                             "gradient bucket %d (%d parameter(s), from index %d) was never reduced: its gradients "
                             "were not final after any backward unit of the last micro-batch",
                             i, b->n, b->n ? bs->params[b->first] : -1);
    if (st < 0 && first >= 0) first = st;
    b->launched = 0;
    b->work = NULL;
  }
  bs->in_flight = 0;
  return first;
}

void tessel_buckets_free(tessel_buckets *bs) {
  if (bs->stage) bs->x.api->mem->free(bs->x.host, TESSEL_TIER_DEVICE, bs->stage);
  free(bs->b);
  free(bs->params);
  free(bs->offsets);
  free(bs->numels);
  memset(bs, 0, sizeof *bs);
}
