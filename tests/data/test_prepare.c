/* tests/data/test_prepare.c — text files to byte-level token shards. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "data/prepare.h"
#include "data/record.h"
#include "data/shard.h"
#include "scratch.h"
#include "tokenizer/tokenizer.h"

/* Deterministic text-like bytes that differ between files. */
static void fill_text(unsigned char *buf, size_t n, unsigned salt) {
  for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(32 + (i * 31 + salt * 7) % 95);
}

/* Concatenate the tokens of DIR/<split>_000000.bin, ... into out (capacity
** cap); returns the token count and stores the shard count. Every token is
** checked to be a byte and every shard but the last to be exactly full. */
static uint64_t read_split(const char *dir, const char *split, uint64_t shard_tokens,
                           unsigned char *out, uint64_t cap, int *shards) {
  uint64_t total = 0;
  char path[1100];
  *shards = 0;
  for (int i = 0;; i++) {
    tsl_shard s;
    REQUIRE(snprintf(path, sizeof path, "%s/%s_%06d.bin", dir, split, i) < (int)sizeof path);
    if (!tsl_path_exists(path)) break;
    REQUIRE(tsl_shard_open(path, 256, &s) == TESSEL_OK);
    CHECK(s.count >= 1 && s.count <= shard_tokens);
    REQUIRE(total + s.count <= cap);
    for (uint64_t k = 0; k < s.count; k++) {
      uint32_t t;
      REQUIRE(tsl_shard_read(&s, k, 1, &t) == TESSEL_OK);
      out[total + k] = (unsigned char)t;
    }
    total += s.count;
    tsl_shard_close(&s);
    (*shards)++;
  }
  return total;
}

static void test_split_sizes_and_sharding(void) {
  char a[1024], b[1024], dir[1024];
  unsigned char ta[1000], tb[37], got[2048], want[2048];
  tsl_prepare_report rep;
  tsl_prepare_opts opts = {.val_fraction = 0.1, .shard_tokens = 256};
  int shards;
  fill_text(ta, sizeof ta, 1);
  fill_text(tb, sizeof tb, 2);
  scratch_write(scratch_path(a, "a.txt"), ta, sizeof ta);
  scratch_write(scratch_path(b, "b.txt"), tb, sizeof tb);
  scratch_path(dir, "split/out"); /* a nested directory prepare must create */
  const char *inputs[] = {a, b};
  REQUIRE(tsl_data_prepare(inputs, 2, dir, &opts, &rep) == TESSEL_OK);

  /* floor(1000 * 0.1) = 100 and floor(37 * 0.1) = 3 bytes go to validation */
  CHECK_EQ_INT(rep.files, 2);
  CHECK_EQ_INT(rep.train_tokens, 900 + 34);
  CHECK_EQ_INT(rep.val_tokens, 100 + 3);
  CHECK_EQ_INT(rep.train_shards, 4); /* ceil(934 / 256) */
  CHECK_EQ_INT(rep.val_shards, 1);

  memcpy(want, ta, 900);
  memcpy(want + 900, tb, 34);
  CHECK_EQ_INT(read_split(dir, "train", 256, got, sizeof got, &shards), 934);
  CHECK_EQ_INT(shards, 4);
  CHECK(memcmp(got, want, 934) == 0);

  memcpy(want, ta + 900, 100);
  memcpy(want + 100, tb + 34, 3);
  CHECK_EQ_INT(read_split(dir, "val", 256, got, sizeof got, &shards), 103);
  CHECK_EQ_INT(shards, 1);
  CHECK(memcmp(got, want, 103) == 0);
}

static void test_shard_boundary_exact(void) {
  char a[1024], dir[1024];
  unsigned char t[512], got[512];
  tsl_prepare_report rep;
  tsl_prepare_opts opts = {.val_fraction = 0.25, .shard_tokens = 128};
  int shards;
  fill_text(t, sizeof t, 3);
  scratch_write(scratch_path(a, "exact.txt"), t, sizeof t);
  scratch_path(dir, "exact");
  const char *inputs[] = {a};
  REQUIRE(tsl_data_prepare(inputs, 1, dir, &opts, &rep) == TESSEL_OK);
  /* 384 training tokens fill exactly three shards: no empty fourth */
  CHECK_EQ_INT(rep.train_tokens, 384);
  CHECK_EQ_INT(rep.train_shards, 3);
  CHECK_EQ_INT(rep.val_tokens, 128);
  CHECK_EQ_INT(rep.val_shards, 1);
  CHECK_EQ_INT(read_split(dir, "train", 128, got, sizeof got, &shards), 384);
  CHECK_EQ_INT(shards, 3);
  CHECK(memcmp(got, t, 384) == 0);
}

static void test_glob_inputs_sorted(void) {
  char p[1024], dir[1024], pattern[1024];
  unsigned char t2[50], t1[40], other[30], got[256];
  tsl_prepare_report rep;
  tsl_prepare_opts opts = {.val_fraction = 0.0, .shard_tokens = 1000};
  int shards;
  fill_text(t1, sizeof t1, 4);
  fill_text(t2, sizeof t2, 5);
  fill_text(other, sizeof other, 6);
  /* written out of name order: the glob must still deliver part_1 first */
  scratch_write(scratch_path(p, "part_2.txt"), t2, sizeof t2);
  scratch_write(scratch_path(p, "part_1.txt"), t1, sizeof t1);
  scratch_write(scratch_path(p, "other.txt"), other, sizeof other);
  scratch_path(pattern, "part_*.txt");
  scratch_path(dir, "globbed");
  const char *inputs[] = {pattern};
  REQUIRE(tsl_data_prepare(inputs, 1, dir, &opts, &rep) == TESSEL_OK);
  CHECK_EQ_INT(rep.files, 2);
  CHECK_EQ_INT(rep.train_tokens, 90);
  CHECK_EQ_INT(rep.val_tokens, 0);
  CHECK_EQ_INT(rep.val_shards, 0);
  CHECK_EQ_INT(read_split(dir, "train", 1000, got, sizeof got, &shards), 90);
  CHECK(memcmp(got, t1, 40) == 0 && memcmp(got + 40, t2, 50) == 0);
  /* val_fraction 0 writes no validation shard at all */
  CHECK(!tsl_path_exists(scratch_path(p, "globbed/val_000000.bin")));
}

static void test_rerun_removes_stale_shards(void) {
  char a[1024], dir[1024], p[1024];
  unsigned char t[300];
  tsl_prepare_report rep;
  tsl_prepare_opts small = {.val_fraction = 0.1, .shard_tokens = 10};
  tsl_prepare_opts big = {.val_fraction = 0.0, .shard_tokens = 1000};
  fill_text(t, sizeof t, 7);
  scratch_write(scratch_path(a, "rerun.txt"), t, sizeof t);
  scratch_path(dir, "rerun");
  const char *inputs[] = {a};
  REQUIRE(tsl_data_prepare(inputs, 1, dir, &small, &rep) == TESSEL_OK);
  CHECK_EQ_INT(rep.train_shards, 27);
  CHECK_EQ_INT(rep.val_shards, 3);
  REQUIRE(tsl_data_prepare(inputs, 1, dir, &big, &rep) == TESSEL_OK);
  CHECK_EQ_INT(rep.train_shards, 1);
  CHECK(tsl_path_exists(scratch_path(p, "rerun/train_000000.bin")));
  CHECK(!tsl_path_exists(scratch_path(p, "rerun/train_000001.bin")));
  CHECK(!tsl_path_exists(scratch_path(p, "rerun/train_000026.bin")));
  CHECK(!tsl_path_exists(scratch_path(p, "rerun/val_000000.bin")));
  /* shards after a gap in the numbering go too (a walk up from the last
  ** new shard stopped at the first missing number), and a file that is
  ** not a numbered shard stays */
  scratch_write(scratch_path(p, "rerun/train_000005.bin"), t, 4);
  scratch_write(scratch_path(p, "rerun/train_1234567.bin"), t, 4);
  scratch_write(scratch_path(p, "rerun/train_notes.bin"), t, 4);
  REQUIRE(tsl_data_prepare(inputs, 1, dir, &big, &rep) == TESSEL_OK);
  CHECK(tsl_path_exists(scratch_path(p, "rerun/train_000000.bin")));
  CHECK(!tsl_path_exists(scratch_path(p, "rerun/train_000005.bin")));
  CHECK(!tsl_path_exists(scratch_path(p, "rerun/train_1234567.bin")));
  CHECK(tsl_path_exists(scratch_path(p, "rerun/train_notes.bin")));
  /* one of the directory's own shards named as the input is refused, and
  ** left as it was (it was once replaced by an encoding of itself) */
  unsigned char *before = NULL, *after = NULL;
  size_t n_before = 0, n_after = 0;
  const char *own[] = {scratch_path(p, "rerun/train_000000.bin")};
  REQUIRE(tsl_read_file(own[0], (char **)&before, &n_before) == TESSEL_OK);
  CHECK_EQ_INT(tsl_data_prepare(own, 1, dir, &big, &rep), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "is one of the files preparing into");
  REQUIRE(tsl_read_file(own[0], (char **)&after, &n_after) == TESSEL_OK);
  CHECK(n_before == n_after && memcmp(before, after, n_before) == 0);
  free(before);
  free(after);
}

static void test_default_options(void) {
  char a[1024], dir[1024];
  unsigned char t[1000];
  tsl_prepare_report rep;
  fill_text(t, sizeof t, 8);
  scratch_write(scratch_path(a, "defaults.txt"), t, sizeof t);
  scratch_path(dir, "defaults");
  const char *inputs[] = {a};
  REQUIRE(tsl_data_prepare(inputs, 1, dir, NULL, &rep) == TESSEL_OK);
  CHECK_EQ_INT(rep.val_tokens, 100); /* default val_fraction 0.1 */
  CHECK_EQ_INT(rep.train_shards, 1);
}

static void test_errors(void) {
  char a[1024], empty[1024], dir[1024], pattern[1024];
  unsigned char t[16];
  tsl_prepare_report rep;
  tsl_prepare_opts opts = {.val_fraction = 0.1, .shard_tokens = 100};
  fill_text(t, sizeof t, 9);
  scratch_write(scratch_path(a, "ok.txt"), t, sizeof t);
  scratch_write(scratch_path(empty, "empty.txt"), "", 0);
  scratch_path(dir, "errors");

  const char *missing[] = {a, "/nonexistent/tessel/input.txt"};
  CHECK_EQ_INT(tsl_data_prepare(missing, 2, dir, &opts, &rep), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "/nonexistent/tessel/input.txt");
  CHECK_STR_CONTAINS(tsl_error_message(), strerror(ENOENT));

  const char *no_match[] = {scratch_path(pattern, "nothing_*.txt")};
  CHECK_EQ_INT(tsl_data_prepare(no_match, 1, dir, &opts, &rep), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), pattern);
  CHECK_STR_CONTAINS(tsl_error_message(), "matches no files");

  const char *only_empty[] = {empty};
  CHECK_EQ_INT(tsl_data_prepare(only_empty, 1, dir, &opts, &rep), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), empty);
  CHECK_STR_CONTAINS(tsl_error_message(), "empty input");

  const char *good[] = {a};
  const double bad_fractions[] = {-0.01, 0.51, 1.0, NAN};
  for (size_t i = 0; i < sizeof bad_fractions / sizeof *bad_fractions; i++) {
    tsl_prepare_opts bad = {.val_fraction = bad_fractions[i], .shard_tokens = 100};
    CHECK_EQ_INT(tsl_data_prepare(good, 1, dir, &bad, &rep), TESSEL_E_CONFIG);
    CHECK_STR_CONTAINS(tsl_error_message(), "val_fraction");
    CHECK_STR_CONTAINS(tsl_error_message(), "[0, 0.5]");
  }
  tsl_prepare_opts zero_shard = {.val_fraction = 0.1, .shard_tokens = 0};
  CHECK_EQ_INT(tsl_data_prepare(good, 1, dir, &zero_shard, &rep), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "shard_tokens");
  /* nothing was written by any failed call */
  CHECK(!tsl_path_exists(dir));
}

/* The ids of a split read back from its single shard. */
static tsl_token_vec read_ids(const char *dir, const char *split, int vocab) {
  char path[1100];
  tsl_shard s;
  tsl_token_vec v = {0};
  snprintf(path, sizeof path, "%s/%s_000000.bin", dir, split);
  REQUIRE(tsl_shard_open(path, vocab, &s) == TESSEL_OK);
  for (uint64_t i = 0; i < s.count; i++) {
    uint32_t t;
    REQUIRE(tsl_shard_read(&s, i, 1, &t) == TESSEL_OK);
    int32_t id = t;
    REQUIRE(tsl_token_vec_sink(&v, &id, 1) == TESSEL_OK);
  }
  tsl_shard_close(&s);
  return v;
}

static void append_document(tsl_tokenizer *t, tsl_token_vec *want, const char *text, size_t n) {
  int32_t eot = tsl_tokenizer_eot(t);
  REQUIRE(tsl_token_vec_sink(want, &eot, 1) == TESSEL_OK);
  REQUIRE(tsl_tokenizer_encode(t, text, n, 0, tsl_token_vec_sink, want) == TESSEL_OK);
}

static int same_ids(const tsl_token_vec *a, const tsl_token_vec *b) {
  return a->n == b->n && (a->n == 0 || memcmp(a->ids, b->ids, a->n * sizeof *a->ids) == 0);
}

/* With a tokenizer (the fixture made by Hugging Face tokenizers): each part
** of each file is the end-of-text token then its ordinary encoding (the
** literal <|endoftext|> in a file stays text); a split point inside a
** character moves to the next character; the record names the tokenizer. */
static void test_tokenizer_documents(void) {
  char a[1024], b[1024], dir[1024], path[1100];
  /* 20 bytes; floor(20 * 0.25) = 5 go to validation: the cut at byte 15 is
  ** inside the 3-byte '…' (bytes 13-15), so it moves to 16 */
  const char *ta = "Good morrow, \xe2\x80\xa6 sir", *tb = "A <|endoftext|> B\n";
  tsl_tokenizer *t;
  REQUIRE(tsl_tokenizer_load("tests/tokenizer/fixtures/gpt2_1024.json", &t) == TESSEL_OK);
  scratch_write(scratch_path(a, "doc_a.txt"), ta, strlen(ta));
  scratch_write(scratch_path(b, "doc_b.txt"), tb, strlen(tb));
  scratch_path(dir, "tokens");
  const char *inputs[] = {a, b};
  tsl_prepare_opts opts = {.val_fraction = 0.25, .shard_tokens = 1000, .tokenizer = t};
  tsl_prepare_report rep;
  REQUIRE(tsl_data_prepare(inputs, 2, dir, &opts, &rep) == TESSEL_OK);
  tsl_token_vec want_train = {0}, want_val = {0};
  REQUIRE(strlen(ta) == 20 && strlen(tb) == 18);
  append_document(t, &want_train, ta, 16);
  append_document(t, &want_train, tb, 18 - 4); /* floor(18 * 0.25) = 4 */
  append_document(t, &want_val, ta + 16, 4);
  append_document(t, &want_val, tb + 14, 4);
  tsl_token_vec train = read_ids(dir, "train", 1024), val = read_ids(dir, "val", 1024);
  CHECK(same_ids(&train, &want_train));
  CHECK(same_ids(&val, &want_val));
  CHECK_EQ_INT(rep.train_tokens, want_train.n);
  CHECK_EQ_INT(rep.val_tokens, want_val.n);
  tsl_data_record r;
  REQUIRE(tsl_data_record_read(dir, &r) == TESSEL_OK);
  CHECK(r.found && r.has_tokenizer && r.vocab_size == 1024 && r.hash == tsl_tokenizer_hash(t));
  tsl_tokenizer *copy;
  REQUIRE(tsl_tokenizer_load(r.tokenizer, &copy) == TESSEL_OK);
  CHECK(tsl_tokenizer_hash(copy) == tsl_tokenizer_hash(t));
  tsl_tokenizer_free(copy);
  /* prepared again byte-level, the directory forgets the tokenizer */
  opts.tokenizer = NULL;
  REQUIRE(tsl_data_prepare(inputs, 2, dir, &opts, &rep) == TESSEL_OK);
  REQUIRE(tsl_data_record_read(dir, &r) == TESSEL_OK);
  CHECK(r.found && !r.has_tokenizer && r.vocab_size == 256);
  CHECK(!tsl_path_exists(scratch_path(path, "tokens/tokenizer.json")));
  /* a record of a later format is refused, not read as this one */
  static const char later[] = "{\"format\": \"tessel-tokens\", \"version\": 9, \"vocab_size\": 256, \"tokenizer\": null}";
  scratch_write(scratch_path(path, "tokens/tokens.json"), later, strlen(later));
  CHECK_EQ_INT(tsl_data_record_read(dir, &r), TESSEL_E_VERSION);
  CHECK_STR_CONTAINS(tsl_error_message(), "token record version 9; this tessel reads version 1");
  tsl_token_vec_free(&train);
  tsl_token_vec_free(&val);
  tsl_token_vec_free(&want_train);
  tsl_token_vec_free(&want_val);
  tsl_tokenizer_free(t);
}

/* Files encoded side by side by several threads, each with its own copy of
** the tokenizer, give the ids of encoding them one after the other, in the
** inputs' order: 37 files of 1 to 2917 bytes (each file a document). */
/* Preparing inputs into dir with opts (a tokenizer's) at 1 and 3 threads
** gives the ids want_train and want_val, each in one shard. */
static void prepares_to(const char *const *inputs, int n, const char *dir, const tsl_prepare_opts *opts,
                        const tsl_token_vec *want_train, const tsl_token_vec *want_val) {
  int vocab = tsl_tokenizer_vocab_size(opts->tokenizer);
  for (int threads = 1; threads <= 3; threads += 2) {
    omp_set_num_threads(threads);
    REQUIRE(tsl_data_prepare(inputs, n, dir, opts, NULL) == TESSEL_OK);
    tsl_token_vec train = read_ids(dir, "train", vocab), val = read_ids(dir, "val", vocab);
    CHECK(same_ids(&train, want_train));
    CHECK(same_ids(&val, want_val));
    tsl_token_vec_free(&train);
    tsl_token_vec_free(&val);
  }
  omp_set_num_threads(1);
}

static void test_tokenizer_threads(void) {
  enum { FILES = 37, TEXT = 36 * 400 + 2917 };
  static const char *const words[] = {"the ", "morrow", ", ", "sir", "\n\n", "  ", "king's ", "42 ", "HENRY:", "o'er "};
  char names[FILES][1024], dir[1024];
  const char *inputs[FILES];
  static char text[TEXT + 16];
  size_t len = 0;
  for (unsigned x = 7; len < TEXT; x = x * 1103515245u + 12345u) { /* ASCII: no split point moves */
    const char *w = words[(x >> 16) % (sizeof words / sizeof words[0])];
    memcpy(text + len, w, strlen(w));
    len += strlen(w);
  }
  tsl_tokenizer *t;
  REQUIRE(tsl_tokenizer_load("tests/tokenizer/fixtures/gpt2_1024.json", &t) == TESSEL_OK);
  tsl_token_vec want_train = {0}, want_val = {0};
  for (int i = 0; i < FILES; i++) {
    char name[32];
    size_t n = 1 + (size_t)i * i * 81 % 2917, at = (size_t)i * 400;
    snprintf(name, sizeof name, "many_%02d.txt", i);
    scratch_write(scratch_path(names[i], name), text + at, n);
    inputs[i] = names[i];
    size_t val = (size_t)floor((double)n * 0.1);
    append_document(t, &want_train, text + at, n - val);
    if (val) append_document(t, &want_val, text + at + n - val, val);
  }
  scratch_path(dir, "many_out");
  tsl_prepare_opts opts = {.val_fraction = 0.1, .shard_tokens = 1 << 20, .tokenizer = t};
  prepares_to(inputs, FILES, dir, &opts, &want_train, &want_val);
  tsl_token_vec_free(&want_train);
  tsl_token_vec_free(&want_val);
  tsl_tokenizer_free(t);
}

/* One large file is encoded by several threads, cut where the tokenizer
** allows (segment_bytes 1000: about a thousand segments of tinyshakespeare's
** training part, a hundred of its validation part): its shards hold the ids
** of each part encoded whole, one document each, at 1 and 3 threads, with
** GPT-2's and Llama 3's pre-tokenizers, StarCoder's (a Sequence of Digits
** and ByteLevel) and DeepSeek V3's (Splits, the third of which ends pieces
** before spaces) and SentencePiece BPEs (whose cut parts must not get the ▁
** it puts before a text: the Prepend normalizer of Llama 2's own
** tokenizer.json puts one before any text, even one that starts with a
** space). */
static const char *const sp_prepend[] = {
    "pre_tokenizer", "null", "normalizer",
    "{\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"Prepend\", \"prepend\": \"\\u2581\"}, "
    "{\"type\": \"Replace\", \"pattern\": {\"String\": \" \"}, \"content\": \"\\u2581\"}]}",
    NULL};
static const char *const deepseek_v3_shape[] = {
    "pre_tokenizer",
    "{\"type\": \"Sequence\", \"pretokenizers\": ["
    "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"\\\\p{N}{1,3}\"}, \"behavior\": \"Isolated\"}, "
    "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"[\\u4e00-\\u9fa5\\u3040-\\u309f\\u30a0-\\u30ff]+\"}, "
    "\"behavior\": \"Isolated\"}, "
    "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"[!\\\"#$%&'()*+,\\\\-./:;<=>?@\\\\[\\\\\\\\\\\\]^_`{|}~]"
    "[A-Za-z]+|[^\\\\r\\\\n\\\\p{L}\\\\p{P}\\\\p{S}]?[\\\\p{L}\\\\p{M}]+| ?[\\\\p{P}\\\\p{S}]+[\\\\r\\\\n]*|"
    "\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\"}, "
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}",
    NULL};
static const char *const starcoder_shape[] = {
    "pre_tokenizer",
    "{\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Digits\", \"individual_digits\": true}, "
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}]}",
    NULL};

/* A fixture with the top-level fields of `edits` (name, JSON value, ...)
** replaced, parsed as `name`. */
static tsl_tokenizer *edited_fixture(const char *path, const char *name, const char *const *edits) {
  char *json;
  tsl_tokenizer *t = NULL;
  REQUIRE(tsl_read_file(path, &json, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(json);
  REQUIRE(root != NULL);
  for (; *edits; edits += 2) {
    cJSON *value = cJSON_Parse(edits[1]);
    REQUIRE(value != NULL);
    cJSON_ReplaceItemInObject(root, edits[0], value);
  }
  char *text = cJSON_PrintUnformatted(root);
  REQUIRE(tsl_tokenizer_parse(text, strlen(text), name, &t) == TESSEL_OK);
  free(text);
  cJSON_Delete(root);
  free(json);
  return t;
}

static void test_large_file_segments(void) {
  static const struct {
    const char *fixture, *name;
    const char *const *edits;
  } tokenizers[] = {
      {"tests/tokenizer/fixtures/gpt2_1024.json", NULL, NULL},
      {"tests/tokenizer/fixtures/llama3_512.json", NULL, NULL},
      {"tests/tokenizer/fixtures/gpt2_1024.json", "starcoder_shape.json", starcoder_shape},
      {"tests/tokenizer/fixtures/gpt2_1024.json", "deepseek_v3_shape.json", deepseek_v3_shape},
      {"tests/tokenizer/fixtures/sp_1000.json", NULL, NULL},
      {"tests/tokenizer/fixtures/sp_1000.json", "sp_prepend.json", sp_prepend},
  };
  static const char *const inputs[] = {"../shared/data/tinyshakespeare.txt"};
  char *text, dir[1024];
  size_t len;
  REQUIRE(tsl_read_file(inputs[0], &text, &len) == TESSEL_OK);
  size_t val = (size_t)floor((double)len * 0.1); /* ASCII: the split point stays */
  scratch_path(dir, "large_out");
  for (size_t k = 0; k < TSL_ARRAY_LEN(tokenizers); k++) {
    tsl_tokenizer *t = NULL;
    if (tokenizers[k].edits) t = edited_fixture(tokenizers[k].fixture, tokenizers[k].name, tokenizers[k].edits);
    else REQUIRE(tsl_tokenizer_load(tokenizers[k].fixture, &t) == TESSEL_OK);
    CHECK(tsl_tokenizer_cut(t, text, len, 1, 1000) > 0); /* the file is cut, not encoded by one thread */
    tsl_token_vec want_train = {0}, want_val = {0};
    append_document(t, &want_train, text, len - val);
    append_document(t, &want_val, text + len - val, val);
    tsl_prepare_opts opts = {.val_fraction = 0.1, .shard_tokens = 1 << 22, .tokenizer = t, .segment_bytes = 1000};
    prepares_to(inputs, 1, dir, &opts, &want_train, &want_val);
    tsl_token_vec_free(&want_train);
    tsl_token_vec_free(&want_val);
    tsl_tokenizer_free(t);
  }
  free(text);
}

/* A byte-level BPE of n tokens: the 256 byte symbols, then "<tK>" fillers,
** with <|endoftext|> as the last when eot is set. */
static tsl_tokenizer *synthetic_tokenizer(int n, int eot) {
  size_t cap = (size_t)n * 24 + 1024, at = 0;
  char *json = malloc(cap);
  REQUIRE(json != NULL);
  at += (size_t)snprintf(json + at, cap - at, "{\"added_tokens\": [");
  if (eot) at += (size_t)snprintf(json + at, cap - at, "{\"id\": %d, \"content\": \"<|endoftext|>\", \"special\": true}", n - 1);
  at += (size_t)snprintf(json + at, cap - at, "], \"pre_tokenizer\": {\"type\": \"ByteLevel\"}, \"model\": {\"merges\": [], \"vocab\": {");
  for (int id = 0, others = 0; id < n - eot; id++) {
    if (id < 256) { /* byte id's printable stand-in (GPT-2's bytes_to_unicode), as a four-digit \\u escape */
      int printable = (id >= 0x21 && id <= 0x7e) || (id >= 0xa1 && id <= 0xac) || id >= 0xae;
      at += (size_t)snprintf(json + at, cap - at, "%s\"\\u%04x\": %d", id ? ", " : "", printable ? id : 256 + others++, id);
    } else {
      at += (size_t)snprintf(json + at, cap - at, ", \"<t%d>\": %d", id, id);
    }
  }
  snprintf(json + at, cap - at, "}}}");
  tsl_tokenizer *t = NULL;
  tsl_status st = tsl_tokenizer_parse(json, strlen(json), "synthetic.json", &t);
  if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
  free(json);
  REQUIRE(st == TESSEL_OK);
  return t;
}

static void test_tokenizer_limits(void) {
  char a[1024], dir[1024];
  scratch_write(scratch_path(a, "limits.txt"), "some text\n", 10);
  scratch_path(dir, "limits");
  const char *inputs[] = {a};
  tsl_prepare_report rep;
  tsl_tokenizer *big = synthetic_tokenizer(65537, 1), *fits = synthetic_tokenizer(65536, 1),
                *no_eot = synthetic_tokenizer(300, 0);
  tsl_prepare_opts opts = {.val_fraction = 0.0, .shard_tokens = 1000, .tokenizer = no_eot};
  CHECK_EQ_INT(tsl_data_prepare(inputs, 1, dir, &opts, &rep), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "no end-of-text token");
  CHECK(!tsl_path_exists(dir));
  /* the largest id of `fits`, 65535, is a uint16: GPT-2's shards; one token
  ** more and the shards are llm.c's uint32 format (they were refused) */
  tsl_tokenizer *const sizes[] = {fits, big};
  for (int k = 0; k < 2; k++) {
    opts.tokenizer = sizes[k];
    REQUIRE(tsl_data_prepare(inputs, 1, dir, &opts, &rep) == TESSEL_OK);
    const int vocab = tsl_tokenizer_vocab_size(sizes[k]);
    tsl_token_vec ids = read_ids(dir, "train", vocab);
    REQUIRE(ids.n == 11); /* the end-of-text token, then one id per byte: no merges */
    CHECK_EQ_INT(ids.ids[0], vocab - 1);
    tsl_token_vec_free(&ids);
    char path[1100];
    tsl_shard s;
    snprintf(path, sizeof path, "%s/train_000000.bin", dir);
    REQUIRE(tsl_shard_open(path, vocab, &s) == TESSEL_OK);
    CHECK_EQ_INT(s.token_bytes, k ? 4 : 2);
    tsl_shard_close(&s);
  }
  tsl_tokenizer_free(big);
  tsl_tokenizer_free(fits);
  tsl_tokenizer_free(no_eot);
}

/* dirs[i] is root + tail, or the list ends at i when tail is NULL. */
static void check_dir(char **dirs, int i, const char *root, const char *tail) {
  char want[1100];
  if (!tail) {
    CHECK(dirs[i] == NULL);
    return;
  }
  snprintf(want, sizeof want, "%s/%s", root, tail);
  CHECK(dirs[i] && strcmp(dirs[i], want) == 0);
}

/* What making a path would create, listed before the making as real names:
** a trailing / and `..` after a name still to be made change nothing, a
** directory that is there (empty or not) is never listed, and `..` after a
** symlink is the file system's parent, not the text's. */
static void test_dirs_to_make(void) {
  char p[1024], target[1024];
  char *root = realpath(scratch_root, NULL);
  REQUIRE(root != NULL);
  REQUIRE(tsl_mkdir_p(scratch_path(p, "mk/have")) == TESSEL_OK);
  REQUIRE(tsl_mkdir_p(scratch_path(p, "mk/deep/inner")) == TESSEL_OK);
  REQUIRE(symlink(scratch_path(target, "mk/deep/inner"), scratch_path(p, "mk/link")) == 0);
  char **d = tsl_dirs_to_make(scratch_path(p, "mk/new/x/../y/"));
  REQUIRE(d != NULL);
  check_dir(d, 0, root, "mk/new");
  check_dir(d, 1, root, "mk/new/x");
  check_dir(d, 2, root, "mk/new/y");
  check_dir(d, 3, root, NULL);
  tsl_dirs_free(d);
  REQUIRE((d = tsl_dirs_to_make(scratch_path(p, "mk/gone/../have/z"))) != NULL);
  check_dir(d, 0, root, "mk/gone");
  check_dir(d, 1, root, "mk/have/z");
  check_dir(d, 2, root, NULL);
  tsl_dirs_free(d);
  REQUIRE((d = tsl_dirs_to_make(scratch_path(p, "mk/link/../z"))) != NULL);
  check_dir(d, 0, root, "mk/deep/z");
  check_dir(d, 1, root, NULL);
  tsl_dirs_free(d);
  REQUIRE((d = tsl_dirs_to_make(scratch_path(p, "mk/have/"))) != NULL);
  check_dir(d, 0, root, NULL);
  tsl_dirs_free(d);
  /* made, then unmade: only what was listed goes */
  REQUIRE((d = tsl_dirs_to_make(scratch_path(p, "mk/gone/../have/z"))) != NULL);
  REQUIRE(tsl_mkdir_p(p) == TESSEL_OK);
  tsl_dirs_unmake(d);
  tsl_dirs_free(d);
  CHECK(!tsl_path_exists(scratch_path(p, "mk/gone")));
  CHECK(!tsl_path_exists(scratch_path(p, "mk/have/z")));
  CHECK(tsl_path_exists(scratch_path(p, "mk/have")));
  free(root);
}

int main(void) {
  scratch_init("test_prepare");
  RUN(test_split_sizes_and_sharding);
  RUN(test_shard_boundary_exact);
  RUN(test_glob_inputs_sorted);
  RUN(test_rerun_removes_stale_shards);
  RUN(test_default_options);
  RUN(test_errors);
  RUN(test_tokenizer_documents);
  RUN(test_tokenizer_threads);
  RUN(test_large_file_segments);
  RUN(test_tokenizer_limits);
  RUN(test_dirs_to_make);
  scratch_cleanup();
  return HARNESS_EXIT();
}
