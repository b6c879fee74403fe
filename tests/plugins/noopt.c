/*
** tests/plugins/noopt.c — owns the optimizer and never steps it: the
** weights stay as they were initialised, so the loss leaves one process's
** behind after the first step. plugin-check must fail it, also when it
** declares TESSEL_CAP_LOSSY (NOOPT_NAME "nooptlossy"): a lossy strategy must
** still learn.
*/
#include "trainers.h"

static tessel_status step_nothing(void *inst, const tessel_optim_step *hp) {
  (void)inst;
  (void)hp;
  return TESSEL_OK;
}

static tessel_status read_moment(void *inst, int param, tessel_state_ref ref, float *host) {
  float *at;
  uint64_t n;
  trainer *t = inst;
  tessel_status st = tr_moment(t, param, ref, &at, &n);
  return st < 0 ? st : t->api->mem->copy(t->host, TESSEL_TIER_HOST, host, 0, TESSEL_TIER_DEVICE, at, 0, 4 * n, NULL);
}

static tessel_status write_moment(void *inst, int param, tessel_state_ref ref, const float *host) {
  float *at;
  uint64_t n;
  trainer *t = inst;
  tessel_status st = tr_moment(t, param, ref, &at, &n);
  return st < 0 ? st : t->api->mem->copy(t->host, TESSEL_TIER_DEVICE, at, 0, TESSEL_TIER_HOST, host, 0, 4 * n, NULL);
}

#ifndef NOOPT_NAME
#define NOOPT_NAME "noopt"
#endif

TRAINER_TABLE(NOOPT_NAME, "test strategy: an optimizer step that does nothing", step_nothing, read_moment, write_moment)
