/*
** tests/tokenizer/test_train.c — `tessel tokenizer train` against Hugging
** Face `tokenizers`' BpeTrainer.
**
** The references were made by tests/tokenizer/make_fixtures.py with
** `tokenizers` from the same text, tinyshakespeare (read from ../shared/data,
** never stored here). Trained on the same bytes with the same settings,
** tessel must produce the very same vocabulary and merges, in the same order,
** for GPT-2's regex and for Llama 3's. On the whole text at vocabulary 1024
** its tokenizer must encode the text into as many tokens as BpeTrainer's
** within 1% (counts.json holds that count; the two are in fact equal).
** tessel writes each merge as "a b", which every version of tokenizers
** reads (the fixtures hold [a, b] pairs, which only 0.20 and later read).
** Without the text only the checks that need none run (empty input, the
** merge writer), and the test reports itself skipped (exit 77).
*/
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "data/scratch.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/write.h"

#define TEXT "../shared/data/tinyshakespeare.txt"
#define FIXTURES "tests/tokenizer/fixtures/"

static cJSON *read_json(const char *path) {
  char *text;
  REQUIRE(tsl_read_file(path, &text, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(text);
  free(text);
  REQUIRE(root != NULL);
  return root;
}

/* A tokenizer.json's merges as [a, b] pairs, whichever form each is
** written in ("a b" or a pair): the fixtures, written by tokenizers 0.20 or
** later, have pairs, and tessel writes strings. */
static cJSON *merge_pairs(const cJSON *merges) {
  cJSON *pairs = cJSON_CreateArray();
  const cJSON *m;
  cJSON_ArrayForEach(m, merges) {
    if (!cJSON_IsString(m)) {
      cJSON_AddItemToArray(pairs, cJSON_Duplicate(m, 1));
      continue;
    }
    const char *sp = strchr(m->valuestring, ' ');
    REQUIRE(sp != NULL);
    char *a = strndup(m->valuestring, (size_t)(sp - m->valuestring));
    const char *parts[2] = {a, sp + 1};
    cJSON_AddItemToArray(pairs, cJSON_CreateStringArray(parts, 2));
    free(a);
  }
  return pairs;
}

/* Whether every merge is written as the string "a b", the form tokenizers
** before 0.20 (and so transformers 4.44 and older) can read. */
static int all_strings(const cJSON *merges) {
  const cJSON *m;
  cJSON_ArrayForEach(m, merges) if (!cJSON_IsString(m)) return 0;
  return 1;
}

/* The first n bytes of the text as a scratch file. */
static const char *prefix_file(char *path, size_t n) {
  char *text;
  size_t len;
  REQUIRE(tsl_read_file(TEXT, &text, &len) == TESSEL_OK);
  REQUIRE(len >= n);
  char name[64];
  snprintf(name, sizeof name, "prefix_%zu.txt", n);
  scratch_write(scratch_path(path, name), text, n);
  free(text);
  return path;
}

/* Train on the first `bytes` of the text and compare with the fixture `name`. */
static void same_as_tokenizers(const char *name, size_t bytes, int vocab, const char *pattern) {
  char input[1024], out[1024], ref[256];
  const char *special[] = {"<|endoftext|>"};
  tsl_tokenizer_train_opts o = {.vocab_size = vocab, .special = special, .n_special = 1,
                                .pattern = pattern ? tsl_tokenizer_pattern_named(pattern) : NULL};
  const char *files[] = {prefix_file(input, bytes)};
  tsl_tokenizer_train_report r;
  tsl_status st = tsl_tokenizer_train(files, 1, &o, scratch_path(out, "trained.json"), &r);
  if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
  REQUIRE(st == TESSEL_OK);
  snprintf(ref, sizeof ref, FIXTURES "%s.json", name);
  cJSON *a = read_json(out), *b = read_json(ref);
  cJSON *ma = cJSON_GetObjectItem(a, "model"), *mb = cJSON_GetObjectItem(b, "model");
  CHECK_EQ_INT(r.vocab_size, vocab);
  CHECK(cJSON_Compare(cJSON_GetObjectItem(ma, "vocab"), cJSON_GetObjectItem(mb, "vocab"), 1));
  cJSON *pa = merge_pairs(cJSON_GetObjectItem(ma, "merges")), *pb = merge_pairs(cJSON_GetObjectItem(mb, "merges"));
  CHECK(cJSON_GetArraySize(pa) == r.merges && cJSON_Compare(pa, pb, 1));
  CHECK(all_strings(cJSON_GetObjectItem(ma, "merges")));
  cJSON_Delete(pa);
  cJSON_Delete(pb);
  CHECK(cJSON_Compare(cJSON_GetObjectItem(a, "pre_tokenizer"), cJSON_GetObjectItem(b, "pre_tokenizer"), 1));
  CHECK(cJSON_Compare(cJSON_GetObjectItem(a, "added_tokens"), cJSON_GetObjectItem(b, "added_tokens"), 1));
  fprintf(stderr, "%s: %d merges from %llu bytes, same as tokenizers\n", name, r.merges, (unsigned long long)r.bytes);
  cJSON_Delete(a);
  cJSON_Delete(b);
}

static void test_gpt2_merges_equal(void) { same_as_tokenizers("gpt2_1024", 300000, 1024, NULL); }
static void test_llama3_merges_equal(void) { same_as_tokenizers("llama3_512", 100000, 512, "llama3"); }

static tsl_status count(void *ctx, const int32_t *ids, size_t n) {
  (void)ids;
  *(uint64_t *)ctx += n;
  return TESSEL_OK;
}

static void test_whole_text_token_count(void) {
  char out[1024], *text;
  size_t len;
  const char *special[] = {"<|endoftext|>"}, *files[] = {TEXT};
  tsl_tokenizer_train_opts o = {.vocab_size = 1024, .special = special, .n_special = 1};
  REQUIRE(tsl_tokenizer_train(files, 1, &o, scratch_path(out, "whole.json"), NULL) == TESSEL_OK);
  tsl_tokenizer *t;
  REQUIRE(tsl_tokenizer_load(out, &t) == TESSEL_OK);
  REQUIRE(tsl_read_file(TEXT, &text, &len) == TESSEL_OK);
  uint64_t n = 0;
  REQUIRE(tsl_tokenizer_encode(t, text, len, 0, count, &n) == TESSEL_OK);
  cJSON *ref = read_json(FIXTURES "counts.json");
  double want = cJSON_GetObjectItem(ref, "tokens")->valuedouble;
  fprintf(stderr, "tinyshakespeare, vocabulary 1024: tessel %llu tokens, tokenizers %.0f (%+.3f%%)\n",
          (unsigned long long)n, want, 100.0 * ((double)n - want) / want);
  CHECK_CLOSE((double)n, want, 0, 0.01); /* the bound: within 1% */
  cJSON_Delete(ref);
  free(text);
  tsl_tokenizer_free(t);
}

/* A token of any length trains and loads: a run of 5000 dashes merges into
** tokens of up to 4096 bytes, and the loader once refused merges of 4096
** bytes or more ("merge 11 is too long") in a file it had written. */
static void test_long_tokens_load(void) {
  char input[1024], out[1024], dashes[5000];
  memset(dashes, '-', sizeof dashes);
  scratch_write(scratch_path(input, "dashes.txt"), dashes, sizeof dashes);
  const char *special[] = {"<|endoftext|>"}, *files[] = {input};
  tsl_tokenizer_train_opts o = {.vocab_size = 300, .special = special, .n_special = 1};
  REQUIRE(tsl_tokenizer_train(files, 1, &o, scratch_path(out, "dashes.json"), NULL) == TESSEL_OK);
  tsl_tokenizer *t = NULL;
  tsl_status st = tsl_tokenizer_load(out, &t);
  if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
  REQUIRE(st == TESSEL_OK);
  uint64_t n = 0;
  REQUIRE(tsl_tokenizer_encode(t, dashes, sizeof dashes, 0, count, &n) == TESSEL_OK);
  CHECK(n <= 4); /* 4096 + 512 + 256 + 128 + 8: the longest tokens cover the run */
  tsl_tokenizer_free(t);
}

/* Which added tokens begin and end a text: Llama 3's two, or GPT-2's one
** for both. An export declares them as BOS and EOS; it once called
** <|end_of_text|> the BOS too. */
static void test_begin_and_end_tokens(void) {
  char input[1024], out[1024];
  scratch_write(scratch_path(input, "bos.txt"), "hello hello world", 17);
  const char *files[] = {input}, *llama[] = {"<|begin_of_text|>", "<|end_of_text|>"}, *gpt2[] = {"<|endoftext|>"};
  tsl_tokenizer *t = NULL;
  tsl_tokenizer_train_opts o = {.vocab_size = 262, .special = llama, .n_special = 2};
  REQUIRE(tsl_tokenizer_train(files, 1, &o, scratch_path(out, "llama.json"), NULL) == TESSEL_OK);
  REQUIRE(tsl_tokenizer_load(out, &t) == TESSEL_OK);
  CHECK_EQ_INT(tsl_tokenizer_bos(t), 0); /* BpeTrainer gives the special tokens the first ids, in order */
  CHECK_EQ_INT(tsl_tokenizer_eot(t), 1);
  tsl_tokenizer_free(t);
  o = (tsl_tokenizer_train_opts){.vocab_size = 262, .special = gpt2, .n_special = 1};
  REQUIRE(tsl_tokenizer_train(files, 1, &o, scratch_path(out, "gpt2.json"), NULL) == TESSEL_OK);
  REQUIRE(tsl_tokenizer_load(out, &t) == TESSEL_OK);
  CHECK_EQ_INT(tsl_tokenizer_bos(t), 0);
  CHECK_EQ_INT(tsl_tokenizer_eot(t), 0);
  tsl_tokenizer_free(t);
}

/* Special tokens tokenizer.json cannot hold, or that would take a byte's
** id: not UTF-8, or the stand-in of a byte written as another character
** ("Ġ", the space), or stand-ins among other characters ("Ġdon": written,
** then refused by every command that loads the file). A byte written as
** itself ("a") may be one. */
static void test_special_tokens_checked(void) {
  char input[1024], out[1024];
  const char *files[] = {prefix_file(input, 20000)};
  static const char *const bad[][2] = {{"<\xff>", "is not valid UTF-8"},
                                       {"\xc4\xa0", "is the byte-level symbol of byte 0x20"},
                                       {"\xc4\xa0" "don", "holds characters that byte-level BPE uses for other bytes"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *special[] = {bad[i][0]};
    tsl_tokenizer_train_opts o = {.vocab_size = 300, .special = special, .n_special = 1};
    CHECK_EQ_INT(tsl_tokenizer_train(files, 1, &o, scratch_path(out, "special.json"), NULL), TESSEL_E_CONFIG);
    CHECK_STR_CONTAINS(tsl_error_message(), bad[i][1]);
  }
  const char *special[] = {"a"};
  tsl_tokenizer_train_opts o = {.vocab_size = 300, .special = special, .n_special = 1};
  CHECK_EQ_INT(tsl_tokenizer_train(files, 1, &o, scratch_path(out, "special_a.json"), NULL), TESSEL_OK);
}

/* A pattern that matches the empty string splits there, as tokenizers'
** Split does: "\\s*" cuts text into characters and runs of white space,
** so "ab ab ab ab" gives no merge (tokenizers 0.23.3's BpeTrainer gives
** none either; empty matches were once skipped, and "ab" merged). */
static void test_empty_matches_split(void) {
  char input[1024], out[1024];
  static const char text[] = "ab ab ab ab ab ab";
  scratch_write(scratch_path(input, "abab.txt"), text, sizeof text - 1);
  const char *special[] = {"<|endoftext|>"}, *files[] = {input};
  tsl_tokenizer_train_opts o = {.vocab_size = 270, .special = special, .n_special = 1, .pattern = "\\s*"};
  tsl_tokenizer_train_report r;
  REQUIRE(tsl_tokenizer_train(files, 1, &o, scratch_path(out, "empty_matches.json"), &r) == TESSEL_OK);
  CHECK_EQ_INT(r.merges, 0);
}

/* The largest vocabulary the option takes trains on a small text (as many
** merges as it allows): the vocabulary table was once sized for the request,
** 2^31 slots, and the run failed for memory whatever the text. */
static void test_vocab_beyond_the_text(void) {
  char input[1024], out[1024];
  const char *special[] = {"<|endoftext|>"}, *files[] = {prefix_file(input, 20000)};
  tsl_tokenizer_train_opts o = {.vocab_size = 1 << 30, .special = special, .n_special = 1};
  tsl_tokenizer_train_report r;
  REQUIRE(tsl_tokenizer_train(files, 1, &o, scratch_path(out, "all_merges.json"), &r) == TESSEL_OK);
  CHECK(r.vocab_size > 257 && r.vocab_size < 20000);
}

/* A merge whose part holds a space cannot be the string "a b" (it would
** read as three parts): the writer keeps the pair form for it alone. No
** byte-level token holds one; the writer is given such tokens directly. */
static void test_merge_with_space_is_a_pair(void) {
  static const char strings[] = "<|endoftext|>abx yabx yb";
  static const size_t off[] = {0, 13, 14, 15, 18, 20}, len[] = {13, 1, 1, 3, 2, 4};
  static const uint32_t merges[][2] = {{1, 2}, {3, 2}};
  tsl_bpe_json b = {.strings = strings, .off = off, .len = len, .n_tokens = 6, .merges = merges, .n_merges = 2,
                    .n_special = 1};
  char out[1024];
  REQUIRE(tsl_bpe_write_json(scratch_path(out, "space.json"), &b) == TESSEL_OK);
  cJSON *root = read_json(out), *m = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "model"), "merges");
  cJSON *first = cJSON_GetArrayItem(m, 0), *second = cJSON_GetArrayItem(m, 1);
  CHECK(cJSON_IsString(first) && !strcmp(first->valuestring, "a b"));
  CHECK(cJSON_IsArray(second) && cJSON_GetArraySize(second) == 2 &&
        !strcmp(cJSON_GetArrayItem(second, 0)->valuestring, "x y") &&
        !strcmp(cJSON_GetArrayItem(second, 1)->valuestring, "b"));
  cJSON_Delete(root);
}

/* An empty file is "no text": alone (or with only other empty files) it is
** refused as empty input, beside a text it adds nothing. An empty file maps
** to no memory at all, and the pre-tokenizer once searched that NULL for
** U+180E (memmem(NULL, 0, ...)): UBSan stopped the run before the message,
** which only the sanitizer build (.ci/run runs this test under it) sees. */
static void test_empty_input(void) {
  char empty[1024], other[1024], text[1024], out[1024];
  static const char words[] = "ab ab ab ab ab ab";
  scratch_write(scratch_path(empty, "empty.txt"), "", 0);
  scratch_write(scratch_path(other, "empty2.txt"), "", 0);
  scratch_write(scratch_path(text, "abab.txt"), words, sizeof words - 1);
  const char *special[] = {"<|endoftext|>"};
  tsl_tokenizer_train_opts o = {.vocab_size = 270, .special = special, .n_special = 1};
  const char *alone[] = {empty}, *both_empty[] = {empty, other}, *with_text[] = {text, empty};
  CHECK_EQ_INT(tsl_tokenizer_train(alone, 1, &o, scratch_path(out, "empty.json"), NULL), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "empty input");
  CHECK(!tsl_path_exists(out));
  CHECK_EQ_INT(tsl_tokenizer_train(both_empty, 2, &o, out, NULL), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "and every other input file holds no bytes");
  tsl_tokenizer_train_report r;
  REQUIRE(tsl_tokenizer_train(with_text, 2, &o, scratch_path(out, "with_empty.json"), &r) == TESSEL_OK);
  CHECK(r.bytes == sizeof words - 1 && r.merges > 0);
}

/* The tests that need no text run everywhere (the sanitizer build too);
** the comparisons with tokenizers need tinyshakespeare and are skipped
** (exit 77) without it. */
int main(void) {
  scratch_init("test_tokenizer_train");
  RUN(test_empty_input);
  RUN(test_merge_with_space_is_a_pair);
  if (!tsl_path_exists(TEXT)) {
    fprintf(stderr, "skipped the rest: %s is not there (the shared data beside the repository)\n", TEXT);
    if (harness_failures) return HARNESS_EXIT();
    scratch_cleanup();
    return 77;
  }
  RUN(test_gpt2_merges_equal);
  RUN(test_llama3_merges_equal);
  RUN(test_whole_text_token_count);
  RUN(test_long_tokens_load);
  RUN(test_special_tokens_checked);
  RUN(test_begin_and_end_tokens);
  RUN(test_empty_matches_split);
  RUN(test_vocab_beyond_the_text);
  if (!harness_failures) scratch_cleanup();
  return HARNESS_EXIT();
}
