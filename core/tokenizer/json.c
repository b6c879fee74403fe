/*
** core/tokenizer/json.c — loading a Hugging Face tokenizer.json.
**
** Accepted (everything else is refused with the field named):
**   model            type BPE (or absent), vocab {token: id}, merges as
**                    "a b" strings or [a, b] pairs; dropout null or 0, no
**                    continuing_subword_prefix / end_of_word_suffix, no
**                    byte_fallback; ignore_merges honoured
**   (or SentencePiece's BPE with byte_fallback: metaspace.c reads its
**    normalizer, pre_tokenizer, decoder and model flags)
**   normalizer       null or Sequence [], or NFC or Sequence [NFC] (Qwen2's:
**                    each span composed before it is pre-tokenized)
**   pre_tokenizer    ByteLevel (use_regex: GPT-2's regex; add_prefix_space),
**                    alone or in a Sequence (nested ones too) of Split
**                    {Regex | String, any behavior, invert}, Digits
**                    {individual_digits} and Punctuation {behavior} steps
**                    with one ByteLevel, which may come anywhere among them
**                    (StarCoder's, Falcon's, DeepSeek's): sequence.c reads
**                    and runs it
**   decoder          ByteLevel or null (decoded as ByteLevel, where tokenizers
**                    joins the token strings with spaces: the README says so)
**   post_processor   anything: tessel never adds tokens implicitly
**   added_tokens     with the ids tokenizers gives them (it renumbers the
**                    list: see tokenizers_added_id); normalized, lstrip,
**                    rstrip and single_word as tokenizers reads them
**                    (added.c); one that is also in model.vocab must stand
**                    for its own text there (an ASCII token does, 'Ġ' does
**                    not)
** Ids must be dense (0 .. size-1) and all 256 byte symbols present.
*/
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tokenizer/internal.h"

/* End-of-text and beginning-of-text tokens, in the order they are looked for. */
static const char *const eot_names[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"};
static const char *const bos_names[] = {"<|begin_of_text|>", "<s>", "<bos>"};

/* The id of the first added special token among names, or -1. */
static int special_named(const tsl_tokenizer *t, const char *const *names, size_t n_names) {
  for (size_t k = 0; k < n_names; k++)
    for (int i = 0; i < t->n_added; i++)
      if (t->added[i].special && strcmp(t->added[i].text, names[k]) == 0) return t->added[i].id;
  return -1;
}

typedef struct loader {
  tsl_tokenizer *t;
  const char *name;
  tsl_strmap by_string;   /* token string as written in the JSON -> id */
  char **strings;         /* per id, into the JSON tree (NULL: a hole so far) */
  size_t strings_cap;
  int64_t id_bound;       /* ids are below this: every entry of vocab and added_tokens, if dense */
} loader;

/* A field that must be absent, null, false or "" for tessel to support the tokenizer. */
static tsl_status refuse_if_set(const loader *l, const cJSON *obj, const char *where, const char *key) {
  const cJSON *v = tsl_tok_field(obj, key);
  if (!v || cJSON_IsNull(v) || cJSON_IsFalse(v) || (cJSON_IsString(v) && !v->valuestring[0])) return TESSEL_OK;
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s: %s.%s is set; tessel supports byte-level BPE without it", l->name, where,
                   key);
}

/* 1 for a normalizer that composes to NFC, 0 for one that does nothing,
** -1 for any other. tokenizers normalizes alike with NFC and Sequence
** [NFC], and with null and an empty Sequence (which converters write). */
static int nfc_normalizer(const cJSON *norm) {
  if (!norm || cJSON_IsNull(norm)) return 0;
  if (tsl_tok_is_type(norm, "NFC")) return 1;
  if (!tsl_tok_is_type(norm, "Sequence")) return -1;
  const cJSON *steps = tsl_tok_field(norm, "normalizers");
  int n = cJSON_GetArraySize(steps);
  if (!cJSON_IsArray(steps) || n > 1) return -1;
  return n == 0 ? 0 : tsl_tok_is_type(cJSON_GetArrayItem(steps, 0), "NFC") ? 1 : -1;
}

static tsl_status read_pipeline(loader *l, const cJSON *root) {
  const cJSON *norm = tsl_tok_field(root, "normalizer"), *dec = tsl_tok_field(root, "decoder");
  const cJSON *pt = tsl_tok_field(root, "pre_tokenizer"), *dty = tsl_tok_field(dec, "type");
  if (tsl_metaspace_legacy_normalizer(norm) || tsl_tok_is_type(pt, "Metaspace"))
    return tsl_metaspace_read(l->t, l->name, root);
  int nfc = nfc_normalizer(norm);
  if (nfc < 0) {
    const cJSON *ty = tsl_tok_field(norm, "type");
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: normalizer %s is not supported (tessel normalizes to NFC or not at "
                     "all)", l->name, cJSON_IsString(ty) ? ty->valuestring : "(set)");
  }
  l->t->nfc = nfc;
  if (dec && !cJSON_IsNull(dec) && !tsl_tok_is_type(dec, "ByteLevel"))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: decoder %s is not supported; byte-level BPE decodes with ByteLevel",
                     l->name, cJSON_IsString(dty) ? dty->valuestring : "(set)");
  return tsl_pretok_read(l->t, l->name, pt);
}

/* Record id -> string, growing the per-id table; a second string for one id is an error.
** An id no dense numbering of the file's entries reaches is refused before
** the table grows to it (a 100-byte file could otherwise ask for gigabytes). */
static tsl_status set_id(loader *l, const cJSON *num, char *s, const char *what) {
  double v = num->valuedouble;
  if (v != floor(v) || v < 0 || v >= (double)TSL_MIN(l->id_bound, 1 << 30))
    return tsl_error(TESSEL_E_CONFIG, "%s: %s '%s' has id %.17g, not a whole number in [0, %lld): ids must be dense "
                     "(0 .. the number of tokens - 1)", l->name, what, s, v, (long long)TSL_MIN(l->id_bound, 1 << 30));
  int64_t id = (int64_t)v;
  if (id >= l->t->vocab_size) {
    tsl_status st = tsl_tok_reserve(&l->strings, &l->strings_cap, (size_t)id + 1, sizeof *l->strings);
    if (st < 0) return st;
    for (int64_t i = l->t->vocab_size; i <= id; i++) l->strings[i] = NULL;
    l->t->vocab_size = (int)id + 1;
  }
  if (l->strings[id] && strcmp(l->strings[id], s) != 0)
    return tsl_error(TESSEL_E_CONFIG, "%s: id %lld is both '%s' and '%s'", l->name, (long long)id, l->strings[id], s);
  l->strings[id] = s;
  return TESSEL_OK;
}

static tsl_status read_vocab(loader *l, const cJSON *model) {
  const cJSON *vocab = tsl_tok_field(model, "vocab"), *e;
  tsl_status st;
  if (!cJSON_IsObject(vocab)) return tsl_error(TESSEL_E_CONFIG, "%s: model.vocab is missing or not an object", l->name);
  TSL_TRY(st, tsl_strmap_init(&l->by_string, (size_t)cJSON_GetArraySize(vocab)));
  cJSON_ArrayForEach(e, vocab) {
    int64_t *slot;
    int added;
    if (!cJSON_IsNumber(e)) return tsl_error(TESSEL_E_CONFIG, "%s: model.vocab['%s'] is not a number", l->name, e->string);
    TSL_TRY(st, set_id(l, e, e->string, "token"));
    TSL_TRY(st, tsl_strmap_put(&l->by_string, e->string, strlen(e->string), (int64_t)e->valuedouble, &slot, &added));
    if (!added) return tsl_error(TESSEL_E_CONFIG, "%s: model.vocab lists '%s' twice", l->name, e->string);
  }
  return TESSEL_OK;
fail:
  return st;
}

/* One merge: its two parts (either form) and their ids. *buf (of *cap
** bytes) grows to hold the joined parts: a token has no length limit (a
** long run of one character trains into one). */
static tsl_status merge_parts(loader *l, const cJSON *m, int rank, char **buf, size_t *cap, size_t *a_len,
                              int64_t *ids) {
  const char *a, *b;
  size_t al, bl;
  if (cJSON_IsString(m)) {
    const char *sp = strchr(m->valuestring, ' ');
    if (!sp || strchr(sp + 1, ' ')) goto bad;
    a = m->valuestring, al = (size_t)(sp - a), b = sp + 1, bl = strlen(b);
  } else if (cJSON_GetArraySize(m) == 2 && cJSON_IsString(m->child) && cJSON_IsString(m->child->next)) {
    a = m->child->valuestring, al = strlen(a), b = m->child->next->valuestring, bl = strlen(b);
  } else {
    goto bad;
  }
  if (al + bl >= *cap) {
    size_t want = 2 * (al + bl) + 1;
    char *grown = realloc(*buf, want);
    if (!grown) return tsl_error(TESSEL_E_NOMEM, "%s: out of host memory for merge %d", l->name, rank);
    *buf = grown, *cap = want;
  }
  char *joined = *buf;
  memcpy(joined, a, al);
  memcpy(joined + al, b, bl);
  joined[al + bl] = '\0';
  *a_len = al;
  const int64_t *ia = tsl_strmap_find(&l->by_string, joined, al);
  const int64_t *ib = tsl_strmap_find(&l->by_string, joined + al, bl);
  const int64_t *iab = tsl_strmap_find(&l->by_string, joined, al + bl);
  if (!ia || !ib || !iab)
    return tsl_error(TESSEL_E_CONFIG, "%s: merge %d ('%.*s' + '%s') uses or makes a token not in model.vocab", l->name,
                     rank, (int)al, joined, joined + al);
  ids[0] = *ia, ids[1] = *ib, ids[2] = *iab;
  return TESSEL_OK;
bad:
  return tsl_error(TESSEL_E_CONFIG, "%s: merge %d is neither \"a b\" nor [\"a\", \"b\"]", l->name, rank);
}

static tsl_status read_merges(loader *l, const cJSON *model) {
  const cJSON *merges = tsl_tok_field(model, "merges"), *m;
  tsl_status st;
  char *buf = NULL;
  size_t cap = 0;
  int rank = 0;
  if (!cJSON_IsArray(merges)) return tsl_error(TESSEL_E_CONFIG, "%s: model.merges is missing or not a list", l->name);
  TSL_TRY(st, tsl_pairmap_init(&l->t->merges, (size_t)cJSON_GetArraySize(merges)));
  cJSON_ArrayForEach(m, merges) {
    int64_t ids[3], *slot;
    size_t al;
    TSL_TRY(st, merge_parts(l, m, rank, &buf, &cap, &al, ids));
    /* a pair listed twice keeps its last rank, as `tokenizers` does */
    TSL_TRY(st, tsl_pairmap_put(&l->t->merges, (uint32_t)ids[0], (uint32_t)ids[1], 0, &slot, NULL));
    *slot = (int64_t)rank << 32 | ids[2];
    l->t->hash = tsl_hash_bytes(ids, sizeof ids, l->t->hash);
    rank++;
  }
  st = TESSEL_OK;
fail:
  free(buf);
  return st;
}

static tsl_status read_model(loader *l, const cJSON *root) {
  const cJSON *model = tsl_tok_field(root, "model"), *type = tsl_tok_field(model, "type");
  tsl_status st;
  static const char *const unsupported[] = {"continuing_subword_prefix", "end_of_word_suffix"};
  const cJSON *dropout = tsl_tok_field(model, "dropout");
  if (!cJSON_IsObject(model)) return tsl_error(TESSEL_E_CONFIG, "%s: no model object", l->name);
  if (type && !(cJSON_IsString(type) && strcmp(type->valuestring, "BPE") == 0))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: model.type is %s; tessel reads BPE tokenizers", l->name,
                     cJSON_IsString(type) ? type->valuestring : "not a string");
  for (size_t i = 0; i < TSL_ARRAY_LEN(unsupported); i++) TSL_TRY(st, refuse_if_set(l, model, "model", unsupported[i]));
  /* dropout 0 drops no merge: tokenizers encodes as without it */
  if (dropout && !cJSON_IsNull(dropout) && !(cJSON_IsNumber(dropout) && dropout->valuedouble == 0))
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: model.dropout is set; tessel supports BPE without dropout (null or "
                     "0)", l->name);
  if (!l->t->metaspace) TSL_TRY(st, refuse_if_set(l, model, "model", "byte_fallback")); /* metaspace.c requires it */
  l->t->ignore_merges = tsl_tok_bool(model, "ignore_merges", 0);
  TSL_TRY(st, read_vocab(l, model));
  TSL_TRY(st, read_merges(l, model));
  return TESSEL_OK;
fail:
  return st;
}

/* Added tokens, sorted longest match first for leftmost-longest matching;
** of equal ones, the first in tokenizers' order (specials first). */
static int longer_first(const void *a, const void *b) {
  const tsl_added_token *x = a, *y = b;
  return x->match_len != y->match_len ? (x->match_len < y->match_len ? 1 : -1) : (x->order > y->order) - (x->order < y->order);
}

/* The id `tokenizers` (and so transformers) gives the next entry of
** added_tokens, whatever id the file writes (AddedVocabulary::add_tokens;
** it only logs a warning when they differ): an earlier entry's id for the
** same text, else the text's id in model.vocab, else the next free one: the
** size of model.vocab, or one past the largest added id when that is
** already beyond it. *why says which. */
static int64_t tokenizers_added_id(const loader *l, const char *text, const char **why) {
  const tsl_tokenizer *t = l->t;
  int64_t largest = -1, model = (int64_t)l->by_string.n;
  for (int i = 0; i < t->n_added; i++) {
    if (strcmp(t->added[i].text, text) == 0) {
      *why = "the id of its earlier entry in added_tokens";
      return t->added[i].id;
    }
    if (t->added[i].id > largest) largest = t->added[i].id;
  }
  const int64_t *in_vocab = tsl_strmap_find(&l->by_string, text, strlen(text));
  *why = in_vocab ? "its id in model.vocab" : "the next id after model.vocab and the added tokens listed before it";
  return in_vocab ? *in_vocab : largest >= model ? largest + 1 : model;
}

/* The file's id for an added token must be the one tokenizers gives it: a
** file whose ids it would renumber encodes to other ids there, so it is
** refused rather than read either way. */
static tsl_status check_added_id(const loader *l, const char *text, double file_id) {
  const char *why;
  int64_t want = tokenizers_added_id(l, text, &why);
  if (file_id == (double)want) return TESSEL_OK;
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s: added token '%s' has id %.17g in the file, but tokenizers and "
                   "transformers give it %lld (%s): they number added_tokens themselves, so this file encodes to "
                   "other ids there; write it with the ids they give", l->name, text, file_id, (long long)want, why);
}

/* What the token matches: its text, or (normalized) its text as the
** normalizer makes it, as tokenizers matches it in normalized text. */
static tsl_status set_match(const tsl_tokenizer *t, tsl_added_token *x) {
  char *normal = NULL;
  tsl_status st = x->normalized ? tsl_tok_normalize(t, x->text, x->len, TSL_SPAN_START, &normal, &x->match_len)
                                : TESSEL_OK;
  if (st < 0) return st;
  if (!normal) {
    if (!(normal = malloc(x->len))) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
    memcpy(normal, x->text, x->len);
    x->match_len = x->len;
  }
  x->match = normal;
  return TESSEL_OK;
}

/* The flags of the added tokens join the hash where they change how a
** text encodes from one pass over it as given (what tessel did before it
** read them): so the hashes recorded for tokenizers without them stay. */
static void hash_added_flags(tsl_tokenizer *t) {
  int normalized = 0, raw = 0;
  for (int i = 0; i < t->n_added; i++) normalized |= t->added[i].normalized, raw |= !t->added[i].normalized;
  int normalizer = t->nfc || (t->metaspace && t->prepend == TSL_PREPEND_NORMALIZER);
  for (int i = 0; i < t->n_added; i++) {
    const tsl_added_token *a = &t->added[i];
    uint64_t f[2] = {(uint64_t)a->id, (uint64_t)(a->lstrip | a->rstrip << 1 | a->single_word << 2 | a->normalized << 3)};
    if ((f[1] & 7) || (a->normalized && (normalizer || raw)) || (!a->normalized && normalized))
      t->hash = tsl_hash_bytes(f, sizeof f, t->hash);
  }
}

static tsl_status read_added(loader *l, const cJSON *root) {
  const cJSON *list = tsl_tok_field(root, "added_tokens"), *a;
  tsl_tokenizer *t = l->t;
  tsl_status st;
  if (list && !cJSON_IsNull(list) && !cJSON_IsArray(list))
    return tsl_error(TESSEL_E_CONFIG, "%s: added_tokens is not a list", l->name);
  int n = cJSON_GetArraySize(list);
  if (n == 0) return TESSEL_OK;
  if (!(t->added = calloc((size_t)n, sizeof *t->added))) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
  cJSON_ArrayForEach(a, list) {
    const cJSON *id = tsl_tok_field(a, "id"), *content = tsl_tok_field(a, "content");
    if (!cJSON_IsNumber(id) || !cJSON_IsString(content) || !content->valuestring[0])
      return tsl_error(TESSEL_E_CONFIG, "%s: added_tokens[%d] lacks an id or content", l->name, t->n_added);
    TSL_TRY(st, check_added_id(l, content->valuestring, id->valuedouble));
    TSL_TRY(st, set_id(l, id, content->valuestring, "added token"));
    tsl_added_token *x = &t->added[t->n_added];
    x->id = (int32_t)id->valuedouble;
    x->special = tsl_tok_bool(a, "special", 0);
    /* tokenizers requires the flags; a file without them reads as its AddedToken::from would make them */
    x->normalized = tsl_tok_bool(a, "normalized", !x->special);
    x->lstrip = tsl_tok_bool(a, "lstrip", 0);
    x->rstrip = tsl_tok_bool(a, "rstrip", 0);
    x->single_word = tsl_tok_bool(a, "single_word", 0);
    x->order = x->special ? t->n_added : n + t->n_added;
    x->len = strlen(content->valuestring);
    t->n_added++;
    if (!(x->text = tsl_strdup(content->valuestring))) return TESSEL_E_NOMEM;
    TSL_TRY(st, set_match(t, x));
    t->added_first[x->normalized][(unsigned char)x->match[0]] = 1;
  }
  qsort(t->added, (size_t)t->n_added, sizeof *t->added, longer_first);
  hash_added_flags(t);
  t->eot = special_named(t, eot_names, TSL_ARRAY_LEN(eot_names));
  t->bos = special_named(t, bos_names, TSL_ARRAY_LEN(bos_names));
  if (t->bos < 0) t->bos = t->eot; /* GPT-2's one token does both */
  return TESSEL_OK;
fail:
  return st;
}

static const tsl_added_token *added_with_id(const tsl_tokenizer *t, int32_t id) {
  for (int i = 0; i < t->n_added; i++)
    if (t->added[i].id == id) return &t->added[i];
  return NULL;
}

/* What a model.vocab string decodes to (out: len bytes), or -1 when it is
** not valid UTF-8 for a byte-level vocabulary. */
static long decode_vocab(const tsl_tokenizer *t, const char *s, size_t len, unsigned char *out) {
  return t->metaspace ? tsl_metaspace_decode(s, len, out) : tsl_bytelevel_decode(s, len, out);
}

/* An added token that is also in model.vocab (check_added_id made its id
** the vocabulary's) is reached two ways: cut out of a text as itself, and
** merged from the bytes the vocabulary's entry stands for. It decodes to its
** own text, so both must be that text: an added "\u0120" would decode a
** merged space as the two bytes of 'Ġ', and decode(encode(x)) != x. */
static tsl_status check_added_in_vocab(const loader *l, const tsl_added_token *a, unsigned char *scratch) {
  if (!tsl_strmap_find(&l->by_string, a->text, a->len)) return TESSEL_OK;
  long n = decode_vocab(l->t, a->text, a->len, scratch);
  if (n == (long)a->len && memcmp(scratch, a->text, a->len) == 0) return TESSEL_OK;
  return tsl_error(TESSEL_E_UNSUPPORTED, "%s: added token '%s' (id %d) is also in model.vocab, where it stands "
                   "for other bytes than its text; an id decodes to one byte string", l->name, a->text, a->id);
}

/* Each id's bytes; the 256 byte symbols; the hash of the whole. */
static tsl_status build_tables(loader *l) {
  tsl_tokenizer *t = l->t;
  size_t total = 0;
  for (int id = 0; id < t->vocab_size; id++) {
    if (!l->strings[id])
      return tsl_error(TESSEL_E_CONFIG, "%s: no token has id %d, below the largest id %d; ids must be dense", l->name,
                       id, t->vocab_size - 1);
    total += strlen(l->strings[id]);
  }
  t->bytes = malloc(total + 1);
  t->off = malloc((size_t)t->vocab_size * sizeof *t->off);
  t->len = malloc((size_t)t->vocab_size * sizeof *t->len);
  t->special = calloc((size_t)t->vocab_size, 1);
  if (t->metaspace) t->byte_token = calloc((size_t)t->vocab_size, 1);
  if (!t->bytes || !t->off || !t->len || !t->special || (t->metaspace && !t->byte_token))
    return tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", l->name);
  for (int i = 0; i < t->n_added; i++) t->special[t->added[i].id] |= (uint8_t)t->added[i].special;
  size_t at = 0;
  for (int id = 0; id < t->vocab_size; id++) {
    const tsl_added_token *a = added_with_id(t, id);
    const char *s = l->strings[id];
    tsl_status st = a ? check_added_in_vocab(l, a, (unsigned char *)t->bytes + at) : TESSEL_OK;
    if (st < 0) return st;
    /* an added token too: tokenizers runs its decoder over every token */
    long n = decode_vocab(t, s, strlen(s), (unsigned char *)t->bytes + at);
    if (n < 0) return tsl_error(TESSEL_E_CONFIG, "%s: token %d is not valid UTF-8", l->name, id);
    if (t->metaspace) t->byte_token[id] = (uint8_t)tsl_metaspace_byte_token(s, strlen(s));
    t->off[id] = (uint32_t)at;
    t->len[id] = (uint32_t)n;
    uint64_t tag[2] = {(uint64_t)id, a ? 1u + (unsigned)a->special : 0u};
    t->hash = tsl_hash_bytes(t->bytes + at, (size_t)n, tsl_hash_bytes(tag, sizeof tag, t->hash));
    at += (size_t)n;
  }
  if (t->metaspace) return tsl_metaspace_tables(t, l->name, &l->by_string);
  for (int b = 0; b < 256; b++) {
    char sym[2];
    unsigned char byte = (unsigned char)b;
    size_t n = tsl_bytelevel_encode(&byte, 1, sym);
    const int64_t *id = tsl_strmap_find(&l->by_string, sym, n);
    if (!id)
      return tsl_error(TESSEL_E_CONFIG, "%s: model.vocab lacks the symbol '%.*s' of byte 0x%02x; a byte-level BPE "
                       "needs all 256", l->name, (int)n, sym, b);
    t->byte_id[b] = (int32_t)*id;
  }
  return TESSEL_OK;
}

/* Decoded bytes -> id over model.vocab, for ignore_merges. */
static tsl_status build_by_bytes(loader *l) {
  tsl_tokenizer *t = l->t;
  tsl_status st;
  TSL_TRY(st, tsl_strmap_init(&t->by_bytes, l->by_string.n));
  for (size_t i = 0; i < l->by_string.cap; i++) {
    size_t n;
    if (!tsl_strmap_key_at(&l->by_string, i, &n)) continue;
    int32_t id = (int32_t)l->by_string.value[i];
    int64_t *slot;
    TSL_TRY(st, tsl_strmap_put(&t->by_bytes, t->bytes + t->off[id], t->len[id], id, &slot, NULL));
  }
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status load_tree(loader *l, const cJSON *root) {
  tsl_tokenizer *t = l->t;
  tsl_status st;
  if (!cJSON_IsObject(root)) return tsl_error(TESSEL_E_IO, "%s: not a JSON object (truncated or not a tokenizer.json?)", l->name);
  l->id_bound = (int64_t)cJSON_GetArraySize(tsl_tok_field(tsl_tok_field(root, "model"), "vocab")) +
                 (int64_t)cJSON_GetArraySize(tsl_tok_field(root, "added_tokens"));
  TSL_TRY(st, read_pipeline(l, root));
  TSL_TRY(st, read_model(l, root));
  TSL_TRY(st, read_added(l, root));
  TSL_TRY(st, build_tables(l));
  if (t->ignore_merges) TSL_TRY(st, build_by_bytes(l));
  if (t->pretok) t->hash = tsl_hash_str(tsl_pretok_pattern(t->pretok), t->hash); /* as rewritten: what encodes */
  if (t->seq) t->hash = tsl_pretok_seq_hash(t->seq, t->hash);
  uint64_t flags[2] = {(uint64_t)t->ignore_merges, (uint64_t)t->add_prefix_space};
  t->hash = tsl_hash_bytes(flags, sizeof flags, t->hash);
  if (t->prefix_each_piece) t->hash = tsl_hash_str("prefix each piece", t->hash); /* other hashes stay as recorded */
  if (t->metaspace) {
    uint64_t sp[3] = {(uint64_t)t->prepend, (uint64_t)t->split_at_metaspace, (uint64_t)t->strip_first_space};
    t->hash = tsl_hash_bytes(sp, sizeof sp, tsl_hash_str("metaspace", t->hash));
  }
  TSL_TRY(st, tsl_strmap_init(&t->cache, 1 << 14));
  return TESSEL_OK;
fail:
  return st;
}

/* Whether text[i] is escaped: an odd run of backslashes before it. */
static int escaped(const char *text, size_t i) {
  size_t slashes = 0;
  while (slashes < i && text[i - 1 - slashes] == '\\') slashes++;
  return slashes % 2;
}

/* Where the JSON string around text[at] starts or ends (the offset of its
** quote), scanning in direction dir: a quote not escaped. */
static size_t string_quote(const char *text, size_t len, size_t at, int dir) {
  for (size_t i = at; dir < 0 ? i > 0 : i + 1 < len; i += (size_t)dir)
    if (text[i] == '"' && i != at && !escaped(text, i)) return i;
  return dir < 0 ? 0 : len - 1;
}

/* cJSON ends a string at U+0000 (its strings are C strings), so a token
** written with "\u0000" would be read as its text up to there: another
** token than tokenizers reads, or a second entry for one already read. Such
** a file is refused, naming the string; so is a raw NUL byte, which is not
** JSON text at all. Any field is refused so, even one tessel ignores. */
static tsl_status refuse_nul(const char *json, size_t len, const char *name) {
  const char *nul = memchr(json, '\0', len);
  if (nul) return tsl_error(TESSEL_E_IO, "%s: byte %zu is NUL: not JSON text (a JSON string writes it \\u0000)",
                            name, (size_t)(nul - json));
  for (const char *at = json; (at = memmem(at, len - (size_t)(at - json), "\\u0000", 6)) != NULL; at += 6) {
    size_t i = (size_t)(at - json);
    if (escaped(json, i)) continue; /* "\\u0000": a backslash, then the letters u0000 */
    size_t from = string_quote(json, len, i, -1), to = string_quote(json, len, i, 1);
    int shown = (int)TSL_MIN(to - from + 1, (size_t)120);
    return tsl_error(TESSEL_E_UNSUPPORTED, "%s: the JSON string %.*s%s holds \\u0000 (NUL); tessel's JSON reader would "
                     "end the string there and read another token than tokenizers does, so a tokenizer with NUL in "
                     "a string is not supported", name, shown, json + from, shown < (int)(to - from + 1) ? "..." : "");
  }
  return TESSEL_OK;
}

tsl_status tsl_tokenizer_parse(const char *json, size_t len, const char *name, tsl_tokenizer **out) {
  tsl_status st;
  loader l = {.name = name};
  *out = NULL;
  tsl_tokenizer *t = l.t = calloc(1, sizeof *t);
  if (!t || !(t->name = tsl_strdup(name)) || !(t->json = malloc(len + 1))) {
    tsl_tokenizer_free(t);
    return tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", name);
  }
  memcpy(t->json, json, len);
  t->json[len] = '\0';
  t->json_len = len;
  t->eot = t->bos = -1;
  t->hash = 0x62706531; /* changing what the hash covers changes every recorded hash */
  cJSON *root = NULL;
  st = refuse_nul(json, len, name);
  if (st >= 0 && !(root = cJSON_ParseWithLength(json, len)))
    st = tsl_error(TESSEL_E_IO, "%s: not valid JSON (truncated or not a tokenizer.json?)", name);
  if (st >= 0) st = load_tree(&l, root);
  cJSON_Delete(root);
  tsl_strmap_free(&l.by_string);
  free(l.strings);
  if (st < 0) {
    tsl_tokenizer_free(t);
    /* what is wrong inside a file is the file's, as with a damaged
    ** checkpoint (exit 1); a config that names it makes that a mistake at
    ** its key (vocab.c) */
    return st == TESSEL_E_CONFIG ? TESSEL_E_IO : st;
  }
  *out = t;
  return TESSEL_OK;
}

tsl_status tsl_tokenizer_load(const char *path, tsl_tokenizer **out) {
  char *text = NULL;
  size_t len = 0;
  *out = NULL;
  tsl_status st = tsl_read_file(path, &text, &len);
  if (st < 0) return st;
  st = tsl_tokenizer_parse(text, len, path, out);
  free(text);
  return st;
}

void tsl_tokenizer_free(tsl_tokenizer *t) {
  if (!t) return;
  for (int i = 0; i < t->n_added; i++) free(t->added[i].text), free(t->added[i].match);
  free(t->added);
  tsl_pretok_free(t->pretok);
  tsl_pretok_seq_free(t->seq);
  tsl_pairmap_free(&t->merges);
  tsl_strmap_free(&t->by_bytes);
  tsl_strmap_free(&t->chars);
  tsl_strmap_free(&t->cache);
  free(t->cache_ids);
  free(t->work);
  free(t->bytes);
  free(t->byte_token);
  free(t->special);
  free(t->off);
  free(t->len);
  free(t->json);
  free(t->name);
  free(t);
}

int tsl_tokenizer_vocab_size(const tsl_tokenizer *t) { return t->vocab_size; }
int tsl_tokenizer_eot(const tsl_tokenizer *t) { return t->eot; }
int tsl_tokenizer_bos(const tsl_tokenizer *t) { return t->bos; }
uint64_t tsl_tokenizer_hash(const tsl_tokenizer *t) { return t->hash; }
const char *tsl_tokenizer_name(const tsl_tokenizer *t) { return t->name; }
int tsl_tokenizer_special(const tsl_tokenizer *t, int32_t id) {
  return id >= 0 && id < t->vocab_size && t->special[id];
}

const char *tsl_tokenizer_json(const tsl_tokenizer *t, size_t *len) {
  *len = t->json_len;
  return t->json;
}
