/*
** tests/gpu/test_cuda_memory.c — the CUDA backend's memory, copies, streams
** and events: what the ledger and the comm engine rely on. Exact checks:
** nothing here rounds.
*/
#include "gpu_test.h"

/* Allocations are zero-filled, including a block the cache hands out again
** after it held other data, and 0-byte requests give a usable pointer. */
static void test_alloc_zeroed_and_reused(void) {
  tsl_backend *be = gt_cuda();
  const int64_t n = 3000;
  float *ones = kt_floats(n);
  kt_fill(ones, n, 1.0f);
  float *d = gt_up_f32(ones, n);
  gt_sync();
  gt_free(d);
  float *again = gt_alloc((uint64_t)n * 4); /* same size class: the cached block */
  float *got = gt_down_f32(again, n);
  float *zeros = kt_floats(n);
  CHECK_ARRAY_EQ(got, zeros, n);
  void *empty = NULL;
  GT_OK(be->device_alloc(be, 0, &empty));
  CHECK(empty != NULL);
  gt_free(empty);
  gt_free(again);
  free(ones), free(got), free(zeros);
}

/* Free memory as the ledger sees it: what the driver has plus the cache,
** so freeing a block gives its bytes back at once. */
static void test_free_bytes_count_the_cache(void) {
  tsl_backend *be = gt_cuda();
  const uint64_t big = 256ull << 20;
  void *p = gt_alloc(big);
  uint64_t held = be->device_free_bytes(be);
  gt_free(p);
  uint64_t after = be->device_free_bytes(be);
  CHECK(after >= held + big);
  void *q = gt_alloc(big); /* served from the cache */
  CHECK(q == p);
  gt_free(q);
}

/* Pinned host memory is zeroed; copies in every direction, on a stream and
** synchronous (NULL stream), move the bytes exactly. */
static void test_host_memory_and_copies(void) {
  tsl_backend *be = gt_cuda();
  const int64_t n = 4097;
  uint64_t rng = 7;
  float *pinned = NULL;
  GT_OK(be->host_alloc(be, (uint64_t)n * 4, (void **)&pinned));
  float *zeros = kt_floats(n);
  CHECK_ARRAY_EQ(pinned, zeros, n);
  float *src = kt_random(&rng, n, -5, 5);
  memcpy(pinned, src, (size_t)n * 4);
  float *a = gt_alloc((uint64_t)n * 4), *b = gt_alloc((uint64_t)n * 4);
  GT_OK(be->copy(be, a, pinned, (uint64_t)n * 4, TSL_COPY_H2D, gt_s));
  GT_OK(be->copy(be, b, a, (uint64_t)n * 4, TSL_COPY_D2D, gt_s));
  float *back = kt_floats(n);
  GT_OK(be->copy(be, back, b, (uint64_t)n * 4, TSL_COPY_D2H, gt_s));
  gt_sync();
  CHECK_ARRAY_EQ(back, src, n);
  /* NULL stream: complete on return */
  float *host2 = kt_floats(n);
  GT_OK(be->copy(be, host2, pinned, (uint64_t)n * 4, TSL_COPY_H2H, NULL));
  CHECK_ARRAY_EQ(host2, src, n);
  GT_OK(be->memset_zero(be, b, (uint64_t)n * 4, gt_s));
  float *cleared = gt_down_f32(b, n);
  CHECK_ARRAY_EQ(cleared, zeros, n);
  be->host_free(be, pinned);
  gt_free(a), gt_free(b);
  free(zeros), free(src), free(back), free(host2), free(cleared);
}

/* An event recorded after a copy on one stream orders a second stream's
** copy after it; a query after the sync reports completion. */
static void test_streams_and_events(void) {
  tsl_backend *be = gt_cuda();
  const int64_t n = 1 << 20;
  uint64_t rng = 9;
  tsl_stream *other = NULL;
  GT_OK(be->stream_create(be, &other));
  float *src = kt_random(&rng, n, -1, 1);
  float *a = gt_alloc((uint64_t)n * 4), *b = gt_alloc((uint64_t)n * 4);
  tsl_event *ev = NULL;
  GT_OK(be->copy(be, a, src, (uint64_t)n * 4, TSL_COPY_H2D, gt_s));
  GT_OK(be->event_record(be, gt_s, &ev));
  GT_OK(be->event_wait(be, other, ev));
  GT_OK(be->copy(be, b, a, (uint64_t)n * 4, TSL_COPY_D2D, other));
  GT_OK(be->stream_sync(be, other));
  CHECK_EQ_INT(be->event_query(be, ev), 1);
  be->event_free(be, ev);
  float *got = gt_down_f32(b, n);
  CHECK_ARRAY_EQ(got, src, n);
  be->stream_destroy(be, other);
  gt_free(a), gt_free(b);
  free(src), free(got);
}

/* The device engine routes by memory kind. */
static void test_device_memory_kind(void) {
  tsl_backend *be = gt_cuda();
  void *dev = gt_alloc(64), *pinned = NULL, *heap = malloc(64);
  GT_OK(be->host_alloc(be, 64, &pinned));
  CHECK_EQ_INT(be->is_device_memory(be, dev), 1);
  CHECK_EQ_INT(be->is_device_memory(be, pinned), 0);
  CHECK_EQ_INT(be->is_device_memory(be, heap), 0);
  CHECK_STR_CONTAINS(be->describe(be), "cuda: ");
  be->host_free(be, pinned);
  gt_free(dev);
  free(heap);
}

int main(void) {
  gt_cuda();
  RUN(test_alloc_zeroed_and_reused);
  RUN(test_free_bytes_count_the_cache);
  RUN(test_host_memory_and_copies);
  RUN(test_streams_and_events);
  RUN(test_device_memory_kind);
  return HARNESS_EXIT();
}
