/*
** tests/train/sleepy.c — a test strategy that makes each step slower by a
** known amount without changing what it computes.
**
** Data parallel over the world like ddp's mesh but without communication of
** its own (so it is used on one rank); its before_forward hook sleeps
** `sleep_ms` milliseconds before the first unit of each step, or of every
** `every`-th step (a cost paid every few steps, as a periodic
** synchronisation's). The
** model, data and arithmetic are the core's, so the loss is bit-identical to
** a run without a strategy: a comparison of the two differs in speed only,
** by an amount the test knows. It also lets the signal tests have steps long
** enough to send a second signal within one, and (`setup_sleep_ms`, slept in
** its setup hook) a start-up long enough to signal a run before its first
** step.
*/
#include <errno.h>
#include <time.h>

#include "dp_mesh.h"
#include "tessel/plugin.h"

typedef struct inst {
  int64_t sleep_ms, setup_sleep_ms, every, steps;
} inst;

static tessel_status create(const tessel_host_api *api, tessel_host *host, const tessel_cfg *section, void **out) {
  static inst self;
  *out = &self;
  tessel_status st = api->cfg->get_int(host, section, "sleep_ms", 0, 0, 60000, &self.sleep_ms);
  if (st >= 0) st = api->cfg->get_int(host, section, "every", 1, 1, 1000000, &self.every);
  if (st < 0) return st;
  return api->cfg->get_int(host, section, "setup_sleep_ms", 0, 0, 60000, &self.setup_sleep_ms);
}

/* Sleep ms milliseconds whatever signals arrive. */
static void sleep_ms(int64_t ms) {
  struct timespec left = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

static tessel_status setup(void *p) {
  sleep_ms(((const inst *)p)->setup_sleep_ms);
  return TESSEL_OK;
}

static tessel_status before_forward(void *p, int unit, int micro) {
  inst *self = p;
  if (unit == 0 && micro == 0 && ++self->steps % self->every == 0) sleep_ms(self->sleep_ms);
  return TESSEL_OK;
}

static const tessel_strategy strategy = {
    .size = sizeof(tessel_strategy),
    .abi_version = TESSEL_ABI_VERSION,
    .name = "sleepy",
    .version = "1.0",
    .description = "test strategy: sleeps a set time before each step's forward pass",
    .create = create,
    .mesh = dp_mesh,
    .setup = setup,
    .before_forward = before_forward,
};

TESSEL_STRATEGY_DEFINE(strategy)
