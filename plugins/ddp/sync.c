/* plugins/ddp/sync.c — all-reducing buckets as backward finishes them. */
#include "ddp.h"

tessel_status ddp_set_grad_sync(void *inst, int on) {
  ((ddp *)inst)->sync = on;
  return TESSEL_OK;
}

/* After backward of `unit`, every gradient whose ready unit is at or above
** it is final: start those buckets' all-reduces, in bucket order. */
tessel_status ddp_after_backward(void *inst, int unit, int micro) {
  ddp *d = inst;
  (void)micro;
  if (!d->sync) return TESSEL_OK;
  for (int i = 0; i < d->n_buckets; i++) {
    ddp_bucket *b = &d->buckets[i];
    if (b->launched || b->ready_unit < unit) continue;
    tessel_status st = d->api->comm->all_reduce(d->host, d->dp, b->grad, b->grad, b->count, TESSEL_F32,
                                                TESSEL_SUM, &b->work);
    if (st < 0) return st;
    b->launched = 1;
  }
  return TESSEL_OK;
}

tessel_status ddp_grads_finish(void *inst) {
  ddp *d = inst;
  tessel_status first = TESSEL_OK;
  for (int i = 0; i < d->n_buckets; i++) {
    ddp_bucket *b = &d->buckets[i];
    if (b->launched && b->work) {
      tessel_status st = d->api->comm->wait(d->host, b->work);
      if (st < 0 && first == TESSEL_OK) first = st;
    }
    if (!b->launched && d->sync && first == TESSEL_OK)
      first = d->api->set_error(d->host, TESSEL_E_INTERNAL,
                                "ddp: bucket %d (parameters %d..%d) was never reduced: its gradients were not "
                                "final after any backward unit",
                                i, b->first_param, b->last_param);
    b->launched = 0;
    b->work = NULL;
  }
  return first;
}
