/*
** core/data/prepare.c — text files to token shards, byte-level or through a
** tokenizer.
**
** Every input is stat'ed first, so each file's train/val split point and the
** number of shards are known before anything is written. Then each split is
** produced in its own pass over the files, reading only that split's byte
** ranges in small chunks into one shard-sized token buffer: memory stays at
** one shard's worth however large the corpus is. With a tokenizer the files
** are mapped and encoded side by side, one per thread (a large file cut into
** segments where the tokenizer allows), and their ids go into the shard
** buffer in the files' order (write_split_tokens).
**
** Shards are written under staged names (.train_000000.bin.part), which the
** globs that read a directory's shards do not match, and moved into place
** only once both splits are written: a preparation that fails halfway (a
** read error, a full disk) leaves an earlier preparation's shards as they
** were. The price is room for both sets until the end.
*/
#include "data/prepare.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"
#include "data/record.h"
#include "data/shard.h"

#define PREPARE_CHUNK_BYTES (1u << 16)
/* Text each thread encodes per batch of files (see write_split_tokens). */
#define PREPARE_BATCH_BYTES (16u << 20)
/* A file's part longer than this is cut into segments that threads encode
** side by side (tsl_prepare_opts.segment_bytes, 0: this). */
#define PREPARE_SEGMENT_BYTES (4u << 20)
/* Shard names carry six digits; more shards would break name order. */
#define PREPARE_MAX_SHARDS 1000000ull
/* Shards hold uint16 ids up to TSL_SHARD_NARROW_VOCAB tokens, uint32 ids
** (llm.c's Llama 3 format) past it, up to the vocabulary a model takes. */
#define PREPARE_MAX_VOCAB (1 << 24)

typedef struct input_file {
  char *path;
  uint64_t size;      /* bytes when stat'ed */
  uint64_t val_bytes; /* the last val_bytes go to validation */
  dev_t dev;          /* which file it is, whatever it is called */
  ino_t ino;
} input_file;

typedef struct input_list {
  input_file *v;
  int n, cap;
} input_list;

/* Tokenizers for the threads that encode files, one each. */
typedef struct encoders {
  tsl_tokenizer **t;
  int n;
} encoders;

/* Accumulates one split's tokens and writes DIR/<split>_NNNNNN.bin whenever
** the buffer holds a full shard. */
typedef struct shard_sink {
  const char *dir, *split;
  void *buf;     /* uint16_t ids, or uint32_t when wide */
  int wide;
  uint64_t cap, len;
  uint64_t total; /* tokens written to this split */
  int shards;
} shard_sink;

static void input_list_free(input_list *l) {
  for (int i = 0; i < l->n; i++) free(l->v[i].path);
  free(l->v);
  memset(l, 0, sizeof *l);
}

/* Add a file once: named twice (say "a.txt" and "*.txt"), or through
** another name (a link), it was prepared twice, its tokens doubled. A file
** this process may not read is refused here, before anything is written
** (it failed halfway through, after the output directory was made and its
** earlier shards replaced). */
static tsl_status input_list_add(input_list *l, const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return tsl_error(TESSEL_E_IO, "%s: cannot open: %s", path, strerror(errno));
  if (!S_ISREG(sb.st_mode)) return tsl_error(TESSEL_E_IO, "%s: not a regular file", path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tsl_error(TESSEL_E_IO, "%s: cannot read: %s", path, strerror(errno));
  close(fd);
  for (int i = 0; i < l->n; i++)
    if (l->v[i].dev == sb.st_dev && l->v[i].ino == sb.st_ino) return TESSEL_OK;
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    input_file *v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return tsl_error(TESSEL_E_NOMEM, "out of host memory listing input files");
    l->v = v;
    l->cap = cap;
  }
  input_file *f = &l->v[l->n];
  f->path = tsl_strdup(path);
  if (!f->path) return TESSEL_E_NOMEM;
  f->size = (uint64_t)sb.st_size;
  f->dev = sb.st_dev;
  f->ino = sb.st_ino;
  f->val_bytes = 0;
  l->n++;
  return TESSEL_OK;
}

int tsl_data_own_file(const char *real_out_dir, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  int index = 0, used = 0;
  char split[8];
  int shard = sscanf(base, "%5[a-z]_%6d.bin%n", split, &index, &used) == 2 && !base[used] &&
              (!strcmp(split, "train") || !strcmp(split, "val"));
  if (!real_out_dir ||
      (!shard && strcmp(base, "tokens.json") && strcmp(base, TSL_DATA_STAMP) && strcmp(base, TSL_DATA_LOCK)))
    return 0;
  char *dir = tsl_dirname(path), *real = dir ? realpath(dir, NULL) : NULL;
  int same = real && !strcmp(real, real_out_dir);
  free(dir);
  free(real);
  return same;
}

/* An input that exists is a file even if its name has glob characters;
** otherwise a pattern is expanded (sorted) and a plain name is missing.
** A pattern's matches among out_dir's own files (real_out: its realpath),
** and directories, are not inputs; such a file named itself is refused:
** preparing would replace the input it reads (a shard once became an
** encoding of itself). */
static tsl_status expand_input(input_list *l, const char *input, const char *out_dir, const char *real_out) {
  if (tsl_path_exists(input) && tsl_data_own_file(real_out, input))
    return tsl_error(TESSEL_E_CONFIG, "input %s is one of the files preparing into %s writes (its shards and "
                     "records): it would be replaced by what is made from it; prepare into another directory", input,
                     out_dir);
  if (tsl_path_exists(input) || !strpbrk(input, "*?[")) return input_list_add(l, input);

  glob_t g;
  int rc = glob(input, 0, NULL, &g);
  if (rc == GLOB_NOMATCH) {
    globfree(&g);
    return tsl_error(TESSEL_E_IO, "input '%s' matches no files", input);
  }
  if (rc != 0) {
    globfree(&g);
    return tsl_error(TESSEL_E_IO, "input '%s': cannot expand the pattern", input);
  }
  tsl_status st = TESSEL_OK;
  size_t skipped = 0;
  for (size_t i = 0; i < g.gl_pathc && st == TESSEL_OK; i++) {
    struct stat sb;
    if (tsl_data_own_file(real_out, g.gl_pathv[i])) skipped++;
    else if (stat(g.gl_pathv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) skipped++; /* a pattern means the files */
    else st = input_list_add(l, g.gl_pathv[i]);
  }
  if (st >= 0 && skipped == g.gl_pathc)
    st = tsl_error(TESSEL_E_IO, "input '%s' matches only directories, or the shards and records %s holds, which "
                   "are prepared there: no text", input, out_dir);
  globfree(&g);
  return st;
}

static char *shard_path(const char *dir, const char *split, int index) {
  return tsl_asprintf("%s/%s_%06d.bin", dir, split, index);
}

static char *staged_path(const char *dir, const char *split, int index) {
  return tsl_asprintf("%s/.%s_%06d.bin.part", dir, split, index);
}

static tsl_status sink_flush(shard_sink *s) {
  if (s->len == 0) return TESSEL_OK;
  char *path = staged_path(s->dir, s->split, s->shards);
  if (!path) return TESSEL_E_NOMEM;
  tsl_status st = s->wide ? tsl_shard_write_wide(path, s->buf, s->len) : tsl_shard_write(path, s->buf, s->len);
  free(path);
  if (st < 0) return st;
  s->shards++;
  s->total += s->len;
  s->len = 0;
  return TESSEL_OK;
}

static void sink_put(shard_sink *s, uint32_t id) {
  if (s->wide) ((uint32_t *)s->buf)[s->len++] = id;
  else ((uint16_t *)s->buf)[s->len++] = (uint16_t)id;
}

/* A tsl_token_sink over a shard_sink. */
static tsl_status sink_ids(void *ctx, const int32_t *ids, size_t n) {
  shard_sink *s = ctx;
  for (size_t i = 0; i < n; i++) {
    sink_put(s, (uint32_t)ids[i]);
    if (s->len == s->cap) {
      tsl_status st = sink_flush(s);
      if (st < 0) return st;
    }
  }
  return TESSEL_OK;
}

/* A stretch of one file's part of a split that one thread encodes: the
** whole part (found once the file is mapped for encoding), or bytes
** [lo, hi) of a part that was cut; after the part's end-of-text token when
** it is the part's first. */
typedef struct segment {
  const input_file *f;
  int val, whole, first;
  uint64_t lo, hi;
} segment;

typedef struct segment_list {
  segment *v;
  int n, cap;
} segment_list;

static tsl_status map_whole(const input_file *f, const char **text, size_t *len) {
  tsl_status st = tsl_map_file(f->path, text, len);
  if (st < 0) return st;
  if (*len == f->size) return TESSEL_OK;
  tsl_unmap_file(*text, *len);
  return tsl_error(TESSEL_E_IO, "%s: changed size while being prepared (%llu bytes, then %zu)", f->path,
                   (unsigned long long)f->size, *len);
}

static tsl_status add_segment(segment_list *l, segment g) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 16;
    segment *v = l->cap < INT32_MAX / 2 ? realloc(l->v, (size_t)cap * sizeof *v) : NULL;
    if (!v) return tsl_error(TESSEL_E_NOMEM, "out of host memory listing the texts to encode");
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = g;
  return TESSEL_OK;
}

/* The bytes of a file's part of a split, give or take the character its
** split point moves by (part_bounds). */
static uint64_t part_size(const input_file *f, int val) { return val ? f->val_bytes : f->size - f->val_bytes; }

/* A file's part of a split in its mapped text: val = 0, its training bytes
** [0, cut); 1, its validation bytes [cut, size); the split point moved
** forward to a character boundary so no character is cut in two. */
static void part_bounds(const input_file *f, const char *text, size_t len, int val, uint64_t *lo, uint64_t *hi) {
  size_t cut = (size_t)(f->size - f->val_bytes);
  while (cut < len && ((unsigned char)text[cut] & 0xc0) == 0x80) cut++;
  *lo = val ? cut : 0;
  *hi = val ? len : cut;
}

/* The segments of one split (val = 0: training, 1: validation), in file
** order. A part longer than `every` bytes is cut where the tokenizer
** allows, about every `every` bytes, so one large file is encoded by
** several threads too; only such a file is mapped here (mapping each of
** 2000 small files once more made their preparation half as slow again). */
static tsl_status plan_segments(const input_list *l, int val, const tsl_tokenizer *t, uint64_t every,
                                segment_list *out) {
  tsl_status st = TESSEL_OK;
  for (int i = 0; i < l->n && st >= 0; i++) {
    const input_file *f = &l->v[i];
    uint64_t part = part_size(f, val);
    if (part == 0) continue;
    if (part <= every) {
      st = add_segment(out, (segment){.f = f, .val = val, .whole = 1, .first = 1});
      continue;
    }
    const char *text;
    size_t len;
    uint64_t lo, hi;
    if ((st = map_whole(f, &text, &len)) < 0) return st;
    part_bounds(f, text, len, val, &lo, &hi);
    for (int first = 1; lo < hi && st >= 0; first = 0) {
      size_t at = hi - lo > every ? tsl_tokenizer_cut(t, text, (size_t)hi, (size_t)(lo + every), (size_t)hi) : 0;
      uint64_t end = at ? at : hi;
      st = add_segment(out, (segment){.f = f, .val = val, .first = first, .lo = lo, .hi = end});
      lo = end;
    }
    tsl_unmap_file(text, len);
  }
  return st;
}

/* One segment through the tokenizer into v. */
static tsl_status encode_segment(const segment *g, tsl_tokenizer *t, tsl_token_vec *v) {
  const char *text;
  size_t len;
  tsl_status st = map_whole(g->f, &text, &len);
  if (st < 0) return st;
  uint64_t lo = g->lo, hi = g->hi;
  if (g->whole) part_bounds(g->f, text, len, g->val, &lo, &hi);
  int32_t eot = tsl_tokenizer_eot(t);
  if (g->first && lo < hi) st = tsl_token_vec_sink(v, &eot, 1);
  if (st >= 0)
    st = tsl_tokenizer_encode(t, text + lo, (size_t)(hi - lo), g->first ? 0 : TSL_TOK_CONTINUED, tsl_token_vec_sink, v);
  if (st < 0) tsl_error_wrap(st, "%s", g->f->path);
  tsl_unmap_file(text, len);
  return st;
}

/* Every file's part of one split through the tokenizer, into the sink in
** file order: each part a document (its end-of-text token, then its text).
** The segments are taken in batches of about PREPARE_BATCH_BYTES of text
** per thread, each encoded by one thread with its own tokenizer
** (e->t[thread]); the batch's ids wait, at most 4 bytes per byte of text,
** to be written in order, so the shards are the same bytes whatever the
** number of threads and wherever the parts are cut. */
static tsl_status write_split_tokens(const input_list *l, int val, shard_sink *s, const encoders *e,
                                     uint64_t every) {
  segment_list segs = {0};
  tsl_status st = plan_segments(l, val, e->t[0], every, &segs);
  int n = segs.n;
  tsl_token_vec *vecs = calloc((size_t)n + 1, sizeof *vecs);
  tsl_status *sts = calloc((size_t)n + 1, sizeof *sts);
  char **why = calloc((size_t)n + 1, sizeof *why);
  if (st >= 0 && (!vecs || !sts || !why)) st = tsl_error(TESSEL_E_NOMEM, "out of host memory for the ids of %d texts", n);
  const uint64_t budget = (uint64_t)PREPARE_BATCH_BYTES * (uint64_t)e->n;
  for (int lo = 0, hi; lo < n && st >= 0; lo = hi) {
    uint64_t bytes = 0;
    for (hi = lo; hi < n && (hi == lo || bytes < budget); hi++) {
      const segment *g = &segs.v[hi];
      bytes += g->whole ? part_size(g->f, val) : g->hi - g->lo;
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(e->n) if (e->n > 1 && hi - lo > 1)
    for (int i = lo; i < hi; i++) {
      /* the error slot is each thread's own: its message is carried out */
      if ((sts[i] = encode_segment(&segs.v[i], e->t[omp_get_thread_num()], &vecs[i])) < 0)
        why[i] = strdup(tsl_error_message());
    }
    for (int i = lo; i < hi; i++) {
      if (st >= 0 && sts[i] < 0) st = why[i] ? tsl_error(sts[i], "%s", why[i]) : sts[i];
      if (st >= 0) st = sink_ids(s, vecs[i].ids, vecs[i].n);
      tsl_token_vec_free(&vecs[i]);
      free(why[i]);
    }
  }
  free(segs.v);
  free(vecs);
  free(sts);
  free(why);
  return st;
}

/* The caller's tokenizer and, for a corpus of several files, one more per
** further thread, parsed from its JSON side by side; a parse that fails
** (memory running short) means fewer threads, not an error. */
static tsl_status encoders_make(tsl_tokenizer *t, int files, encoders *e) {
  int want = TSL_MIN(omp_get_max_threads(), TSL_MAX(files, 1));
  if (!(e->t = calloc((size_t)want, sizeof *e->t)))
    return tsl_error(TESSEL_E_NOMEM, "out of host memory for %d tokenizers", want);
  size_t len;
  const char *json = tsl_tokenizer_json(t, &len);
  e->t[0] = t;
#pragma omp parallel for schedule(dynamic, 1) num_threads(want) if (want > 1)
  for (int i = 1; i < want; i++)
    if (tsl_tokenizer_parse(json, len, tsl_tokenizer_name(t), &e->t[i]) < 0) e->t[i] = NULL;
  e->n = 1;
  for (int i = 1; i < want; i++)
    if (e->t[i]) e->t[e->n++] = e->t[i];
  return TESSEL_OK;
}

static void encoders_free(encoders *e) {
  for (int i = 1; i < e->n; i++) tsl_tokenizer_free(e->t[i]);
  free(e->t);
}

/* Append bytes [lo, hi) of one file to the sink, a chunk at a time. */
static tsl_status sink_file_range(shard_sink *s, const input_file *f, uint64_t lo, uint64_t hi,
                                  unsigned char *chunk) {
  tsl_status st = TESSEL_OK;
  if (lo == hi) return TESSEL_OK;
  int fd = open(f->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tsl_error(TESSEL_E_IO, "%s: cannot open: %s", f->path, strerror(errno));
  if (lseek(fd, (off_t)lo, SEEK_SET) < 0) {
    st = tsl_error(TESSEL_E_IO, "%s: cannot seek: %s", f->path, strerror(errno));
    goto done;
  }
  for (uint64_t off = lo; off < hi;) {
    uint64_t k = TSL_MIN(TSL_MIN((uint64_t)PREPARE_CHUNK_BYTES, hi - off), s->cap - s->len);
    /* a file that shrank since it was stat'ed fails here as truncated */
    if ((st = tsl_read_all(fd, chunk, (size_t)k, f->path)) < 0) goto done;
    for (uint64_t j = 0; j < k; j++) sink_put(s, chunk[j]);
    off += k;
    if (s->len == s->cap && (st = sink_flush(s)) < 0) goto done;
  }
done:
  close(fd);
  return st;
}

/* Write one split (val = 0: train, 1: validation) of every file: through
** the encoders when there are any, else as bytes. */
static tsl_status write_split(const input_list *l, int val, shard_sink *s, unsigned char *chunk, const encoders *e,
                              uint64_t every) {
  tsl_status st = TESSEL_OK;
  if (e->n > 0) {
    TSL_TRY(st, write_split_tokens(l, val, s, e, every));
  } else {
    for (int i = 0; i < l->n; i++) {
      const input_file *f = &l->v[i];
      uint64_t cut = f->size - f->val_bytes;
      TSL_TRY(st, sink_file_range(s, f, val ? cut : 0, val ? f->size : cut, chunk));
    }
  }
  TSL_TRY(st, sink_flush(s));
fail:
  return st;
}

/* A rerun that makes fewer shards must not leave the old run's shards
** behind, or a glob over the directory would mix the two corpora: every
** SPLIT_<digits>.bin numbered `from` or later goes, wherever the numbering
** has gaps (walking up from `from` until a number was missing once left a
** stale shard after a gap in place). */
static tsl_status remove_stale_shards(const char *dir, const char *split, int from) {
  tsl_status st = TESSEL_OK;
  char *pattern = tsl_asprintf("%s/%s_*.bin", dir, split);
  glob_t g = {0};
  if (!pattern) return TESSEL_E_NOMEM;
  int rc = glob(pattern, 0, NULL, &g);
  free(pattern);
  if (rc == GLOB_NOMATCH) return TESSEL_OK;
  if (rc != 0) return tsl_error(TESSEL_E_IO, "%s: cannot list its %s shards", dir, split);
  for (size_t i = 0; i < g.gl_pathc && st >= 0; i++) {
    const char *name = strrchr(g.gl_pathv[i], '/') + 1 + strlen(split) + 1, *end = name;
    while (*end >= '0' && *end <= '9') end++;
    if (end == name || strcmp(end, ".bin") != 0 || end - name > 9 || atoi(name) < from) continue;
    if (unlink(g.gl_pathv[i]) != 0 && errno != ENOENT)
      st = tsl_error(TESSEL_E_IO, "%s: cannot remove a stale shard: %s", g.gl_pathv[i], strerror(errno));
  }
  globfree(&g);
  return st;
}

/* Every staged shard in dir: this preparation's after it failed, or those a
** preparation that was killed left behind. */
static void remove_staged(const char *dir) {
  static const char *const splits[] = {"train", "val"};
  for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
    char *pattern = tsl_asprintf("%s/.%s_*.bin.part", dir, splits[s]);
    glob_t g = {0};
    if (pattern && glob(pattern, 0, NULL, &g) == 0)
      for (size_t i = 0; i < g.gl_pathc; i++) unlink(g.gl_pathv[i]);
    globfree(&g);
    free(pattern);
  }
}

/* One split's staged shards into place (each rename replaces the old shard
** of its number), then the old shards numbered past them out. */
static tsl_status commit_split(const shard_sink *s) {
  tsl_status st = TESSEL_OK;
  for (int i = 0; i < s->shards && st >= 0; i++) {
    char *from = staged_path(s->dir, s->split, i), *to = shard_path(s->dir, s->split, i);
    if (!from || !to) st = TESSEL_E_NOMEM;
    else if (rename(from, to) != 0)
      st = tsl_error(TESSEL_E_IO, "%s: cannot move the new shard into place: %s; %s now holds part of the new "
                     "shards and part of the old ones: prepare it again", to, strerror(errno), s->dir);
    free(from);
    free(to);
  }
  if (st >= 0) st = remove_stale_shards(s->dir, s->split, s->shards);
  return st;
}

/* The new preparation in place of the old. First the stamp (which sources
** a run's data.text shards came from; the run writes its own after
** preparing) and the record that describe the old shards go: a failure
** from here leaves shards that nothing vouches for, never an old record
** over new shards. */
static tsl_status commit(const char *out_dir, const shard_sink sinks[2], const tsl_tokenizer *t) {
  static const char *const stale[] = {TSL_DATA_STAMP, "tokens.json"};
  tsl_status st = TESSEL_OK;
  for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++) {
    char *path = tsl_asprintf("%s/%s", out_dir, stale[i]);
    if (!path) return TESSEL_E_NOMEM;
    if (unlink(path) != 0 && errno != ENOENT)
      st = tsl_error(TESSEL_E_IO, "%s: cannot remove the record of an earlier preparation: %s", path,
                     strerror(errno));
    free(path);
    if (st < 0) return st;
  }
  TSL_TRY(st, commit_split(&sinks[0]));
  TSL_TRY(st, commit_split(&sinks[1]));
  TSL_TRY(st, tsl_data_record_write(out_dir, t));
fail:
  return st;
}

/* Take dir's lock exclusively, or refuse: another preparation writes there,
** or a run reads the shards it prepared there from data.text (two
** preparations once both wrote, and failed only at their renames). */
static tsl_status claim(const char *dir, int *fd) {
  char *path = tsl_asprintf("%s/" TSL_DATA_LOCK, dir);
  if (!path) return TESSEL_E_NOMEM;
  *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (*fd < 0) {
    tsl_status st = tsl_error(TESSEL_E_IO, "%s: cannot create its lock file: %s", dir, strerror(errno));
    free(path);
    return st;
  }
  free(path);
  if (flock(*fd, LOCK_EX | LOCK_NB) == 0) return TESSEL_OK;
  close(*fd);
  *fd = -1;
  return tsl_error(TESSEL_E_IO, "%s is in use: another tessel data prepare writes there, or a running tessel run "
                   "reads the shards it prepared there from data.text, and preparing would replace them under it. "
                   "Wait for it to end, or prepare into another directory", dir);
}

void tsl_data_dir_unmake(const char *out_dir, char *const *made) {
  static const char *const records[] = {"tokens.json", "tokenizer.json", TSL_DATA_STAMP, TSL_DATA_LOCK};
  remove_stale_shards(out_dir, "train", 0);
  remove_stale_shards(out_dir, "val", 0);
  for (size_t i = 0; i < sizeof records / sizeof records[0]; i++) {
    char *path = tsl_asprintf("%s/%s", out_dir, records[i]);
    if (path) unlink(path);
    free(path);
  }
  tsl_dirs_unmake(made);
}

static tsl_status check_tokenizer(const tsl_tokenizer *t) {
  if (tsl_tokenizer_vocab_size(t) > PREPARE_MAX_VOCAB)
    return tsl_error(TESSEL_E_CONFIG, "%s has %d tokens; tessel's models take a vocabulary of at most %d",
                     tsl_tokenizer_name(t), tsl_tokenizer_vocab_size(t), PREPARE_MAX_VOCAB);
  if (tsl_tokenizer_eot(t) < 0)
    return tsl_error(TESSEL_E_CONFIG, "%s has no end-of-text token to separate documents (a special added token "
                     "<|endoftext|>, <|end_of_text|>, </s> or <eos>)", tsl_tokenizer_name(t));
  return TESSEL_OK;
}

static uint64_t shards_for(uint64_t tokens, uint64_t shard_tokens) {
  return (tokens + shard_tokens - 1) / shard_tokens;
}

tsl_status tsl_data_prepare(const char *const *inputs, int n_inputs, const char *out_dir,
                            const tsl_prepare_opts *opts, tsl_prepare_report *report) {
  static const tsl_prepare_opts defaults = {.val_fraction = 0.1, .shard_tokens = 100000000ull};
  tsl_status st = TESSEL_OK;
  input_list files = {0};
  unsigned char *chunk = NULL;
  void *buf = NULL;
  uint64_t train = 0, val = 0;
  char *real_out = NULL, **made = NULL; /* made: the directories this call makes for out_dir */
  int lock = -1;
  shard_sink sinks[2] = {{.dir = out_dir, .split = "train"}, {.dir = out_dir, .split = "val"}};
  encoders enc = {0};

  if (!opts) opts = &defaults;
  if (!(opts->val_fraction >= 0.0 && opts->val_fraction <= 0.5))
    return tsl_error(TESSEL_E_CONFIG, "val_fraction %g is outside [0, 0.5]", opts->val_fraction);
  if (opts->shard_tokens == 0 || opts->shard_tokens > TSL_SHARD_MAX_TOKENS)
    return tsl_error(TESSEL_E_CONFIG, "shard_tokens %llu is outside [1, %llu]",
                     (unsigned long long)opts->shard_tokens, TSL_SHARD_MAX_TOKENS);
  if (n_inputs <= 0) return tsl_error(TESSEL_E_CONFIG, "no input files given");
  if (opts->tokenizer) TSL_TRY(st, check_tokenizer(opts->tokenizer));

  real_out = realpath(out_dir, NULL);
  for (int i = 0; i < n_inputs; i++) TSL_TRY(st, expand_input(&files, inputs[i], out_dir, real_out));
  for (int i = 0; i < files.n; i++) {
    input_file *f = &files.v[i];
    f->val_bytes = (uint64_t)floor((double)f->size * opts->val_fraction);
    train += f->size - f->val_bytes;
    val += f->val_bytes;
  }
  if (train + val == 0) {
    st = tsl_error(TESSEL_E_IO, "empty input: %s%s holds no bytes", files.v[0].path,
                   files.n > 1 ? " and every other input file" : "");
    goto fail;
  }
  if (shards_for(train, opts->shard_tokens) > PREPARE_MAX_SHARDS) {
    st = tsl_error(TESSEL_E_CONFIG, "%llu training tokens at shard_tokens = %llu make more than "
                   "%llu shards; raise shard_tokens", (unsigned long long)train,
                   (unsigned long long)opts->shard_tokens, PREPARE_MAX_SHARDS);
    goto fail;
  }
  if (!tsl_path_exists(out_dir) && !(made = tsl_dirs_to_make(out_dir))) {
    st = tsl_error(TESSEL_E_IO, "%s: cannot examine where it would be made: %s", out_dir, strerror(errno));
    goto fail;
  }
  TSL_TRY(st, tsl_mkdir_p(out_dir));
  if (!opts->locked) TSL_TRY(st, claim(out_dir, &lock));
  remove_staged(out_dir);

  /* with a tokenizer a part has at most one token per byte, plus its end-of-text
  ** and the up to 3 bytes a split point moves to a character boundary */
  uint64_t extra = opts->tokenizer ? 4 * (uint64_t)files.n : 0;
  uint64_t cap = TSL_MIN(opts->shard_tokens, train + extra);
  const int wide = opts->tokenizer && tsl_tokenizer_vocab_size(opts->tokenizer) > TSL_SHARD_NARROW_VOCAB;
  /* a thread per file, or per segment of a file of more than `every` bytes */
  const uint64_t every = opts->segment_bytes ? opts->segment_bytes : PREPARE_SEGMENT_BYTES;
  if (opts->tokenizer)
    TSL_TRY(st, encoders_make(opts->tokenizer, (int)TSL_MIN((train + val) / every + (uint64_t)files.n, 1u << 20), &enc));
  chunk = malloc(PREPARE_CHUNK_BYTES);
  buf = malloc((size_t)cap * (wide ? sizeof(uint32_t) : sizeof(uint16_t)));
  if (!chunk || !buf) {
    st = tsl_error(TESSEL_E_NOMEM, "out of host memory for a %llu-token shard buffer",
                   (unsigned long long)cap);
    goto fail;
  }
  for (int split = 0; split < 2; split++) {
    shard_sink *s = &sinks[split];
    s->buf = buf;
    s->wide = wide;
    uint64_t bytes = split ? val : train;
    s->cap = TSL_MIN(opts->shard_tokens, bytes ? bytes + extra : 0);
    if (s->cap > 0) TSL_TRY(st, write_split(&files, split, s, chunk, &enc, every));
  }
  TSL_TRY(st, commit(out_dir, sinks, opts->tokenizer));

  if (report) {
    report->files = files.n;
    report->train_tokens = sinks[0].total;
    report->val_tokens = sinks[1].total;
    report->train_shards = sinks[0].shards;
    report->val_shards = sinks[1].shards;
  }
fail:
  /* what it staged and the directories it made, never another's: not
  ** before it holds the lock (another preparation may have made them) */
  if (st < 0 && (lock >= 0 || opts->locked)) {
    remove_staged(out_dir);
    if (made) tsl_data_dir_unmake(out_dir, made);
  }
  if (lock >= 0) close(lock);
  tsl_dirs_free(made);
  free(buf);
  free(real_out);
  free(chunk);
  input_list_free(&files);
  encoders_free(&enc);
  return st;
}

