/*
** core/tokenizer/pretok.c — pre-tokenization: a text cut into pieces by a
** regex, through PCRE2.
**
** Patterns are compiled in UTF mode with Unicode properties (PCRE2_UCP, so
** \s, \p{L} and \p{N} mean what they mean in `tokenizers`' Oniguruma), JIT
** compiled when the platform allows. The pattern is written for
** `tokenizers`, in Oniguruma's syntax; onig.c rewrites it for PCRE2 first. PCRE2_MATCH_INVALID_UTF makes invalid
** UTF-8 simply never match instead of failing the search: such bytes land
** in the gaps between matches, and gaps are pieces too, so every byte of
** any input reaches the BPE.
**
** One character differs: PCRE2 (10.42) counts U+180E MONGOLIAN VOWEL
** SEPARATOR as horizontal space (\s, \h), as Unicode did before 6.3;
** `tokenizers` follows today's White_Space, where it is a format character
** (Cf), so text with it beside spaces was cut otherwise than `tokenizers`
** cuts it (a sweep of every code point of planes 0-3 and 14 found no other
** space that differs). The regex therefore searches a copy of the text in
** which U+180E is U+200B ZERO WIDTH SPACE — also Cf, also three bytes in
** UTF-8, not a space to PCRE2 — and the pieces are cut from the text as
** given. Letters added to Unicode after PCRE2's tables (Unicode 14 in
** 10.42) are still unassigned to \p{L}; the README says so.
*/
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tokenizer/internal.h"

const char tsl_gpt2_pattern[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static const char llama3_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static const char qwen2_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const char *tsl_tokenizer_pattern_named(const char *name) {
  if (strcmp(name, "gpt2") == 0) return tsl_gpt2_pattern;
  if (strcmp(name, "llama3") == 0) return llama3_pattern;
  if (strcmp(name, "qwen2") == 0) return qwen2_pattern;
  return NULL;
}

/* Room for the JIT's backtracking over long pieces (a megabyte of spaces). */
#define JIT_STACK_START (32u << 10)
#define JIT_STACK_MAX (8u << 20)

struct tsl_pretok {
  char *pattern;
  char *shadow; /* the text as searched, when it holds U+180E */
  size_t shadow_cap;
  pcre2_code *code;
  pcre2_match_data *md;
  pcre2_match_context *mctx;
  pcre2_jit_stack *stack;
  int jit;
};

tsl_status tsl_pretok_create(const char *pattern, const char *what, tsl_pretok **out) {
  int err;
  PCRE2_SIZE at;
  tsl_pretok *p = calloc(1, sizeof *p);
  *out = NULL;
  if (!p) return tsl_error(TESSEL_E_NOMEM, "out of host memory for a regex");
  tsl_status st = tsl_onig_to_pcre2(pattern, what, &p->pattern);
  if (st < 0) {
    free(p);
    return st;
  }
  p->code = pcre2_compile((PCRE2_SPTR)p->pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF,
                          &err, &at, NULL);
  if (!p->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    int rewritten = strcmp(pattern, p->pattern) != 0;
    st = tsl_error(TESSEL_E_CONFIG, "%s: the pre-tokenizer regex does not compile at offset %zu%s%s: %s", what,
                   (size_t)at, rewritten ? " of its PCRE2 form " : "", rewritten ? p->pattern : "", (const char *)msg);
    tsl_pretok_free(p);
    return st;
  }
  p->md = pcre2_match_data_create_from_pattern(p->code, NULL);
  p->mctx = pcre2_match_context_create(NULL);
  if (!p->md || !p->mctx) {
    tsl_pretok_free(p);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory for a regex");
  }
  /* without the JIT (an unsupported CPU) the interpreter gives the same matches */
  if (pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE) == 0 &&
      (p->stack = pcre2_jit_stack_create(JIT_STACK_START, JIT_STACK_MAX, NULL)) != NULL) {
    pcre2_jit_stack_assign(p->mctx, NULL, p->stack);
    p->jit = 1;
  }
  *out = p;
  return TESSEL_OK;
}

void tsl_pretok_free(tsl_pretok *p) {
  if (!p) return;
  pcre2_jit_stack_free(p->stack);
  pcre2_match_context_free(p->mctx);
  pcre2_match_data_free(p->md);
  pcre2_code_free(p->code);
  free(p->shadow);
  free(p->pattern);
  free(p);
}

const char *tsl_pretok_pattern(const tsl_pretok *p) { return p->pattern; }

int tsl_pretok_named(const tsl_pretok *p) {
  static const char *const names[] = {"gpt2", "llama3", "qwen2"};
  for (size_t i = 0; p && i < TSL_ARRAY_LEN(names); i++)
    if (strcmp(p->pattern, tsl_tokenizer_pattern_named(names[i])) == 0) return 1;
  return 0;
}

static const char u180e[] = "\xE1\xA0\x8E", u200b[] = "\xE2\x80\x8B";

/* An empty text may come as NULL (an empty file maps to no memory), and
** memmem must not be given NULL even for zero bytes: it has nothing to
** search then. */
void tsl_pretok_begin(tsl_pretok_iter *it, tsl_pretok *p, const char *text, size_t len) {
  memset(it, 0, sizeof *it);
  it->last_end = (size_t)-1; /* no match yet */
  it->p = p;
  it->text = it->searched = text;
  it->len = len;
  /* memchr first: far cheaper than memmem on the short pieces of a Sequence */
  if (len == 0 || !memchr(text, u180e[0], len) || !memmem(text, len, u180e, 3)) return;
  if (p->shadow_cap < len) {
    char *grown = realloc(p->shadow, len);
    if (!grown) {
      it->failed = tsl_error(TESSEL_E_NOMEM, "out of host memory pre-tokenizing %zu bytes", len);
      return;
    }
    p->shadow = grown;
    p->shadow_cap = len;
  }
  memcpy(p->shadow, text, len);
  for (char *at = p->shadow; (at = memmem(at, len - (size_t)(at - p->shadow), u180e, 3)); at += 3) memcpy(at, u200b, 3);
  it->searched = p->shadow;
}

/* Search from it->from; sets the next match, or none (have_match 0). */
static int find_match(tsl_pretok_iter *it) {
  tsl_pretok *p = it->p;
  PCRE2_SPTR s = (PCRE2_SPTR)it->searched;
  int rc = p->jit ? pcre2_jit_match(p->code, s, it->len, it->from, 0, p->md, p->mctx)
                  : pcre2_match(p->code, s, it->len, it->from, 0, p->md, p->mctx);
  if (rc == PCRE2_ERROR_NOMATCH) {
    it->have_match = 0;
    return 0;
  }
  if (rc < 0) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    return tsl_error(TESSEL_E_INTERNAL, "pre-tokenizer regex failed searching from byte %zu: %s", it->from,
                     (const char *)msg);
  }
  PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->md);
  it->match_start = ov[0];
  it->match_end = ov[1];
  it->have_match = 1;
  return 1;
}

/* The length of the character at text[i]: its UTF-8 sequence, or one byte
** where the text is not UTF-8. */
static size_t char_len(const char *text, size_t len, size_t i) {
  size_t n = 1;
  if ((unsigned char)text[i] >= 0xC0)
    while (n < 4 && i + n < len && ((unsigned char)text[i + n] & 0xC0) == 0x80) n++;
  return n;
}

/* Where the search goes on after a match: its end, or after an empty
** one, a character later. */
static size_t search_from(const tsl_pretok_iter *it) {
  size_t s = it->match_start;
  if (it->match_end > s) return it->match_end;
  return s < it->len ? s + char_len(it->text, it->len, s) : it->len + 1;
}

/* Matches as tokenizers' find_iter (the onig crate's) gives them: an empty
** match is one too, but not one where the previous match ended. */
int tsl_pretok_match(tsl_pretok_iter *it, size_t *start, size_t *end) {
  int rc;
  if (it->failed) return it->failed;
  while ((rc = it->from <= it->len ? find_match(it) : 0) > 0) {
    int skip = it->match_start == it->match_end && it->match_start == it->last_end;
    it->from = search_from(it);
    it->last_end = it->match_end;
    if (skip) continue;
    *start = it->match_start, *end = it->match_end;
    return 1;
  }
  return rc;
}

/* Pieces are the matches and the gaps between them, as tokenizers' Split
** (Isolated) makes them. An empty match only splits: it yields no piece
** (so a pattern that matches empty everywhere, like \s*, cuts the text
** into characters, as tokenizers does), and which empty matches
** tokenizers counts does not matter here. */
int tsl_pretok_next(tsl_pretok_iter *it, size_t *start, size_t *end) {
  if (it->failed) return it->failed;
  for (;;) {
    if (it->pos >= it->len) return 0;
    if (!it->have_match) {
      int rc = it->from <= it->len ? find_match(it) : 0;
      if (rc < 0) return rc;
      if (rc == 0) { /* the rest of the text is one gap */
        *start = it->pos;
        *end = it->pos = it->len;
        return 1;
      }
    }
    *start = it->pos;
    if (it->match_start > it->pos) { /* the gap before the match */
      *end = it->pos = it->match_start;
      return 1;
    }
    it->have_match = 0;
    it->from = search_from(it);
    if (it->match_end > it->match_start) {
      *end = it->pos = it->match_end;
      return 1;
    }
  }
}
