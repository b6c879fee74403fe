/*
** tests/gpu/test_cuda_comm.c — the device communication engine (NCCL) on a
** one-rank communicator: every collective kind and dtype the core routes to
** it, in and out of place, and a send/receive pair in one group. With one
** rank every collective is a copy, so results must be exact. (Several
** ranks are exercised by the training runs of tests/gpu/train_equiv.sh.)
*/
#include "gpu_test.h"

/* The bootstrap of a one-rank group: nothing to send, one status to agree on. */
static int bcast_self(void *arg, void *buf, int bytes) {
  (void)arg, (void)buf, (void)bytes;
  return 0;
}

static int agree_self(void *arg, int status) {
  (void)arg;
  return status;
}

static const tsl_dcomm_boot boot_self = {bcast_self, agree_self, NULL};

static int post(tsl_dcomm *c, tsl_coll_kind kind, const void *send, void *recv, uint64_t count, tessel_dtype dt) {
  tsl_coll op = {kind, send, recv, count, dt, TESSEL_SUM, 0};
  return gt_be.dcomm_post(&gt_be, c, &op, gt_s);
}

static void test_collectives(void) {
  tsl_backend *be = gt_cuda();
  tsl_dcomm *c = NULL;
  GT_OK(be->dcomm_create(be, 0, 1, &boot_self, &c));
  REQUIRE(c != NULL);
  uint64_t rng = 81;
  const int64_t n = 1000;
  float *x = gt_random(&rng, n, -1, 1);
  const tessel_dtype dts[] = {TESSEL_F32, TESSEL_BF16, TESSEL_F64};
  const tsl_coll_kind kinds[] = {TSL_COLL_ALL_REDUCE, TSL_COLL_REDUCE_SCATTER, TSL_COLL_ALL_GATHER,
                                 TSL_COLL_BROADCAST, TSL_COLL_REDUCE};
  for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
    const uint64_t es = dts[d] == TESSEL_F64 ? 8 : dts[d] == TESSEL_F32 ? 4 : 2;
    /* the same bytes in every dtype: bf16 values are exact in fp32 and fp64 */
    void *host = kt_xalloc((size_t)(n * es));
    for (int64_t i = 0; i < n; i++) {
      if (es == 8) ((double *)host)[i] = x[i];
      else if (es == 4) ((float *)host)[i] = x[i];
      else ((uint16_t *)host)[i] = tsl_f32_to_bf16(x[i]);
    }
    void *src = gt_alloc(n * es), *dst = gt_alloc(n * es), *back = kt_xalloc((size_t)(n * es));
    gt_copy(src, host, n * es, TSL_COPY_H2D);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
      GT_OK(be->memset_zero(be, dst, n * es, gt_s));
      const void *send = kinds[k] == TSL_COLL_BROADCAST ? dst : src;
      if (kinds[k] == TSL_COLL_BROADCAST) gt_copy(dst, host, n * es, TSL_COPY_H2D);
      GT_OK(post(c, kinds[k], send, dst, (uint64_t)n, dts[d]));
      gt_copy(back, dst, n * es, TSL_COPY_D2H);
      CHECK(memcmp(back, host, (size_t)(n * es)) == 0);
    }
    /* in place: all-reduce over its own buffer */
    GT_OK(post(c, TSL_COLL_ALL_REDUCE, src, src, (uint64_t)n, dts[d]));
    gt_copy(back, src, n * es, TSL_COPY_D2H);
    CHECK(memcmp(back, host, (size_t)(n * es)) == 0);
    gt_free(src), gt_free(dst);
    free(host), free(back);
  }
  /* a send to itself and the matching receive, launched together */
  float *src = gt_up_f32(x, n), *dst = gt_alloc((uint64_t)n * 4);
  tsl_coll send = {TSL_COLL_SEND, src, NULL, (uint64_t)n, TESSEL_F32, TESSEL_SUM, 0};
  tsl_coll recv = {TSL_COLL_RECV, NULL, dst, (uint64_t)n, TESSEL_F32, TESSEL_SUM, 0};
  GT_OK(be->dcomm_group(be, 1));
  GT_OK(be->dcomm_post(be, c, &send, gt_s));
  GT_OK(be->dcomm_post(be, c, &recv, gt_s));
  GT_OK(be->dcomm_group(be, 0));
  float *got = gt_down_f32(dst, n);
  CHECK_ARRAY_EQ(got, x, n);
  gt_free(src), gt_free(dst);
  free(x), free(got);
  be->dcomm_destroy(be, c);
}

int main(void) {
  gt_cuda();
  RUN(test_collectives);
  return HARNESS_EXIT();
}
