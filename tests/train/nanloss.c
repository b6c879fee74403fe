/*
** tests/train/nanloss.c — a test strategy that poisons the loss.
**
** It computes the head exactly as the core does (logits, cross-entropy,
** gradients) through the host kernels, then, from training step
** `nan_at_step` on, replaces the first token's loss with NaN, so the test
** can check that the trainer stops before applying that step's update and
** names the last good checkpoint. With `nan_val_after` N, the validations
** after training step N get a NaN loss instead, as weights gone bad in
** that step's update would give.
*/
#include <math.h>
#include <stddef.h>

#include "dp_mesh.h"
#include "tessel/plugin.h"

typedef struct inst {
  const tessel_host_api *api;
  tessel_host *host;
  int64_t nan_at_step, nan_val_after, steps_seen;
} inst;

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  static inst self;
  self.api = api;
  self.host = host;
  tessel_status st = api->cfg->get_int(host, section, "nan_at_step", 3, 1, INT64_MAX, &self.nan_at_step);
  tessel_status val = api->cfg->get_int(host, section, "nan_val_after", 0, 0, INT64_MAX, &self.nan_val_after);
  if (st >= 0) st = val;
  *out = &self;
  return st;
}

static tessel_status head(void *p, const tessel_op_ctx *c, const tessel_head_args *a) {
  inst *self = p;
  const tessel_kernel_api *k = self->api->kernels;
  tessel_model_dims d = {.size = sizeof d};
  tessel_status st = self->api->model->dims(self->host, &d);
  int64_t V = d.dim[TESSEL_DIM_VOCAB], C = a->width, R = a->rows;
  if (st < 0) return st;
  if ((st = k->gemm(self->host, c->stream, 0, 1, R, V, C, 1.0f, a->inp, a->weight->data, 0.0f, a->logits, d.act_dtype)) < 0 ||
      (st = k->cross_entropy(self->host, c->stream, NULL, a->losses, a->logits, a->targets, R, 0, V,
                             a->dinp ? a->dloss : 0.0f)) < 0)
    return st;
  if (a->dinp) {
    if ((st = k->gemm(self->host, c->stream, 0, 0, R, C, V, 1.0f, a->logits, a->weight->data, 0.0f, a->dinp,
                      d.act_dtype)) < 0 ||
        (st = k->gemm(self->host, c->stream, 1, 0, V, C, R, 1.0f, a->logits, a->inp, 1.0f, a->weight->grad,
                      TESSEL_F32)) < 0)
      return st;
    self->steps_seen++;
  }
  int poisoned = a->dinp ? self->steps_seen >= self->nan_at_step
                         : self->nan_val_after > 0 && self->steps_seen >= self->nan_val_after;
  if (poisoned) {
    float nan = NAN;
    return self->api->mem->copy(self->host, TESSEL_TIER_DEVICE, a->losses, 0, TESSEL_TIER_HOST, &nan, 0, sizeof nan,
                                c->stream);
  }
  return TESSEL_OK;
}

static const tessel_layer_ops ops = {.size = sizeof(tessel_layer_ops), .head = head};

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "nanloss",
    .version = "1.0",
    .description = "test strategy: the loss becomes NaN at a chosen step",
    .create = create,
    .mesh = dp_mesh,
    .layer_ops = &ops,
};

TESSEL_STRATEGY_DEFINE(strategy)
