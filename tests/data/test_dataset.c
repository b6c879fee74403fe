/* tests/data/test_dataset.c — layout-independent batches and validation windows. */
#include <stdint.h>
#include <string.h>

#include "data/dataset.h"
#include "data/shard.h"
#include "scratch.h"

#define T 8
#define NSHARDS 4

/* Shard k holds k*1000 + position, so a token names its shard and place: a
** window that crossed shards would jump by ~1000 between neighbours. Shard 2
** is shorter than a window and must never be used. */
static const int shard_len[NSHARDS] = {50, 30, 5, 40};
static char pattern[1024];

static void make_shards(void) {
  char path[1024], name[64];
  uint16_t tokens[64];
  REQUIRE(tsl_mkdir_p(scratch_path(path, "ds")) == TESSEL_OK);
  for (int k = 0; k < NSHARDS; k++) {
    for (int i = 0; i < shard_len[k]; i++) tokens[i] = (uint16_t)(k * 1000 + i);
    snprintf(name, sizeof name, "ds/train_%06d.bin", k);
    REQUIRE(tsl_shard_write(scratch_path(path, name), tokens, (uint64_t)shard_len[k]) == TESSEL_OK);
  }
  scratch_path(pattern, "ds/train_*.bin");
}

static tsl_dataset *open_ds(void) {
  tsl_dataset *ds = NULL;
  REQUIRE(tsl_dataset_open(pattern, 4000, T, &ds) == TESSEL_OK);
  return ds;
}

/* True when row is a window of T+1 consecutive tokens of one shard. */
static int window_ok(const int32_t *in, const int32_t *tg) {
  int k = in[0] / 1000, pos = in[0] % 1000;
  if (k < 0 || k >= NSHARDS || pos + T + 1 > shard_len[k]) return 0;
  for (int t = 0; t < T; t++)
    if (in[t] != in[0] + t || tg[t] != in[t] + 1) return 0;
  return 1;
}

static void test_counts(void) {
  tsl_dataset *ds = open_ds();
  CHECK_EQ_INT(tsl_dataset_shards(ds), NSHARDS);
  CHECK_EQ_INT(tsl_dataset_tokens(ds), 50 + 30 + 5 + 40);
  /* floor((n - 1) / T) per shard: 6 + 3 + 0 + 4 */
  CHECK_EQ_INT(tsl_dataset_windows(ds), 13);
  tsl_dataset_close(ds);
}

static void test_batch_is_layout_independent(void) {
  enum { B = 64 };
  static int32_t in[B * T], tg[B * T], in2[B * T], tg2[B * T];
  const int cuts[] = {0, 10, 11, 37, 64};
  tsl_dataset *ds = open_ds();
  REQUIRE(tsl_dataset_train_batch(ds, 1234, 17, 0, B, in, tg) == TESSEL_OK);
  /* the same batch built as uneven slices, as ranks of any layout would */
  for (size_t c = 0; c + 1 < sizeof cuts / sizeof *cuts; c++)
    REQUIRE(tsl_dataset_train_batch(ds, 1234, 17, cuts[c], cuts[c + 1] - cuts[c], in2 + cuts[c] * T,
                            tg2 + cuts[c] * T) == TESSEL_OK);
  CHECK(memcmp(in, in2, sizeof in) == 0);
  CHECK(memcmp(tg, tg2, sizeof tg) == 0);
  /* and one sequence at a time, in reverse order, from a second handle */
  tsl_dataset *again = open_ds();
  for (int i = B - 1; i >= 0; i--)
    REQUIRE(tsl_dataset_train_batch(again, 1234, 17, i, 1, in2 + i * T, tg2 + i * T) == TESSEL_OK);
  CHECK(memcmp(in, in2, sizeof in) == 0);
  CHECK(memcmp(tg, tg2, sizeof tg) == 0);
  tsl_dataset_close(again);
  tsl_dataset_close(ds);
}

static void test_steps_and_seeds_differ(void) {
  enum { B = 16 };
  static int32_t base[B * T], other[B * T], tg[B * T];
  tsl_dataset *ds = open_ds();
  REQUIRE(tsl_dataset_train_batch(ds, 1, 0, 0, B, base, tg) == TESSEL_OK);
  REQUIRE(tsl_dataset_train_batch(ds, 1, 1, 0, B, other, tg) == TESSEL_OK);
  CHECK(memcmp(base, other, sizeof base) != 0);
  REQUIRE(tsl_dataset_train_batch(ds, 2, 0, 0, B, other, tg) == TESSEL_OK);
  CHECK(memcmp(base, other, sizeof base) != 0);
  /* sequences within one batch are not all the same window either */
  int distinct = 0;
  for (int i = 1; i < B; i++) distinct += base[i * T] != base[0];
  CHECK(distinct > 0);
  tsl_dataset_close(ds);
}

/* Over many steps every window is whole, inside one shard, with targets the
** inputs shifted by one; every valid start is reached and no other. */
static void test_windows_stay_in_shards(void) {
  enum { B = 64, STEPS = 200 };
  static int32_t in[B * T], tg[B * T];
  int hits[NSHARDS][64] = {{0}};
  tsl_dataset *ds = open_ds();
  int bad = 0;
  for (int s = 0; s < STEPS; s++) {
    REQUIRE(tsl_dataset_train_batch(ds, 99, s, 0, B, in, tg) == TESSEL_OK);
    for (int i = 0; i < B; i++) {
      if (!window_ok(in + i * T, tg + i * T)) {
        bad++;
        continue;
      }
      hits[in[i * T] / 1000][in[i * T] % 1000]++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  /* 12800 draws over 96 starts: missing one by chance has probability ~1e-56 */
  int unreached = 0;
  for (int k = 0; k < NSHARDS; k++)
    for (int p = 0; p + T < shard_len[k]; p++) unreached += hits[k][p] == 0;
  CHECK_EQ_INT(unreached, 0);
  for (int p = 0; p < shard_len[2]; p++) CHECK_EQ_INT(hits[2][p], 0);
  tsl_dataset_close(ds);
}

/* The documented draw: u = mix(mix(mix(seed) ^ step) ^ i), start u mod W over
** the shards' valid starts in order. Pinning it keeps resumed runs and old
** checkpoints on the same batches. */
static void test_draw_matches_contract(void) {
  enum { B = 32 };
  static int32_t in[B * T], tg[B * T];
  const uint64_t seed = 0xfeedbeefull;
  const int64_t step = 123456789;
  tsl_dataset *ds = open_ds();
  REQUIRE(tsl_dataset_train_batch(ds, seed, step, 1000, B, in, tg) == TESSEL_OK);
  for (int i = 0; i < B; i++) {
    uint64_t u = tsl_mix64(tsl_mix64(tsl_mix64(seed) ^ (uint64_t)step) ^ (uint64_t)(1000 + i));
    uint64_t r = u % 96; /* 42 + 22 + 0 + 32 valid starts */
    int k = 0;
    while (r >= (uint64_t)(shard_len[k] > T ? shard_len[k] - T : 0)) {
      r -= (uint64_t)(shard_len[k] > T ? shard_len[k] - T : 0);
      k++;
    }
    CHECK_EQ_INT(in[i * T], k * 1000 + (int)r);
  }
  tsl_dataset_close(ds);
}

static void test_eval_windows_enumerate(void) {
  enum { W = 13 };
  static int32_t in[W * T], tg[W * T], in2[4 * T], tg2[4 * T];
  /* window k starts at (k - windows before its shard) * T within the shard */
  const int want_start[W] = {0,    8,    16,   24,   32,   40,  1000,
                             1008, 1016, 3000, 3008, 3016, 3024};
  tsl_dataset *ds = open_ds();
  REQUIRE(tsl_dataset_eval_batch(ds, 0, W, in, tg) == TESSEL_OK);
  for (int k = 0; k < W; k++) {
    CHECK_EQ_INT(in[k * T], want_start[k]);
    CHECK(window_ok(in + k * T, tg + k * T));
  }
  /* a slice, and indices past the end wrapping around */
  REQUIRE(tsl_dataset_eval_batch(ds, 11, 4, in2, tg2) == TESSEL_OK);
  CHECK(memcmp(in2, in + 11 * T, 2 * T * sizeof *in) == 0);
  CHECK(memcmp(in2 + 2 * T, in, 2 * T * sizeof *in) == 0);
  CHECK(memcmp(tg2, tg + 11 * T, 2 * T * sizeof *tg) == 0);
  CHECK(memcmp(tg2 + 2 * T, tg, 2 * T * sizeof *tg) == 0);
  tsl_dataset_close(ds);
}

static void test_open_errors(void) {
  char path[1024], glob_pat[1024];
  uint16_t tokens[16] = {0};
  tsl_dataset *ds = (tsl_dataset *)1;

  scratch_path(glob_pat, "nowhere/*.bin");
  CHECK_EQ_INT(tsl_dataset_open(glob_pat, 256, T, &ds), TESSEL_E_IO);
  CHECK(ds == NULL);
  CHECK_STR_CONTAINS(tsl_error_message(), glob_pat);
  CHECK_STR_CONTAINS(tsl_error_message(), "no files match");

  /* only shards shorter than a window */
  REQUIRE(tsl_mkdir_p(scratch_path(path, "short")) == TESSEL_OK);
  REQUIRE(tsl_shard_write(scratch_path(path, "short/a.bin"), tokens, 5) == TESSEL_OK);
  REQUIRE(tsl_shard_write(scratch_path(path, "short/b.bin"), tokens, 8) == TESSEL_OK);
  scratch_path(glob_pat, "short/*.bin");
  CHECK_EQ_INT(tsl_dataset_open(glob_pat, 256, T, &ds), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), glob_pat);
  CHECK_STR_CONTAINS(tsl_error_message(), "the longest shard has 8 tokens, fewer than seq_len+1 = 9");

  /* the training shards' tokens reach 3039: a 3000-token model cannot read them */
  CHECK_EQ_INT(tsl_dataset_open(pattern, 3000, T, &ds), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), pattern);
  CHECK_STR_CONTAINS(tsl_error_message(), "train_000003.bin");
  CHECK_STR_CONTAINS(tsl_error_message(), "token 3000 at offset 0");
  CHECK_STR_CONTAINS(tsl_error_message(), "the shard was made for a larger vocabulary than model.vocab_size");

  CHECK_EQ_INT(tsl_dataset_open(pattern, 4000, 0, &ds), TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "seq_len");
}

int main(void) {
  scratch_init("test_dataset");
  RUN(make_shards);
  RUN(test_counts);
  RUN(test_batch_is_layout_independent);
  RUN(test_steps_and_seeds_differ);
  RUN(test_windows_stay_in_shards);
  RUN(test_draw_matches_contract);
  RUN(test_eval_windows_enumerate);
  RUN(test_open_errors);
  scratch_cleanup();
  return HARNESS_EXIT();
}
