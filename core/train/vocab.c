/* core/train/vocab.c — the run's tokenizer against its shards and model. */
#include "train/vocab.h"

#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "data/record.h"
#include "train/sample.h"
#include "tokenizer/tokenizer.h"
#include "train/data_source.h"

static tsl_cfg *section(tsl_runtime *rt, const char *name) {
  tsl_cfg *c = NULL;
  tsl_cfg_section(tsl_config_root(rt->config), name, 0, &c);
  return c;
}

/* model.vocab_size against a vocabulary of n tokens described by `what`.
** A larger model.vocab_size pads the vocabulary, as llm.c (50304 for
** GPT-2's 50257) and Qwen2 (151936 rows for 151665 tokens) do: its extra
** rows are trained like the others, never seen in the data and never
** sampled. */
static tsl_status check_size(tsl_runtime *rt, int n, const char *what) {
  int v = rt->settings.model.vocab_size;
  if (v >= n) return TESSEL_OK;
  return tsl_cfg_error(section(rt, "model"), "vocab_size",
                       "%d, but %s has %d tokens; set model.vocab_size: %d (or more, to pad it)", v, what, n, n);
}

static tsl_status check_tokenizer_size(tsl_runtime *rt) {
  char what[4200];
  snprintf(what, sizeof what, "the tokenizer %s", tsl_tokenizer_name(rt->tokenizer));
  return check_size(rt, tsl_tokenizer_vocab_size(rt->tokenizer), what);
}

tsl_status tsl_vocab_load(tsl_runtime *rt) {
  const char *path = rt->settings.data.tokenizer;
  if (!path || rt->tokenizer) return TESSEL_OK;
  tsl_status st = tsl_tokenizer_load(path, &rt->tokenizer);
  if (st == TESSEL_E_NOMEM) return st;
  if (st < 0) {
    char why[4096];
    snprintf(why, sizeof why, "%s", tsl_error_message()); /* the message buffer is reused for the error made of it */
    return tsl_cfg_error(section(rt, "data"), "tokenizer", "%s", why);
  }
  return check_tokenizer_size(rt); /* before any preparation */
}

/* One shard directory's record against the run. `key`: the data key that
** names its shards, blamed for a disagreement unless the run names its
** tokenizer. `byte_level`: check byte-level directories too (the second
** pass; see tsl_vocab_check). */
static tsl_status check_dir(tsl_runtime *rt, const char *dir, const char *key, int byte_level) {
  tsl_data_record r;
  tsl_status st = tsl_data_record_read(dir, &r);
  char what[4200];
  if (st < 0 || !r.found) return st;
  const char *named = rt->settings.data.tokenizer;
  if (!r.has_tokenizer) {
    if (!rt->tokenizer || !byte_level) return TESSEL_OK;
    return tsl_cfg_error(section(rt, "data"), named ? "tokenizer" : key,
                         "the shards in %s are byte-level (vocabulary 256), but this run's tokenizer is %s; prepare "
                         "them with it (tessel data prepare --tokenizer)", dir, tsl_tokenizer_name(rt->tokenizer));
  }
  if (!rt->tokenizer) { /* adopt the shards' tokenizer */
    if ((st = tsl_tokenizer_load(r.tokenizer, &rt->tokenizer)) < 0)
      return tsl_error_wrap(st, "the tokenizer the shards in %s were made with", dir);
    named = NULL;
  }
  uint64_t have = tsl_tokenizer_hash(rt->tokenizer);
  if (have != r.hash)
    return tsl_cfg_error(section(rt, "data"), named ? "tokenizer" : key,
                         "the shards in %s were made with tokenizer %016" PRIx64 " (%s), but this run's tokenizer %s "
                         "is %016" PRIx64 "; prepare the shards again with it, or use theirs", dir, r.hash, r.tokenizer,
                         tsl_tokenizer_name(rt->tokenizer), have);
  snprintf(what, sizeof what, "the vocabulary the shards in %s were made with (%s)", dir, r.tokenizer);
  return check_size(rt, r.vocab_size, what);
}

/* Every distinct directory of the shards a glob matches. */
static tsl_status check_glob(tsl_runtime *rt, const char *pattern, const char *key, int byte_level) {
  glob_t g;
  tsl_status st = TESSEL_OK;
  char *last = NULL;
  if (!pattern || glob(pattern, 0, NULL, &g) != 0) return TESSEL_OK; /* no match: the dataset reports it */
  for (size_t i = 0; i < g.gl_pathc && st >= 0; i++) {
    char *dir = tsl_dirname(g.gl_pathv[i]);
    if (!dir) {
      st = TESSEL_E_NOMEM;
      break;
    }
    if (!last || strcmp(dir, last) != 0) st = check_dir(rt, dir, key, byte_level);
    free(last);
    last = dir;
  }
  free(last);
  globfree(&g);
  return st;
}

tsl_status tsl_vocab_check(tsl_runtime *rt, int shards) {
  tsl_status st;
  /* tokenizer-made directories first, byte-level ones after: a byte-level
  ** directory met before the one whose tokenizer the run adopts was once
  ** let through, and trained under that tokenizer */
  for (int byte_level = 0; byte_level <= 1 && shards; byte_level++) {
    TSL_TRY(st, check_glob(rt, rt->settings.data.train, tsl_data_key(&rt->settings, 0), byte_level));
    TSL_TRY(st, check_glob(rt, rt->settings.data.val, tsl_data_key(&rt->settings, 1), byte_level));
  }
  if (rt->tokenizer) {
    TSL_TRY(st, check_tokenizer_size(rt));
    int n = tsl_tokenizer_vocab_size(rt->tokenizer), pad = rt->settings.model.vocab_size - n;
    tsl_info("tokenizer: %s (%d tokens, end-of-text %d, hash %016" PRIx64 ")", tsl_tokenizer_name(rt->tokenizer), n,
             tsl_tokenizer_eot(rt->tokenizer), tsl_tokenizer_hash(rt->tokenizer));
    if (pad > 0)
      tsl_info("model.vocab_size %d pads the tokenizer's vocabulary by %d rows: they are trained, never sampled",
               rt->settings.model.vocab_size, pad);
  }
  const tsl_settings *s = &rt->settings;
  if (!rt->tokenizer && s->model.vocab_size > 256 && s->train.sample_tokens > 0)
    return tsl_cfg_error(section(rt, "train"), "sample_tokens",
                         "%d, but this run has no tokenizer to turn a model of %d tokens into text (its data is "
                         "byte-level); set data.tokenizer, or train.sample_tokens: 0", s->train.sample_tokens,
                         s->model.vocab_size);
  const char *prompt = s->train.sample_prompt;
  long bad = !rt->tokenizer && s->train.sample_tokens > 0 && prompt ? tsl_prompt_byte_outside(prompt, s->model.vocab_size)
                                                                    : -1;
  if (bad >= 0)
    return tsl_cfg_error(section(rt, "train"), "sample_prompt",
                         "byte %ld (0x%02X) is not in this byte-level model's vocabulary of %d tokens: it never "
                         "sees that byte",
                         bad, (unsigned)(unsigned char)prompt[bad], s->model.vocab_size);
  return TESSEL_OK;
fail:
  return st;
}
