/*
** core/tokenizer/added.c — finding added tokens in a text, as `tokenizers`
** does (AddedVocabulary::find_matches).
**
** Two passes look for them: the tokens with `normalized` false in the text
** as given, then those with it true (their content normalized as the text
** is) in each normalized span between. One pass is a leftmost-longest scan
** (an Aho-Corasick automaton in tokenizers: a skipped match still moves the
** search past it). single_word keeps a match only where no word character
** (regex \w: alphabetic, marks, decimal digits, connector punctuation,
** ZWNJ and ZWJ) touches it; lstrip and rstrip take the white space (\s:
** Unicode White_Space) beside it into the token, so it vanishes.
*/
#include <string.h>
#include <utf8proc.h>

#include "tokenizer/internal.h"

/* The longest token of the pass that matches at s[i], or NULL. Tokens are
** sorted longest match first, equal ones in tokenizers' order. */
static const tsl_added_token *longest_at(const tsl_tokenizer *t, int normalized, const char *s, size_t n, size_t i) {
  if (!t->added_first[normalized][(unsigned char)s[i]]) return NULL;
  for (int k = 0; k < t->n_added; k++) {
    const tsl_added_token *a = &t->added[k];
    if (a->normalized == normalized && a->match_len <= n - i && memcmp(s + i, a->match, a->match_len) == 0) return a;
  }
  return NULL;
}

/* The character starting at s[i] (*w: its length), or -1 where no valid
** one starts (tessel encodes any bytes; tokenizers sees only valid text). */
static int32_t char_at(const char *s, size_t n, size_t i, size_t *w) {
  utf8proc_int32_t cp;
  utf8proc_ssize_t k = utf8proc_iterate((const utf8proc_uint8_t *)s + i, (utf8proc_ssize_t)(n - i), &cp);
  *w = k > 0 ? (size_t)k : 1;
  return k > 0 ? cp : -1;
}

/* The character ending at s[i] (*w: its length), or -1. */
static int32_t char_before(const char *s, size_t i, size_t *w) {
  size_t from = i - 1, k;
  while (from > 0 && i - from < 4 && ((unsigned char)s[from] & 0xc0) == 0x80) from--;
  int32_t cp = char_at(s, i, from, &k);
  if (cp >= 0 && from + k == i) {
    *w = k;
    return cp;
  }
  *w = 1;
  return -1;
}

/* Unicode White_Space, what the regex crate's \s matches. */
static int is_space(int32_t c) {
  return (c >= 0x09 && c <= 0x0d) || c == 0x20 || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* The regex crate's \w: Alphabetic (letters, letter numbers, and the
** symbols with Other_Alphabetic: circled and squared Latin letters), marks,
** decimal digits, connector punctuation, ZWNJ and ZWJ. */
static int is_word(int32_t c) {
  if (c < 0) return 0;
  switch (utf8proc_category(c)) {
  case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
  case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
  case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_PC: return 1;
  default: break;
  }
  return c == 0x200c || c == 0x200d || (c >= 0x24b6 && c <= 0x24e9) || (c >= 0x1f130 && c <= 0x1f149) ||
         (c >= 0x1f150 && c <= 0x1f169) || (c >= 0x1f170 && c <= 0x1f189);
}

const tsl_added_token *tsl_added_next(const tsl_tokenizer *t, int normalized, const char *s, size_t n, size_t *pos,
                                      size_t done, size_t *start, size_t *end) {
  for (size_t i = *pos; i < n; i++) {
    const tsl_added_token *a = longest_at(t, normalized, s, n, i);
    if (!a) continue;
    size_t stop = i + a->match_len, w;
    *pos = stop;
    if (a->single_word && ((i > 0 && is_word(char_before(s, i, &w))) || (stop < n && is_word(char_at(s, n, stop, &w))))) {
      i = stop - 1;
      continue;
    }
    *start = i;
    *end = stop;
    if (a->lstrip) {
      size_t from = i;
      while (from > 0 && is_space(char_before(s, from, &w))) from -= w;
      *start = from > done ? from : done;
    }
    while (a->rstrip && *end < n && is_space(char_at(s, n, *end, &w))) *end += w;
    return a;
  }
  *pos = n;
  return NULL;
}
