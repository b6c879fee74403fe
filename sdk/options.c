/* sdk/options.c — option helpers over the host's config getters. */
#include "tessel/sdk.h"

#include <limits.h>
#include <stdio.h>

tessel_status tessel_opt_count(const tessel_sdk *x, const char *key, int64_t max, int *out) {
  int has = 0;
  int64_t v = 0;
  *out = 0;
  TESSEL_TRY(x->api->cfg->has(x->host, x->section, key, &has));
  if (!has) return TESSEL_OK;
  /* *out is an int: a larger max would let a value wrap (2^32 read as 0, "absent") */
  TESSEL_TRY(x->api->cfg->get_int(x->host, x->section, key, 1, 1, max < INT_MAX ? max : INT_MAX, &v));
  *out = (int)v;
  return TESSEL_OK;
}

tessel_status tessel_opt_positive_size(const tessel_sdk *x, const char *key, uint64_t dflt, uint64_t *out) {
  TESSEL_TRY(x->api->cfg->get_size(x->host, x->section, key, dflt, out));
  if (*out == 0 && dflt == 0) { /* absent, and no default: the message points at the section, so name the key */
    int has = 0;
    TESSEL_TRY(x->api->cfg->has(x->host, x->section, key, &has));
    if (!has) return x->api->cfg->error_at(x->host, x->section, NULL, "%s is required: a positive size such as 25MiB", key);
  }
  if (*out == 0) return x->api->cfg->error_at(x->host, x->section, key, "must be positive (a size such as 25MiB)");
  return TESSEL_OK;
}

const char *tessel_vocab_hint(const tessel_model_dims *d, int64_t parts, char *buf, size_t cap) {
  int64_t a = TESSEL_VOCAB_ALIGN_TP, b = parts;
  while (b) { /* gcd: padded rows split when they are a multiple of lcm(align, parts) */
    int64_t r = a % b;
    a = b;
    b = r;
  }
  int64_t step = TESSEL_VOCAB_ALIGN_TP / a * parts, vocab = (d->vocab_valid + step - 1) / step * step;
  snprintf(buf, cap, "; byte-level data can take model.vocab_size: %lld, which splits (a tokenizer's vocabulary "
           "cannot grow: choose another tp)", (long long)vocab);
  return buf;
}
