/*
** core/tokenizer/internal.h — what the tokenizer's files share: two hash
** maps, the byte-level alphabet, the PCRE2 pre-tokenizer and the tokenizer
** object itself. Not for use outside core/tokenizer.
*/
#ifndef TSL_TOKENIZER_INTERNAL_H
#define TSL_TOKENIZER_INTERNAL_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

static inline int tsl_tok_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* ---- hashmap.c ---- */

/* Room for `need` elements of `size` bytes in the array *(void **)array of
** capacity *cap (grown to at least twice, at least 16); TESSEL_E_NOMEM
** otherwise, the array left as it was. */
tsl_status tsl_tok_reserve(void *array, size_t *cap, size_t need, size_t size);

/* Byte strings to int64 values, open addressing; keys are copied into an
** arena the map owns. */
typedef struct tsl_strmap {
  uint64_t *hash;         /* 0: empty slot */
  uint64_t *key;          /* offset << 24 | length into arena */
  int64_t *value;
  char *arena;
  size_t arena_len, arena_cap;
  size_t n, cap;          /* cap is a power of two */
} tsl_strmap;

#define TSL_STRMAP_MAX_KEY ((1u << 24) - 1)

tsl_status tsl_strmap_init(tsl_strmap *m, size_t expected);
void tsl_strmap_free(tsl_strmap *m);
void tsl_strmap_clear(tsl_strmap *m);
/* The value slot of key, or NULL when absent. */
int64_t *tsl_strmap_find(const tsl_strmap *m, const void *key, size_t len);
/* The value slot of key, inserted with `value` when absent (*added = 1).
** Keys longer than TSL_STRMAP_MAX_KEY are TESSEL_E_CONFIG. */
tsl_status tsl_strmap_put(tsl_strmap *m, const void *key, size_t len, int64_t value, int64_t **slot, int *added);
/* The key stored at slot index i (for iteration over 0..cap-1; NULL when empty). */
const char *tsl_strmap_key_at(const tsl_strmap *m, size_t i, size_t *len);

/* Pairs of ids (a, b) to int64 values. */
typedef struct tsl_pairmap {
  uint64_t *key;          /* (a << 32 | b) + 1; 0: empty slot */
  int64_t *value;
  size_t n, cap;
} tsl_pairmap;

tsl_status tsl_pairmap_init(tsl_pairmap *m, size_t expected);
void tsl_pairmap_free(tsl_pairmap *m);
int64_t *tsl_pairmap_find(const tsl_pairmap *m, uint32_t a, uint32_t b);
tsl_status tsl_pairmap_put(tsl_pairmap *m, uint32_t a, uint32_t b, int64_t value, int64_t **slot, int *added);

/* ---- bytelevel.c ---- */

/* GPT-2's printable stand-in for each byte (bytes_to_unicode): the code point
** byte b is written as in a byte-level vocabulary. */
uint32_t tsl_bytelevel_char(unsigned char b);
/* The byte a stand-in code point means, or -1 when cp is not one. */
int tsl_bytelevel_byte(uint32_t cp);
/* Append the UTF-8 of the stand-ins of bytes[0, n) to out (room: 2·n). */
size_t tsl_bytelevel_encode(const unsigned char *bytes, size_t n, char *out);
/* Decode one byte-level token string (UTF-8 of stand-ins) into raw bytes
** as `tokenizers`' ByteLevel decoder does: its stand-ins become their
** bytes, or, where any character stands for no byte, the string stays as
** written. out needs len bytes. Returns the length, or -1 on invalid UTF-8. */
long tsl_bytelevel_decode(const char *s, size_t len, unsigned char *out);

/* ---- onig.c ---- */

/* A regex in Oniguruma's syntax, as `tokenizers` compiles it, rewritten as
** the PCRE2 pattern that matches the same (*out, heap); a construct the two
** read otherwise and that is not rewritten is TESSEL_E_UNSUPPORTED, named
** with `what` (where the pattern came from). */
tsl_status tsl_onig_to_pcre2(const char *pattern, const char *what, char **out);

/* ---- pretok.c ---- */

typedef struct tsl_pretok tsl_pretok;

/* GPT-2's pre-tokenizer regex, built into `tokenizers`' ByteLevel. */
extern const char tsl_gpt2_pattern[];

/* Compile a pre-tokenizer regex written for `tokenizers` (Oniguruma's
** syntax, rewritten for PCRE2 by onig.c; UTF mode, Unicode properties,
** invalid UTF-8 matched around rather than refused; JIT when available).
** `what` names where the pattern came from in messages. */
tsl_status tsl_pretok_create(const char *pattern, const char *what, tsl_pretok **out);
void tsl_pretok_free(tsl_pretok *p);
/* The pattern as PCRE2 compiled it (onig.c's rewrite). */
const char *tsl_pretok_pattern(const tsl_pretok *p);
/* Whether p is GPT-2's, Llama 3's or Qwen2's regex (as rewritten), whose
** pieces end at a space between two ASCII letters whatever surrounds it:
** a place tsl_tokenizer_cut may cut. 0 for NULL. */
int tsl_pretok_named(const tsl_pretok *p);

/* Iterates over the pieces of one text: each regex match, and each gap
** between matches as a piece of its own (`tokenizers`' Split behaviour
** "Isolated"), so the pieces cover the text exactly. */
typedef struct tsl_pretok_iter {
  tsl_pretok *p;
  const char *text;
  const char *searched;          /* what the regex sees: text, or its copy with U+180E replaced (pretok.c) */
  tsl_status failed;             /* set by begin when the copy could not be made */
  size_t len, pos;               /* pos: where the next piece starts */
  size_t from;                   /* where the next search starts (past an empty match) */
  size_t match_start, match_end; /* the next match, found ahead of a gap */
  int have_match;
  size_t last_end;               /* where the last match given ended */
} tsl_pretok_iter;

void tsl_pretok_begin(tsl_pretok_iter *it, tsl_pretok *p, const char *text, size_t len);
/* The next piece as [*start, *end): 1, or 0 at the end of the text, or a
** negative status when the matcher fails (message set). */
int tsl_pretok_next(tsl_pretok_iter *it, size_t *start, size_t *end);
/* Or the matches alone, as tokenizers finds them (empty ones too, but
** none where the previous match ended): the next as [*start, *end), with
** the same returns. An iterator gives pieces or matches, not both. */
int tsl_pretok_match(tsl_pretok_iter *it, size_t *start, size_t *end);

/* ---- a tokenizer.json's fields (json.c, metaspace.c, sequence.c) ---- */

static inline const cJSON *tsl_tok_field(const cJSON *obj, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(obj, key);
}
/* A boolean field; dflt where it is absent or not a boolean. */
static inline int tsl_tok_bool(const cJSON *obj, const char *key, int dflt) {
  const cJSON *v = tsl_tok_field(obj, key);
  return cJSON_IsBool(v) ? cJSON_IsTrue(v) : dflt;
}
/* The object's "type", or "missing" (for messages). */
static inline const char *tsl_tok_type(const cJSON *obj) {
  const cJSON *ty = tsl_tok_field(obj, "type");
  return cJSON_IsString(ty) ? ty->valuestring : "missing";
}
static inline int tsl_tok_is_type(const cJSON *obj, const char *type) {
  const cJSON *ty = tsl_tok_field(obj, "type");
  return cJSON_IsString(ty) && strcmp(ty->valuestring, type) == 0;
}

/* ---- charclass.c ---- */

/* How s[0, n) starts (Unicode's Table 3-7 of well-formed sequences): a
** whole character (> 0, its length, and *cp its code point); a part that
** cannot go on (< 0, minus the length of that maximal part: one U+FFFD in
** a lossy decoding); or 0 when all n bytes begin a character that more
** bytes may complete. */
long tsl_tok_utf8(const unsigned char *s, size_t n, uint32_t *cp);
/* Whether tokenizers' Digits cuts at cp (Rust's char::is_numeric). */
int tsl_tok_numeric(uint32_t cp);
/* Whether tokenizers' Punctuation cuts at cp (its is_punc). */
int tsl_tok_punctuation(uint32_t cp);

/* ---- sequence.c ---- */

typedef struct tsl_pretok_seq tsl_pretok_seq;

/* A piece of a span: [start, end) in the text its pieces are cut from. */
typedef struct tsl_piece {
  size_t start, end;
} tsl_piece;

/* Read a byte-level BPE's pre_tokenizer (pt) into t: the one regex of
** pretok.c (t->pretok; none for a ByteLevel without one) with the space
** ByteLevel puts in (add_prefix_space, prefix_each_piece), or the steps
** of a Sequence otherwise (t->seq), and whether its pieces end where
** tsl_tokenizer_cut cuts (cuts_at_spaces); refuses what it does not run,
** naming the step. */
tsl_status tsl_pretok_read(struct tsl_tokenizer *t, const char *name, const cJSON *pt);
/* Cut text[0, len) by the steps: *pieces, *n (valid until the next call)
** are offsets into *base, text or a copy of it with spaces put in. */
tsl_status tsl_pretok_seq_split(tsl_pretok_seq *q, const char *text, size_t len, const char **base,
                                const tsl_piece **pieces, size_t *n);
/* h with the steps hashed in (their kinds, settings and regexes). */
uint64_t tsl_pretok_seq_hash(const tsl_pretok_seq *q, uint64_t h);
void tsl_pretok_seq_free(tsl_pretok_seq *q);

/* ---- the tokenizer (json.c loads, bpe.c encodes) ---- */

/* How a SentencePiece tokenizer puts its ▁ before a span (metaspace.c). */
typedef enum tsl_prepend {
  TSL_PREPEND_NEVER,
  TSL_PREPEND_FIRST,      /* a span at the start of the text, unless it starts with a space */
  TSL_PREPEND_ALWAYS,     /* every span, unless it starts with a space */
  TSL_PREPEND_NORMALIZER  /* every span (the Prepend normalizer) */
} tsl_prepend;

/* Where a span of ordinary text starts. */
typedef enum tsl_span_at {
  TSL_SPAN_START,       /* at the start of the text */
  TSL_SPAN_AFTER_ADDED, /* after an added token */
  TSL_SPAN_CONTINUED    /* at the start of a text that continues another (TSL_TOK_CONTINUED) */
} tsl_span_at;

typedef struct tsl_added_token {
  int32_t id;
  int special;
  int normalized;           /* matched in the normalized text, else in the text as given */
  int lstrip, rstrip;       /* takes the white space before / after it */
  int single_word;          /* matched only between non-word characters */
  int order;                /* its place in added_tokens, specials first: which of two equal matches wins */
  char *text;
  size_t len;
  char *match;              /* what it matches: text, or text normalized (heap) */
  size_t match_len;
} tsl_added_token;

struct tsl_tokenizer {
  char *name;
  char *json;                /* the file as loaded */
  size_t json_len;
  int vocab_size;
  char *bytes;               /* what each id decodes to: bytes + off[id], len[id] */
  uint32_t *off, *len;
  int32_t byte_id[256];      /* the id of each single-byte symbol */
  tsl_pairmap merges;        /* (a, b) -> rank << 32 | merged id */
  tsl_strmap by_bytes;       /* decoded bytes -> id, for ignore_merges */
  int ignore_merges;         /* a piece that is a whole token is not merged */
  int nfc;                   /* the normalizer: each span composed to Unicode NFC first */
  int add_prefix_space;      /* ByteLevel puts a space before each span that lacks one */
  int prefix_each_piece;     /* ...before each piece it gets instead: a ByteLevel after other steps */
  tsl_added_token *added;
  int n_added;
  uint8_t added_first[2][256]; /* some added token [normalized] matches from this byte */
  uint8_t *special;          /* [vocab_size]: the id is an added token marked special */
  int eot;
  int bos;                   /* <|begin_of_text|>, <s> or <bos>; else eot (GPT-2's one token) */
  uint64_t hash;
  tsl_pretok *pretok;        /* NULL: each span is one piece (or the steps of seq) */
  tsl_pretok_seq *seq;       /* a pre-tokenizer of several steps (sequence.c) */
  int drops_text;            /* one of them removes what it matches: the ids decode to the text less that */
  int cuts_at_spaces;        /* a piece ends at a space between ASCII letters (tsl_tokenizer_cut), byte-level kind */
  /* SentencePiece's kind (metaspace.c): the symbols are characters, spaces
  ** are ▁, and byte_id holds the byte fallback tokens <0xNN> */
  int metaspace;
  tsl_prepend prepend;
  int split_at_metaspace;    /* a piece begins at every ▁ */
  int strip_first_space;     /* the decoder's Strip: a sequence's first token loses a leading space */
  uint8_t cut_after[256];    /* ASCII characters, tokens of their own, that no token joins to a ▁ after them */
  tsl_strmap chars;          /* tokens of one character (as model.vocab writes them) -> id */
  uint8_t *byte_token;       /* [vocab_size]: the token is <0xNN>, which ByteFallback decodes as a byte */
  /* encoder state: cached pieces (bytes -> offset << 8 | count into cache_ids) */
  tsl_strmap cache;
  int32_t *cache_ids;
  size_t cache_n, cache_cap;
  /* merge scratch, grown to the longest piece */
  void *work;
  size_t work_cap;
};

/* text[0, len) in Unicode NFC (nfc.c): valid UTF-8 runs composed, other
** bytes kept; *out (heap, NULL when empty) and *out_len. */
tsl_status tsl_nfc(const char *text, size_t len, char **out, size_t *out_len);

/* ---- added.c ---- */

/* The next added token of one pass (the tokens with `normalized` so) in
** s[0, n), as `tokenizers`' AddedVocabulary::find_matches finds them: the
** leftmost longest match at or after *pos (ties: specials first, then the
** file's order); one with single_word between word characters is skipped;
** lstrip and rstrip widen [*start, *end) over the white space beside it,
** lstrip not before `done` (where the previous token's ended). *pos moves
** past the match itself, as the search does, whatever the strips took.
** NULL when there is none. */
const tsl_added_token *tsl_added_next(const tsl_tokenizer *t, int normalized, const char *s, size_t n, size_t *pos,
                                      size_t done, size_t *start, size_t *end);

/* ---- metaspace.c ---- */

/* Whether a normalizer is Sequence [Prepend ▁, Replace " " → ▁]. */
int tsl_metaspace_legacy_normalizer(const cJSON *norm);
/* Read the normalizer, pre-tokenizer, decoder and model flags of a
** SentencePiece tokenizer.json into t (t->metaspace set); refuses what it
** does not support, naming the field. */
tsl_status tsl_metaspace_read(tsl_tokenizer *t, const char *name, const cJSON *root);
/* What a model.vocab string decodes to: <0xNN> its byte, any other the
** string with each ▁ a space; out needs len bytes. Returns the length. */
long tsl_metaspace_decode(const char *s, size_t len, unsigned char *out);
/* Whether a token string is <0xNN> (either case, as ByteFallback reads it). */
int tsl_metaspace_byte_token(const char *s, size_t len);
/* byte_id from the 256 byte tokens (all required), the one-character
** tokens, and cut_after, from model.vocab's strings (string -> id). */
tsl_status tsl_metaspace_tables(tsl_tokenizer *t, const char *name, const tsl_strmap *by_string);
/* The initial symbols of a normalized piece: one per character, its token
** or its bytes' tokens. ids needs n entries; returns the count. */
size_t tsl_metaspace_symbols(const tsl_tokenizer *t, const unsigned char *piece, size_t n, int32_t *ids);
/* A span as the model sees it: each space ▁, and the prefix ▁ as the
** tokenizer puts it at `at`. *out is heap. */
tsl_status tsl_metaspace_normalize(const tsl_tokenizer *t, const char *text, size_t len, tsl_span_at at, char **out,
                                   size_t *out_len);
/* Whether a piece ends between the byte `before` and a ▁ (a space) after
** it: at every ▁ when pieces split there, else after a character in
** cut_after. */
int tsl_metaspace_piece_ends(const tsl_tokenizer *t, unsigned char before);
/* Where the piece of normalized s that starts at `from` ends: at the next
** ▁ when pieces split there; else at the next ▁ after a character in
** cut_after (no merge crosses there, so the parts merge as the whole
** would, and words become pieces the cache keeps); else at len. */
size_t tsl_metaspace_piece_end(const tsl_tokenizer *t, const char *s, size_t len, size_t from);

/* What the normalizer makes of text[0, len) (bpe.c), a span starting `at`:
** NFC, or the Prepend and Replace normalizers' ▁; *out (heap) is NULL when
** the text is its own normal form (no normalizer, or empty). */
tsl_status tsl_tok_normalize(const tsl_tokenizer *t, const char *text, size_t len, tsl_span_at at, char **out,
                             size_t *out_len);

/* Merge the initial symbols of one piece by rank (bpe.c): its bytes' symbols, or
** under SentencePiece's kind its characters'; ids[0, n) in, the
** merged ids out; returns their count, or a negative status. */
long tsl_bpe_merge_piece(tsl_tokenizer *t, const unsigned char *piece, size_t n, int32_t *ids);

#endif
