/* tests/data/test_shard.c — token shard writing, reading and validation. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "data/shard.h"
#include "scratch.h"

/* A shard with an arbitrary header, for the error paths. */
static void write_raw_shard(const char *path, int32_t magic, int32_t version, int32_t count,
                            const uint16_t *tokens, size_t ntok) {
  unsigned char buf[TSL_SHARD_HEADER_BYTES + 2 * 64] = {0};
  int32_t fields[3] = {magic, version, count};
  REQUIRE(ntok <= 64);
  memcpy(buf, fields, sizeof fields); /* the test host is little-endian, like the format */
  memcpy(buf + TSL_SHARD_HEADER_BYTES, tokens, 2 * ntok);
  scratch_write(path, buf, TSL_SHARD_HEADER_BYTES + 2 * ntok);
}

static void test_round_trip(void) {
  char path[1024];
  uint16_t tokens[1000];
  tsl_shard s;
  for (int i = 0; i < 1000; i++) tokens[i] = (uint16_t)(i * 7919u);
  tokens[999] = 65535;
  scratch_path(path, "round.bin");
  REQUIRE(tsl_shard_write(path, tokens, 1000) == TESSEL_OK);
  CHECK_EQ_INT(scratch_temp_files(path), 0);
  REQUIRE(tsl_shard_open(path, 0, &s) == TESSEL_OK);
  CHECK_EQ_INT(s.count, 1000);
  uint32_t back[1000];
  REQUIRE(tsl_shard_read(&s, 0, 1000, back) == TESSEL_OK);
  int same = 1;
  for (int i = 0; i < 1000; i++) same &= back[i] == tokens[i];
  CHECK(same);
  REQUIRE(tsl_shard_read(&s, 998, 2, back) == TESSEL_OK);
  CHECK_EQ_INT(back[1], 65535);
  CHECK_EQ_INT(tsl_shard_read(&s, 999, 2, back), TESSEL_E_INTERNAL); /* past the end: a caller bug */
  CHECK(strcmp(s.path, path) == 0);
  tsl_shard_close(&s);
  /* the largest vocabulary a uint16 token can need accepts every token */
  REQUIRE(tsl_shard_open(path, 65536, &s) == TESSEL_OK);
  tsl_shard_close(&s);
}

static void test_empty_shard(void) {
  char path[1024];
  tsl_shard s;
  scratch_path(path, "empty.bin");
  REQUIRE(tsl_shard_write(path, NULL, 0) == TESSEL_OK);
  REQUIRE(tsl_shard_open(path, 256, &s) == TESSEL_OK);
  CHECK_EQ_INT(s.count, 0);
  tsl_shard_close(&s);
}

static void test_overwrite_is_atomic_replace(void) {
  char path[1024];
  uint16_t a[3] = {1, 2, 3}, b[2] = {9, 8};
  tsl_shard s;
  scratch_path(path, "replace.bin");
  REQUIRE(tsl_shard_write(path, a, 3) == TESSEL_OK);
  REQUIRE(tsl_shard_write(path, b, 2) == TESSEL_OK);
  REQUIRE(tsl_shard_open(path, 0, &s) == TESSEL_OK);
  CHECK_EQ_INT(s.count, 2);
  uint32_t first;
  REQUIRE(tsl_shard_read(&s, 0, 1, &first) == TESSEL_OK);
  CHECK_EQ_INT(first, 9);
  tsl_shard_close(&s);
}

static void test_too_many_tokens(void) {
  char path[1024];
  scratch_path(path, "huge.bin");
  CHECK_EQ_INT(tsl_shard_write(path, NULL, TSL_SHARD_MAX_TOKENS + 1), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK(!tsl_path_exists(path));
}

static void test_bad_magic(void) {
  char path[1024];
  uint16_t t[2] = {1, 2};
  tsl_shard s;
  scratch_path(path, "magic.bin");
  write_raw_shard(path, 12345, 1, 2, t, 2);
  CHECK_EQ_INT(tsl_shard_open(path, 0, &s), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), "not a tessel/llm.c token shard");
  CHECK_STR_CONTAINS(tsl_error_message(), "expected 20240520 or 20240801, found 12345");
  CHECK(s.path == NULL && s.count == 0);
}

static void test_wrong_version(void) {
  char path[1024];
  uint16_t t[2] = {1, 2};
  tsl_shard s;
  scratch_path(path, "version.bin");
  write_raw_shard(path, TSL_SHARD_MAGIC, 7, 2, t, 2);
  CHECK_EQ_INT(tsl_shard_open(path, 0, &s), TESSEL_E_VERSION);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), "version 7, expected 1 under magic 20240520");
  write_raw_shard(path, TSL_SHARD_WIDE_MAGIC, 1, 1, t, 2);
  CHECK_EQ_INT(tsl_shard_open(path, 0, &s), TESSEL_E_VERSION);
  CHECK_STR_CONTAINS(tsl_error_message(), "version 1, expected 7 under magic 20240801");
}

/* llm.c's Llama 3 format: uint32 tokens under magic 20240801, version 7,
** for vocabularies past 65536 (Llama 3's 128256, Qwen2's 151665). Tokens
** past 16 bits read back whole; the vocabulary check sees them; a window
** read from the middle (the dataset's reads) is exact too. A header as
** llm.c's write_datafile makes it, written here byte by byte, opens. */
static void test_wide_tokens(void) {
  char path[1024];
  uint32_t tokens[300], back[300];
  tsl_shard s;
  for (int i = 0; i < 300; i++) tokens[i] = (uint32_t)(i * 40503u) % 151665u;
  tokens[7] = 151664;
  scratch_path(path, "wide.bin");
  REQUIRE(tsl_shard_write_wide(path, tokens, 300) == TESSEL_OK);
  REQUIRE(tsl_shard_open(path, 151665, &s) == TESSEL_OK);
  CHECK_EQ_INT(s.count, 300);
  CHECK_EQ_INT(s.token_bytes, 4);
  REQUIRE(tsl_shard_read(&s, 0, 300, back) == TESSEL_OK);
  CHECK(memcmp(back, tokens, sizeof tokens) == 0);
  REQUIRE(tsl_shard_read(&s, 5, 3, back) == TESSEL_OK);
  CHECK(back[0] == tokens[5] && back[2] == 151664);
  tsl_shard_close(&s);
  CHECK_EQ_INT(tsl_shard_open(path, 128256, &s), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "token 151664 at offset 7");
  /* the bytes of llm.c's header and tokens */
  unsigned char raw[TSL_SHARD_HEADER_BYTES + 8] = {0};
  const int32_t fields[3] = {20240801, 7, 2};
  const uint32_t two[2] = {128000, 70000};
  memcpy(raw, fields, sizeof fields);
  memcpy(raw + TSL_SHARD_HEADER_BYTES, two, sizeof two);
  scratch_write(path, raw, sizeof raw);
  REQUIRE(tsl_shard_open(path, 128256, &s) == TESSEL_OK);
  REQUIRE(tsl_shard_read(&s, 0, 2, back) == TESSEL_OK);
  CHECK(back[0] == 128000 && back[1] == 70000);
  tsl_shard_close(&s);
  /* a 16-bit shard read into the same array: the in-place widening keeps
  ** every token (the last ones widen from the array's own upper half) */
  uint16_t narrow[300];
  for (int i = 0; i < 300; i++) narrow[i] = (uint16_t)(65535 - i);
  REQUIRE(tsl_shard_write(path, narrow, 300) == TESSEL_OK);
  REQUIRE(tsl_shard_open(path, 0, &s) == TESSEL_OK);
  REQUIRE(tsl_shard_read(&s, 0, 300, back) == TESSEL_OK);
  int same = 1;
  for (int i = 0; i < 300; i++) same &= back[i] == narrow[i];
  CHECK(same);
  tsl_shard_close(&s);
}

static void test_truncated(void) {
  char path[1024], want[128];
  uint16_t t[10] = {0};
  tsl_shard s;
  scratch_path(path, "short.bin");
  /* header promises 10 tokens, the file holds 9 */
  write_raw_shard(path, TSL_SHARD_MAGIC, 1, 10, t, 9);
  CHECK_EQ_INT(tsl_shard_open(path, 0, &s), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  snprintf(want, sizeof want, "truncated: %d bytes, header says 10 tokens = %d bytes",
           TSL_SHARD_HEADER_BYTES + 18, TSL_SHARD_HEADER_BYTES + 20);
  CHECK_STR_CONTAINS(tsl_error_message(), want);

  /* shorter than the header itself */
  scratch_write(path, "tiny", 4);
  CHECK_EQ_INT(tsl_shard_open(path, 0, &s), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), "truncated: 4 bytes");
}

static void test_trailing_bytes(void) {
  char path[1024];
  uint16_t t[4] = {0};
  tsl_shard s;
  scratch_path(path, "long.bin");
  write_raw_shard(path, TSL_SHARD_MAGIC, 1, 3, t, 4);
  CHECK_EQ_INT(tsl_shard_open(path, 0, &s), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), "header says 3 tokens");
}

static void test_token_beyond_vocab(void) {
  char path[1024];
  uint16_t t[8] = {1, 2, 3, 4, 5, 300, 6, 400};
  tsl_shard s;
  scratch_path(path, "vocab.bin");
  REQUIRE(tsl_shard_write(path, t, 8) == TESSEL_OK);
  CHECK_EQ_INT(tsl_shard_open(path, 256, &s), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), "token 300 at offset 5");
  CHECK_STR_CONTAINS(tsl_error_message(), "model.vocab_size = 256"); /* why: the dataset says (test_dataset.c) */
  /* a vocabulary of exactly max token + 1 is enough */
  REQUIRE(tsl_shard_open(path, 401, &s) == TESSEL_OK);
  tsl_shard_close(&s);
}

/* A shard truncated or rewritten in place while it is open (a copy made
** over it on a shared file system): reading it is an error naming the file,
** where a mapping of it died of SIGBUS. */
static void test_changed_under_reader(void) {
  char path[1024];
  uint16_t tokens[64];
  uint32_t back[8];
  tsl_shard s;
  for (int i = 0; i < 64; i++) tokens[i] = (uint16_t)i;
  scratch_path(path, "changing.bin");
  REQUIRE(tsl_shard_write(path, tokens, 64) == TESSEL_OK);
  REQUIRE(tsl_shard_open(path, 256, &s) == TESSEL_OK);
  tokens[60] = 300; /* the same size, a token the vocabulary does not hold */
  write_raw_shard(path, TSL_SHARD_MAGIC, TSL_SHARD_VERSION, 64, tokens, 64);
  CHECK_EQ_INT(tsl_shard_read(&s, 56, 8, back), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "token 300 at offset 60 is now >= model.vocab_size = 256");
  CHECK_STR_CONTAINS(tsl_error_message(), "rewritten in place");
  REQUIRE(truncate(path, TSL_SHARD_HEADER_BYTES + 2 * 10) == 0);
  REQUIRE(tsl_shard_read(&s, 0, 8, back) == TESSEL_OK); /* what is still there reads */
  CHECK_EQ_INT(tsl_shard_read(&s, 8, 8, back), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), "truncated or rewritten in place");
  tsl_shard_close(&s);
}

static void test_missing_file(void) {
  char path[1024];
  tsl_shard s;
  scratch_path(path, "does-not-exist.bin");
  CHECK_EQ_INT(tsl_shard_open(path, 0, &s), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), path);
  CHECK_STR_CONTAINS(tsl_error_message(), strerror(ENOENT));
}

int main(void) {
  scratch_init("test_shard");
  RUN(test_round_trip);
  RUN(test_empty_shard);
  RUN(test_overwrite_is_atomic_replace);
  RUN(test_too_many_tokens);
  RUN(test_bad_magic);
  RUN(test_wrong_version);
  RUN(test_wide_tokens);
  RUN(test_truncated);
  RUN(test_trailing_bytes);
  RUN(test_token_beyond_vocab);
  RUN(test_changed_under_reader);
  RUN(test_missing_file);
  scratch_cleanup();
  return HARNESS_EXIT();
}
