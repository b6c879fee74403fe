/* core/ckpt/init_from.c — model.init_from: a run that starts from
** pretrained weights. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/checkpoint.h"
#include "ckpt/import.h"
#include "common/log.h"
#include "common/util.h"

/* One key of the model section against the weights' value: "is A, but
** WHOSE B; FIX". */
static tsl_status differs(const tsl_model_settings *c, const char *key, const char *want, const char *have,
                          const char *whose, const char *fix) {
  return tsl_cfg_error(c->section, key, "is %s, but %s %s; %s", want, whose, have, fix);
}

/* How a model's context compares with the weights': a resume must match
** both seq_len and positions; a run starting from weights may train at
** any seq_len its positions allow (settings.c), and a GPT-2's positions
** are rows of the weights' wpe, of which it may keep the first. Said at
** positions when the config gives it, else at seq_len, whose default it
** follows. */
static tsl_status compare_context(const tsl_model_settings *c, const tsl_model_settings *w, const char *whose,
                                  int same_len, const char *fix) {
  char want[32], have[96];
  tsl_status st = TESSEL_OK;
  if (same_len && c->seq_len != w->seq_len) {
    snprintf(want, sizeof want, "%d", c->seq_len);
    snprintf(have, sizeof have, "%d", w->seq_len);
    st = differs(c, "seq_len", want, have, whose, fix);
  }
  int too_long = c->arch == TSL_ARCH_GPT2 && c->positions > w->positions;
  if ((same_len && c->positions != w->positions) || too_long) {
    /* a resume's positions are the checkpoint's to match; a start from
    ** weights with too few rows is its seq_len's fault, unless it set
    ** positions itself */
    const char *key = same_len || tsl_cfg_has(c->section, "positions") ? "positions" : "seq_len";
    snprintf(want, sizeof want, "%d", !strcmp(key, "positions") ? c->positions : c->seq_len);
    if (too_long) snprintf(have, sizeof have, "position embeddings (wpe) for %d tokens only", w->positions);
    else snprintf(have, sizeof have, "a model made for %d positions", w->positions);
    st = differs(c, key, want, have, whose, fix);
  }
  return st;
}

tsl_status tsl_model_compare(const tsl_model_settings *c, const tsl_model_settings *w, const char *whose,
                             int same_len, const char *fix) {
  static const char *const archs[] = {"gpt2", "llama"};
  char want[32], have[64];
  if (c->arch != w->arch) {
    snprintf(have, sizeof have, "a %s model", archs[w->arch]);
    return differs(c, "arch", archs[c->arch], have, whose, fix);
  }
  const struct {
    const char *key;
    double want, have;
  } sizes[] = {{"layers", c->layers, w->layers},          {"heads", c->heads, w->heads},
               {"kv_heads", c->kv_heads, w->kv_heads},    {"channels", c->channels, w->channels},
               {"ffn", c->ffn, w->ffn},                   {"vocab_size", c->vocab_size, w->vocab_size},
               {"rope_theta", c->rope_theta, w->rope_theta}, {"norm_eps", c->norm_eps, w->norm_eps},
               {"head_dim", tsl_head_dim(c), tsl_head_dim(w)},
               {"rotary_dim", tsl_rotary_dim(c), tsl_rotary_dim(w)},
               {"sliding_window", c->sliding_window, w->sliding_window}};
  /* the keys the config gives first: a value derived from them (ffn from
  ** channels, kv_heads from heads) differs only because they do */
  int given = 0;
  for (size_t i = 0; i < TSL_ARRAY_LEN(sizes); i++)
    given |= sizes[i].want != sizes[i].have && tsl_cfg_has(c->section, sizes[i].key);
  tsl_status st = compare_context(c, w, whose, same_len, fix);
  for (size_t i = 0; i < TSL_ARRAY_LEN(sizes); i++) {
    if (sizes[i].want == sizes[i].have || (given && !tsl_cfg_has(c->section, sizes[i].key))) continue;
    tsl_format_exact(sizes[i].want, want, sizeof want);
    tsl_format_exact(sizes[i].have, have, sizeof have);
    st = differs(c, sizes[i].key, want, have, whose, fix);
  }
  if (c->qkv_bias != w->qkv_bias)
    st = differs(c, "qkv_bias", c->qkv_bias ? "true" : "false",
                 w->qkv_bias ? "biases on q_proj, k_proj and v_proj" : "no biases", whose, fix);
  if (c->qk_norm != w->qk_norm)
    st = differs(c, "qk_norm", c->qk_norm ? "true" : "false",
                 w->qk_norm ? "norms over each head of q and k (q_norm, k_norm)" : "no q/k norms", whose, fix);
  if (c->tie_embeddings != w->tie_embeddings)
    st = differs(c, "tie_embeddings", c->tie_embeddings ? "true" : "false",
                 w->tie_embeddings ? "one table for the embedding and the head" : "a separate lm_head", whose, fix);
  if (!tsl_rope_scaling_same(c, w)) {
    char scaling[2][TSL_ROPE_TEXT_MAX], theirs[TSL_ROPE_TEXT_MAX + 16];
    tsl_rope_scaling_text(c, scaling[0], sizeof scaling[0]);
    snprintf(theirs, sizeof theirs, "rope_scaling %s", tsl_rope_scaling_text(w, scaling[1], sizeof scaling[1]));
    st = differs(c, "rope_scaling", scaling[0], theirs, whose, fix);
  }
  return st;
}

tsl_status tsl_init_from_check(tsl_settings *s) {
  tsl_model_settings *c = &s->model;
  tsl_weights *w = NULL;
  if (!c->init_from) return TESSEL_OK;
  tsl_status st = tsl_weights_open(c->init_from, 1, &w);
  if (st == TESSEL_E_IO || st == TESSEL_E_UNSUPPORTED || st == TESSEL_E_VERSION) {
    /* the message names the file; the key that led there goes first.
    ** Damage in weights that are there (a size or CRC-32 that differs) is
    ** the files' failure, not the config's (exit 1, as --resume, sample
    ** and export give it); a name that holds no weights, or a format this
    ** version cannot read, is the config's mistake, at the key (exit 2). */
    char why[2048];
    snprintf(why, sizeof why, "%s", tsl_error_message());
    if (st == TESSEL_E_IO && tsl_weights_kind_of(c->init_from) != TSL_WEIGHTS_NONE)
      return tsl_error(st, "model.init_from: cannot start from these weights: %s", why);
    return tsl_cfg_error(c->section, "init_from", "cannot start from these weights: %s", why);
  }
  /* fine-tuning at a shorter context keeps the weights' whole position
  ** table (and the context their export says they are made for) */
  if (st >= 0 && !tsl_cfg_has(c->section, "positions") && tsl_weights_model(w)->positions > c->positions) {
    c->positions = tsl_weights_model(w)->positions;
    st = tsl_cfg_redefault_int(c->section, "positions", c->positions);
  }
  /* and their attention's window, which a config need not repeat */
  if (st >= 0 && !tsl_cfg_has(c->section, "sliding_window") && tsl_weights_model(w)->sliding_window) {
    c->sliding_window = tsl_weights_model(w)->sliding_window;
    st = tsl_cfg_redefault_int(c->section, "sliding_window", c->sliding_window);
  }
  char whose[4200];
  snprintf(whose, sizeof whose, "the weights model.init_from names (%s) have", c->init_from);
  if (st >= 0)
    st = tsl_model_compare(c, tsl_weights_model(w), whose, 0,
                           "the model section must describe the model the run starts from");
  tsl_weights_close(w);
  return st;
}

tsl_status tsl_init_from_load(tsl_model *m, tsl_token_ids *ids) {
  tsl_status st;
  const char *dir = tsl_model_runtime(m)->settings.model.init_from;
  tsl_params *ps = tsl_model_params(m);
  tsl_weights *w = NULL;
  float *file = NULL, *mem = NULL;
  uint64_t most = 1;
  for (int i = 0; i < ps->n; i++) most = TSL_MAX(most, (uint64_t)ps->p[i].info.shape[0] * (uint64_t)ps->p[i].info.shape[1]);
  *ids = (tsl_token_ids){0};
  TSL_TRY(st, tsl_weights_open(dir, 0, &w)); /* tsl_init_from_check said it */
  tsl_weights_token_ids(w, tsl_model_runtime(m)->world.rank == 0, ids); /* one warning per job, not per rank */
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
