/*
** plugins/ddp/estimate.c — what data parallelism costs a rank.
**
** Every rank keeps the whole model in the core's storage (parameters,
** gradients, AdamW moments: 16 bytes per parameter in fp32) and the
** activations of its B/N sequences. Its traffic is one fp32 copy of the
** gradients per step (4Ψ bytes of payload, bus 2(N−1)/N of that; counted
** on one rank too, where the all-reduce is a copy), in the same buckets the
** run cuts, each started as soon as backward has made it final: it overlaps
** the backward of the units below. Its FLOPs are the whole model's over its
** own sequences.
*/
#include "ddp.h"

tessel_status ddp_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out) {
  ddp *d = inst;
  tessel_model_dims dims = {.size = sizeof dims};
  tessel_geometry whole = {.size = sizeof whole};
  tessel_parts parts;
  tessel_buckets bs;
  TESSEL_TRY(d->x.api->model->dims(d->x.host, &dims));
  TESSEL_TRY(tessel_parts_of(&d->x, NULL, NULL, &parts));
  tessel_status st = tessel_est_core(&d->x, q, &whole, parts.core_numel, out);
  if (st >= 0)
    st = tessel_buckets_plan_parts(&bs, &d->x, d->bucket_bytes, tessel_bucket_key_all, NULL, parts.offset, parts.numel);
  if (st >= 0) {
    st = tessel_est_traffic(&d->x, q, 1u << 0, TESSEL_COLL_ALL_REDUCE, TESSEL_OVERLAP_BACKWARD, (uint64_t)bs.n,
                            4 * parts.core_numel);
    tessel_buckets_free(&bs);
  }
  if (st >= 0) st = tessel_est_step_flops(&d->x, 0, dims.units - 1, &out->flops);
  tessel_parts_free(&parts);
  return st;
}
