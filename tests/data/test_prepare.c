/* tests/data/test_prepare.c — text files to byte-level token shards. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "data/prepare.h"
#include "data/shard.h"
#include "scratch.h"

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
    for (uint64_t k = 0; k < s.count; k++) out[total + k] = (unsigned char)s.tokens[k];
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

int main(void) {
  scratch_init("test_prepare");
  RUN(test_split_sizes_and_sharding);
  RUN(test_shard_boundary_exact);
  RUN(test_glob_inputs_sorted);
  RUN(test_rerun_removes_stale_shards);
  RUN(test_default_options);
  RUN(test_errors);
  scratch_cleanup();
  return HARNESS_EXIT();
}
