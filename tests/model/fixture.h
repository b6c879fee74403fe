/*
** tests/model/fixture.h — an in-process single-rank runtime on the CPU
** backend, for tests that drive the model directly.
*/
#ifndef TSL_TEST_FIXTURE_H
#define TSL_TEST_FIXTURE_H

#include <string.h>

#include "model/gpt.h"

/* Fills rt for a one-rank CPU run of the given model; returns 0 on success. */
static int fixture_runtime(tsl_runtime *rt, int layers, int heads, int channels, int seq_len, int vocab) {
  memset(rt, 0, sizeof *rt);
  tsl_world_single(&rt->world, 1);
  rt->settings.model.layers = layers;
  rt->settings.model.heads = heads;
  rt->settings.model.channels = channels;
  rt->settings.model.seq_len = seq_len;
  rt->settings.model.vocab_size = vocab;
  rt->settings.train.seed = 1234;
  rt->be = *tsl_cpu_backend();
  tsl_backend_opts o = {.size = sizeof o, .threads = 2};
  if (rt->be.init(&rt->be, &o) < 0) return -1;
  rt->be_ready = 1;
  return tsl_ledger_init(&rt->ledger, &rt->be, 0, NULL) < 0 ? -1 : 0;
}

static tessel_model_dims fixture_dims(const tsl_runtime *rt, int micro_batch, int micro_steps) {
  const tsl_settings *s = &rt->settings;
  tessel_model_dims d = {.size = sizeof d, .layers = s->model.layers, .heads = s->model.heads,
                         .channels = s->model.channels, .seq_len = s->model.seq_len,
                         .vocab_size = s->model.vocab_size, .micro_batch = micro_batch,
                         .micro_steps = micro_steps, .data_ranks = 1};
  return d;
}

static void fixture_release(tsl_runtime *rt) {
  tsl_model_destroy(rt->model);
  if (rt->scratch) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, rt->scratch);
  tsl_ledger_destroy(&rt->ledger);
  rt->be.shutdown(&rt->be);
}

#endif
