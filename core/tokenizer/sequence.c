/*
** core/tokenizer/sequence.c — the pre_tokenizer of a byte-level BPE's
** tokenizer.json, read and run as `tokenizers` runs it.
**
** A pre-tokenizer cuts a span of text into pieces; a Sequence applies each
** of its steps to every piece the steps before it made (tokenizers'
** PreTokenizedString), and empty pieces are dropped. The steps read:
**   Split        a Regex (in Oniguruma's syntax: onig.c rewrites it for
**                PCRE2) or a String (a literal), invert, and the behavior of
**                what matches: a piece of its own (Isolated), dropped
**                (Removed), joined to the piece before it
**                (MergedWithPrevious) or after it (MergedWithNext), or runs
**                of matches and runs of the rest each one piece (Contiguous)
**   Digits       each digit a piece (individual_digits), else each run of
**                digits: Rust's char::is_numeric (charclass.c)
**   Punctuation  tokenizers' is_punc, with its behavior (charclass.c)
**   ByteLevel    one, required: add_prefix_space puts a space before each
**                piece that lacks one, use_regex cuts each by GPT-2's regex;
**                then every byte is its stand-in character (bytelevel.c), and
**                that is what the steps after it see: a space is 'Ġ', and
**                'ò' (C3 B2) is "Ã²", whose '²' is a digit
**   Sequence     its steps, in place
** The matches of a regex are tokenizers' (the onig crate's find_iter): an
** empty match is a match too — it splits, and the merging behaviors join
** it — except one where the previous match ended.
**
** Two shapes are one regex, and run as the single PCRE2 pass of pretok.c
** that they always ran as (their hashes stay as recorded): ByteLevel alone,
** and [Split (Isolated, not inverted), ByteLevel without its regex]. Every
** other runs here, step by step: each step's pieces are listed, offsets
** into the span (or into its copy with ByteLevel's spaces put in).
*/
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tokenizer/internal.h"

typedef enum step_kind { STEP_SPLIT, STEP_DIGITS, STEP_PUNCTUATION, STEP_BYTE_LEVEL } step_kind;

typedef enum behavior { REMOVED, ISOLATED, MERGED_WITH_PREVIOUS, MERGED_WITH_NEXT, CONTIGUOUS } behavior;

/* As tokenizers' JSON names SplitDelimiterBehavior, in the enum's order. */
static const char *const behavior_names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                             "Contiguous"};

/* What a step makes of a space between two ASCII letters, where
** tsl_tokenizer_cut cuts (seq_cuttable). */
typedef enum cut_kind {
  CUT_UNKNOWN, /* a regex that might match across it */
  CUT_KEEPS,   /* no match holds the letter or the space, so a piece over them is cut there as the text is */
  CUT_ENDS     /* a piece ends before the space whatever surrounds it */
} cut_kind;

typedef struct step {
  step_kind kind;
  cut_kind cut;
  behavior behavior;
  int invert;
  int prefix_space; /* ByteLevel's add_prefix_space */
  int mapped;       /* after the ByteLevel: sees each byte as its stand-in character */
  tsl_pretok *re;   /* Split's regex, or ByteLevel's (GPT-2's) with use_regex */
} step;

typedef struct piece_list {
  tsl_piece *at;
  size_t n, cap;
} piece_list;

struct tsl_pretok_seq {
  step *steps;
  int n;
  char standin[256][2]; /* the UTF-8 of each byte's stand-in, standin_len[b] bytes */
  uint8_t standin_len[256];
  uint8_t in_class[2][256]; /* [punctuation]: the stand-in of the byte is a digit / punctuation */
  piece_list lists[2];      /* the pieces before a step and after it */
  char *spaced;             /* the span with ByteLevel's spaces put in */
  size_t spaced_cap;
  char *mapped;             /* a piece as stand-ins, for a regex after the ByteLevel */
  size_t mapped_cap;
};

/* ---- running ---- */

/* Folds the parts of one piece (matches and the gaps between them, in
** order) into pieces by a behavior, as tokenizers' NormalizedString::split
** does, appending the non-empty ones to `out`. `held` is the last piece,
** which the next part may still extend (under MergedWithNext, a match
** waiting for the part after it). */
typedef struct splitter {
  behavior behavior;
  int invert;
  size_t base; /* where the piece starts */
  piece_list *out;
  tsl_piece held;
  int have_held, prev_match;
  tsl_status st;
} splitter;

static void put(splitter *sp, size_t start, size_t end) {
  if (end == start || sp->st < 0) return;
  sp->st = tsl_tok_reserve(&sp->out->at, &sp->out->cap, sp->out->n + 1, sizeof *sp->out->at);
  if (sp->st >= 0) sp->out->at[sp->out->n++] = (tsl_piece){start, end};
}

static void hold(splitter *sp, size_t start, size_t end) {
  if (sp->have_held) put(sp, sp->held.start, sp->held.end);
  sp->held = (tsl_piece){start, end};
  sp->have_held = 1;
}

/* The part [start, end) of the piece, a match or not. */
static void part(splitter *sp, size_t start, size_t end, int match) {
  start += sp->base, end += sp->base;
  match ^= sp->invert;
  switch (sp->behavior) {
    case ISOLATED: put(sp, start, end); break;
    case REMOVED:
      if (!match) put(sp, start, end);
      break;
    case MERGED_WITH_NEXT:
      if (match) hold(sp, start, end);
      else if (sp->have_held) put(sp, sp->held.start, end), sp->have_held = 0;
      else put(sp, start, end);
      break;
    case MERGED_WITH_PREVIOUS:
    case CONTIGUOUS:
      if (sp->have_held && (sp->behavior == CONTIGUOUS ? match == sp->prev_match : match && !sp->prev_match))
        sp->held.end = end;
      else hold(sp, start, end);
      break;
  }
  sp->prev_match = match;
}

/* Where the stand-ins of piece[0, r) end, moved on to mapped offset x;
** the piece offset there (calls come with x growing). */
typedef struct to_piece {
  const tsl_pretok_seq *q;
  const unsigned char *piece;
  size_t m, r;
} to_piece;

static size_t piece_offset(to_piece *c, size_t x) {
  if (!c->q) return x;
  while (c->m < x) c->m += c->q->standin_len[c->piece[c->r++]];
  return c->r;
}

/* The parts of piece[0, n) by a regex: its matches and the gaps between
** them (tokenizers' Pattern::find_matches). After the ByteLevel the regex
** searches the piece's stand-ins, and offsets map back to its bytes. */
static tsl_status regex_parts(tsl_pretok_seq *q, const step *s, const char *piece, size_t n, splitter *sp) {
  to_piece c = {NULL, (const unsigned char *)piece, 0, 0};
  const char *text = piece;
  size_t len = n, from = 0, start, end;
  if (s->mapped) {
    tsl_status st = tsl_tok_reserve(&q->mapped, &q->mapped_cap, 2 * n, 1);
    if (st < 0) return st;
    len = 0;
    for (size_t i = 0; i < n; i++) {
      unsigned char b = (unsigned char)piece[i];
      memcpy(q->mapped + len, q->standin[b], q->standin_len[b]);
      len += q->standin_len[b];
    }
    text = q->mapped, c.q = q;
  }
  tsl_pretok_iter it;
  int rc;
  tsl_pretok_begin(&it, s->re, text, len);
  while ((rc = tsl_pretok_match(&it, &start, &end)) > 0) {
    size_t a = piece_offset(&c, start), b = piece_offset(&c, end);
    if (a > from) part(sp, from, a, 0);
    part(sp, a, b, 1);
    from = b;
  }
  if (rc < 0) return rc;
  if (from < n) part(sp, from, n, 0);
  return TESSEL_OK;
}

/* The parts of piece[0, n) by Digits or Punctuation: each character of the
** class a match, and the runs between them. A byte that starts no valid
** character is in neither class (tokenizers only ever sees valid text). */
static void class_parts(const tsl_pretok_seq *q, const step *s, const unsigned char *piece, size_t n,
                        splitter *sp) {
  int punctuation = s->kind == STEP_PUNCTUATION;
  size_t from = 0;
  for (size_t i = 0, w; i < n; i += w) {
    uint32_t cp;
    long k = s->mapped ? 1 : tsl_tok_utf8(piece + i, n - i, &cp);
    int in = s->mapped ? q->in_class[punctuation][piece[i]]
                       : k > 0 && (punctuation ? tsl_tok_punctuation(cp) : tsl_tok_numeric(cp));
    w = k > 0 ? (size_t)k : 1;
    if (!in) continue;
    if (i > from) part(sp, from, i, 0);
    part(sp, i, i + w, 1);
    from = i + w;
  }
  if (from < n) part(sp, from, n, 0);
}

/* ByteLevel's add_prefix_space: the pieces copied to q->spaced, a space
** before each that lacks one. */
static tsl_status put_spaces(tsl_pretok_seq *q, const char *text, piece_list *l) {
  size_t len = 0;
  for (size_t i = 0; i < l->n; i++) len += l->at[i].end - l->at[i].start + (text[l->at[i].start] != ' ');
  tsl_status st = tsl_tok_reserve(&q->spaced, &q->spaced_cap, len, 1);
  if (st < 0) return st;
  len = 0;
  for (size_t i = 0; i < l->n; i++) {
    tsl_piece *p = &l->at[i];
    size_t start = len, n = p->end - p->start;
    if (text[p->start] != ' ') q->spaced[len++] = ' ';
    memcpy(q->spaced + len, text + p->start, n);
    len += n;
    *p = (tsl_piece){start, len};
  }
  return TESSEL_OK;
}

tsl_status tsl_pretok_seq_split(tsl_pretok_seq *q, const char *text, size_t len, const char **base,
                                const tsl_piece **pieces, size_t *n) {
  piece_list *cur = &q->lists[0], *next = &q->lists[1];
  splitter sp = {.behavior = ISOLATED, .out = cur};
  cur->n = 0;
  put(&sp, 0, len);
  for (int k = 0; sp.st >= 0 && k < q->n; k++) {
    const step *s = &q->steps[k];
    if (s->prefix_space) {
      if ((sp.st = put_spaces(q, text, cur)) < 0) break;
      text = q->spaced;
    }
    if (s->kind == STEP_BYTE_LEVEL && !s->re) continue;
    next->n = 0;
    for (size_t i = 0; sp.st >= 0 && i < cur->n; i++) {
      const tsl_piece p = cur->at[i];
      sp = (splitter){.behavior = s->behavior, .invert = s->invert, .base = p.start, .out = next};
      tsl_status st = TESSEL_OK;
      if (s->re) st = regex_parts(q, s, text + p.start, p.end - p.start, &sp);
      else class_parts(q, s, (const unsigned char *)text + p.start, p.end - p.start, &sp);
      if (sp.have_held) put(&sp, sp.held.start, sp.held.end);
      if (st < 0) sp.st = st;
    }
    piece_list *t = cur;
    cur = next, next = t;
  }
  *base = text;
  *pieces = cur->at;
  *n = cur->n;
  return sp.st;
}

/* ---- reading ---- */

void tsl_pretok_seq_free(tsl_pretok_seq *q) {
  if (!q) return;
  for (int i = 0; i < q->n; i++) tsl_pretok_free(q->steps[i].re);
  free(q->steps);
  free(q->lists[0].at);
  free(q->lists[1].at);
  free(q->spaced);
  free(q->mapped);
  free(q);
}

uint64_t tsl_pretok_seq_hash(const tsl_pretok_seq *q, uint64_t h) {
  h = tsl_hash_str("pre-tokenizer steps", h);
  for (int i = 0; i < q->n; i++) {
    const step *s = &q->steps[i];
    uint64_t f[5] = {(uint64_t)s->kind, (uint64_t)s->behavior, (uint64_t)s->invert, (uint64_t)s->prefix_space,
                     (uint64_t)s->mapped};
    h = tsl_hash_bytes(f, sizeof f, h);
    if (s->re) h = tsl_hash_str(tsl_pretok_pattern(s->re), h); /* as rewritten: what encodes */
  }
  return h;
}

/* The steps of pt in order, a Sequence's (nested ones too) in its place. */
static tsl_status flatten(const cJSON *pt, const cJSON ***steps, int *n, size_t *cap) {
  if (strcmp(tsl_tok_type(pt), "Sequence") != 0) {
    tsl_status st = tsl_tok_reserve(steps, cap, (size_t)*n + 1, sizeof **steps);
    if (st >= 0) (*steps)[(*n)++] = pt;
    return st;
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, tsl_tok_field(pt, "pretokenizers")) {
    tsl_status st = flatten(e, steps, n, cap);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}

/* A literal as a PCRE2 pattern: a backslash before every ASCII character
** that is not a letter or digit (always a literal then). \Q...\E would end
** early at a "\E" inside the literal. */
static char *quote_literal(const char *text) {
  char *out = malloc(2 * strlen(text) + 1), *o = out;
  if (!out) return NULL;
  for (const unsigned char *c = (const unsigned char *)text; *c; c++) {
    if (*c < 0x80 && !isalnum(*c)) *o++ = '\\';
    *o++ = (char)*c;
  }
  *o = '\0';
  return out;
}

/* A Split's pattern, compiled into *re; `what` names it in messages. */
static tsl_status read_pattern(const char *what, const cJSON *split, tsl_pretok **re) {
  const cJSON *pat = tsl_tok_field(split, "pattern");
  const cJSON *regex = tsl_tok_field(pat, "Regex"), *str = tsl_tok_field(pat, "String");
  char *pattern = cJSON_IsString(regex) ? tsl_strdup(regex->valuestring)
                  : cJSON_IsString(str) ? quote_literal(str->valuestring)
                                        : NULL;
  if (!cJSON_IsString(regex) && !cJSON_IsString(str))
    return tsl_error(TESSEL_E_CONFIG, "%s has no pattern.Regex or pattern.String", what);
  if (!pattern) return tsl_error(TESSEL_E_NOMEM, "out of host memory reading %s", what);
  tsl_status st = tsl_pretok_create(pattern, what, re);
  free(pattern);
  return st;
}

/* A step's behavior by its name (absent: dflt, when that is one). */
static tsl_status read_behavior(const char *what, const cJSON *obj, int dflt, behavior *out) {
  const cJSON *b = tsl_tok_field(obj, "behavior");
  if (!b && dflt >= 0) {
    *out = (behavior)dflt;
    return TESSEL_OK;
  }
  for (size_t i = 0; cJSON_IsString(b) && i < TSL_ARRAY_LEN(behavior_names); i++)
    if (strcmp(b->valuestring, behavior_names[i]) == 0) {
      *out = (behavior)i;
      return TESSEL_OK;
    }
  return tsl_error(TESSEL_E_CONFIG, "%s has behavior %s, not one tokenizers knows (Removed, Isolated, "
                   "MergedWithPrevious, MergedWithNext, Contiguous)", what,
                   cJSON_IsString(b) ? b->valuestring : b ? "that is not a string" : "missing");
}

/* DeepSeek's Split regexes as its tokenizer.json files write them (V3 and
** R1; LLM and Coder), by what each makes of a space between two ASCII
** letters (split_cut). Those that keep it match neither the letter nor the
** space: line breaks, digits, CJK ranges, and runs of spaces that end a
** line (a space with a letter after it ends none). Those that end a piece
** there match the letters before it up to the space, whatever came first,
** and, tried at the space, match from it: the space and the letters after
** it, by the first alternative that can. */
static const struct {
  const char *regex;
  cut_kind cut;
} deepseek[] = {
    {"[\\r\\n]", CUT_KEEPS},
    {"\\p{N}{1,3}", CUT_KEEPS},
    {"\\s+$", CUT_KEEPS},
    {"[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+", CUT_KEEPS},
    {"[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", CUT_KEEPS},
    {"\\s?\\p{L}+", CUT_ENDS},
    {"\\s?[A-Za-z\u00b5\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
     "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1\u03a3-\u03f5"
     "\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5\u13f8-\u13fd\u1c90-\u1cba"
     "\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45"
     "\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-"
     "\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107"
     "\u210a-\u2113\u2115\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f"
     "\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3\ua640-\ua66d"
     "\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf\ufb00-\ufb06\ufb13-\ufb17"
     "\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f\U000104b0-\U000104d3\U000104d8-\U000104fb"
     "\U00010c80-\U00010cb2\U00010cc0-\U00010cf2\U000118a0-\U000118df\U0001e900-\U0001e943]+",
     CUT_ENDS},
    {"[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]"
     "+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     CUT_ENDS},
};

/* The next unit of a regex's text at *p: a character, or an escape as one
** (the escapes \r and \n as the characters they stand for, which files
** also write raw); 0 at the end. */
static int regex_unit(const char **p) {
  const unsigned char *c = (const unsigned char *)*p;
  if (c[0] != '\\' || !c[1]) return *c ? (++*p, c[0]) : 0;
  *p += 2;
  return c[1] == 'r' ? '\r' : c[1] == 'n' ? '\n' : 0x100 | c[1];
}

/* Whether a and b are one regex, unit by unit (regex_unit). */
static int same_regex(const char *a, const char *b) {
  int u;
  while ((u = regex_unit(&a)) == regex_unit(&b))
    if (!u) return 1;
  return 0;
}

/* A Split's cut_kind. A literal with no ASCII letter and no space (nor
** ByteLevel's stand-in for one, 'Ġ') never matches the letter or the space,
** so whatever the behavior, the piece over them is cut there as the text
** cut there is. Of the regexes, the named ones and DeepSeek's ending ones
** end a piece before the space, isolating their matches in the text as it
** is (before the ByteLevel, whose stand-in 'Ġ' is a letter to them); the
** DeepSeek ones that match neither keep it under any behavior. */
static cut_kind split_cut(const step *s, const cJSON *pattern) {
  const cJSON *literal = tsl_tok_field(pattern, "String"), *regex = tsl_tok_field(pattern, "Regex");
  if (cJSON_IsString(literal)) {
    const char *c = literal->valuestring;
    int holds = !*c || strchr(c, ' ') || strstr(c, "\xc4\xa0");
    for (; *c && !holds; c++) holds = tsl_tok_ascii_letter(*c);
    return holds ? CUT_UNKNOWN : CUT_KEEPS;
  }
  int isolating = !s->mapped && s->behavior == ISOLATED && !s->invert;
  if (isolating && tsl_pretok_named(s->re)) return CUT_ENDS;
  for (size_t i = 0; cJSON_IsString(regex) && !s->mapped && i < TSL_ARRAY_LEN(deepseek); i++)
    if (same_regex(regex->valuestring, deepseek[i].regex))
      return deepseek[i].cut == CUT_KEEPS || isolating ? deepseek[i].cut : CUT_UNKNOWN;
  return CUT_UNKNOWN;
}

/* One step of the sequence; `mapped`: it comes after the ByteLevel. */
static tsl_status read_step(const char *what, const cJSON *j, int mapped, step *s) {
  const char *type = tsl_tok_type(j);
  s->mapped = mapped;
  s->behavior = ISOLATED;
  if (strcmp(type, "Split") == 0) {
    s->kind = STEP_SPLIT;
    s->invert = tsl_tok_bool(j, "invert", 0);
    tsl_status st = read_behavior(what, j, -1, &s->behavior);
    if (st >= 0) st = read_pattern(what, j, &s->re);
    if (st >= 0) s->cut = split_cut(s, tsl_tok_field(j, "pattern"));
    return st;
  }
  s->cut = CUT_KEEPS; /* a digit, a punctuation mark, a stand-in: never over a letter and a space */
  if (strcmp(type, "Digits") == 0) {
    s->kind = STEP_DIGITS;
    s->behavior = tsl_tok_bool(j, "individual_digits", 0) ? ISOLATED : CONTIGUOUS;
    return TESSEL_OK;
  }
  if (strcmp(type, "Punctuation") == 0) {
    s->kind = STEP_PUNCTUATION;
    return read_behavior(what, j, ISOLATED, &s->behavior);
  }
  s->kind = STEP_BYTE_LEVEL;
  s->prefix_space = tsl_tok_bool(j, "add_prefix_space", 0);
  if (!tsl_tok_bool(j, "use_regex", 1)) return TESSEL_OK;
  s->cut = CUT_ENDS; /* GPT-2's regex, over the text before its stand-ins */
  return tsl_pretok_create(tsl_gpt2_pattern, what, &s->re);
}

/* Whether a text may be cut at a space between two ASCII letters with
** every piece as it was: some step ends a piece there whatever surrounds
** it, and no step before it joins across it. */
static int seq_cuttable(const tsl_pretok_seq *q) {
  for (int i = 0; i < q->n; i++)
    if (q->steps[i].cut != CUT_KEEPS) return q->steps[i].cut == CUT_ENDS;
  return 0;
}

/* What messages call step i of the pre-tokenizer: "NAME: pre_tokenizer
** step I (TYPE)", in what[cap]. */
static const char *step_what(char *what, size_t cap, const char *name, int i, const cJSON *j) {
  snprintf(what, cap, "%s: pre_tokenizer step %d (%s)", name, i, tsl_tok_type(j));
  return what;
}

/* The steps as tessel runs them, in *out; `byte_level` is the ByteLevel's
** index, what[cap] room for messages. */
static tsl_status read_sequence(const char *name, const cJSON *const *js, int n, int byte_level, char *what,
                                size_t cap, tsl_pretok_seq **out) {
  tsl_status st = TESSEL_OK;
  tsl_pretok_seq *q = calloc(1, sizeof *q);
  if (!q || !(q->steps = calloc((size_t)n, sizeof *q->steps))) {
    free(q);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", name);
  }
  for (; q->n < n && st >= 0; q->n++)
    st = read_step(step_what(what, cap, name, q->n, js[q->n]), js[q->n], q->n > byte_level, &q->steps[q->n]);
  for (int b = 0; b < 256; b++) {
    unsigned char byte = (unsigned char)b;
    q->standin_len[b] = (uint8_t)tsl_bytelevel_encode(&byte, 1, q->standin[b]);
    q->in_class[0][b] = (uint8_t)tsl_tok_numeric(tsl_bytelevel_char(byte));
    q->in_class[1][b] = (uint8_t)tsl_tok_punctuation(tsl_bytelevel_char(byte));
  }
  if (st < 0) tsl_pretok_seq_free(q);
  else *out = q;
  return st;
}

static tsl_status refuse_kind(const char *name, const char *type) {
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s: pre_tokenizer is %s; tessel reads byte-level BPE tokenizers (a "
                   "ByteLevel pre-tokenizer, alone or in a Sequence) and SentencePiece's (Metaspace)", name, type);
}

/* Check the steps: each one tessel runs, and one ByteLevel (*byte_level:
** its index). */
static tsl_status check_steps(const char *name, const cJSON *pt, const cJSON *const *js, int n, int *byte_level) {
  *byte_level = -1;
  for (int i = 0; i < n; i++) {
    int bl = tsl_tok_is_type(js[i], "ByteLevel");
    if (!bl && !tsl_tok_is_type(js[i], "Split") && !tsl_tok_is_type(js[i], "Digits") &&
        !tsl_tok_is_type(js[i], "Punctuation"))
      return js[i] == pt ? refuse_kind(name, tsl_tok_type(pt))
                         : tsl_error(TESSEL_E_UNSUPPORTED, "%s: pre_tokenizer step %d is %s; tessel runs Split, "
                                     "Digits, Punctuation and ByteLevel steps", name, i, tsl_tok_type(js[i]));
    if (bl && *byte_level >= 0)
      return tsl_error(TESSEL_E_UNSUPPORTED, "%s: pre_tokenizer step %d is a second ByteLevel; tessel runs one",
                       name, i);
    if (bl) *byte_level = i;
  }
  if (*byte_level < 0)
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: pre_tokenizer has no ByteLevel step; a byte-level BPE needs one (its "
                     "vocabulary is written in ByteLevel's alphabet)", name);
  return TESSEL_OK;
}

/* Whether the steps are one Split (Isolated, not inverted) and a ByteLevel
** without its regex: one regex, which pretok.c runs alone. */
static int one_regex(const cJSON *const *js, int n, int byte_level) {
  const cJSON *behavior = tsl_tok_field(js[0], "behavior");
  return n == 2 && byte_level == 1 && tsl_tok_is_type(js[0], "Split") && !tsl_tok_bool(js[0], "invert", 0) &&
         cJSON_IsString(behavior) && strcmp(behavior->valuestring, "Isolated") == 0 &&
         !tsl_tok_bool(js[1], "use_regex", 1);
}

tsl_status tsl_pretok_read(tsl_tokenizer *t, const char *name, const cJSON *pt) {
  const cJSON **js = NULL;
  size_t cap = 0, what_cap = strlen(name) + 64;
  int n = 0, byte_level;
  char *what = malloc(what_cap);
  tsl_status st = !what ? tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", name)
                  : cJSON_IsObject(pt) ? flatten(pt, &js, &n, &cap)
                                       : refuse_kind(name, "missing");
  if (st >= 0) st = check_steps(name, pt, js, n, &byte_level);
  if (st < 0) goto done;
  const cJSON *bl = js[byte_level];
  /* ByteLevel puts a space before each piece it gets: the span, when it comes first */
  t->add_prefix_space = tsl_tok_bool(bl, "add_prefix_space", 0);
  t->prefix_each_piece = t->add_prefix_space && byte_level > 0;
  if (n == 1) {
    if (tsl_tok_bool(bl, "use_regex", 1)) st = tsl_pretok_create(tsl_gpt2_pattern, name, &t->pretok);
  } else if (one_regex(js, n, byte_level)) {
    st = read_pattern(step_what(what, what_cap, name, 0, js[0]), js[0], &t->pretok);
  } else {
    st = read_sequence(name, js, n, byte_level, what, what_cap, &t->seq);
    for (int i = 0; st >= 0 && i < n; i++) t->drops_text |= t->seq->steps[i].behavior == REMOVED;
  }
  if (st >= 0) t->cuts_at_spaces = tsl_pretok_named(t->pretok) || (t->seq && seq_cuttable(t->seq));
done:
  free(what);
  free(js);
  return st;
}
