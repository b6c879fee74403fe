/*
** tests/model/fixture.h — an in-process single-rank runtime on the CPU
** backend, for tests that drive the model directly.
*/
#ifndef TSL_TEST_FIXTURE_H
#define TSL_TEST_FIXTURE_H

#include <string.h>

#include "model/gpt.h"
#include "runtime/build.h"

/* Fills rt for a one-rank CPU run of the given model; returns 0 on success. */
static int fixture_runtime(tsl_runtime *rt, int layers, int heads, int channels, int seq_len, int vocab) {
  tsl_settings s = {0};
  s.model.layers = layers;
  s.model.heads = heads;
  s.model.channels = channels;
  s.model.seq_len = seq_len;
  s.model.vocab_size = vocab;
  s.train.seed = 1234;
  return tsl_runtime_local(rt, &s, 2) < 0 ? -1 : 0;
}

static tessel_model_dims fixture_dims(const tsl_runtime *rt, int micro_batch, int micro_steps) {
  const tsl_settings *s = &rt->settings;
  tessel_model_dims d = {.size = sizeof d, .layers = s->model.layers, .heads = s->model.heads,
                         .channels = s->model.channels, .seq_len = s->model.seq_len,
                         .vocab_size = s->model.vocab_size, .micro_batch = micro_batch,
                         .micro_steps = micro_steps, .data_ranks = 1};
  return d;
}

static void fixture_release(tsl_runtime *rt) { tsl_runtime_destroy(rt); }

#endif
