/*
** core/tokenizer/metaspace.c — SentencePiece's kind of BPE, as a
** tokenizer.json says it (Llama 2, Mistral 7B, TinyLlama, and what
** transformers converts any SentencePiece BPE tokenizer.model into).
**
** Spaces are the character ▁ (U+2581), and one ▁ is put before the text
** so that its first word looks like every other. The symbols BPE starts
** from are characters, not bytes: a character with a token of its own is
** that token, any other is the tokens <0x00> .. <0xFF> of its bytes (byte
** fallback), so every text still encodes. Decoding turns ▁ back into
** spaces and <0xNN> into its byte; the decoder's Strip drops the one space
** at the start of a sequence that the prefix ▁ became.
**
** Two spellings of the same encoder are read:
**   pre_tokenizer Metaspace {replacement ▁, prepend_scheme always | first |
**     never (or the older add_prefix_space), split}; normalizer null.
**     first: only a span at the very start of the text gets the ▁, not one
**     after an added token; always and first: not a span that starts with
**     ▁ already. split: a piece begins at every ▁.
**   normalizer Sequence [Prepend ▁, Replace " " → ▁]; pre_tokenizer null
**     (older transformers' Llama 2 files): every span gets the ▁, even one
**     that starts with a space.
** and one decoder: Sequence [Replace ▁ → " ", ByteFallback, Fuse] with or
** without Strip {content " ", start 1, stop 0}. The model must have
** byte_fallback and all 256 byte tokens (so no text meets <unk>) and no
** ignore_merges. Anything else is refused with the field named.
*/
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "common/util.h"
#include "tokenizer/internal.h"

static const char metaspace[] = "\xe2\x96\x81"; /* ▁ */
#define METASPACE_LEN 3

static int is_string(const cJSON *v, const char *s) { return cJSON_IsString(v) && strcmp(v->valuestring, s) == 0; }

/* A Replace of the literal `from` by `to` (normalizer or decoder). */
static int is_replace(const cJSON *r, const char *from, const char *to) {
  return tsl_tok_is_type(r, "Replace") && is_string(tsl_tok_field(tsl_tok_field(r, "pattern"), "String"), from) &&
         is_string(tsl_tok_field(r, "content"), to);
}

int tsl_metaspace_legacy_normalizer(const cJSON *norm) {
  const cJSON *steps = tsl_tok_field(norm, "normalizers");
  return tsl_tok_is_type(norm, "Sequence") && cJSON_GetArraySize(steps) == 2 &&
         tsl_tok_is_type(cJSON_GetArrayItem(steps, 0), "Prepend") &&
         is_string(tsl_tok_field(cJSON_GetArrayItem(steps, 0), "prepend"), metaspace) &&
         is_replace(cJSON_GetArrayItem(steps, 1), " ", metaspace);
}

static tsl_status read_pre_tokenizer(tsl_tokenizer *t, const char *name, const cJSON *pt) {
  const cJSON *scheme = tsl_tok_field(pt, "prepend_scheme"), *split = tsl_tok_field(pt, "split");
  if (!is_string(tsl_tok_field(pt, "replacement"), metaspace))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: pre_tokenizer Metaspace has a replacement other than \xe2\x96\x81",
                     name);
  if (is_string(scheme, "always")) t->prepend = TSL_PREPEND_ALWAYS;
  else if (is_string(scheme, "first")) t->prepend = TSL_PREPEND_FIRST;
  else if (is_string(scheme, "never")) t->prepend = TSL_PREPEND_NEVER;
  else if (scheme) return tsl_error(TESSEL_E_UNSUPPORTED, "%s: pre_tokenizer Metaspace prepend_scheme is not always, "
                                    "first or never", name);
  else t->prepend = cJSON_IsFalse(tsl_tok_field(pt, "add_prefix_space")) ? TSL_PREPEND_NEVER : TSL_PREPEND_ALWAYS;
  t->split_at_metaspace = !cJSON_IsFalse(split); /* tokenizers' default splits */
  return TESSEL_OK;
}

static tsl_status read_decoder(tsl_tokenizer *t, const char *name, const cJSON *dec) {
  const cJSON *steps = tsl_tok_field(dec, "decoders"), *strip = cJSON_GetArrayItem(steps, 3);
  const cJSON *start = tsl_tok_field(strip, "start"), *stop = tsl_tok_field(strip, "stop");
  int n = cJSON_GetArraySize(steps);
  if (tsl_tok_is_type(dec, "Sequence") && (n == 3 || n == 4) &&
      is_replace(cJSON_GetArrayItem(steps, 0), metaspace, " ") &&
      tsl_tok_is_type(cJSON_GetArrayItem(steps, 1), "ByteFallback") &&
      tsl_tok_is_type(cJSON_GetArrayItem(steps, 2), "Fuse")) {
    if (n == 3) return TESSEL_OK;
    if (tsl_tok_is_type(strip, "Strip") && is_string(tsl_tok_field(strip, "content"), " ") && start &&
        start->valuedouble == 1 && stop && stop->valuedouble == 0) {
      t->strip_first_space = 1;
      return TESSEL_OK;
    }
  }
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s: decoder is not Sequence [Replace \xe2\x96\x81 with \" \", ByteFallback, "
                   "Fuse] with or without Strip {\" \", 1, 0}: tessel decodes a SentencePiece BPE only so", name);
}

tsl_status tsl_metaspace_read(tsl_tokenizer *t, const char *name, const cJSON *root) {
  const cJSON *norm = tsl_tok_field(root, "normalizer"), *pt = tsl_tok_field(root, "pre_tokenizer");
  const cJSON *model = tsl_tok_field(root, "model");
  tsl_status st;
  t->metaspace = 1;
  if (tsl_metaspace_legacy_normalizer(norm)) {
    if (pt && !cJSON_IsNull(pt))
      return tsl_error(TESSEL_E_UNSUPPORTED, "%s: a pre_tokenizer after the Prepend and Replace normalizers is not "
                       "supported", name);
    t->prepend = TSL_PREPEND_NORMALIZER;
    t->split_at_metaspace = 0;
  } else {
    /* an empty Sequence (some converters write one) normalizes nothing */
    int none = !norm || cJSON_IsNull(norm) ||
               (tsl_tok_is_type(norm, "Sequence") && !cJSON_GetArraySize(tsl_tok_field(norm, "normalizers")));
    if (!none)
      return tsl_error(TESSEL_E_UNSUPPORTED, "%s: a normalizer before a Metaspace pre-tokenizer is not supported",
                       name);
    TSL_TRY(st, read_pre_tokenizer(t, name, pt));
  }
  if (!cJSON_IsTrue(tsl_tok_field(model, "byte_fallback")))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: model.byte_fallback is not set; tessel reads a SentencePiece BPE only "
                     "with byte fallback, so that no text meets <unk>", name);
  if (cJSON_IsTrue(tsl_tok_field(model, "ignore_merges")))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: model.ignore_merges with a Metaspace tokenizer is not supported", name);
  return read_decoder(t, name, tsl_tok_field(root, "decoder"));
fail:
  return st;
}

static int hex_digit(char c, int upper_only) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f' && !upper_only) return c - 'a' + 10;
  return -1;
}

/* The byte a token <0xNN> stands for, or -1 when s is not one. Byte
** fallback encodes to <0xNN> as Rust's {:#04X} writes it (upper case
** digits); the ByteFallback decoder reads either case. */
static int fallback_byte(const char *s, size_t len, int upper_only) {
  if (len != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return -1;
  int hi = hex_digit(s[3], upper_only), lo = hex_digit(s[4], upper_only);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

int tsl_metaspace_byte_token(const char *s, size_t len) { return fallback_byte(s, len, 0) >= 0; }

long tsl_metaspace_decode(const char *s, size_t len, unsigned char *out) {
  int b = fallback_byte(s, len, 0);
  if (b >= 0) {
    out[0] = (unsigned char)b;
    return 1;
  }
  size_t n = 0;
  for (size_t i = 0; i < len;) {
    if (len - i >= METASPACE_LEN && memcmp(s + i, metaspace, METASPACE_LEN) == 0) {
      out[n++] = ' ';
      i += METASPACE_LEN;
    } else {
      out[n++] = (unsigned char)s[i++];
    }
  }
  return (long)n;
}

tsl_status tsl_metaspace_tables(tsl_tokenizer *t, const char *name, const tsl_strmap *by_string) {
  tsl_status st;
  int have = 0;
  uint8_t joined[256] = {0}; /* bytes some token has right before a ▁ */
  TSL_TRY(st, tsl_strmap_init(&t->chars, 1024));
  for (int b = 0; b < 256; b++) t->byte_id[b] = -1;
  for (size_t i = 0; i < by_string->cap; i++) {
    size_t n;
    const char *s = tsl_strmap_key_at(by_string, i, &n);
    if (!s) continue;
    int32_t id = (int32_t)by_string->value[i];
    int64_t *slot;
    utf8proc_int32_t cp;
    int b = fallback_byte(s, n, 1);
    if (b >= 0) t->byte_id[b] = id, have++;
    else if (n > 0 && utf8proc_iterate((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &cp) == (utf8proc_ssize_t)n)
      TSL_TRY(st, tsl_strmap_put(&t->chars, s, n, id, &slot, NULL));
    for (size_t k = 1; k + METASPACE_LEN <= n; k++)
      if (memcmp(s + k, metaspace, METASPACE_LEN) == 0) joined[(unsigned char)s[k - 1]] = 1;
  }
  if (have < 256)
    return tsl_error(TESSEL_E_CONFIG, "%s: model.vocab has %d of the 256 byte tokens <0x00> .. <0xFF>; byte fallback "
                     "needs all of them", name, have);
  /* A merge across the boundary between character c and a ▁ would make a
  ** token holding c▁ — or, were c byte fallback, "<0xNN>▁": only an ASCII
  ** character with a token of its own is its own symbol's last byte. */
  for (int c = 1; c < 0x80; c++) {
    char ch = (char)c;
    t->cut_after[c] = !joined[c] && tsl_strmap_find(&t->chars, &ch, 1) != NULL;
  }
  return TESSEL_OK;
fail:
  return st;
}

size_t tsl_metaspace_symbols(const tsl_tokenizer *t, const unsigned char *piece, size_t n, int32_t *ids) {
  size_t k = 0;
  for (size_t i = 0; i < n;) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t w = utf8proc_iterate(piece + i, (utf8proc_ssize_t)(n - i), &cp);
    if (w <= 0) w = 1; /* a byte that starts no character: its byte token */
    const int64_t *id = tsl_strmap_find(&t->chars, piece + i, (size_t)w);
    if (id) ids[k++] = (int32_t)*id;
    else
      for (utf8proc_ssize_t j = 0; j < w; j++) ids[k++] = t->byte_id[piece[i + (size_t)j]];
    i += (size_t)w;
  }
  return k;
}

tsl_status tsl_metaspace_normalize(const tsl_tokenizer *t, const char *text, size_t len, tsl_span_at at, char **out,
                                   size_t *out_len) {
  int starts = len > 0 && (text[0] == ' ' || (len >= METASPACE_LEN && memcmp(text, metaspace, METASPACE_LEN) == 0));
  int prefix = 0;
  switch (t->prepend) {
  case TSL_PREPEND_NEVER: break;
  case TSL_PREPEND_FIRST: prefix = at == TSL_SPAN_START && !starts; break;
  case TSL_PREPEND_ALWAYS: prefix = at != TSL_SPAN_CONTINUED && !starts; break;
  case TSL_PREPEND_NORMALIZER: prefix = at != TSL_SPAN_CONTINUED; break;
  }
  size_t spaces = 0;
  for (size_t i = 0; i < len; i++) spaces += text[i] == ' ';
  char *s = malloc(len + (spaces + (size_t)prefix) * (METASPACE_LEN - 1) + (size_t)prefix + 1);
  if (!s) return tsl_error(TESSEL_E_NOMEM, "out of host memory encoding a %zu-byte text", len);
  size_t n = 0;
  if (prefix) memcpy(s, metaspace, METASPACE_LEN), n = METASPACE_LEN;
  for (size_t i = 0; i < len; i++) {
    if (text[i] == ' ') memcpy(s + n, metaspace, METASPACE_LEN), n += METASPACE_LEN;
    else s[n++] = text[i];
  }
  *out = s;
  *out_len = n;
  return TESSEL_OK;
}

int tsl_metaspace_piece_ends(const tsl_tokenizer *t, unsigned char before) {
  return t->split_at_metaspace || t->cut_after[before];
}

size_t tsl_metaspace_piece_end(const tsl_tokenizer *t, const char *s, size_t len, size_t from) {
  for (size_t i = from + 1; i + METASPACE_LEN <= len; i++)
    if (memcmp(s + i, metaspace, METASPACE_LEN) == 0 && tsl_metaspace_piece_ends(t, (unsigned char)s[i - 1]))
      return i;
  return len;
}
