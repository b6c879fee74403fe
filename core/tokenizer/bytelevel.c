/*
** core/tokenizer/bytelevel.c — GPT-2's byte-level alphabet.
**
** Byte-level BPE vocabularies are written in a printable stand-in for each
** byte (GPT-2's bytes_to_unicode, kept by `tokenizers`' ByteLevel): the
** printable Latin-1 bytes '!'..'~', '¡'..'¬', '®'..'ÿ' stand for
** themselves, and the other 68 bytes, in increasing order, become U+0100,
** U+0101, ... So the space is 'Ġ' (U+0120) and the newline 'Ċ' (U+010A).
*/
#include <string.h>

#include "tokenizer/internal.h"

static int printable(unsigned b) { return (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae; }

uint32_t tsl_bytelevel_char(unsigned char b) {
  if (printable(b)) return b;
  uint32_t n = 0; /* non-printable bytes below b */
  for (unsigned x = 0; x < b; x++) n += !printable(x);
  return 256 + n;
}

int tsl_bytelevel_byte(uint32_t cp) {
  if (cp < 256) return printable(cp) ? (int)cp : -1;
  uint32_t n = cp - 256;
  for (unsigned x = 0; x < 256; x++)
    if (!printable(x) && n-- == 0) return (int)x;
  return -1;
}

static size_t put_utf8(uint32_t cp, char *out) {
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  out[0] = (char)(0xc0 | cp >> 6); /* every stand-in is below U+0800 */
  out[1] = (char)(0x80 | (cp & 0x3f));
  return 2;
}

size_t tsl_bytelevel_encode(const unsigned char *bytes, size_t n, char *out) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += put_utf8(tsl_bytelevel_char(bytes[i]), out + k);
  return k;
}

/* Decode the UTF-8 character at s[0, len): its code point and width, or 0. */
static size_t get_utf8(const unsigned char *s, size_t len, uint32_t *cp) {
  unsigned c = s[0];
  size_t w = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
  if (w == 0 || w > len) return 0;
  uint32_t v = w == 1 ? c : c & (0x7f >> w);
  for (size_t i = 1; i < w; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    v = v << 6 | (s[i] & 0x3f);
  }
  *cp = v;
  return w;
}

long tsl_bytelevel_decode(const char *str, size_t len, unsigned char *out) {
  const unsigned char *s = (const unsigned char *)str;
  size_t k = 0;
  int whole = 0; /* a character that stands for no byte: the token is kept as written */
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t w = get_utf8(s + i, len - i, &cp);
    if (w == 0) return -1;
    int b = tsl_bytelevel_byte(cp);
    if (b >= 0) out[k++] = (unsigned char)b;
    else whole = 1;
    i += w;
  }
  if (!whole) return (long)k;
  memcpy(out, s, len);
  return (long)len;
}
