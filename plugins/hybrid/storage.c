/*
** plugins/hybrid/storage.c — what the plugin keeps beside the core's
** storage: its view of the flat parameter buffers, the AdamW moments of
** this rank's share, and the scratch its layer primitives and gradient
** sums need. Moments are TESSEL_MEM_OPTIM, so the ledger's model-state
** figures count them.
*/
#include <stdlib.h>
#include <string.h>

#include "hybrid.h"

static tessel_status alloc(hybrid *h, tessel_mem_kind kind, uint64_t bytes, const char *name, void **out) {
  *out = NULL;
  if (bytes == 0) return TESSEL_OK;
  return h->api->mem->alloc(h->host, TESSEL_TIER_DEVICE, kind, bytes, name, out);
}

/* The lowest unit on this stage that uses parameter `index`: its gradient
** is final once the last micro-batch's backward has passed that unit; -1
** when out of memory. A unit's list is as long as the host says, never cut. */
static int ready_unit(const hybrid *h, int index) {
  for (int u = h->unit_first; u <= h->unit_last; u++) {
    int n = h->api->model->unit_params(h->host, u, NULL, 0), found = 0;
    int *used = malloc(sizeof *used * (size_t)(n > 0 ? n : 1));
    if (!used) return -1;
    n = h->api->model->unit_params(h->host, u, used, n);
    for (int i = 0; i < n && !found; i++) found = used[i] == index;
    free(used);
    if (found) return u;
  }
  return h->unit_first;
}

/* Describe one stored parameter; `at` is where it must start if the core's
** buffers are the one flat range this plugin relies on. */
static tessel_status describe(hybrid *h, int index, const tessel_layout *l, const tessel_param_view *v, uint64_t at) {
  tessel_param_info info = {.size = sizeof info};
  tessel_status st = h->api->model->param_info(h->host, index, &info);
  if (st < 0) return st;
  if (h->n_params == 0) {
    h->master = v->master;
    h->grad = v->grad;
    h->work = v->data;
  }
  if (v->master != h->master + at || v->grad != h->grad + at || v->data != (char *)h->work + at * h->act_size)
    return h->api->set_error(h->host, TESSEL_E_INTERNAL,
                             "hybrid: %s is not where one flat parameter buffer would put it (element %llu)", info.name,
                             (unsigned long long)at);
  int tied_copy = (info.flags & TESSEL_PARAM_TIED) && h->pp > 1 && h->stage == h->pp - 1;
  hybrid_param *p = &h->params[h->n_params];
  *p = (hybrid_param){.index = index, .offset = at, .numel = v->local_numel,
                      .wd_scale = (info.flags & TESSEL_PARAM_NO_DECAY) ? 0.0f : 1.0f,
                      .in_norm = (l->kind == TESSEL_LAYOUT_SPLIT || h->tp_rank == 0) && !tied_copy,
                      .partial_over_tp = h->sp && strstr(info.name, "ln_") != NULL,
                      .ready_unit = ready_unit(h, index)};
  if (p->ready_unit < 0) return h->api->set_error(h->host, TESSEL_E_NOMEM, "hybrid: out of host memory");
  if (info.flags & TESSEL_PARAM_TIED) h->wte = h->n_params;
  h->n_params++;
  return TESSEL_OK;
}

static tessel_status collect_params(hybrid *h) {
  const tessel_model_api *model = h->api->model;
  int n = model->param_count(h->host);
  h->params = calloc((size_t)n, sizeof *h->params);
  if (!h->params) return h->api->set_error(h->host, TESSEL_E_NOMEM, "hybrid: out of host memory for parameters");
  h->wte = -1;
  for (int i = 0; i < n; i++) {
    tessel_layout l = {.size = sizeof l};
    tessel_param_view v = {.size = sizeof v};
    tessel_status st = model->param_layout(h->host, i, &l);
    if (st < 0 || (st = model->view(h->host, i, &v)) < 0) return st;
    if (l.kind == TESSEL_LAYOUT_ABSENT) continue;
    if ((st = describe(h, i, &l, &v, h->numel)) < 0) return st;
    h->numel += v.local_numel;
  }
  return TESSEL_OK;
}

tessel_status hybrid_setup_storage(hybrid *h) {
  tessel_status st;
  if ((st = collect_params(h)) < 0) return st;
  if ((st = hybrid_plan_partition(h)) < 0) return st;
  int sharded = h->zero >= 1 && h->dp > 1;
  uint64_t largest = 0, piece = h->n_chunks ? h->chunks[0].share : 0;
  for (int i = 0; i < h->n_params; i++)
    if (h->params[i].numel > largest) largest = h->params[i].numel;
  const tessel_model_dims *d = &h->dims;
  uint64_t tokens = (uint64_t)d->micro_batch * (uint64_t)d->seq_len, C = (uint64_t)d->channels;
  int ends = h->stage == 0 || h->stage == h->pp - 1, last = h->stage == h->pp - 1;
  uint64_t f = sizeof(float);
  if ((st = alloc(h, TESSEL_MEM_OPTIM, h->moments * f, "AdamW first moments (hybrid)", (void **)&h->m)) < 0 ||
      (st = alloc(h, TESSEL_MEM_OPTIM, h->moments * f, "AdamW second moments (hybrid)", (void **)&h->v)) < 0 ||
      (st = alloc(h, TESSEL_MEM_SCRATCH, h->zero == 2 ? piece * f : 0, "reduce-scatter piece (ZeRO-2)",
                  (void **)&h->rs_scratch)) < 0 ||
      (st = alloc(h, TESSEL_MEM_SCRATCH, sharded ? largest * f : 0, "moment gather (ZeRO checkpoints)",
                  (void **)&h->state_tmp)) < 0 ||
      (st = alloc(h, TESSEL_MEM_SCRATCH, sizeof(double), "gradient norm", (void **)&h->norm_dev)) < 0 ||
      (st = alloc(h, TESSEL_MEM_SCRATCH, h->tp > 1 ? tokens * C * h->act_size : 0, "tensor-parallel gather",
                  &h->gathered)) < 0 ||
      (st = alloc(h, TESSEL_MEM_SCRATCH, h->tp > 1 ? tokens * C * h->act_size : 0, "tensor-parallel partial sums",
                  &h->partial)) < 0 ||
      (st = alloc(h, TESSEL_MEM_SCRATCH, h->sp && last ? tokens * (uint64_t)h->vocab * h->act_size : 0,
                  "head logits (sequence parallel)", &h->head_logits)) < 0 ||
      (st = alloc(h, TESSEL_MEM_SCRATCH, h->sp && last ? tokens * f : 0, "head losses (sequence parallel)",
                  (void **)&h->head_losses)) < 0)
    return st;
  if (h->pp > 1 && ends && h->wte >= 0)
    st = alloc(h, TESSEL_MEM_SCRATCH, h->params[h->wte].numel * f, "tied wte gradient of the other end",
               (void **)&h->peer_wte);
  return st;
}

void hybrid_free_storage(hybrid *h) {
  void *device[] = {h->m, h->v, h->rs_scratch, h->state_tmp, h->norm_dev, h->gathered, h->partial,
                    h->head_logits, h->head_losses, h->peer_wte};
  for (size_t i = 0; i < sizeof device / sizeof device[0]; i++)
    if (device[i]) h->api->mem->free(h->host, TESSEL_TIER_DEVICE, device[i]);
  free(h->params);
  free(h->buckets);
  free(h->chunks);
  free(h->owned);
  free(h->counted);
}
