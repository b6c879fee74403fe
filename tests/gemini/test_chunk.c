/*
** tests/gemini/test_chunk.c — gemini's chunks in isolation: packing, shard
** geometry, the tensor state machine and the chunk-size search, built
** straight from plugins/gemini/chunk.c and search.c with a host table that
** only records errors.
*/
#include <stdarg.h>

#include "../../plugins/gemini/gemini.h"
#include "harness.h"

static char last_error[512];
static tessel_status last_status;

static tessel_status fake_set_error(tessel_host *h, tessel_status st, const char *fmt, ...) {
  (void)h;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
  last_status = st;
  return st;
}

static const tessel_host_api fake_api = {.size = sizeof(tessel_host_api), .set_error = fake_set_error};

/* Tensors named t0, t1, ... with the given sizes. */
static gm_tensor *tensors(const uint64_t *numel, int n) {
  static const char *const names[] = {"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"};
  gm_tensor *t = calloc((size_t)n, sizeof *t);
  for (int i = 0; i < n; i++) t[i] = (gm_tensor){.param = i, .name = names[i], .numel = numel[i]};
  return t;
}

/* Next fit in order; a tensor larger than a chunk gets one of its own. */
static void test_pack(void) {
  const uint64_t numel[] = {10, 20, 5, 40, 3};
  int chunk[5];
  uint64_t offset[5], sizes[5], capacity;
  int nc = gm_pack(numel, 5, 32, 4, chunk, offset, sizes, &capacity);
  CHECK_EQ_INT(nc, 4);
  CHECK_EQ_INT(chunk[0], 0);
  CHECK_EQ_INT(chunk[1], 0);
  CHECK_EQ_INT(offset[1], 10);
  CHECK_EQ_INT(chunk[2], 1); /* 30 + 5 > 32 */
  CHECK_EQ_INT(chunk[3], 2); /* 40 > 32: alone, rounded up to the alignment */
  CHECK_EQ_INT(sizes[2], 40);
  CHECK_EQ_INT(chunk[4], 3); /* after an oversized tensor a new chunk opens */
  CHECK_EQ_INT(offset[4], 0);
  CHECK_EQ_INT(capacity, 32 + 32 + 40 + 32);
  CHECK_EQ_INT(gm_pack(numel, 5, 32, 4, NULL, NULL, NULL, &capacity), 4);
  const uint64_t odd[] = {37};
  gm_pack(odd, 1, 32, 16, NULL, NULL, sizes, &capacity);
  CHECK_EQ_INT(capacity, 48);
}

/* Two ranks: each owns half of every chunk, tensors straddle the halves,
** and the segments of a shard are exactly the tensors' parts in it. */
static void test_shards(void) {
  const uint64_t numel[] = {20, 30, 14};
  gm_chunks cs;
  REQUIRE(gm_chunks_build(&cs, &fake_api, NULL, tensors(numel, 3), 3, 64, 2, 1) == TESSEL_OK);
  CHECK_EQ_INT(cs.nc, 1);
  CHECK_EQ_INT(cs.c[0].shard, 32);
  CHECK_EQ_INT(cs.c[0].used, 64);
  uint64_t b, e;
  gm_tensor_part(&cs, 0, 0, &b, &e); /* t0 = [0, 20): all on rank 0 */
  CHECK(b == 0 && e == 20);
  gm_tensor_part(&cs, 0, 1, &b, &e);
  CHECK(b == 0 && e == 0);
  gm_tensor_part(&cs, 1, 0, &b, &e); /* t1 = [20, 50): 12 on rank 0, 18 on rank 1 */
  CHECK(b == 0 && e == 12);
  gm_tensor_part(&cs, 1, 1, &b, &e);
  CHECK(b == 12 && e == 30);
  /* rank 1's segments: t1's last 18 at shard offset 0, t2 whole at 18 */
  CHECK_EQ_INT(cs.c[0].nsegs, 2);
  CHECK(cs.c[0].segs[0].tensor == 1 && cs.c[0].segs[0].shard_off == 0 && cs.c[0].segs[0].n == 18);
  CHECK(cs.c[0].segs[1].tensor == 2 && cs.c[0].segs[1].shard_off == 18 && cs.c[0].segs[1].n == 14);
  gm_chunks_free(&cs);
}

/* Padding: a chunk's unused tail belongs to no segment. */
static void test_padding(void) {
  const uint64_t numel[] = {40, 40};
  gm_chunks cs;
  REQUIRE(gm_chunks_build(&cs, &fake_api, NULL, tensors(numel, 2), 2, 64, 2, 1) == TESSEL_OK);
  CHECK_EQ_INT(cs.nc, 2);
  CHECK_EQ_INT(cs.c[0].used, 40);
  CHECK_EQ_INT(cs.c[0].nsegs, 1); /* rank 1 holds t0's elements 32..40, then 24 of padding */
  CHECK(cs.c[0].segs[0].shard_off == 0 && cs.c[0].segs[0].n == 8);
  gm_chunks_free(&cs);
}

/* A tensor's life through forward, backward and the reduce; counts follow. */
static void test_states(void) {
  const uint64_t numel[] = {16, 16};
  gm_chunks cs;
  REQUIRE(gm_chunks_build(&cs, &fake_api, NULL, tensors(numel, 2), 2, 32, 1, 0) == TESSEL_OK);
  const gm_state life[] = {GM_HOLD, GM_COMPUTE, GM_HOLD, GM_FREE, GM_HOLD, GM_COMPUTE, GM_HOLD_AFTER_BWD,
                           GM_COMPUTE, GM_HOLD_AFTER_BWD, GM_READY_FOR_REDUCE, GM_HOLD, GM_FREE};
  for (size_t i = 0; i < sizeof life / sizeof *life; i++) CHECK(gm_set_state(&cs, 0, life[i]) == TESSEL_OK);
  CHECK_EQ_INT(cs.c[0].in_state[GM_FREE], 2);
  CHECK(gm_set_state(&cs, 1, GM_HOLD) == TESSEL_OK);
  CHECK_EQ_INT(cs.c[0].in_state[GM_HOLD], 1);
  CHECK_EQ_INT(cs.c[0].in_state[GM_FREE], 1);
  gm_chunks_free(&cs);
}

/* Every move outside the table is an internal error naming the tensor and
** both states, and leaves the state as it was. */
static void test_invalid(void) {
  const uint64_t numel[] = {16, 16};
  static const struct {
    gm_state path[3];
    int n;
    gm_state bad;
  } cases[] = {
      {{GM_FREE}, 0, GM_COMPUTE},                            /* use before gathering */
      {{GM_HOLD}, 1, GM_HOLD_AFTER_BWD},                     /* a gradient without compute */
      {{GM_HOLD, GM_COMPUTE}, 2, GM_FREE},                   /* release while computing */
      {{GM_HOLD, GM_COMPUTE, GM_HOLD_AFTER_BWD}, 3, GM_FREE}, /* release a pending gradient's state */
      {{GM_HOLD, GM_COMPUTE, GM_HOLD_AFTER_BWD}, 3, GM_HOLD}, /* forget a gradient */
      {{GM_FREE}, 0, GM_READY_FOR_REDUCE},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    gm_chunks cs;
    REQUIRE(gm_chunks_build(&cs, &fake_api, NULL, tensors(numel, 2), 2, 32, 1, 0) == TESSEL_OK);
    for (int k = 0; k < cases[i].n; k++) REQUIRE(gm_set_state(&cs, 1, cases[i].path[k]) == TESSEL_OK);
    gm_state before = cs.t[1].state;
    last_error[0] = '\0';
    CHECK(gm_set_state(&cs, 1, cases[i].bad) == TESSEL_E_INTERNAL);
    CHECK(last_status == TESSEL_E_INTERNAL);
    CHECK_STR_CONTAINS(last_error, "tensor t1");
    CHECK_STR_CONTAINS(last_error, gm_state_name(before));
    CHECK_STR_CONTAINS(last_error, gm_state_name(cases[i].bad));
    CHECK(cs.t[1].state == before);
    CHECK_EQ_INT(cs.c[0].in_state[before], before == GM_FREE ? 2 : 1); /* t0 is FREE throughout */
    gm_chunks_free(&cs);
  }
}

/* The least waste wins; ties go to the smaller chunk. */
static void test_search(void) {
  gm_search_result r;
  /* 3000: 4 chunks, 1500 wasted; 4024: 4 chunks, 5596; 5048: 3 chunks (the
  ** last holds 3000 + 1500), 4644 */
  const uint64_t a[] = {3000, 3000, 3000, 1500};
  gm_search(a, 4, 8, &r);
  CHECK_EQ_INT(r.lo, 3000);
  CHECK_EQ_INT(r.hi, 6000);
  CHECK_EQ_INT(r.step, 1024);
  CHECK_EQ_INT(r.tried, 3);
  CHECK_EQ_INT(r.chunk_elems, 3000);
  CHECK_EQ_INT(r.wasted, 1500);
  CHECK_EQ_INT(r.chunks, 4);
  /* 1024 and 2048 both waste nothing: the tie goes to the smaller */
  const uint64_t b[] = {1024, 1024, 1024, 1024};
  gm_search(b, 4, 16, &r);
  CHECK_EQ_INT(r.wasted, 0);
  CHECK_EQ_INT(r.chunk_elems, 1024);
  /* candidates 9000, 10024, ..., 17192: 11048 is the first that takes a
  ** 9000 and a 2000 together, 4 chunks wasting 4192 */
  const uint64_t c[] = {9000, 9000, 2000, 9000, 9000, 2000};
  gm_search(c, 6, 8, &r);
  CHECK_EQ_INT(r.tried, 9);
  CHECK_EQ_INT(r.chunk_elems, 11048);
  CHECK_EQ_INT(r.chunks, 4);
  CHECK_EQ_INT(r.wasted, 4192);
}

/* A tensor far above the rest (> mean + 3σ) does not set the range. */
static void test_outlier(void) {
  uint64_t numel[12];
  for (int i = 0; i < 11; i++) numel[i] = 1000;
  numel[11] = 1000000;
  gm_search_result r;
  gm_search(numel, 12, 16, &r);
  CHECK_EQ_INT(r.outliers, 1);
  CHECK_EQ_INT(r.lo, 1008);
  CHECK(r.chunk_elems < 1000000);
}

int main(void) {
  RUN(test_pack);
  RUN(test_shards);
  RUN(test_padding);
  RUN(test_states);
  RUN(test_invalid);
  RUN(test_search);
  RUN(test_outlier);
  return HARNESS_EXIT();
}
