/*
** plugins/ddp/ddp.h — data parallelism.
**
** Every rank holds the whole model and takes its slice of the global batch.
** Gradients are packed into buckets in the order backward finishes them;
** each bucket's all-reduce starts as soon as its last gradient is final,
** while backward goes on with the units below, and all are waited for
** before the optimizer step. With gradient accumulation only the last
** micro-batch communicates. The core scales every micro-batch's loss by
** 1/(tokens in the global batch), so summing gradients over ranks gives the
** gradient of the global mean loss: the all-reduce is a plain sum.
*/
#ifndef DDP_H
#define DDP_H

#include "tessel/plugin.h"

/* A contiguous range of the core's flat gradient buffer. Gradients of
** consecutive parameters are adjacent, and buckets take parameters in
** reverse order, so a bucket is [first param's grad, last param's end). */
typedef struct ddp_bucket {
  float *grad;      /* start of the range */
  uint64_t count;   /* fp32 elements */
  int ready_unit;   /* final once backward has finished this unit */
  int first_param, last_param;
  tessel_work *work; /* outstanding all-reduce, or NULL */
  int launched;
} ddp_bucket;

typedef struct ddp {
  const tessel_host_api *api;
  tessel_host *host;
  uint64_t bucket_bytes;
  tessel_group *dp;
  ddp_bucket *buckets;
  int n_buckets;
  int sync;
} ddp;

/* buckets.c: group parameters into buckets of about bucket_bytes. */
tessel_status ddp_plan_buckets(ddp *d);
void ddp_free_buckets(ddp *d);

/* sync.c: the communication hooks. */
tessel_status ddp_set_grad_sync(void *inst, int on);
tessel_status ddp_after_backward(void *inst, int unit, int micro);
tessel_status ddp_grads_finish(void *inst);

#endif
