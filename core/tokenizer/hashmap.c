/*
** core/tokenizer/hashmap.c — the two hash maps the tokenizer lives on:
** byte strings to values (vocabulary, piece cache, training words) and id
** pairs to values (merge ranks, pair counts). Open addressing with linear
** probing at a load factor of at most 1/2; nothing is ever deleted except by
** clearing the whole map.
*/
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tokenizer/internal.h"

/* A fast 64-bit hash of a short byte string (8 bytes per multiply); never 0,
** which marks an empty slot. */
static uint64_t hash_bytes(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0xff51afd7ed558ccdull);
  for (; n >= 8; s += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 31;
  }
  uint64_t w = 0;
  memcpy(&w, s, n);
  h = tsl_mix64(h ^ w);
  return h ? h : 1;
}

tsl_status tsl_tok_reserve(void *array, size_t *cap, size_t need, size_t size) {
  if (need <= *cap) return TESSEL_OK;
  size_t n = TSL_MAX(TSL_MAX(need, 2 * *cap), 16);
  void *p = realloc(*(void **)array, n * size);
  if (!p) return tsl_error(TESSEL_E_NOMEM, "out of host memory for %zu tokenizer entries of %zu bytes", n, size);
  *(void **)array = p;
  *cap = n;
  return TESSEL_OK;
}

static size_t capacity_for(size_t expected) {
  size_t cap = 16;
  while (cap < 2 * expected) cap *= 2;
  return cap;
}

tsl_status tsl_strmap_init(tsl_strmap *m, size_t expected) {
  memset(m, 0, sizeof *m);
  m->cap = capacity_for(expected);
  m->hash = calloc(m->cap, sizeof *m->hash);
  m->key = malloc(m->cap * sizeof *m->key);
  m->value = malloc(m->cap * sizeof *m->value);
  m->arena_cap = 16 * expected + 64;
  m->arena = malloc(m->arena_cap);
  if (!m->hash || !m->key || !m->value || !m->arena) {
    tsl_strmap_free(m);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory for a tokenizer table");
  }
  return TESSEL_OK;
}

void tsl_strmap_free(tsl_strmap *m) {
  free(m->hash);
  free(m->key);
  free(m->value);
  free(m->arena);
  memset(m, 0, sizeof *m);
}

void tsl_strmap_clear(tsl_strmap *m) {
  memset(m->hash, 0, m->cap * sizeof *m->hash);
  m->n = 0;
  m->arena_len = 0;
}

static size_t str_slot(const tsl_strmap *m, uint64_t h, const void *key, size_t len) {
  size_t mask = m->cap - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    if (m->hash[i] == 0) return i;
    if (m->hash[i] == h && (m->key[i] & 0xffffff) == len && memcmp(m->arena + (m->key[i] >> 24), key, len) == 0)
      return i;
  }
}

int64_t *tsl_strmap_find(const tsl_strmap *m, const void *key, size_t len) {
  size_t i = str_slot(m, hash_bytes(key, len), key, len);
  return m->hash[i] ? &m->value[i] : NULL;
}

static tsl_status str_grow(tsl_strmap *m) {
  tsl_strmap bigger = *m;
  bigger.cap = m->cap * 2;
  bigger.hash = calloc(bigger.cap, sizeof *bigger.hash);
  bigger.key = malloc(bigger.cap * sizeof *bigger.key);
  bigger.value = malloc(bigger.cap * sizeof *bigger.value);
  if (!bigger.hash || !bigger.key || !bigger.value) {
    free(bigger.hash);
    free(bigger.key);
    free(bigger.value);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory growing a tokenizer table");
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->hash[i]) continue;
    size_t j = m->hash[i] & (bigger.cap - 1);
    while (bigger.hash[j]) j = (j + 1) & (bigger.cap - 1);
    bigger.hash[j] = m->hash[i];
    bigger.key[j] = m->key[i];
    bigger.value[j] = m->value[i];
  }
  free(m->hash);
  free(m->key);
  free(m->value);
  *m = bigger;
  return TESSEL_OK;
}

tsl_status tsl_strmap_put(tsl_strmap *m, const void *key, size_t len, int64_t value, int64_t **slot, int *added) {
  if (len > TSL_STRMAP_MAX_KEY)
    return tsl_error(TESSEL_E_CONFIG, "a token or word of %zu bytes is longer than the %u bytes supported", len,
                     TSL_STRMAP_MAX_KEY);
  uint64_t h = hash_bytes(key, len);
  size_t i = str_slot(m, h, key, len);
  if (m->hash[i]) {
    if (added) *added = 0;
    *slot = &m->value[i];
    return TESSEL_OK;
  }
  if (2 * (m->n + 1) > m->cap) {
    tsl_status st = str_grow(m);
    if (st < 0) return st;
    i = str_slot(m, h, key, len);
  }
  tsl_status st = tsl_tok_reserve(&m->arena, &m->arena_cap, m->arena_len + len, 1);
  if (st < 0) return st;
  memcpy(m->arena + m->arena_len, key, len);
  m->hash[i] = h;
  m->key[i] = (uint64_t)m->arena_len << 24 | len;
  m->value[i] = value;
  m->arena_len += len;
  m->n++;
  if (added) *added = 1;
  *slot = &m->value[i];
  return TESSEL_OK;
}

const char *tsl_strmap_key_at(const tsl_strmap *m, size_t i, size_t *len) {
  if (!m->hash[i]) return NULL;
  *len = m->key[i] & 0xffffff;
  return m->arena + (m->key[i] >> 24);
}

/* ---- pairs ---- */

static uint64_t pair_key(uint32_t a, uint32_t b) { return ((uint64_t)a << 32 | b) + 1; }

tsl_status tsl_pairmap_init(tsl_pairmap *m, size_t expected) {
  memset(m, 0, sizeof *m);
  m->cap = capacity_for(expected);
  m->key = calloc(m->cap, sizeof *m->key);
  m->value = malloc(m->cap * sizeof *m->value);
  if (!m->key || !m->value) {
    tsl_pairmap_free(m);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory for a tokenizer table");
  }
  return TESSEL_OK;
}

void tsl_pairmap_free(tsl_pairmap *m) {
  free(m->key);
  free(m->value);
  memset(m, 0, sizeof *m);
}

static size_t pair_slot(const tsl_pairmap *m, uint64_t k) {
  size_t mask = m->cap - 1;
  for (size_t i = tsl_mix64(k) & mask;; i = (i + 1) & mask)
    if (m->key[i] == k || m->key[i] == 0) return i;
}

int64_t *tsl_pairmap_find(const tsl_pairmap *m, uint32_t a, uint32_t b) {
  size_t i = pair_slot(m, pair_key(a, b));
  return m->key[i] ? &m->value[i] : NULL;
}

tsl_status tsl_pairmap_put(tsl_pairmap *m, uint32_t a, uint32_t b, int64_t value, int64_t **slot, int *added) {
  uint64_t k = pair_key(a, b);
  size_t i = pair_slot(m, k);
  if (m->key[i]) {
    if (added) *added = 0;
    *slot = &m->value[i];
    return TESSEL_OK;
  }
  if (2 * (m->n + 1) > m->cap) {
    tsl_pairmap bigger = {.cap = m->cap * 2, .n = m->n};
    bigger.key = calloc(bigger.cap, sizeof *bigger.key);
    bigger.value = malloc(bigger.cap * sizeof *bigger.value);
    if (!bigger.key || !bigger.value) {
      tsl_pairmap_free(&bigger);
      return tsl_error(TESSEL_E_NOMEM, "out of host memory growing a tokenizer table");
    }
    for (size_t j = 0; j < m->cap; j++) {
      if (!m->key[j]) continue;
      size_t s = pair_slot(&bigger, m->key[j]);
      bigger.key[s] = m->key[j];
      bigger.value[s] = m->value[j];
    }
    tsl_pairmap_free(m);
    *m = bigger;
    i = pair_slot(m, k);
  }
  m->key[i] = k;
  m->value[i] = value;
  m->n++;
  if (added) *added = 1;
  *slot = &m->value[i];
  return TESSEL_OK;
}
