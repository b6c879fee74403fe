/*
** tests/fuzz/fuzz_tokenizer.c — the tokenizer.json loader, and encoding and
** decoding with what it loads.
**
** Input: a tokenizer.json, parsed from memory (tsl_tokenizer_parse, what
** tsl_tokenizer_load calls on the file's text). A tokenizer that loads
** encodes a fixed text and the input's last bytes (up to 63, the count
** taken from the last byte), with and without added tokens; every id must be
** in the vocabulary and the ids must decode to the text, as tokenizer.h
** promises for any byte string — with add_prefix_space, to the text with
** spaces put in, under the normalizer NFC, to the text composed, and under
** SentencePiece's kind, to the text with ▁ as spaces, spaces put in and
** perhaps its first space dropped; with a Split that removes what it
** matches, to the text less some of it (the documented exceptions, see
** test_tokenizer.c). An
** encoding may fail (a file's regex can exceed PCRE2's match limit), but
** only with a message. Cut wherever the tokenizer offers (tsl_tokenizer_cut),
** each text encodes as its halves do.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "common/util.h"
#include "fuzz.h"
#include "tokenizer/internal.h" /* add_prefix_space: which round trip to expect */
#include "tokenizer/tokenizer.h"

const char fuzz_target[] = "tokenizer";

/* A promise broken: say which. */
static void broken(const char *what) {
  fprintf(stderr, "fuzz_tokenizer: %s\n", what);
  abort();
}

static const char fixed[] = "Hello world! It's 2024:\tcaf\xc3\xa9 \xff\xfe<|endoftext|>  x\n\n";

/* The ids decode to text[0, len) — or, when spaces may be put in, to it
** with some spaces added: every decoded byte matches the next byte of the
** text or is a space; when parts may be removed, to a part of it: the
** decoded bytes are found in the text in order (both at once are not
** checked: a space put in could be taken for one of the text's). */
static int decodes_to(const tsl_tokenizer *t, const tsl_token_vec *v, const char *text, size_t len, int spaces,
                      int removed) {
  size_t at = 0;
  if (spaces && removed) return 1;
  for (size_t i = 0; i < v->n; i++) {
    size_t n;
    const char *s = i ? tsl_tokenizer_token(t, v->ids[i], &n) : tsl_tokenizer_first_token(t, v->ids[i], &n);
    if (!s) return 0;
    for (size_t k = 0; k < n; k++) {
      while (removed && at < len && s[k] != text[at]) at++;
      if (at < len && s[k] == text[at]) at++;
      else if (!spaces || s[k] != ' ') return 0;
    }
  }
  return at == len || removed;
}

/* SentencePiece's kind: the ids decode to the text with each ▁ a space, a
** ▁ put before spans (spaces added), and the first space dropped by the
** decoder's Strip (so the text's own first space may be missing). */
static int metaspace_decodes_to(const tsl_tokenizer *t, const tsl_token_vec *v, const char *text, size_t len) {
  char *spaced = malloc(len + 1);
  size_t n = 0;
  if (!spaced) return 0;
  for (size_t i = 0; i < len; i++) {
    if (len - i >= 3 && memcmp(text + i, "\xe2\x96\x81", 3) == 0) spaced[n++] = ' ', i += 2;
    else spaced[n++] = text[i];
  }
  int ok = decodes_to(t, v, spaced, n, 1, 0) || (n && spaced[0] == ' ' && decodes_to(t, v, spaced + 1, n - 1, 1, 0));
  free(spaced);
  return ok;
}

/* Under the normalizer NFC the ids decode to the text composed: NFC of the
** decoded bytes equals NFC of the text (normalizing a concatenation of
** normalized spans, as encoding around added tokens makes, gives what
** normalizing the whole does). */
static int composes_to(const tsl_tokenizer *t, const tsl_token_vec *v, const char *text, size_t len) {
  char *decoded = NULL, *a = NULL, *b = NULL;
  size_t n = 0, cap = 0, alen = 0, blen = 0;
  int same = 0;
  for (size_t i = 0; i < v->n; i++) {
    size_t k;
    const char *s = tsl_tokenizer_token(t, v->ids[i], &k);
    if (!s || tsl_tok_reserve(&decoded, &cap, n + k, 1) < 0) goto done;
    memcpy(decoded + n, s, k);
    n += k;
  }
  if (tsl_nfc(decoded, n, &a, &alen) >= 0 && tsl_nfc(text, len, &b, &blen) >= 0)
    same = alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
done:
  free(decoded), free(a), free(b);
  return same;
}

static void round_trip(tsl_tokenizer *t, const char *text, size_t len) {
  for (int flags = 0; flags <= TSL_TOK_ADDED; flags += TSL_TOK_ADDED) {
    tsl_token_vec v = {0};
    tsl_error_clear();
    if (tsl_tokenizer_encode(t, text, len, flags, tsl_token_vec_sink, &v) < 0) {
      /* the vocabulary encodes every byte string, but a file's regex may give up (its match limit) */
      if (!tsl_error_message()[0]) broken("an encoding failed without a message");
      tsl_token_vec_free(&v);
      tsl_error_clear();
      continue;
    }
    for (size_t i = 0; i < v.n; i++)
      if (v.ids[i] < 0 || v.ids[i] >= tsl_tokenizer_vocab_size(t)) broken("an id outside the vocabulary");
    int decoded = t->metaspace ? metaspace_decodes_to(t, &v, text, len)
                  : t->nfc       ? composes_to(t, &v, text, len)
                                 : decodes_to(t, &v, text, len, t->add_prefix_space, t->drops_text);
    if (!decoded) broken("the ids do not decode to the text");
    tsl_token_vec_free(&v);
  }
}

/* Wherever tsl_tokenizer_cut offers to cut text, the ids of the whole are
** those of the part before followed by those of the part after (encoded
** TSL_TOK_CONTINUED), as tokenizer.h promises: what lets `data prepare`
** encode a large file's segments side by side. */
static void cuts_keep_ids(tsl_tokenizer *t, const char *text, size_t len) {
  tsl_token_vec whole = {0}, halves = {0};
  size_t at;
  if (tsl_tokenizer_encode(t, text, len, 0, tsl_token_vec_sink, &whole) < 0) goto done; /* as round_trip allows */
  for (size_t from = 1; (at = tsl_tokenizer_cut(t, text, len, from, len)) != 0; from = at + 1) {
    if (at >= len) broken("a cut past the text");
    halves.n = 0;
    if (tsl_tokenizer_encode(t, text, at, 0, tsl_token_vec_sink, &halves) < 0 ||
        tsl_tokenizer_encode(t, text + at, len - at, TSL_TOK_CONTINUED, tsl_token_vec_sink, &halves) < 0)
      break;
    if (halves.n != whole.n || memcmp(halves.ids, whole.ids, whole.n * sizeof *whole.ids) != 0)
      broken("a text cut where the tokenizer allows encodes otherwise than whole");
  }
done:
  tsl_token_vec_free(&whole);
  tsl_token_vec_free(&halves);
  tsl_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tsl_tokenizer *t = NULL;
  if (tsl_tokenizer_parse((const char *)data, size, "fuzz/tokenizer.json", &t) >= 0) {
    size_t len, tail = TSL_MIN(size, (size_t)(data[size - 1] % 64)); /* a tokenizer is not empty */
    const char *json = tsl_tokenizer_json(t, &len);
    if (len != size || (size && memcmp(json, data, size) != 0)) broken("not the text it was loaded from");
    int eot = tsl_tokenizer_eot(t);
    if (eot < -1 || eot >= tsl_tokenizer_vocab_size(t)) broken("an end-of-text id outside the vocabulary");
    (void)tsl_tokenizer_hash(t);
    round_trip(t, fixed, sizeof fixed - 1);
    round_trip(t, (const char *)data + size - tail, tail);
    cuts_keep_ids(t, fixed, sizeof fixed - 1);
    cuts_keep_ids(t, (const char *)data + size - tail, tail);
    tsl_tokenizer_free(t);
  }
  tsl_error_clear();
  return 0;
}
