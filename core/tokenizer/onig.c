/*
** core/tokenizer/onig.c — a pre-tokenizer regex as `tokenizers` reads it
** (Oniguruma's syntax) rewritten as the PCRE2 pattern that means the same.
**
** The two agree on what tokenizer regexes are made of (\p{..}, \s \d \w
** under PCRE2_UCP, lookaround, lazy and possessive ?+ *+ ++, (?i), \R, \X,
** POSIX brackets). Where the same text means something else, it is
** translated (each checked against `tokenizers` in json_cases.json):
**   \h \H       a hex digit and not one (PCRE2: horizontal space)
**               -> [[:xdigit:]] [[:^xdigit:]] (in a class, without the outer [])
**   \v          the vertical tab alone (PCRE2: any vertical space) -> \x0B
**   option m    dot matches newline, PCRE2's s: (?m) (?m:..) (?i-m) ...
**   (?i) alone  to the end of its group, later alternatives included:
**               a(?i)b|c -> a(?i:b|c)
**   ^ $         always at line starts and ends -> (?m:^) (?m:$)
**   {,n}        at most n (PCRE2 10.42: literal text) -> {0,n}
** or refused, naming it: \Q \E \V \C; a class inside a class ([a[b]], a
** union) and && (an intersection), literal text to PCRE2; X{n,m}+ (X{n,m}
** repeated, possessive in PCRE2) and X{n}? (optional, exact in PCRE2);
** options other than i and m. Anything else passes as written, and what
** PCRE2 does not know it refuses when it compiles.
*/
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tokenizer/internal.h"

#define MAX_DEPTH 64

typedef struct rewrite {
  const char *in, *what;
  size_t at;      /* where in `in` the next character is */
  char *out;
  size_t n;
  int in_class;
  int depth;                  /* groups open */
  int closes[MAX_DEPTH + 1];  /* per open group: ")" owed by isolated options in it */
} rewrite;

static void emit(rewrite *r, const char *s, size_t n) {
  memcpy(r->out + r->n, s, n);
  r->n += n;
}

static tsl_status refuse(const rewrite *r, size_t len, const char *why) {
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s: the pre-tokenizer regex has %.*s at offset %zu, which %s; tessel "
                   "reads the regex as tokenizers (Oniguruma) does and refuses what it cannot match the same way",
                   r->what, (int)len, r->in + r->at, r->at, why);
}

/* A backslash and what follows it. */
static tsl_status escape(rewrite *r) {
  char c = r->in[r->at + 1];
  if (c == 'h' || c == 'H') {
    static const char *const hex[2][2] = {{"[[:xdigit:]]", "[[:^xdigit:]]"}, {"[:xdigit:]", "[:^xdigit:]"}};
    const char *s = hex[r->in_class][c == 'H'];
    emit(r, s, strlen(s));
  } else if (c == 'v') {
    emit(r, "\\x0B", 4);
  } else if (c && strchr("QEVC", c)) {
    return refuse(r, 2, "Oniguruma reads otherwise than PCRE2 (a literal letter, or an error)");
  } else {
    /* \x{..} \o{..} \p{..} \P{..} whole: their braces are no quantifier */
    const char *end = c && strchr("xopP", c) && r->in[r->at + 2] == '{' ? strchr(r->in + r->at, '}') : NULL;
    size_t n = end ? (size_t)(end + 1 - (r->in + r->at)) : c ? 2 : 1;
    emit(r, r->in + r->at, n);
    r->at += n;
    return TESSEL_OK;
  }
  r->at += 2;
  return TESSEL_OK;
}

/* Inside a class: POSIX brackets pass, nested classes and && are refused. */
static tsl_status class_char(rewrite *r) {
  const char *s = r->in + r->at;
  if (s[0] == '[') {
    const char *end = s[1] == ':' ? strstr(s + 2, ":]") : NULL;
    if (!end) return refuse(r, 1, "starts a class inside a class (a union in Oniguruma, literal text in PCRE2)");
    emit(r, s, (size_t)(end + 2 - s));
    r->at += (size_t)(end + 2 - s);
    return TESSEL_OK;
  }
  if (s[0] == '&' && s[1] == '&') return refuse(r, 2, "intersects classes in Oniguruma and is literal text in PCRE2");
  r->in_class = s[0] != ']';
  emit(r, s, 1);
  r->at++;
  return TESSEL_OK;
}

/* A group opens (or, with open 0, closes, paying the ")" it is owed). */
static tsl_status group(rewrite *r, int open) {
  if (open) {
    if (r->depth == MAX_DEPTH) return refuse(r, 1, "nests groups deeper than tessel reads (64)");
    r->closes[++r->depth] = 0;
    return TESSEL_OK;
  }
  for (; r->closes[r->depth] > 0; r->closes[r->depth]--) emit(r, ")", 1);
  if (r->depth > 0) r->depth--;
  return TESSEL_OK;
}

/* "(?" and option letters up to ':' or ')': m becomes s; only i and m
** pass. An option set on its own, (?i), holds to the end of its group in
** Oniguruma, later alternatives included (a(?i)b|c is a(?i:b|c)), where in
** PCRE2 each alternative is cut off before it (a(?i)b|(?i)c): it becomes
** a group (?i: closed where its group closes. */
static tsl_status options(rewrite *r, size_t len) {
  emit(r, "(?", 2);
  for (size_t i = 2; i + 1 < len; i++) {
    char c = r->in[r->at + i];
    if (c != 'i' && c != 'm' && c != '-')
      return refuse(r, len, "sets an option other than i and m (Oniguruma's differ from PCRE2's)");
    c = c == 'm' ? 's' : c;
    emit(r, &c, 1);
  }
  emit(r, ":", 1);
  int isolated = r->in[r->at + len - 1] == ')';
  r->at += len;
  if (!isolated) return group(r, 1);
  r->closes[r->depth]++;
  return TESSEL_OK;
}

/* The length of an interval quantifier {n} {n,} {n,m} {,m} at s, else 0;
** *exact: it is {n}. */
static size_t interval(const char *s, int *exact) {
  size_t i = 1, digits = 0;
  while (s[i] >= '0' && s[i] <= '9') i++, digits++;
  *exact = s[i] == '}';
  if (s[i] == ',')
    for (i++; s[i] >= '0' && s[i] <= '9'; i++) digits++;
  return s[i] == '}' && digits ? i + 1 : 0;
}

static tsl_status outside_class(rewrite *r) {
  const char *s = r->in + r->at;
  int exact;
  size_t len;
  if (s[0] == '^' || s[0] == '$') {
    emit(r, s[0] == '^' ? "(?m:^)" : "(?m:$)", 6);
    r->at++;
    return TESSEL_OK;
  }
  if (s[0] == '(' && s[1] == '?' && s[2] == '#') { /* a comment, to its first ) */
    const char *end = strchr(s, ')');
    len = end ? (size_t)(end + 1 - s) : strlen(s);
    emit(r, s, len);
    r->at += len;
    return TESSEL_OK;
  }
  if (s[0] == '(' && s[1] == '?' && (len = strspn(s + 2, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-")) &&
      (s[2 + len] == ')' || s[2 + len] == ':'))
    return options(r, len + 3);
  if (s[0] == '{' && (len = interval(s, &exact))) {
    if (s[len] == '+' || (exact && s[len] == '?'))
      return refuse(r, len + 1, s[len] == '+' ? "repeats the interval in Oniguruma and is possessive in PCRE2"
                                              : "is optional in Oniguruma and exact in PCRE2");
    if (s[1] == ',') emit(r, "{0", 2), emit(r, s + 1, len - 1);
    else emit(r, s, len);
    r->at += len;
    return TESSEL_OK;
  }
  if (s[0] == '[') { /* a class; a ] first in it (after ^) is a literal in both */
    size_t head = 1 + (s[1] == '^');
    head += s[head] == ']';
    emit(r, s, head);
    r->at += head;
    r->in_class = 1;
    return TESSEL_OK;
  }
  tsl_status st = s[0] == '(' || s[0] == ')' ? group(r, s[0] == '(') : TESSEL_OK;
  emit(r, s, 1);
  r->at++;
  return st;
}

tsl_status tsl_onig_to_pcre2(const char *pattern, const char *what, char **out) {
  size_t len = strlen(pattern);
  /* the longest rewrites: 13 bytes for 2 (\H), 6 for 1 (^) */
  rewrite r = {.in = pattern, .what = what, .out = malloc(7 * len + 1)};
  tsl_status st = TESSEL_OK;
  *out = NULL;
  if (!r.out) return tsl_error(TESSEL_E_NOMEM, "out of host memory for a regex");
  while (r.at < len && st >= 0)
    st = pattern[r.at] == '\\' ? escape(&r) : r.in_class ? class_char(&r) : outside_class(&r);
  if (st >= 0) st = group(&r, 0); /* what options set at the top level are owed */
  if (st < 0) {
    free(r.out);
    return st;
  }
  r.out[r.n] = '\0';
  *out = r.out;
  return TESSEL_OK;
}
