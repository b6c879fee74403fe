/*
** plugins/ddp/ddp.h — data parallelism.
**
** Every rank holds the whole model and takes its slice of the global batch.
** Gradients travel in buckets, in the order backward finishes them; each
** bucket's all-reduce starts as soon as its last gradient is final, while
** backward goes on with the units below, and all are waited for before the
** optimizer step. With gradient accumulation only the last micro-batch
** communicates. The core scales every micro-batch's loss by 1/(tokens in
** the global batch), so summing gradients over ranks gives the gradient of
** the global mean loss: the all-reduce is a plain sum.
*/
#ifndef DDP_H
#define DDP_H

#include "tessel/sdk.h"

typedef struct ddp {
  tessel_sdk x;
  uint64_t bucket_bytes;
  tessel_group *dp;
  tessel_buckets buckets;
} ddp;

/* estimate.c */
tessel_status ddp_estimate(void *inst, const tessel_plan_query *q, tessel_estimate *out);

#endif
