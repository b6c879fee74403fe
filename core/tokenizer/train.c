/*
** core/tokenizer/train.c — training a byte-level BPE.
**
** The same algorithm as `tokenizers`' BpeTrainer, so the same input gives
** the same merges:
**  1. Each file is pre-tokenized as one text; identical pieces ("words") are
**     counted once with their frequency.
**  2. Ids: the special tokens, then the 256 byte symbols in code-point order
**     of their printable stand-ins (the full ByteLevel alphabet).
**  3. Every adjacent symbol pair is counted over the words (weighted by
**     frequency), with the list of words it occurs in, and queued.
**  4. Repeatedly take the pair with the highest count (ties: the smaller
**     (id, id) pair), merge it in just the words it was listed with, and
**     update the counts of the pairs around each merge incrementally; pairs
**     that gained occurrences are queued again with those words. A queue
**     entry whose count is stale is re-queued with the current count, never
**     trusted. Nothing is ever recounted from scratch, so a merge costs the
**     words it touches, not the corpus.
*/
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"
#include "tokenizer/internal.h"
#include "tokenizer/write.h"

typedef struct pos_list {
  int32_t *v;
  size_t n, cap;
} pos_list;

/* A queued pair: its count when queued and the words to merge it in. */
typedef struct candidate {
  int64_t count;
  uint32_t a, b;
  pos_list pos;
} candidate;

typedef struct trainer {
  /* tokens, as written in tokenizer.json (UTF-8 of byte stand-ins) */
  tsl_strmap vocab;
  char *str;
  size_t str_len, str_cap;
  size_t *off, *len;
  int n_tokens;
  size_t cap_off, cap_len;
  /* unique words: symbols words[w] = sym[start[w], start[w] + wlen[w]) */
  int32_t *sym;
  size_t *start;
  uint32_t *wlen;
  int64_t *wcount;
  size_t n_words;
  /* pair counts, the queue, and the pairs that gained words in this step */
  tsl_pairmap counts;
  candidate *heap;
  size_t nh, caph;
  tsl_pairmap gained;
  pos_list *gained_lists;
  size_t n_gained, cap_gained;
  uint32_t (*merges)[2];
  int n_merges;
  size_t cap_merges;
} trainer;

static int cand_before(const candidate *x, const candidate *y) {
  if (x->count != y->count) return x->count > y->count;
  return x->a != y->a ? x->a < y->a : x->b < y->b;
}

static tsl_status heap_push(trainer *tr, candidate c) {
  tsl_status st = tsl_tok_reserve(&tr->heap, &tr->caph, tr->nh + 1, sizeof *tr->heap);
  if (st < 0) return st;
  size_t i = tr->nh++;
  while (i > 0 && cand_before(&c, &tr->heap[(i - 1) / 2])) {
    tr->heap[i] = tr->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  tr->heap[i] = c;
  return TESSEL_OK;
}

static candidate heap_pop(trainer *tr) {
  candidate *h = tr->heap, top = h[0], last = h[--tr->nh];
  size_t i = 0, n = tr->nh;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && cand_before(&h[c + 1], &h[c])) c++;
    if (!cand_before(&h[c], &last)) break;
    h[i] = h[c];
    i = c;
  }
  if (n > 0) h[i] = last;
  return top;
}

static tsl_status list_add(pos_list *l, int32_t w) {
  if (l->n > 0 && l->v[l->n - 1] == w) return TESSEL_OK; /* a word's changes come together */
  tsl_status st = tsl_tok_reserve(&l->v, &l->cap, l->n + 1, sizeof *l->v);
  if (st < 0) return st;
  l->v[l->n++] = w;
  return TESSEL_OK;
}

/* Add a token string; *id gets its id (an existing one when already known). */
static tsl_status add_token(trainer *tr, const char *s, size_t n, int *id) {
  int64_t *slot;
  int added;
  tsl_status st = tsl_strmap_put(&tr->vocab, s, n, tr->n_tokens, &slot, &added);
  if (st < 0) return st;
  *id = (int)*slot;
  if (!added) return TESSEL_OK;
  size_t k = (size_t)tr->n_tokens + 1;
  if ((st = tsl_tok_reserve(&tr->off, &tr->cap_off, k, sizeof *tr->off)) < 0 ||
      (st = tsl_tok_reserve(&tr->len, &tr->cap_len, k, sizeof *tr->len)) < 0 ||
      (st = tsl_tok_reserve(&tr->str, &tr->str_cap, tr->str_len + n, 1)) < 0)
    return st;
  memcpy(tr->str + tr->str_len, s, n);
  tr->off[tr->n_tokens] = tr->str_len;
  tr->len[tr->n_tokens] = n;
  tr->str_len += n;
  tr->n_tokens++;
  return TESSEL_OK;
}

/* Pair (x, y) changes by delta occurrences in word w; a gain lists w for the queue. */
static tsl_status note_change(trainer *tr, uint32_t x, uint32_t y, int delta, int32_t w) {
  int64_t *count, *idx;
  int added;
  tsl_status st = tsl_pairmap_put(&tr->counts, x, y, 0, &count, NULL);
  if (st < 0) return st;
  *count += delta * tr->wcount[w];
  if (delta < 0) return TESSEL_OK;
  if ((st = tsl_pairmap_put(&tr->gained, x, y, (int64_t)tr->n_gained, &idx, &added)) < 0) return st;
  if (added) {
    if ((st = tsl_tok_reserve(&tr->gained_lists, &tr->cap_gained, tr->n_gained + 1, sizeof *tr->gained_lists)) < 0)
      return st;
    tr->gained_lists[tr->n_gained++] = (pos_list){0};
  }
  return list_add(&tr->gained_lists[*idx], w);
}

/* Queue every pair that gained words, with its current count. */
static tsl_status queue_gained(trainer *tr) {
  tsl_status st = TESSEL_OK;
  for (size_t i = 0; i < tr->gained.cap; i++) {
    if (!tr->gained.key[i]) continue;
    uint64_t k = tr->gained.key[i] - 1;
    pos_list *l = &tr->gained_lists[tr->gained.value[i]];
    int64_t count = *tsl_pairmap_find(&tr->counts, (uint32_t)(k >> 32), (uint32_t)k);
    if (count > 0 && st >= 0) {
      st = heap_push(tr, (candidate){count, (uint32_t)(k >> 32), (uint32_t)k, *l});
      if (st >= 0) continue;
    }
    free(l->v);
  }
  memset(tr->gained.key, 0, tr->gained.cap * sizeof *tr->gained.key);
  tr->gained.n = 0;
  tr->n_gained = 0;
  return st;
}

/* Merge every (a, b) of word w, left to right, into id c, noting the pairs
** around each merge (`tokenizers`' Word::merge). */
static tsl_status merge_word(trainer *tr, int32_t w, uint32_t a, uint32_t b, uint32_t c) {
  int32_t *s = tr->sym + tr->start[w];
  uint32_t n = tr->wlen[w], out = 0;
  tsl_status st = TESSEL_OK;
  for (uint32_t r = 0; r < n && st >= 0;) {
    if (r + 1 < n && (uint32_t)s[r] == a && (uint32_t)s[r + 1] == b) {
      if (out > 0) {
        st = note_change(tr, (uint32_t)s[out - 1], a, -1, w);
        if (st >= 0) st = note_change(tr, (uint32_t)s[out - 1], c, 1, w);
      }
      if (r + 2 < n && st >= 0) {
        st = note_change(tr, b, (uint32_t)s[r + 2], -1, w);
        if (st >= 0) st = note_change(tr, c, (uint32_t)s[r + 2], 1, w);
      }
      s[out++] = (int32_t)c;
      r += 2;
    } else {
      s[out++] = s[r++];
    }
  }
  tr->wlen[w] = out;
  return st;
}

/* The token a merge of a and b makes: an existing id when the string is known. */
static tsl_status merged_token(trainer *tr, uint32_t a, uint32_t b, int *id) {
  size_t la = tr->len[a], lb = tr->len[b];
  char *s = malloc(la + lb);
  if (!s) return tsl_error(TESSEL_E_NOMEM, "out of host memory training a tokenizer");
  memcpy(s, tr->str + tr->off[a], la);
  memcpy(s + la, tr->str + tr->off[b], lb);
  tsl_status st = add_token(tr, s, la + lb, id);
  free(s);
  return st;
}

static tsl_status record_merge(trainer *tr, uint32_t a, uint32_t b) {
  tsl_status st = tsl_tok_reserve(&tr->merges, &tr->cap_merges, (size_t)tr->n_merges + 1, sizeof *tr->merges);
  if (st < 0) return st;
  tr->merges[tr->n_merges][0] = a;
  tr->merges[tr->n_merges][1] = b;
  tr->n_merges++;
  return TESSEL_OK;
}

static tsl_status merge_loop(trainer *tr, const tsl_tokenizer_train_opts *o) {
  tsl_status st = TESSEL_OK;
  while (tr->n_tokens < o->vocab_size && tr->nh > 0 && st >= 0) {
    candidate top = heap_pop(tr);
    int64_t now = *tsl_pairmap_find(&tr->counts, top.a, top.b);
    if (top.count != now) { /* stale: queue again at its true count */
      top.count = now;
      st = heap_push(tr, top);
      if (st < 0) free(top.pos.v);
      continue;
    }
    if (top.count < 1 || o->min_frequency > top.count) {
      free(top.pos.v);
      break;
    }
    int c;
    st = merged_token(tr, top.a, top.b, &c);
    if (st >= 0) st = record_merge(tr, top.a, top.b);
    for (uint32_t i = 0; i < top.pos.n && st >= 0; i++) st = merge_word(tr, top.pos.v[i], top.a, top.b, (uint32_t)c);
    free(top.pos.v);
    if (st >= 0) st = queue_gained(tr);
  }
  return st;
}

/* ---- words ---- */

typedef struct word_counts {
  tsl_strmap index; /* piece bytes -> word number */
  int64_t *count;
  size_t n, cap;
  uint64_t pieces, bytes;
} word_counts;

static tsl_status count_text(word_counts *wc, tsl_pretok *p, const char *text, size_t len) {
  tsl_pretok_iter it;
  size_t a, b;
  int rc;
  tsl_pretok_begin(&it, p, text, len);
  while ((rc = tsl_pretok_next(&it, &a, &b)) > 0) {
    int64_t *slot;
    int added;
    tsl_status st = tsl_strmap_put(&wc->index, text + a, b - a, (int64_t)wc->n, &slot, &added);
    if (st < 0) return st;
    if (added) {
      if ((st = tsl_tok_reserve(&wc->count, &wc->cap, wc->n + 1, sizeof *wc->count)) < 0) return st;
      wc->count[wc->n++] = 0;
    }
    wc->count[*slot]++;
    wc->pieces++;
  }
  wc->bytes += len;
  return rc;
}

static tsl_status count_files(word_counts *wc, tsl_pretok *p, const char *const *files, int n_files) {
  tsl_status st = tsl_strmap_init(&wc->index, 1 << 16);
  for (int f = 0; f < n_files && st >= 0; f++) {
    const char *text;
    size_t len;
    if ((st = tsl_map_file(files[f], &text, &len)) < 0) break;
    st = count_text(wc, p, text, len);
    tsl_unmap_file(text, len);
    if (st < 0) tsl_error_wrap(st, "%s", files[f]);
  }
  return st;
}

static int by_stand_in(const void *x, const void *y) {
  uint32_t a = tsl_bytelevel_char(*(const unsigned char *)x), b = tsl_bytelevel_char(*(const unsigned char *)y);
  return (a > b) - (a < b);
}

/* A special token must be UTF-8 (tokenizer.json is JSON text, and
** `tokenizers` refuses the file otherwise) and must not be the stand-in of
** a byte that is written as another character ("Ġ" is the space): it would
** take that byte's id, and the byte would decode as the token's text. A
** byte written as itself ("a") shares its id harmlessly, as in `tokenizers`. */
static tsl_status check_special(const char *special) {
  size_t len = strlen(special);
  unsigned char *raw = malloc(len + 1);
  if (!raw) return tsl_error(TESSEL_E_NOMEM, "out of host memory");
  long n = tsl_bytelevel_decode(special, len, raw);
  char stand_in[3] = {0};
  /* a single byte's stand-in decodes to that byte and encodes back to itself */
  if (n == 1) tsl_bytelevel_encode(raw, 1, stand_in);
  unsigned char byte = raw[0];
  int itself = n == (long)len && memcmp(raw, special, len) == 0;
  free(raw);
  if (n < 0) return tsl_error(TESSEL_E_CONFIG, "special token '%s' is not valid UTF-8", special);
  if (n == 1 && !strcmp(stand_in, special) && tsl_bytelevel_char(byte) != byte)
    return tsl_error(TESSEL_E_CONFIG, "special token '%s' is the byte-level symbol of byte 0x%02X: it would take "
                     "that byte's id", special, byte);
  /* as the loader requires of an added token that is also a vocabulary
  ** entry (json.c): a file written with it could not be read back */
  if (!itself)
    return tsl_error(TESSEL_E_CONFIG, "special token '%s' holds characters that byte-level BPE uses for other bytes "
                     "('Ġ' is the space): its id would decode to those bytes, not to its text; write it with "
                     "characters that stand for themselves, as <|endoftext|> is", special);
  return TESSEL_OK;
}
/* Special tokens, the byte alphabet, and each word as byte symbols. */
static tsl_status initial_symbols(trainer *tr, const word_counts *wc, const tsl_tokenizer_train_opts *o) {
  tsl_status st;
  int byte_id[256], id;
  unsigned char order[256];
  /* sized for a usual vocabulary, not the one asked for: the map grows, and
  ** --vocab 2^30 (as many merges as the text allows) would ask for 2^31 slots */
  TSL_TRY(st, tsl_strmap_init(&tr->vocab, (size_t)TSL_MIN(o->vocab_size, 1 << 17) + 256));
  for (int i = 0; i < o->n_special; i++) TSL_TRY(st, add_token(tr, o->special[i], strlen(o->special[i]), &id));
  for (int b = 0; b < 256; b++) order[b] = (unsigned char)b;
  qsort(order, 256, 1, by_stand_in);
  for (int i = 0; i < 256; i++) {
    char sym[2];
    TSL_TRY(st, add_token(tr, sym, tsl_bytelevel_encode(&order[i], 1, sym), &byte_id[order[i]]));
  }
  tr->n_words = wc->n;
  tr->start = malloc((wc->n + 1) * sizeof *tr->start);
  tr->wlen = malloc((wc->n + 1) * sizeof *tr->wlen);
  tr->sym = malloc((wc->index.arena_len + 1) * sizeof *tr->sym);
  tr->wcount = wc->count;
  if (!tr->start || !tr->wlen || !tr->sym) return tsl_error(TESSEL_E_NOMEM, "out of host memory training a tokenizer");
  size_t at = 0;
  for (size_t i = 0; i < wc->index.cap; i++) {
    size_t n;
    const char *key = tsl_strmap_key_at(&wc->index, i, &n);
    if (!key) continue;
    int64_t w = wc->index.value[i];
    tr->start[w] = at;
    tr->wlen[w] = (uint32_t)n;
    for (size_t k = 0; k < n; k++) tr->sym[at++] = byte_id[(unsigned char)key[k]];
  }
  return TESSEL_OK;
fail:
  return st;
}

static tsl_status count_pairs(trainer *tr) {
  tsl_status st;
  TSL_TRY(st, tsl_pairmap_init(&tr->counts, 1 << 16));
  TSL_TRY(st, tsl_pairmap_init(&tr->gained, 1 << 16));
  for (size_t w = 0; w < tr->n_words; w++) {
    const int32_t *s = tr->sym + tr->start[w];
    for (uint32_t k = 0; k + 1 < tr->wlen[w]; k++) TSL_TRY(st, note_change(tr, (uint32_t)s[k], (uint32_t)s[k + 1], 1, (int32_t)w));
  }
  return queue_gained(tr);
fail:
  return st;
}

static void trainer_free(trainer *tr) {
  for (size_t i = 0; i < tr->nh; i++) free(tr->heap[i].pos.v);
  for (size_t i = 0; i < tr->n_gained; i++) free(tr->gained_lists[i].v);
  free(tr->heap);
  free(tr->gained_lists);
  tsl_pairmap_free(&tr->counts);
  tsl_pairmap_free(&tr->gained);
  tsl_strmap_free(&tr->vocab);
  free(tr->str);
  free(tr->off);
  free(tr->len);
  free(tr->sym);
  free(tr->start);
  free(tr->wlen);
  free(tr->merges);
}

/* The output must not be one of the inputs (by any name: the same file):
** its atomic write would replace the text with the tokenizer. */
static tsl_status check_output(const char *const *files, int n_files, const char *out_path) {
  struct stat out, in;
  if (stat(out_path, &out) != 0) return TESSEL_OK; /* a new file */
  for (int i = 0; i < n_files; i++)
    if (stat(files[i], &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
      return tsl_error(TESSEL_E_CONFIG, "-o %s is the input file %s: writing the tokenizer there would replace the "
                       "text it is trained on; write it to another file", out_path, files[i]);
  return TESSEL_OK;
}

tsl_status tsl_tokenizer_train(const char *const *files, int n_files, const tsl_tokenizer_train_opts *o,
                               const char *out_path, tsl_tokenizer_train_report *report) {
  tsl_status st;
  trainer tr = {0};
  word_counts wc = {0};
  tsl_pretok *p = NULL;
  const char *pattern = o->pattern ? o->pattern : tsl_gpt2_pattern;
  if (o->vocab_size < o->n_special + 256 || o->vocab_size > (1 << 30))
    return tsl_error(TESSEL_E_CONFIG, "a vocabulary of %d is too small: the %d special token(s) and the 256 byte "
                     "symbols come first", o->vocab_size, o->n_special);
  if (n_files <= 0) return tsl_error(TESSEL_E_CONFIG, "no input files to train a tokenizer on");
  /* an empty regex matches between every two characters: single-character words, nothing to merge */
  if (o->pattern && !*o->pattern)
    return tsl_error(TESSEL_E_CONFIG, "--pattern is empty: it would cut the text into single characters, leaving "
                     "nothing to merge; give gpt2, llama3 or a regex");
  TSL_TRY(st, check_output(files, n_files, out_path));
  for (int i = 0; i < o->n_special; i++) { /* ids 0 .. n_special-1 are theirs, one each */
    if (!o->special[i][0]) return tsl_error(TESSEL_E_CONFIG, "a special token is empty");
    TSL_TRY(st, check_special(o->special[i]));
    for (int j = 0; j < i; j++)
      if (strcmp(o->special[i], o->special[j]) == 0)
        return tsl_error(TESSEL_E_CONFIG, "special token '%s' is given twice", o->special[i]);
  }
  TSL_TRY(st, tsl_pretok_create(pattern, "--pattern", &p));
  TSL_TRY(st, count_files(&wc, p, files, n_files));
  if (wc.bytes == 0) { /* as data prepare refuses it: a tokenizer of no text would be one of bytes alone */
    st = tsl_error(TESSEL_E_IO, "empty input: %s%s holds no bytes", files[0],
                   n_files > 1 ? " and every other input file" : "");
    goto fail;
  }
  TSL_TRY(st, initial_symbols(&tr, &wc, o));
  TSL_TRY(st, count_pairs(&tr));
  TSL_TRY(st, merge_loop(&tr, o));
  tsl_bpe_json out = {.strings = tr.str, .off = tr.off, .len = tr.len, .n_tokens = tr.n_tokens,
                      .merges = tr.merges, .n_merges = tr.n_merges, .n_special = o->n_special,
                      .pattern = o->pattern && strcmp(o->pattern, tsl_gpt2_pattern) != 0 ? o->pattern : NULL};
  TSL_TRY(st, tsl_bpe_write_json(out_path, &out));
  if (report) {
    *report = (tsl_tokenizer_train_report){.bytes = wc.bytes, .words = wc.pieces, .unique_words = wc.n,
                                           .vocab_size = tr.n_tokens, .merges = tr.n_merges};
  }
fail:
  trainer_free(&tr);
  tsl_strmap_free(&wc.index);
  free(wc.count);
  tsl_pretok_free(p);
  return st;
}
