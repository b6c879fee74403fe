/*
** tests/fuzz/fuzz_loop.c — a plain mutation loop, for builds without
** libFuzzer (gcc, and CI's AddressSanitizer + UBSan build).
**
** usage: fuzz_TARGET --corpus DIR [--iterations N] [--seed S] [--dict FILE] [--max-len BYTES]
**
** Every file in DIR — the seed corpus, and the inputs of past crashes kept
** as regression tests — runs first, as it is. Then N inputs, each a seed
** with one to four mutations stacked: bit flips, interesting bytes and
** integers (0, -1, 2^31, ...), inserted, deleted, duplicated or repeated
** ranges, tokens of the dictionary (libFuzzer's format, so both modes use
** one file), splices of two seeds, truncation. The generator is seeded
** (default 1), so a run is reproducible. There is no coverage feedback:
** libFuzzer builds add that.
**
** A crash, a sanitizer report or an input still running after 10 s saves
** the input as DIR/crash-ITERATION (or hang-ITERATION) — so it joins the
** corpus, and once committed every later run replays it — and the process
** dies with the report, failing the test.
*/
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

/* Sanitizer runtimes call this before they end the process on a report;
** absent (NULL) in a build without them. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

typedef struct bytes {
  uint8_t *p;
  size_t n;
} bytes;

static const char *corpus_dir;
static const uint8_t *current;
static size_t current_size;
static long current_iteration = -1; /* -1: replaying the corpus */

/* ---- saving the input that failed (async-signal-safe: open/write) ---- */

static void save_input(const char *kind) {
  if (current_iteration < 0) return; /* a corpus file failed: it is saved already */
  char path[4200], num[24];
  int k = sizeof num - 1;
  unsigned long it = current_iteration < 0 ? 0 : (unsigned long)current_iteration;
  num[k] = '\0';
  do num[--k] = (char)('0' + it % 10); while ((it /= 10) && k > 0);
  size_t len = 0;
  for (const char *s = corpus_dir; *s && len < 4000; s++) path[len++] = *s;
  path[len++] = '/';
  for (const char *s = kind; *s; s++) path[len++] = *s;
  for (const char *s = num + k; *s; s++) path[len++] = *s;
  path[len] = '\0';
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  for (size_t off = 0; off < current_size;) {
    ssize_t w = write(fd, current + off, current_size - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  close(fd);
  static const char note[] = "\nfuzz: the failing input is saved as ";
  (void)!write(2, note, sizeof note - 1);
  (void)!write(2, path, len);
  (void)!write(2, " (it replays as a regression test once committed)\n", 51);
}

static void on_death(void) { save_input("crash-"); }

static void on_signal(int sig) {
  save_input(sig == SIGALRM ? "hang-" : "crash-");
  signal(sig, SIG_DFL);
  raise(sig == SIGALRM ? SIGABRT : sig);
}

static void install_handlers(void) {
  signal(SIGALRM, on_signal);
  signal(SIGABRT, on_signal);
  if (__sanitizer_set_death_callback) {
    __sanitizer_set_death_callback(on_death); /* the sanitizer reports, then calls it */
    return;
  }
  signal(SIGSEGV, on_signal);
  signal(SIGBUS, on_signal);
  signal(SIGFPE, on_signal);
  signal(SIGILL, on_signal);
}

static void run_one(const uint8_t *data, size_t size) {
  current = data;
  current_size = size;
  alarm(10);
  LLVMFuzzerTestOneInput(data, size);
  alarm(0);
}

/* ---- inputs ---- */

static uint64_t rng_state = 1;

static uint64_t next_random(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static size_t below(size_t n) { return n ? (size_t)(next_random() % n) : 0; }

static int read_whole(const char *path, bytes *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  size_t cap = 4096;
  out->p = malloc(cap);
  out->n = 0;
  for (size_t r; out->p && (r = fread(out->p + out->n, 1, cap - out->n, f)) > 0;) {
    out->n += r;
    if (out->n == cap) out->p = realloc(out->p, cap *= 2);
  }
  fclose(f);
  return out->p ? 0 : -1;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every regular file of the corpus directory, sorted by name. */
static int load_corpus(const char *dir, bytes **out) {
  DIR *d = opendir(dir);
  char **names = NULL;
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    names = realloc(names, sizeof *names * (size_t)(n + 1));
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  if (n) qsort(names, (size_t)n, sizeof *names, by_name);
  *out = calloc((size_t)n + 1, sizeof **out);
  int kept = 0;
  for (int i = 0; i < n; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    if (read_whole(path, &(*out)[kept]) == 0) kept++;
    free(names[i]);
  }
  free(names);
  return kept;
}

/* A libFuzzer dictionary: one "token" per line (a name= before it allowed),
** with \\, \" and \xNN escapes; '#' starts a comment. */
static int load_dict(const char *path, bytes **out) {
  bytes file;
  int n = 0;
  *out = NULL;
  if (!path) return 0;
  if (read_whole(path, &file) < 0) return -1;
  char *text = realloc(file.p, file.n + 1);
  text[file.n] = '\0';
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    char *q = strchr(line, '"'), *end = strrchr(line, '"');
    if (line[strspn(line, " \t")] == '#' || !q || end == q) continue;
    uint8_t *tok = malloc((size_t)(end - q));
    size_t len = 0;
    for (char *c = q + 1; c < end; c++) {
      if (*c == '\\' && c[1] == 'x' && c + 3 < end) {
        char hex[3] = {c[2], c[3], 0};
        tok[len++] = (uint8_t)strtoul(hex, NULL, 16);
        c += 3;
      } else {
        tok[len++] = (uint8_t)(*c == '\\' && c + 1 < end ? *++c : *c);
      }
    }
    *out = realloc(*out, sizeof **out * (size_t)(n + 1));
    (*out)[n++] = (bytes){tok, len};
  }
  free(text);
  return n;
}

/* Room for `extra` more bytes within max. */
static int fits(const bytes *b, size_t extra, size_t max) { return b->n + extra <= max; }

static void insert(bytes *b, size_t at, const uint8_t *src, size_t n) {
  memmove(b->p + at + n, b->p + at, b->n - at);
  memcpy(b->p + at, src, n);
  b->n += n;
}

static void mutate(bytes *b, size_t max, const bytes *seeds, int n_seeds, const bytes *dict, int n_dict) {
  static const uint8_t small[] = {0, 1, 0x7f, 0x80, 0xff, '\n', ' ', '0', '9', '-', '"', '\\', '{', '[', ':'};
  static const uint64_t wide[] = {0, 1, UINT64_MAX, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff,
                                  0x7fffffff, 0x80000000, 0xffffffff, 1ull << 53, 1ull << 63};
  uint8_t tmp[256];
  size_t at = below(b->n + 1), len;
  switch (below(11)) {
    case 0: if (b->n) b->p[below(b->n)] ^= (uint8_t)(1u << below(8)); break;
    case 1: if (b->n) b->p[below(b->n)] = small[below(sizeof small)]; break;
    case 2: { /* an interesting integer, little-endian, 2, 4 or 8 bytes */
      size_t w = (size_t)2 << below(3);
      uint64_t v = wide[below(sizeof wide / sizeof *wide)];
      if (b->n >= w) {
        at = below(b->n - w + 1);
        for (size_t k = 0; k < w; k++) b->p[at + k] = (uint8_t)(v >> (8 * k));
      }
      break;
    }
    case 3: /* delete a range */
      len = below(16) + 1;
      if (at + len <= b->n) {
        memmove(b->p + at, b->p + at + len, b->n - at - len);
        b->n -= len;
      }
      break;
    case 4: /* random bytes */
      len = below(16) + 1;
      for (size_t k = 0; k < len; k++) tmp[k] = (uint8_t)next_random();
      if (fits(b, len, max)) insert(b, at, tmp, len);
      break;
    case 5: /* copy a range elsewhere */
      len = below(sizeof tmp) + 1;
      if (b->n && fits(b, len, max)) {
        size_t from = below(b->n);
        len = len < b->n - from ? len : b->n - from;
        memcpy(tmp, b->p + from, len);
        insert(b, at, tmp, len);
      }
      break;
    case 6: /* repeat a short range: deep nesting, long runs */
      len = below(4) + 1;
      if (b->n >= len) {
        size_t from = below(b->n - len + 1), times = below(200) + 2;
        memcpy(tmp, b->p + from, len);
        for (size_t t = 0; t < times && fits(b, len, max); t++) insert(b, from, tmp, len);
      }
      break;
    case 7: /* insert a dictionary token */
    case 8: /* overwrite with one */
      if (n_dict) {
        const bytes *t = &dict[below((size_t)n_dict)];
        if (below(2) && at + t->n <= b->n) memcpy(b->p + at, t->p, t->n);
        else if (fits(b, t->n, max)) insert(b, at, t->p, t->n);
      }
      break;
    case 9: { /* splice: our head, another seed's tail */
      const bytes *o = &seeds[below((size_t)n_seeds)];
      size_t from = below(o->n + 1);
      if (at + (o->n - from) <= max) {
        memcpy(b->p + at, o->p + from, o->n - from);
        b->n = at + (o->n - from);
      }
      break;
    }
    default: b->n = at; /* truncate */
  }
}

static int usage(const char *me) {
  fprintf(stderr, "usage: %s --corpus DIR [--iterations N] [--seed S] [--dict FILE] [--max-len BYTES]\n", me);
  return 2;
}

int main(int argc, char **argv) {
  long iterations = 1000;
  size_t max = 1 << 16;
  const char *dict_path = NULL, *me = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) return usage(me);
    if (!strcmp(argv[i], "--corpus")) corpus_dir = argv[++i];
    else if (!strcmp(argv[i], "--iterations")) iterations = atol(argv[++i]);
    else if (!strcmp(argv[i], "--seed")) rng_state = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--dict")) dict_path = argv[++i];
    else if (!strcmp(argv[i], "--max-len")) max = (size_t)atol(argv[++i]);
    else return usage(me);
  }
  if (!corpus_dir || iterations < 0 || max < 16) return usage(me);
  uint64_t seed = rng_state;
  bytes *seeds, *dict;
  int n_seeds = load_corpus(corpus_dir, &seeds), n_dict = load_dict(dict_path, &dict);
  if (n_seeds <= 0 || n_dict < 0) {
    fprintf(stderr, "%s: no seed inputs in %s or no dictionary %s: %s\n", me, corpus_dir,
            dict_path ? dict_path : "", strerror(errno));
    return 1;
  }
  LLVMFuzzerInitialize(&argc, &argv);
  install_handlers();
  for (int i = 0; i < n_seeds; i++) run_one(seeds[i].p, seeds[i].n);
  bytes b = {malloc(max), 0};
  for (current_iteration = 0; current_iteration < iterations; current_iteration++) {
    const bytes *s = &seeds[below((size_t)n_seeds)];
    b.n = s->n < max ? s->n : max;
    memcpy(b.p, s->p, b.n);
    for (size_t m = below(4) + 1; m > 0; m--) mutate(&b, max, seeds, n_seeds, dict, n_dict);
    run_one(b.p, b.n);
  }
  printf("%s: %d corpus inputs and %ld mutated ones (seed %llu), no crash, no hang\n", me, n_seeds, iterations,
         (unsigned long long)seed);
  for (int i = 0; i < n_seeds; i++) free(seeds[i].p);
  for (int i = 0; i < n_dict; i++) free(dict[i].p);
  free(seeds);
  free(dict);
  free(b.p);
  return 0;
}
