/* tools/cli/cmd_tokenizer.c — `tessel tokenizer train|encode|decode|info`. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/util.h"
#include "tokenizer/tokenizer.h"

static int tokenizer_cmd(int argc, char **argv);

static const struct option train_longs[] = {{"vocab", required_argument, 0, 'v'},   {"out", required_argument, 0, 'o'},
                                            {"special", required_argument, 0, 's'}, {"min-frequency", required_argument, 0, 'm'},
                                            {"pattern", required_argument, 0, 'p'}, {0, 0, 0, 0}};
static const tsl_options train_options = {"o:", train_longs};
static const struct option encode_longs[] = {{"count", no_argument, 0, 'c'},
                                             {"ordinary", no_argument, 0, 'r'},
                                             {"bytes", no_argument, 0, 'b'},
                                             {"skip-special", no_argument, 0, 'S'},
                                             {0, 0, 0, 0}};
static const tsl_options encode_options = {"", encode_longs};

const tsl_command tsl_cmd_tokenizer = {
    "tokenizer", "train a byte-level BPE tokenizer, or encode and decode with one",
    "usage: tessel tokenizer train FILE... --vocab N -o tokenizer.json [--special TOKEN]... [--min-frequency N]\n"
    "                              [--pattern gpt2|llama3|qwen2|REGEX]\n"
    "       tessel tokenizer encode TOKENIZER [FILE] [--count] [--ordinary]\n"
    "       tessel tokenizer decode TOKENIZER [FILE] [--bytes] [--skip-special]\n"
    "       tessel tokenizer info TOKENIZER\n\n"
    "train    learns a byte-level BPE of N tokens from the files (each file one text) as Hugging Face\n"
    "         tokenizers' BpeTrainer does given each file's whole text (train_from_iterator; its train(files)\n"
    "         feeds each line apart, which merges otherwise where a pattern's piece spans lines, as llama3's\n"
    "         and qwen2's runs of newlines do), and writes a tokenizer.json that tokenizers and transformers load.\n"
    "         Ids: the special tokens first (default <|endoftext|>), the 256 byte symbols, then the merges.\n"
    "           --vocab N             vocabulary size, special tokens and byte symbols included\n"
    "           -o, --out FILE        the tokenizer.json to write (not one of the input files)\n"
    "           --special TOKEN       a special token (repeatable; replaces the default)\n"
    "           --min-frequency N     merge only pairs seen at least N times (default 0)\n"
    "           --pattern P           pre-tokenizer regex: gpt2 (default), llama3, qwen2, or one as tokenizers\n"
    "                                 (Oniguruma) reads it (not empty)\n"
    "         Input files that hold no bytes at all are refused, as data prepare refuses them.\n"
    "encode   prints the ids of FILE (default: standard input) on one line; --count prints only how many;\n"
    "         added tokens such as <|endoftext|> in the text are recognised unless --ordinary.\n"
    "decode   reads ids (separated by white space) and writes their text as Hugging Face tokenizers' decode\n"
    "         does (U+FFFD where their bytes are not UTF-8), each as soon as it is whole; --bytes writes\n"
    "         the bytes they stand for instead, exactly (what encode read, invalid UTF-8 included);\n"
    "         --skip-special leaves out the added tokens marked special (<|endoftext|>, <s>), as\n"
    "         decode(ids, skip_special_tokens=True) does.\n"
    "info     prints the vocabulary size, the end-of-text id and the tokenizer's hash.\n"
    "TOKENIZER is a Hugging Face tokenizer.json of a BPE: byte-level (GPT-2, Llama 3, Qwen2, StarCoder,\n"
    "Falcon, DeepSeek, or one trained here) or SentencePiece's (Llama 2, Mistral 7B).\n",
    tokenizer_cmd, (const tsl_options *const[]){&train_options, &encode_options, NULL}};

#define MAX_SPECIAL 64

static int train(int argc, char **argv) {
  static const char *const default_special[] = {"<|endoftext|>"};
  const char *special[MAX_SPECIAL], *out = NULL;
  tsl_tokenizer_train_opts o = {.special = default_special, .n_special = 1};
  long long v;
  int c, n_special = 0;
  optind = 0;
  while ((c = tsl_getopt(argc, argv, &train_options)) != -1) {
    int ok = 1;
    const char *want = NULL;
    switch (c) {
      case 'v':
        ok = tsl_option_int(optarg, 2, 1 << 30, &o.vocab_size);
        want = "a vocabulary size from 2 to 1073741824";
        break;
      case 'o': out = optarg; break;
      case 's':
        ok = n_special < MAX_SPECIAL;
        if (ok) special[n_special++] = optarg;
        want = "at most " TSL_STR(MAX_SPECIAL) " special tokens";
        break;
      case 'm':
        ok = tsl_parse_count(optarg, &v) == 0;
        o.min_frequency = v;
        want = "a whole number of 0 or more";
        break;
      case 'p': o.pattern = tsl_tokenizer_pattern_named(optarg) ? tsl_tokenizer_pattern_named(optarg) : optarg; break;
      default: ok = 0;
    }
    if (!ok) return tsl_option_error(&tsl_cmd_tokenizer, train_longs, c, want);
  }
  if (!out) return tsl_usage_error(&tsl_cmd_tokenizer, "train: missing -o tokenizer.json");
  if (!o.vocab_size) return tsl_usage_error(&tsl_cmd_tokenizer, "train: missing --vocab N");
  if (optind >= argc) return tsl_usage_error(&tsl_cmd_tokenizer, "train: no input files");
  if (n_special > 0) o.special = special, o.n_special = n_special;
  tsl_tokenizer_train_report r;
  double t0 = tsl_now();
  tsl_status st = tsl_tokenizer_train((const char *const *)argv + optind, argc - optind, &o, out, &r);
  if (st < 0) return tsl_fail(st);
  printf("trained %s: %d tokens (%d special, 256 bytes, %d merges) from %llu bytes, %llu words (%llu distinct) in %.2f s\n",
         out, r.vocab_size, o.n_special, r.merges, (unsigned long long)r.bytes, (unsigned long long)r.words,
         (unsigned long long)r.unique_words, tsl_now() - t0);
  if (r.vocab_size < o.vocab_size)
    printf("note: the text has no pair left to merge after %d tokens (asked for %d)\n", r.vocab_size, o.vocab_size);
  return TSL_EXIT_OK;
}

/* Standard input or a file, whole. */
static tsl_status read_input(const char *path, char **text, size_t *len) {
  if (path) return tsl_read_file(path, text, len);
  size_t cap = 1 << 16, n = 0, k;
  char *buf = malloc(cap);
  while (buf && (k = fread(buf + n, 1, cap - n, stdin)) > 0) {
    n += k;
    if (n == cap) {
      char *b = realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  if (!buf) return tsl_error(TESSEL_E_NOMEM, "out of host memory reading standard input");
  if (ferror(stdin)) {
    free(buf);
    return tsl_error(TESSEL_E_IO, "standard input: read failed: %s", strerror(errno));
  }
  *text = buf;
  *len = n;
  return TESSEL_OK;
}

static tsl_status print_ids(void *ctx, const int32_t *ids, size_t n) {
  int *first = ctx;
  for (size_t i = 0; i < n; i++, *first = 0) printf(*first ? "%d" : " %d", ids[i]);
  return TESSEL_OK;
}

static tsl_status count_ids(void *ctx, const int32_t *ids, size_t n) {
  (void)ids;
  *(uint64_t *)ctx += n;
  return TESSEL_OK;
}

static int encode(tsl_tokenizer *t, const char *path, int count, int ordinary) {
  char *text = NULL;
  size_t len = 0;
  uint64_t n = 0;
  int first = 1;
  tsl_status st = read_input(path, &text, &len);
  if (st >= 0)
    st = tsl_tokenizer_encode(t, text, len, ordinary ? 0 : TSL_TOK_ADDED, count ? count_ids : print_ids,
                              count ? (void *)&n : (void *)&first);
  free(text);
  if (st < 0) return tsl_fail(st);
  if (count) printf("%llu", (unsigned long long)n);
  putchar('\n');
  return TSL_EXIT_OK;
}

/* What decode reads ids from: a file read whole (tsl_read_file, which
** refuses a FIFO or device at once, as encode does) or standard input,
** streamed. */
typedef struct id_source {
  FILE *stream;         /* standard input, or NULL */
  const char *p, *end;  /* the file's text */
} id_source;

static int next_char(id_source *s) {
  if (s->stream) return getc(s->stream);
  return s->p < s->end ? (unsigned char)*s->p++ : EOF;
}

#define SHOWN 64 /* the characters of a word a message quotes */

/* The next white-space-separated id of s: 1 with *id set (saturated past
** int64, so outside any vocabulary), 0 at the end, -1 for a word that is
** not a whole number. An id of any length is read whole ("%63s" once cut
** one in two ids); a word that cannot be one (a sign, then digits) only up
** to what a message quotes, so an endless one (/dev/zero) is refused at
** once. `shown` gets its first characters, "..." marking a cut, a control
** character (a NUL among them, which would end the message) as '?'. */
static int next_id(id_source *s, long long *id, char shown[SHOWN + 4]) {
  int c, n = 0, digits = 0, negative = 0, ok = 1;
  unsigned long long v = 0;
  while ((c = next_char(s)) != EOF && isspace(c)) continue;
  if (c == EOF) return 0;
  for (; c != EOF && !isspace(c) && (ok || n < SHOWN); c = next_char(s), n++) {
    if (n < SHOWN) shown[n] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    if (n == 0 && (c == '-' || c == '+')) {
      negative = c == '-';
    } else if (!isdigit(c)) {
      ok = 0;
    } else {
      digits++;
      v = v <= (ULLONG_MAX - 9) / 10 ? v * 10 + (unsigned)(c - '0') : ULLONG_MAX;
    }
  }
  strcpy(shown + (n < SHOWN ? n : SHOWN), n > SHOWN ? "..." : "");
  if (!ok || !digits) return -1;
  *id = v > LLONG_MAX ? (negative ? LLONG_MIN : LLONG_MAX) : negative ? -(long long)v : (long long)v;
  return 1;
}

/* Write the text of id (or, with `bytes`, its bytes: the first id's less
** the space the decoder's Strip drops); *first is cleared once an id is
** written, which a special one left out is not. */
static tsl_status write_id(tsl_tokenizer_decoder *d, int32_t id, int bytes, int *first) {
  const char *s;
  size_t n;
  if (bytes && d->skip_special && tsl_tokenizer_special(d->t, id)) return TESSEL_OK;
  if (bytes) {
    s = (*first ? tsl_tokenizer_first_token : tsl_tokenizer_token)(d->t, id, &n);
    *first = 0;
  } else {
    tsl_status st = tsl_tokenizer_decode_next(d, id, &s, &n);
    if (st < 0) return st;
  }
  fwrite(s, 1, n, stdout);
  return TESSEL_OK;
}

static int decode(tsl_tokenizer *t, const char *path, int bytes, int skip_special) {
  char *text = NULL, word[SHOWN + 4];
  size_t len = 0;
  long long id;
  int rc = TSL_EXIT_OK, got, first = 1;
  tsl_status st;
  tsl_tokenizer_decoder d;
  if (path && (st = tsl_read_file(path, &text, &len)) < 0) return tsl_fail(st);
  tsl_tokenizer_decode_begin(&d, t, skip_special ? TSL_DECODE_SKIP_SPECIAL : 0);
  id_source src = {path ? NULL : stdin, text, text + len};
  const char *name = path ? path : "standard input";
  while (rc == TSL_EXIT_OK && (got = next_id(&src, &id, word)) != 0) {
    size_t n;
    int known = got > 0 && id >= INT32_MIN && id <= INT32_MAX && tsl_tokenizer_token(t, (int32_t)id, &n);
    /* each id named as written: one past int64 is not the LLONG_MAX it saturates to */
    if (got < 0)
      rc = tsl_fail(tsl_error(TESSEL_E_CONFIG, "%s: expected whole-number ids, got '%s'", name, word));
    else if (!known)
      rc = tsl_fail(tsl_error(TESSEL_E_CONFIG, "id %s is outside the vocabulary of %s (%d tokens)", word,
                              tsl_tokenizer_name(t), tsl_tokenizer_vocab_size(t)));
    else if ((st = write_id(&d, (int32_t)id, bytes, &first)) < 0)
      rc = tsl_fail(st);
  }
  if (rc == TSL_EXIT_OK && !path && ferror(stdin))
    rc = tsl_fail(tsl_error(TESSEL_E_IO, "standard input: cannot read: %s", strerror(errno)));
  const char *rest;
  size_t n;
  if (rc == TSL_EXIT_OK && !bytes) {
    if ((st = tsl_tokenizer_decode_end(&d, &rest, &n)) < 0) rc = tsl_fail(st);
    else fwrite(rest, 1, n, stdout);
  }
  tsl_tokenizer_decode_free(&d);
  free(text);
  return rc;
}

static int tokenizer_cmd(int argc, char **argv) {
  int c, count = 0, ordinary = 0, bytes = 0, skip_special = 0;
  if (argc < 2) return tsl_usage_error(&tsl_cmd_tokenizer, "expected train, encode, decode or info");
  const char *verb = argv[1];
  if (strcmp(verb, "train") == 0) return train(argc - 1, argv + 1);
  if (strcmp(verb, "encode") != 0 && strcmp(verb, "decode") != 0 && strcmp(verb, "info") != 0)
    return tsl_usage_error(&tsl_cmd_tokenizer, "unknown action '%s'; expected train, encode, decode or info", verb);
  optind = 0;
  argc--, argv++;
  while ((c = tsl_getopt(argc, argv, &encode_options)) != -1) {
    if (c == 'c' && strcmp(verb, "encode") == 0) count = 1;
    else if (c == 'r' && strcmp(verb, "encode") == 0) ordinary = 1;
    else if (c == 'b' && strcmp(verb, "decode") == 0) bytes = 1;
    else if (c == 'S' && strcmp(verb, "decode") == 0) skip_special = 1;
    else return tsl_usage_error(&tsl_cmd_tokenizer, "bad option for %s", verb);
  }
  int rest = argc - optind, max_rest = strcmp(verb, "info") == 0 ? 1 : 2;
  if (rest < 1 || rest > max_rest) return tsl_usage_error(&tsl_cmd_tokenizer, "%s: expected TOKENIZER%s", verb,
                                                          max_rest == 2 ? " [FILE]" : "");
  tsl_tokenizer *t;
  tsl_status st = tsl_tokenizer_load(argv[optind], &t);
  if (st < 0) return tsl_fail(st);
  const char *file = rest == 2 ? argv[optind + 1] : NULL;
  int rc;
  if (strcmp(verb, "encode") == 0) {
    rc = encode(t, file, count, ordinary);
  } else if (strcmp(verb, "decode") == 0) {
    rc = decode(t, file, bytes, skip_special);
  } else {
    printf("vocab_size %d\neot %d\nhash %016" PRIx64 "\n", tsl_tokenizer_vocab_size(t), tsl_tokenizer_eot(t),
           tsl_tokenizer_hash(t));
    rc = TSL_EXIT_OK;
  }
  tsl_tokenizer_free(t);
  return rc;
}
