/* core/ckpt/init_from.c — model.init_from: a run that starts from
** pretrained weights. */
#include <stdio.h>
#include <stdlib.h>

#include "ckpt/checkpoint.h"
#include "ckpt/import.h"
#include "common/log.h"
#include "common/util.h"

/* A configured value against the weights' own. */
static tsl_status differs(const tsl_model_settings *c, const char *key, double want, double have) {
  return tsl_cfg_error(c->section, key, "is %g, but the weights model.init_from names (%s) have %g: the model "
                       "section must describe the model the run starts from", want, c->init_from, have);
}

static tsl_status compare(const tsl_model_settings *c, const tsl_model_settings *w) {
  static const char *const archs[] = {"gpt2", "llama"};
  if (c->arch != w->arch)
    return tsl_cfg_error(c->section, "arch", "is %s, but the weights model.init_from names (%s) are a %s model",
                         archs[c->arch], c->init_from, archs[w->arch]);
  const struct {
    const char *key;
    double want, have;
  } sizes[] = {{"layers", c->layers, w->layers},          {"heads", c->heads, w->heads},
               {"kv_heads", c->kv_heads, w->kv_heads},    {"channels", c->channels, w->channels},
               {"ffn", c->ffn, w->ffn},                   {"vocab_size", c->vocab_size, w->vocab_size},
               {"rope_theta", c->rope_theta, w->rope_theta}, {"norm_eps", c->norm_eps, w->norm_eps}};
  for (size_t i = 0; i < TSL_ARRAY_LEN(sizes); i++)
    if (sizes[i].want != sizes[i].have) return differs(c, sizes[i].key, sizes[i].want, sizes[i].have);
  if (c->tie_embeddings != w->tie_embeddings)
    return tsl_cfg_error(c->section, "tie_embeddings", "is %s, but the weights model.init_from names (%s) have %s",
                         c->tie_embeddings ? "true" : "false", c->init_from,
                         w->tie_embeddings ? "one table for the embedding and the head" : "a separate lm_head");
  /* rotary positions work at any length; GPT-2's learned table has rows
  ** for w->seq_len positions, of which a shorter context uses the first */
  if (c->arch == TSL_ARCH_GPT2 && c->seq_len > w->seq_len)
    return tsl_cfg_error(c->section, "seq_len", "is %d, but the weights model.init_from names (%s) have position "
                         "embeddings (wpe) for %d tokens only", c->seq_len, c->init_from, w->seq_len);
  return TESSEL_OK;
}

tsl_status tsl_init_from_check(const tsl_settings *s) {
  const tsl_model_settings *c = &s->model;
  tsl_weights *w = NULL;
  if (!c->init_from) return TESSEL_OK;
  tsl_status st = tsl_weights_open(c->init_from, &w);
  if (st == TESSEL_E_IO || st == TESSEL_E_UNSUPPORTED || st == TESSEL_E_VERSION) {
    /* the message names the file; the key that led there goes first */
    char why[2048];
    snprintf(why, sizeof why, "%s", tsl_error_message());
    return tsl_cfg_error(c->section, "init_from", "cannot start from these weights: %s", why);
  }
  if (st >= 0) st = compare(c, tsl_weights_model(w));
  tsl_weights_close(w);
  return st;
}

tsl_status tsl_init_from_load(tsl_model *m) {
  tsl_status st;
  const char *dir = tsl_model_runtime(m)->settings.model.init_from;
  tsl_params *ps = tsl_model_params(m);
  tsl_weights *w = NULL;
  float *file = NULL, *mem = NULL;
  uint64_t most = 1;
  for (int i = 0; i < ps->n; i++) most = TSL_MAX(most, (uint64_t)ps->p[i].info.shape[0] * (uint64_t)ps->p[i].info.shape[1]);
  TSL_TRY(st, tsl_weights_open(dir, &w));
  file = malloc(most * sizeof *file);
  mem = malloc(most * sizeof *mem);
  if (!file || !mem) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", dir);
    goto fail;
  }
  for (int i = 0; i < ps->n; i++) {
    TSL_TRY(st, tsl_weights_file_tensor(w, &ps->p[i], file));
    tsl_ckpt_from_file(&ps->p[i], file, mem);
    TSL_TRY(st, tsl_scatter_state(m, i, (tessel_state_ref){TESSEL_STATE_MASTER, 0}, mem));
  }
  tsl_info("starting from the weights in %s (model.init_from)", dir);
fail:
  tsl_weights_close(w);
  free(file);
  free(mem);
  return st < 0 ? tsl_error_wrap(st, "loading model.init_from %s", dir) : st;
}
