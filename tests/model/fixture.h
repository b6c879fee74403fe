/*
** tests/model/fixture.h — an in-process single-rank runtime on the CPU
** backend, for tests that drive the model directly.
*/
#ifndef TSL_TEST_FIXTURE_H
#define TSL_TEST_FIXTURE_H

#include <string.h>

#include "model/model.h"
#include "runtime/build.h"

/* The settings of a model: arch, sizes and the conventions of the family
** (GPT-2: tied head; Llama: untied, rotary base theta). */
static inline tsl_settings fixture_settings(tsl_arch_kind arch, int layers, int heads, int kv, int channels, int ffn,
                                            int seq_len, int vocab, double theta) {
  tsl_settings s = {0};
  s.model.arch = arch;
  s.model.layers = layers;
  s.model.heads = heads;
  s.model.kv_heads = kv;
  s.model.channels = channels;
  s.model.ffn = ffn;
  s.model.seq_len = seq_len;
  s.model.positions = seq_len;
  s.model.vocab_size = vocab;
  s.model.rope_theta = theta;
  s.model.norm_eps = 1e-5;
  s.model.tie_embeddings = arch == TSL_ARCH_GPT2;
  s.train.seed = 1234;
  return s;
}

/* Fills rt for a one-rank CPU run of the given GPT-2; returns 0 on success. */
static inline int fixture_runtime(tsl_runtime *rt, int layers, int heads, int channels, int seq_len, int vocab) {
  tsl_settings s = fixture_settings(TSL_ARCH_GPT2, layers, heads, heads, channels, 4 * channels, seq_len, vocab, 1e4);
  return tsl_runtime_local(rt, &s, 2) < 0 ? -1 : 0;
}

/* The same for a Llama: kv key/value heads, an ffn-wide SwiGLU MLP, rotary
** positions of base theta, RMS norms, an untied head. */
static inline int fixture_llama_runtime(tsl_runtime *rt, int layers, int heads, int kv, int channels, int ffn,
                                        int seq_len, int vocab, double theta) {
  tsl_settings s = fixture_settings(TSL_ARCH_LLAMA, layers, heads, kv, channels, ffn, seq_len, vocab, theta);
  return tsl_runtime_local(rt, &s, 2) < 0 ? -1 : 0;
}

static inline tessel_model_dims fixture_dims(const tsl_runtime *rt, int micro_batch, int micro_steps) {
  tessel_model_dims d;
  tsl_model_dims_single(rt, &d);
  d.micro_batch = micro_batch;
  d.micro_steps = micro_steps;
  return d;
}

static inline void fixture_release(tsl_runtime *rt) { tsl_runtime_destroy(rt); }

/* Every parameter uniform in [-0.5, 0.5) from a fixed generator: O(1)
** values, so that every nonlinearity of a tiny model works in its curved
** range (GPT-2's 0.02 scale keeps it almost linear). */
static inline void fixture_randomize(tsl_model *m, uint64_t seed) {
  tsl_params *ps = tsl_model_params(m);
  for (int i = 0; i < ps->n; i++)
    for (uint64_t k = 0; k < ps->p[i].local_numel; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      ps->p[i].master[k] = (float)((double)(seed >> 11) / 9007199254740992.0 - 0.5);
    }
}

/* GPT-2's parameters for L layers, C channels, T positions, V tokens, with
** `kv` key/value heads of `heads` (heads = kv: GPT-2 itself). */
static inline int fixture_gpt2_params(tsl_params *ps, int L, int C, int T, int V, int heads, int kv) {
  tsl_settings s = fixture_settings(TSL_ARCH_GPT2, L, heads, kv, C, 4 * C, T, V, 1e4);
  int64_t dim[TESSEL_DIM_COUNT];
  tsl_arch a;
  tsl_model_dim_sizes(&s, 0, dim);
  tsl_arch_gpt2(&s, &a);
  return tsl_params_register(ps, &a, L, dim, V, 0) < 0 ? -1 : 0;
}

#endif
