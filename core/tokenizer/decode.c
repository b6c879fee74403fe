/*
** core/tokenizer/decode.c — ids to text, as `tokenizers`' decode(ids)
** gives it, a token at a time.
**
** Every token goes through the decoder, added tokens too (their bytes in
** the tokenizer's table are what the decoder makes of them). Where bytes
** are not valid UTF-8, tokenizers writes U+FFFD, and so does this:
**   ByteLevel      the bytes of all the tokens, decoded lossily as Rust's
**                  from_utf8_lossy (and Python's "replace") does: one U+FFFD
**                  for each maximal part of a sequence that cannot go on;
**   SentencePiece  ByteFallback: a run of <0xNN> tokens is its bytes when
**                  they are valid UTF-8 as a whole, else one U+FFFD for each
**                  token of the run; then Strip drops the one space at the
**                  start of the text.
** So that the pieces given out join to the same text, bytes that are not
** decided yet are held back: a UTF-8 sequence not complete (until the next
** token completes it or shows it broken), or a run of <0xNN> tokens (until
** a token of another kind ends it). End gives out what is left.
*/
#include <stdlib.h>
#include <string.h>

#include "tokenizer/internal.h"

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* Append n bytes to a growing buffer (*buf NULL until the first). */
static tsl_status append(char **buf, size_t *len, size_t *cap, const char *s, size_t n) {
  if (n == 0) return TESSEL_OK; /* nothing to copy, into a buffer that may not exist yet */
  tsl_status st = tsl_tok_reserve(buf, cap, *len + n, 1);
  if (st < 0) return st;
  memcpy(*buf + *len, s, n);
  *len += n;
  return TESSEL_OK;
}

/* Append n bytes to the decoder's output, the first space of the text
** dropped under Strip. */
static tsl_status put(tsl_tokenizer_decoder *d, const void *p, size_t n) {
  const char *s = p;
  if (n && !d->emitted) {
    d->emitted = 1;
    if (d->t->strip_first_space && s[0] == ' ') s++, n--;
  }
  return append(&d->out, &d->out_len, &d->out_cap, s, n);
}

/* Give out the held bytes as far as they are decided; at the end (`end`),
** all of them, an unfinished character as one U+FFFD. */
static tsl_status flush_utf8(tsl_tokenizer_decoder *d, int end) {
  const unsigned char *s = (const unsigned char *)d->held;
  size_t i = 0;
  tsl_status st = TESSEL_OK;
  while (st >= 0 && i < d->held_len) {
    uint32_t cp;
    long k = tsl_tok_utf8(s + i, d->held_len - i, &cp);
    if (k == 0 && !end) break;
    st = k > 0 ? put(d, s + i, (size_t)k) : put(d, replacement, 3);
    i += k > 0 ? (size_t)k : k < 0 ? (size_t)-k : d->held_len - i;
  }
  if (i) memmove(d->held, d->held + i, d->held_len - i);
  d->held_len -= i;
  return st;
}

/* A run of <0xNN> tokens, ended: its bytes, or a U+FFFD for each. */
static tsl_status flush_run(tsl_tokenizer_decoder *d) {
  const unsigned char *s = (const unsigned char *)d->held;
  tsl_status st = TESSEL_OK;
  int valid = 1;
  for (size_t i = 0; valid && i < d->held_len;) {
    uint32_t cp;
    long k = tsl_tok_utf8(s + i, d->held_len - i, &cp);
    valid = k > 0;
    i += k > 0 ? (size_t)k : 0;
  }
  if (valid) st = put(d, s, d->held_len);
  for (size_t i = 0; !valid && st >= 0 && i < d->held_len; i++) st = put(d, replacement, 3);
  d->held_len = 0;
  return st;
}

void tsl_tokenizer_decode_begin(tsl_tokenizer_decoder *d, const tsl_tokenizer *t, int flags) {
  memset(d, 0, sizeof *d);
  d->t = t;
  d->skip_special = (flags & TSL_DECODE_SKIP_SPECIAL) != 0;
}

tsl_status tsl_tokenizer_decode_next(tsl_tokenizer_decoder *d, int32_t id, const char **text, size_t *len) {
  const tsl_tokenizer *t = d->t;
  size_t n;
  const char *s = tsl_tokenizer_token(t, id, &n);
  tsl_status st;
  d->out_len = 0;
  if (!s) return tsl_error(TESSEL_E_CONFIG, "id %d is outside the vocabulary of %s (%d tokens)", id, t->name,
                           t->vocab_size);
  if (d->skip_special && t->special[id]) { /* left out before the decoder, as tokenizers does */
    st = TESSEL_OK;
  } else if (!t->metaspace) {
    st = append(&d->held, &d->held_len, &d->held_cap, s, n);
    if (st >= 0) st = flush_utf8(d, 0);
  } else if (t->byte_token[id]) {
    st = append(&d->held, &d->held_len, &d->held_cap, s, n);
  } else {
    st = flush_run(d);
    if (st >= 0) st = put(d, s, n);
  }
  *text = d->out ? d->out : ""; /* never NULL, for memcmp and fwrite */
  *len = d->out_len;
  return st;
}

tsl_status tsl_tokenizer_decode_end(tsl_tokenizer_decoder *d, const char **text, size_t *len) {
  d->out_len = 0;
  tsl_status st = d->t->metaspace ? flush_run(d) : flush_utf8(d, 1);
  *text = d->out ? d->out : ""; /* never NULL, for memcmp and fwrite */
  *len = d->out_len;
  return st;
}

void tsl_tokenizer_decode_free(tsl_tokenizer_decoder *d) {
  free(d->held);
  free(d->out);
  memset(d, 0, sizeof *d);
}
