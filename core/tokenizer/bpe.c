/*
** core/tokenizer/bpe.c — encoding text into ids.
**
** A text is cut at added tokens (when asked: added.c), each span into
** pre-tokenizer pieces, and each piece's bytes are merged: start from one symbol per byte
** (per character under SentencePiece's kind, metaspace.c) and repeatedly
** merge the adjacent pair of lowest rank, leftmost first —
** `tokenizers`' Word::merge_all, with the same heap order (rank, then
** position) and the same test of a stale entry (the pair there now must
** still merge into the entry's id), so the ids agree token for token. Each
** piece costs O(n log n) in its length n, so a megabyte-long run of spaces
** is as safe as a word. Pieces repeat (words), so merged pieces of up to
** CACHE_PIECE_MAX bytes are cached.
*/
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tokenizer/internal.h"

#define CACHE_PIECE_MAX 64
#define CACHE_MAX_ENTRIES (1u << 18)
#define SINK_BATCH 1024

typedef struct merge_entry {
  uint32_t rank, pos;
  int32_t id;
} merge_entry;

static int entry_before(const merge_entry *a, const merge_entry *b) {
  return a->rank != b->rank ? a->rank < b->rank : a->pos < b->pos;
}

static void heap_push(merge_entry *h, size_t *n, merge_entry e) {
  size_t i = (*n)++;
  while (i > 0 && entry_before(&e, &h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = e;
}

static merge_entry heap_pop(merge_entry *h, size_t *n) {
  merge_entry top = h[0], last = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && entry_before(&h[c + 1], &h[c])) c++;
    if (!entry_before(&h[c], &last)) break;
    h[i] = h[c];
    i = c;
  }
  if (*n > 0) h[i] = last;
  return top;
}

/* Push the merge of the pair starting at symbol i, if the pair merges. */
static void push_pair(const tsl_tokenizer *t, merge_entry *h, size_t *n, const int32_t *ids, long i, long j) {
  if (i < 0 || j < 0) return;
  const int64_t *m = tsl_pairmap_find(&t->merges, (uint32_t)ids[i], (uint32_t)ids[j]);
  if (m) heap_push(h, n, (merge_entry){(uint32_t)(*m >> 32), (uint32_t)i, (int32_t)(*m & 0xffffffff)});
}

long tsl_bpe_merge_piece(tsl_tokenizer *t, const unsigned char *piece, size_t n, int32_t *ids) {
  if (t->metaspace) n = tsl_metaspace_symbols(t, piece, n, ids);
  else
    for (size_t i = 0; i < n; i++) ids[i] = t->byte_id[piece[i]];
  if (n < 2) return (long)n;
  /* scratch: next and prev links, and a heap of at most n - 1 + 2 per merge entries */
  tsl_status st = tsl_tok_reserve(&t->work, &t->work_cap, n * 2 * sizeof(long) + 3 * n * sizeof(merge_entry), 1);
  if (st < 0) return st;
  long *next = t->work, *prev = next + n;
  merge_entry *heap = (merge_entry *)(prev + n);
  size_t nh = 0;
  for (size_t i = 0; i < n; i++) {
    next[i] = i + 1 < n ? (long)i + 1 : -1;
    prev[i] = (long)i - 1;
  }
  for (size_t i = 0; i + 1 < n; i++) push_pair(t, heap, &nh, ids, (long)i, (long)i + 1);
  while (nh > 0) {
    merge_entry e = heap_pop(heap, &nh);
    long i = e.pos, j = next[i];
    if (ids[i] < 0 || j < 0) continue;
    const int64_t *m = tsl_pairmap_find(&t->merges, (uint32_t)ids[i], (uint32_t)ids[j]);
    if (!m || (int32_t)(*m & 0xffffffff) != e.id) continue; /* stale: the pair here has changed */
    ids[i] = e.id;
    ids[j] = -1;
    next[i] = next[j];
    if (next[j] >= 0) prev[next[j]] = i;
    push_pair(t, heap, &nh, ids, prev[i], i);
    push_pair(t, heap, &nh, ids, i, next[i]);
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (ids[i] >= 0) ids[k++] = ids[i];
  return (long)k;
}

/* Ids waiting for the sink. */
typedef struct out_buf {
  tsl_token_sink sink;
  void *ctx;
  int32_t ids[SINK_BATCH];
  size_t n;
} out_buf;

static tsl_status out_flush(out_buf *o) {
  tsl_status st = o->n ? o->sink(o->ctx, o->ids, o->n) : TESSEL_OK;
  o->n = 0;
  return st;
}

static tsl_status out_put(out_buf *o, const int32_t *ids, size_t n) {
  if (o->n + n > SINK_BATCH) {
    tsl_status st = out_flush(o);
    if (st < 0) return st;
    if (n > SINK_BATCH) return o->sink(o->ctx, ids, n);
  }
  memcpy(o->ids + o->n, ids, n * sizeof *ids);
  o->n += n;
  return TESSEL_OK;
}

/* Cache the merged ids of a short piece. Failing to cache only costs time. */
static void cache_put(tsl_tokenizer *t, const char *piece, size_t n, const int32_t *ids, size_t k) {
  if (t->cache.n >= CACHE_MAX_ENTRIES) {
    tsl_strmap_clear(&t->cache);
    t->cache_n = 0;
  }
  int64_t *slot;
  if (tsl_tok_reserve(&t->cache_ids, &t->cache_cap, t->cache_n + k, sizeof *t->cache_ids) < 0 ||
      tsl_strmap_put(&t->cache, piece, n, (int64_t)t->cache_n << 8 | (int64_t)k, &slot, NULL) < 0) {
    tsl_error_clear();
    return;
  }
  memcpy(t->cache_ids + t->cache_n, ids, k * sizeof *ids);
  t->cache_n += k;
}

static tsl_status encode_piece(tsl_tokenizer *t, const char *piece, size_t n, out_buf *o) {
  if (n <= CACHE_PIECE_MAX) {
    const int64_t *hit = tsl_strmap_find(&t->cache, piece, n);
    if (hit) return out_put(o, t->cache_ids + (*hit >> 8), (size_t)(*hit & 0xff));
  }
  if (t->ignore_merges) {
    const int64_t *whole = tsl_strmap_find(&t->by_bytes, piece, n);
    if (whole) {
      int32_t id = (int32_t)*whole;
      return out_put(o, &id, 1);
    }
  }
  int32_t small[CACHE_PIECE_MAX], *ids = n <= CACHE_PIECE_MAX ? small : malloc(n * sizeof *ids);
  if (!ids) return tsl_error(TESSEL_E_NOMEM, "out of host memory encoding a %zu-byte piece", n);
  long k = tsl_bpe_merge_piece(t, (const unsigned char *)piece, n, ids);
  tsl_status st = k < 0 ? (tsl_status)k : out_put(o, ids, (size_t)k);
  if (st >= 0 && n <= CACHE_PIECE_MAX) cache_put(t, piece, n, ids, (size_t)k);
  if (ids != small) free(ids);
  return st;
}

/* A piece the pre-tokenizer made, with a space put before it when each
** piece gets one (prefix_each_piece) and it lacks one. */
static tsl_status encode_pretok_piece(tsl_tokenizer *t, const char *piece, size_t n, out_buf *o) {
  if (!t->prefix_each_piece || piece[0] == ' ') return encode_piece(t, piece, n, o);
  char small[256], *spaced = n < sizeof small ? small : malloc(n + 1); /* pieces are mostly short: no malloc */
  if (!spaced) return tsl_error(TESSEL_E_NOMEM, "out of host memory encoding text");
  spaced[0] = ' ';
  memcpy(spaced + 1, piece, n);
  tsl_status st = encode_piece(t, spaced, n + 1, o);
  if (spaced != small) free(spaced);
  return st;
}

/* A span of SentencePiece's kind: spaces made ▁ and its prefix put (by
** the pre-tokenizer; the Prepend normalizer has put them already), then
** each piece (the whole span, or from each ▁ when the tokenizer splits). */
static tsl_status encode_metaspace_span(tsl_tokenizer *t, const char *text, size_t len, tsl_span_at at, out_buf *o) {
  char *s = NULL;
  size_t n = len;
  tsl_status st = TESSEL_OK;
  if (t->prepend != TSL_PREPEND_NORMALIZER) st = tsl_metaspace_normalize(t, text, len, at, &s, &n);
  const char *from = s ? s : text;
  for (size_t a = 0, b; st >= 0 && a < n; a = b) {
    b = tsl_metaspace_piece_end(t, from, n, a);
    st = encode_piece(t, from + a, b - a, o);
  }
  free(s);
  return st;
}

tsl_status tsl_tok_normalize(const tsl_tokenizer *t, const char *text, size_t len, tsl_span_at at, char **out,
                             size_t *out_len) {
  *out = NULL;
  *out_len = len;
  if (len == 0) return TESSEL_OK;
  if (t->metaspace && t->prepend == TSL_PREPEND_NORMALIZER) return tsl_metaspace_normalize(t, text, len, at, out, out_len);
  return t->nfc ? tsl_nfc(text, len, out, out_len) : TESSEL_OK;
}

/* A span cut by the steps of a pre-tokenizer Sequence (sequence.c). */
static tsl_status encode_sequence_span(tsl_tokenizer *t, const char *text, size_t len, out_buf *o) {
  const char *base;
  const tsl_piece *p;
  size_t n;
  tsl_status st = tsl_pretok_seq_split(t->seq, text, len, &base, &p, &n);
  for (size_t i = 0; st >= 0 && i < n; i++) st = encode_piece(t, base + p[i].start, p[i].end - p[i].start, o);
  return st;
}

/* One span of normalized text, starting `at` the start of the text, after
** an added token or where an earlier text was cut: pre-tokenize it and
** encode each piece. */
static tsl_status pretokenize_span(tsl_tokenizer *t, const char *text, size_t len, tsl_span_at at, out_buf *o) {
  tsl_status st = TESSEL_OK;
  char *spaced = NULL;
  if (t->metaspace) return encode_metaspace_span(t, text, len, at, o);
  if (t->seq) return encode_sequence_span(t, text, len, o);
  if (t->add_prefix_space && !t->prefix_each_piece && text[0] != ' ') {
    if (!(spaced = malloc(len + 1))) return tsl_error(TESSEL_E_NOMEM, "out of host memory encoding text");
    spaced[0] = ' ';
    memcpy(spaced + 1, text, len);
    text = spaced;
    len++;
  }
  if (!t->pretok) {
    st = encode_piece(t, text, len, o);
  } else {
    tsl_pretok_iter it;
    size_t a, b;
    int rc;
    tsl_pretok_begin(&it, t->pretok, text, len);
    while (st >= 0 && (rc = tsl_pretok_next(&it, &a, &b)) != 0)
      st = rc < 0 ? rc : encode_pretok_piece(t, text + a, b - a, o);
  }
  free(spaced);
  return st;
}

/* text[0, len) cut at the added tokens of one pass (normalized or not,
** when `added`): each token's id, and each span between through `span`
** (pass 1 normalizes it and cuts again; pass 2 pre-tokenizes it). A span
** starts `at` when it starts the text, else after an added token. */
typedef tsl_status (*span_fn)(tsl_tokenizer *t, const char *text, size_t len, tsl_span_at at, int added, out_buf *o);

static tsl_status cut_added(tsl_tokenizer *t, int normalized, const char *text, size_t len, tsl_span_at at, int added,
                            span_fn span, out_buf *o) {
  size_t pos = 0, done = 0, start, end;
  tsl_status st = TESSEL_OK;
  const tsl_added_token *a;
  while (st >= 0 && added && (a = tsl_added_next(t, normalized, text, len, &pos, done, &start, &end)) != NULL) {
    if (done < start) st = span(t, text + done, start - done, done ? TSL_SPAN_AFTER_ADDED : at, added, o);
    if (st >= 0) st = out_put(o, &a->id, 1);
    done = end; /* as tokenizers: back inside a white space another token's rstrip took */
  }
  if (st >= 0 && done < len) st = span(t, text + done, len - done, done ? TSL_SPAN_AFTER_ADDED : at, added, o);
  return st;
}

static tsl_status pass2_span(tsl_tokenizer *t, const char *text, size_t len, tsl_span_at at, int added, out_buf *o) {
  (void)added;
  return pretokenize_span(t, text, len, at, o);
}

/* A span of the text as given, between the added tokens matched there:
** normalized, then cut at the normalized added tokens. */
static tsl_status pass1_span(tsl_tokenizer *t, const char *text, size_t len, tsl_span_at at, int added, out_buf *o) {
  char *normal;
  size_t n;
  tsl_status st = tsl_tok_normalize(t, text, len, at, &normal, &n);
  if (st >= 0) st = cut_added(t, 1, normal ? normal : text, n, at, added, pass2_span, o);
  free(normal);
  return st;
}

tsl_status tsl_tokenizer_encode(tsl_tokenizer *t, const char *text, size_t len, int flags, tsl_token_sink sink,
                                void *ctx) {
  out_buf *o = malloc(sizeof *o);
  if (!o) return tsl_error(TESSEL_E_NOMEM, "out of host memory encoding text");
  o->sink = sink;
  o->ctx = ctx;
  o->n = 0;
  tsl_span_at at = flags & TSL_TOK_CONTINUED ? TSL_SPAN_CONTINUED : TSL_SPAN_START;
  tsl_status st = cut_added(t, 0, text, len, at, (flags & TSL_TOK_ADDED) != 0, pass1_span, o);
  if (st >= 0) st = out_flush(o);
  free(o);
  return st;
}

size_t tsl_tokenizer_cut(const tsl_tokenizer *t, const char *text, size_t len, size_t from, size_t to) {
  if (!t->metaspace && !t->cuts_at_spaces) return 0;
  for (size_t i = TSL_MAX(from, 1); i < to && i + 1 < len; i++)
    if (text[i] == ' ' && tsl_tok_ascii_letter(text[i - 1]) && tsl_tok_ascii_letter(text[i + 1]) &&
        (!t->metaspace || tsl_metaspace_piece_ends(t, (unsigned char)text[i - 1]))) /* byte-level: always */
      return i;
  return 0;
}

tsl_status tsl_token_vec_sink(void *vec, const int32_t *ids, size_t n) {
  tsl_token_vec *v = vec;
  tsl_status st = tsl_tok_reserve(&v->ids, &v->cap, v->n + n, sizeof *v->ids);
  if (st < 0) return st;
  memcpy(v->ids + v->n, ids, n * sizeof *ids);
  v->n += n;
  return TESSEL_OK;
}

void tsl_token_vec_free(tsl_token_vec *v) {
  free(v->ids);
  memset(v, 0, sizeof *v);
}

const char *tsl_tokenizer_token(const tsl_tokenizer *t, int32_t id, size_t *len) {
  if (id < 0 || id >= t->vocab_size) return NULL;
  *len = t->len[id];
  return t->bytes + t->off[id];
}

const char *tsl_tokenizer_first_token(const tsl_tokenizer *t, int32_t id, size_t *len) {
  const char *s = tsl_tokenizer_token(t, id, len);
  if (s && t->strip_first_space && *len > 0 && s[0] == ' ') s++, --*len;
  return s;
}
