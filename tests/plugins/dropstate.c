/*
** tests/plugins/dropstate.c — steps AdamW correctly, but its checkpoint
** hooks drop the moments: a resumed run starts them from zero again and
** goes its own way. plugin-check must fail it.
*/
#include "trainers.h"

static tessel_status step(void *inst, const tessel_optim_step *hp) { return tr_adamw(inst, hp); }

static tessel_status read_zeros(void *inst, int param, tessel_state_ref ref, float *host) {
  float *at;
  uint64_t n;
  tessel_status st = tr_moment(inst, param, ref, &at, &n);
  if (st >= 0) memset(host, 0, n * sizeof(float));
  return st;
}

static tessel_status write_nothing(void *inst, int param, tessel_state_ref ref, const float *host) {
  (void)inst;
  (void)param;
  (void)ref;
  (void)host;
  return TESSEL_OK;
}

TRAINER_TABLE("dropstate", "test strategy: checkpoints without the optimizer moments", step, read_zeros, write_nothing)
