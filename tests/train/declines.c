/*
** tests/train/declines.c — a test strategy that declines any backend whose
** activations are not in the dtype named by its option `needs` (f32 or
** bf16), as gemini declines 16-bit compute: its setup reads the model's
** dimensions and returns TESSEL_E_UNSUPPORTED with its reason. The core
** must end such a run with exit status 3, which the GPU scripts report as
** a skipped test rather than a failed one.
*/
#include <stddef.h>

#include "../plugins/broken.h" /* ok_mesh: one axis over every rank */

typedef struct inst {
  const tessel_host_api *api;
  tessel_host *host;
  tessel_dtype needs;
} inst;

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  static const char *const choices[] = {"f32", "bf16", NULL};
  static inst self;
  int which = 1;
  self.api = api;
  self.host = host;
  tessel_status st = api->cfg->get_enum(host, section, "needs", choices, 1, &which);
  self.needs = which == 0 ? TESSEL_F32 : TESSEL_BF16;
  *out = &self;
  return st;
}

static tessel_status setup(void *p) {
  inst *self = p;
  tessel_model_dims d = {.size = sizeof d};
  tessel_status st = self->api->model->dims(self->host, &d);
  if (st < 0) return st;
  if (d.act_dtype != self->needs)
    return self->api->set_error(self->host, TESSEL_E_UNSUPPORTED, "declines: this strategy computes in %s only",
                                self->needs == TESSEL_F32 ? "fp32" : "bf16");
  return TESSEL_OK;
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "declines",
    .version = "1.0",
    .description = "test strategy: declines backends that compute in another dtype",
    .create = create,
    .mesh = ok_mesh,
    .setup = setup,
};

TESSEL_STRATEGY_DEFINE(strategy)
