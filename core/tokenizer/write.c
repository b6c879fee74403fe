/*
** core/tokenizer/write.c — a trained BPE as tokenizer.json, field for field
** what `tokenizers` writes for a byte-level BPE it trained itself (its
** merges in the "a b" form every version reads).
*/
#include "tokenizer/write.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"
#include "common/util.h"

/* A token's string as a NUL-terminated copy in buf (room for the longest). */
static const char *token(const tsl_bpe_json *b, uint32_t id, char *buf) {
  memcpy(buf, b->strings + b->off[id], b->len[id]);
  buf[b->len[id]] = '\0';
  return buf;
}

static cJSON *byte_level(int add_prefix_space, int trim_offsets, int use_regex) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "type", "ByteLevel");
  cJSON_AddBoolToObject(o, "add_prefix_space", add_prefix_space);
  cJSON_AddBoolToObject(o, "trim_offsets", trim_offsets);
  cJSON_AddBoolToObject(o, "use_regex", use_regex);
  return o;
}

static cJSON *pre_tokenizer(const tsl_bpe_json *b) {
  if (!b->pattern) return byte_level(0, 1, 1);
  cJSON *seq = cJSON_CreateObject(), *list = cJSON_AddArrayToObject(seq, "pretokenizers");
  cJSON *split = cJSON_CreateObject(), *pat = cJSON_AddObjectToObject(split, "pattern");
  cJSON_AddStringToObject(seq, "type", "Sequence");
  cJSON_AddStringToObject(split, "type", "Split");
  cJSON_AddStringToObject(pat, "Regex", b->pattern);
  cJSON_AddStringToObject(split, "behavior", "Isolated");
  cJSON_AddBoolToObject(split, "invert", 0);
  cJSON_AddItemToArray(list, split);
  cJSON_AddItemToArray(list, byte_level(0, 1, 0));
  return seq;
}

/* Merge r as every version of tokenizers reads it: the string "a b" (the
** form of tokenizers < 0.20, hence of transformers <= 4.44, which cannot read
** the [a, b] pairs later versions write). A part holding a space cannot be
** written so (never a byte-level token: the space is its stand-in Ġ), and
** is written as a pair. buf has room for both tokens and a separator. */
static cJSON *merge(const tsl_bpe_json *b, int r, char *buf) {
  uint32_t x = b->merges[r][0], y = b->merges[r][1];
  const char *xs = b->strings + b->off[x], *ys = b->strings + b->off[y];
  size_t xn = b->len[x], yn = b->len[y];
  memcpy(buf, xs, xn);
  buf[xn] = ' ';
  memcpy(buf + xn + 1, ys, yn);
  buf[xn + 1 + yn] = '\0';
  if (!memchr(xs, ' ', xn) && !memchr(ys, ' ', yn)) return cJSON_CreateString(buf);
  buf[xn] = '\0';
  const char *parts[2] = {buf, buf + xn + 1};
  return cJSON_CreateStringArray(parts, 2);
}

static cJSON *model(const tsl_bpe_json *b, char *buf) {
  cJSON *m = cJSON_CreateObject();
  cJSON_AddStringToObject(m, "type", "BPE");
  cJSON_AddNullToObject(m, "dropout");
  cJSON_AddNullToObject(m, "unk_token");
  cJSON_AddNullToObject(m, "continuing_subword_prefix");
  cJSON_AddNullToObject(m, "end_of_word_suffix");
  cJSON_AddBoolToObject(m, "fuse_unk", 0);
  cJSON_AddBoolToObject(m, "byte_fallback", 0);
  cJSON_AddBoolToObject(m, "ignore_merges", 0);
  cJSON *vocab = cJSON_AddObjectToObject(m, "vocab"), *merges = cJSON_AddArrayToObject(m, "merges");
  for (int id = 0; id < b->n_tokens; id++) cJSON_AddNumberToObject(vocab, token(b, (uint32_t)id, buf), id);
  for (int r = 0; r < b->n_merges; r++) cJSON_AddItemToArray(merges, merge(b, r, buf));
  return m;
}

static cJSON *document(const tsl_bpe_json *b, char *buf) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "version", "1.0");
  cJSON_AddNullToObject(root, "truncation");
  cJSON_AddNullToObject(root, "padding");
  cJSON *added = cJSON_AddArrayToObject(root, "added_tokens");
  for (int id = 0; id < b->n_special; id++) {
    cJSON *a = cJSON_CreateObject();
    cJSON_AddNumberToObject(a, "id", id);
    cJSON_AddStringToObject(a, "content", token(b, (uint32_t)id, buf));
    cJSON_AddBoolToObject(a, "single_word", 0);
    cJSON_AddBoolToObject(a, "lstrip", 0);
    cJSON_AddBoolToObject(a, "rstrip", 0);
    cJSON_AddBoolToObject(a, "normalized", 0);
    cJSON_AddBoolToObject(a, "special", 1);
    cJSON_AddItemToArray(added, a);
  }
  cJSON_AddNullToObject(root, "normalizer");
  cJSON_AddItemToObject(root, "pre_tokenizer", pre_tokenizer(b));
  cJSON_AddItemToObject(root, "post_processor", byte_level(1, 0, 1));
  cJSON_AddItemToObject(root, "decoder", byte_level(1, 1, 1));
  cJSON_AddItemToObject(root, "model", model(b, buf));
  return root;
}

tsl_status tsl_bpe_write_json(const char *path, const tsl_bpe_json *b) {
  size_t longest = 0;
  for (int id = 0; id < b->n_tokens; id++) longest = TSL_MAX(longest, b->len[id]);
  char *buf = malloc(2 * longest + 2), *text = NULL; /* a token, or a merge's two and a separator */
  cJSON *root = buf ? document(b, buf) : NULL;
  /* cJSON reports allocation failure only through what it fails to print */
  if (root) text = cJSON_Print(root);
  cJSON_Delete(root);
  free(buf);
  if (!text) return tsl_error(TESSEL_E_NOMEM, "out of host memory writing %s", path);
  tsl_status st = tsl_atomic_write_file(path, text, strlen(text));
  free(text);
  return st;
}
