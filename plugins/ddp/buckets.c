/* plugins/ddp/buckets.c — which gradients travel together. */
#include <stdlib.h>
#include <string.h>

#include "ddp.h"

/* The unit after whose backward a parameter's gradient is final: the lowest
** unit that uses it (wte is used by the head and by the embedding); -1 when
** out of memory. A unit's list is as long as the host says, never cut. */
static int ready_unit(ddp *d, int param, int units) {
  for (int u = 0; u < units; u++) {
    int n = d->api->model->unit_params(d->host, u, NULL, 0), found = 0;
    int *used = malloc(sizeof *used * (size_t)(n > 0 ? n : 1));
    if (!used) return -1;
    n = d->api->model->unit_params(d->host, u, used, n);
    for (int i = 0; i < n && !found; i++) found = used[i] == param;
    free(used);
    if (found) return u;
  }
  return 0;
}

tessel_status ddp_plan_buckets(ddp *d) {
  const tessel_model_api *model = d->api->model;
  tessel_model_dims dims = {.size = sizeof dims};
  tessel_status st = model->dims(d->host, &dims);
  if (st < 0) return st;
  int n = model->param_count(d->host);
  d->buckets = calloc((size_t)n, sizeof *d->buckets);
  if (!d->buckets) return d->api->set_error(d->host, TESSEL_E_NOMEM, "ddp: out of host memory for buckets");
  ddp_bucket *b = NULL;
  for (int i = n - 1; i >= 0; i--) { /* backward produces gradients last-to-first */
    tessel_param_view v = {.size = sizeof v};
    if ((st = model->view(d->host, i, &v)) < 0) return st;
    int ready = ready_unit(d, i, dims.units);
    if (ready < 0) return d->api->set_error(d->host, TESSEL_E_NOMEM, "ddp: out of host memory for buckets");
    /* start a new bucket when the current one is full, or when this
    ** gradient is not adjacent to it (then it cannot be one range) */
    if (!b || b->count * sizeof(float) >= d->bucket_bytes || v.grad + v.local_numel != b->grad) {
      b = &d->buckets[d->n_buckets++];
      memset(b, 0, sizeof *b);
      b->last_param = i;
      b->ready_unit = ready;
    }
    b->grad = v.grad;
    b->count += v.local_numel;
    b->first_param = i;
    if (ready < b->ready_unit) b->ready_unit = ready;
  }
  d->api->log(d->host, TESSEL_LOG_INFO, "%d gradient bucket(s) of up to %llu bytes", d->n_buckets,
              (unsigned long long)d->bucket_bytes);
  return TESSEL_OK;
}

void ddp_free_buckets(ddp *d) {
  free(d->buckets);
  d->buckets = NULL;
  d->n_buckets = 0;
}
