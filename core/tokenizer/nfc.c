/*
** core/tokenizer/nfc.c — Unicode NFC, the normalizer some tokenizer.json
** files name (Qwen2's), by utf8proc.
**
** tokenizers normalizes Rust strings, which are valid UTF-8; tessel encodes
** any bytes. So the valid runs of the text are composed, each on its own,
** and a byte that starts no valid character passes through as it is: text
** that is valid UTF-8 normalizes exactly as tokenizers normalizes it.
*/
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/internal.h"

/* Append n bytes to *buf (length *len, capacity *cap). */
static tsl_status append(char **buf, size_t *len, size_t *cap, const void *p, size_t n) {
  tsl_status st = tsl_tok_reserve(buf, cap, *len + n, 1);
  if (st < 0) return st;
  memcpy(*buf + *len, p, n);
  *len += n;
  return TESSEL_OK;
}

/* The valid run text[i, j): its NFC appended to *buf. */
static tsl_status compose(const char *text, size_t i, size_t j, char **buf, size_t *len, size_t *cap) {
  utf8proc_uint8_t *nfc = NULL;
  if (i == j) return TESSEL_OK;
  utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)text + i, (utf8proc_ssize_t)(j - i), &nfc,
                                    UTF8PROC_STABLE | UTF8PROC_COMPOSE);
  if (n < 0) return tsl_error(TESSEL_E_NOMEM, "normalizing text (NFC): %s", utf8proc_errmsg(n));
  tsl_status st = append(buf, len, cap, nfc, (size_t)n);
  free(nfc);
  return st;
}

tsl_status tsl_nfc(const char *text, size_t len, char **out, size_t *out_len) {
  char *buf = NULL;
  size_t n = 0, cap = 0, run = 0, j = 0;
  tsl_status st = TESSEL_OK;
  while (j < len && st >= 0) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)text + j, (utf8proc_ssize_t)(len - j), &cp);
    if (k > 0) {
      j += (size_t)k;
      continue;
    }
    st = compose(text, run, j, &buf, &n, &cap);
    if (st >= 0) st = append(&buf, &n, &cap, text + j, 1);
    run = ++j;
  }
  if (st >= 0) st = compose(text, run, len, &buf, &n, &cap);
  if (st < 0) {
    free(buf);
    return st;
  }
  *out = buf;
  *out_len = n;
  return TESSEL_OK;
}
