/*
** tests/kernels/test_cpu_backend.c — the CPU backend's table, lifecycle,
** memory, no-op streams and argument checks.
*/
#include <cblas.h>
#include <omp.h>

#include "cpu/cpu.h"
#include "kernel_test.h"

static void test_table_identity(void) {
  const tsl_backend *t = tsl_cpu_backend();
  CHECK_EQ_INT(t->size, sizeof(tsl_backend));
  CHECK_EQ_INT(t->version, TSL_BACKEND_VERSION);
  CHECK(strcmp(t->name, "cpu") == 0);
  CHECK_EQ_INT(t->act_dtype, TESSEL_F32);
  CHECK(t->ctx == NULL);
  /* every entry is filled: the core calls them without NULL checks */
  const void *fns[] = {(const void *)t->init,
                       (const void *)t->shutdown,
                       (const void *)t->device_free_bytes,
                       (const void *)t->describe,
                       (const void *)t->device_alloc,
                       (const void *)t->device_free,
                       (const void *)t->host_alloc,
                       (const void *)t->host_free,
                       (const void *)t->copy,
                       (const void *)t->memset_zero,
                       (const void *)t->stream_create,
                       (const void *)t->stream_destroy,
                       (const void *)t->stream_sync,
                       (const void *)t->event_record,
                       (const void *)t->event_wait,
                       (const void *)t->event_free,
                       (const void *)t->gemm,
                       (const void *)t->linear_forward,
                       (const void *)t->linear_backward,
                       (const void *)t->layernorm_forward,
                       (const void *)t->layernorm_backward,
                       (const void *)t->layernorm_stats,
                       (const void *)t->layernorm_apply,
                       (const void *)t->layernorm_backward_stats,
                       (const void *)t->layernorm_backward_apply,
                       (const void *)t->rmsnorm_forward,
                       (const void *)t->rmsnorm_backward,
                       (const void *)t->rmsnorm_stats,
                       (const void *)t->rmsnorm_apply,
                       (const void *)t->rmsnorm_backward_stats,
                       (const void *)t->rmsnorm_backward_apply,
                       (const void *)t->attention_forward,
                       (const void *)t->attention_backward,
                       (const void *)t->rope,
                       (const void *)t->gelu_forward,
                       (const void *)t->gelu_backward,
                       (const void *)t->add,
                       (const void *)t->axpy,
                       (const void *)t->scale,
                       (const void *)t->convert,
                       (const void *)t->swiglu_forward,
                       (const void *)t->swiglu_backward,
                       (const void *)t->embed_tokens_forward,
                       (const void *)t->embed_positions_forward,
                       (const void *)t->embed_tokens_backward,
                       (const void *)t->embed_positions_backward,
                       (const void *)t->ce_rowmax,
                       (const void *)t->ce_sums,
                       (const void *)t->ce_finish,
                       (const void *)t->adamw,
                       (const void *)t->sumsq};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
    if (!fns[i]) fprintf(stderr, "  table entry %zu is NULL\n", i);
    CHECK(fns[i] != NULL);
  }
}

/* threads > 0 sets the OpenMP team, which also drives sgemm, and shows in
** describe(); threads = 0 leaves whatever was set. OpenBLAS is always one
** thread per call (the team splits the products). */
static void test_init_threads(void) {
  tsl_backend be = *tsl_cpu_backend();
  int before = omp_get_max_threads();
  tsl_backend_opts one = {.size = sizeof one, .threads = 1};
  REQUIRE(be.init(&be, &one) == 0);
  CHECK_EQ_INT(omp_get_max_threads(), 1);
  CHECK_EQ_INT(openblas_get_num_threads(), 1);
  CHECK_STR_CONTAINS(be.describe(&be), "cpu: 1 thread,");
  CHECK_STR_CONTAINS(be.describe(&be), "OpenBLAS 0.");
  CHECK(be.device_free_bytes(&be) == UINT64_MAX);
  be.shutdown(&be);
  CHECK(be.ctx == NULL);

  tsl_backend_opts two = {.size = sizeof two, .threads = 2};
  REQUIRE(be.init(&be, &two) == 0);
  CHECK_EQ_INT(omp_get_max_threads(), 2);
  CHECK_EQ_INT(openblas_get_num_threads(), 1);
  CHECK_STR_CONTAINS(be.describe(&be), "cpu: 2 threads,");
  be.shutdown(&be);

  omp_set_num_threads(1);
  tsl_backend_opts dflt = {.size = sizeof dflt, .threads = 0};
  REQUIRE(be.init(&be, &dflt) == 0);
  CHECK_EQ_INT(omp_get_max_threads(), 1);
  CHECK_STR_CONTAINS(be.describe(&be), "cpu: 1 thread,");
  be.shutdown(&be);

  omp_set_num_threads(before);
}

/* Allocations are zero-filled even when the allocator hands back memory
** just freed dirty, and 64-byte aligned; a size that cannot be rounded up
** fails with TESSEL_E_NOMEM instead of wrapping around. (Sizes the C
** library merely cannot satisfy are not tried: sanitizer builds abort on
** them instead of returning NULL.) */
static void test_alloc(void) {
  tsl_backend *be = kt_backend();
  const uint64_t sizes[] = {0, 1, 100, 4096, 1u << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    for (int host = 0; host < 2; host++) {
      int (*alloc)(tsl_backend *, uint64_t, void **) = host ? be->host_alloc : be->device_alloc;
      void (*release)(tsl_backend *, void *) = host ? be->host_free : be->device_free;
      void *p = NULL;
      REQUIRE(alloc(be, sizes[i], &p) == 0);
      REQUIRE(p != NULL);
      CHECK_EQ_INT((uintptr_t)p % 64, 0);
      memset(p, 0xab, sizes[i]);
      release(be, p);
      REQUIRE(alloc(be, sizes[i], &p) == 0);
      const unsigned char *c = p;
      uint64_t nonzero = 0;
      for (uint64_t j = 0; j < sizes[i]; j++) nonzero += c[j] != 0;
      CHECK_EQ_INT(nonzero, 0);
      release(be, p);
    }
  }
  void *p = (void *)1;
  CHECK_EQ_INT(be->device_alloc(be, UINT64_MAX, &p), TESSEL_E_NOMEM);
  CHECK(p == NULL);
  p = (void *)1;
  CHECK_EQ_INT(be->host_alloc(be, UINT64_MAX - 40, &p), TESSEL_E_NOMEM);
  CHECK(p == NULL);
}

static void test_copy_and_zero(void) {
  tsl_backend *be = kt_backend();
  const tsl_copy_kind kinds[] = {TSL_COPY_H2D, TSL_COPY_D2H, TSL_COPY_D2D, TSL_COPY_H2H};
  for (size_t k = 0; k < 4; k++) {
    unsigned char src[37], dst[37];
    for (int i = 0; i < 37; i++) src[i] = (unsigned char)(i * 7 + k);
    memset(dst, 0, sizeof dst);
    CHECK_EQ_INT(be->copy(be, dst, src, sizeof src, kinds[k], NULL), 0);
    CHECK(memcmp(dst, src, sizeof src) == 0);
  }
  unsigned char buf[19];
  memset(buf, 0x5a, sizeof buf);
  CHECK_EQ_INT(be->memset_zero(be, buf + 1, 17, NULL), 0);
  CHECK_EQ_INT(buf[0], 0x5a);
  CHECK_EQ_INT(buf[18], 0x5a);
  int zeros = 0;
  for (int i = 1; i < 18; i++) zeros += buf[i] == 0;
  CHECK_EQ_INT(zeros, 17);
}

static void test_streams_are_null(void) {
  tsl_backend *be = kt_backend();
  tsl_stream *s = (tsl_stream *)be;
  CHECK_EQ_INT(be->stream_create(be, &s), 0);
  CHECK(s == NULL);
  tsl_event *e = (tsl_event *)be;
  CHECK_EQ_INT(be->event_record(be, NULL, &e), 0);
  CHECK(e == NULL);
  CHECK_EQ_INT(be->event_wait(be, NULL, NULL), 0);
  CHECK_EQ_INT(be->stream_sync(be, NULL), 0);
  be->event_free(be, NULL);
  be->stream_destroy(be, NULL);
}

/* Unsupported dtypes and impossible sizes come back as negative statuses
** and leave outputs untouched. */
static void test_bad_arguments(void) {
  tsl_backend *be = kt_backend();
  float a[4] = {1, 2, 3, 4}, c[4] = {9, 9, 9, 9};
  CHECK_EQ_INT(be->gemm(be, NULL, 0, 0, 2, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2, TESSEL_BF16),
               TESSEL_E_UNSUPPORTED);
  CHECK(c[0] == 9.0f);
  CHECK(be->gemm(be, NULL, 0, 0, -1, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2, TESSEL_F32) < 0);
  CHECK(be->gemm(be, NULL, 0, 0, 2, 2, 2, 1.0f, a, 1, a, 2, 0.0f, c, 2, TESSEL_F32) < 0);
  CHECK_EQ_INT(
      be->gemm(be, NULL, 0, 0, (int64_t)1 << 32, 1, 1, 1.0f, a, 1, a, 1, 0.0f, c, 1, TESSEL_F32),
      TESSEL_E_UNSUPPORTED);
  CHECK(c[0] == 9.0f);
  CHECK_EQ_INT(be->axpy(be, NULL, TESSEL_BF16, c, 1.0f, a, 4), TESSEL_E_UNSUPPORTED);
  CHECK_EQ_INT(be->scale(be, NULL, TESSEL_F16, c, 2.0f, 4), TESSEL_E_UNSUPPORTED);
  CHECK_EQ_INT(be->convert(be, NULL, c, TESSEL_F32, a, TESSEL_I32, 4), TESSEL_E_UNSUPPORTED);
  CHECK_EQ_INT(be->convert(be, NULL, c, TESSEL_F16, a, TESSEL_BF16, 4), TESSEL_E_UNSUPPORTED);
  CHECK(c[0] == 9.0f && c[3] == 9.0f);
  const tsl_attn_shape no_head_size = {1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0};
  CHECK(be->attention_forward(be, NULL, c, c, a, a, a, &no_head_size) < 0);
  CHECK(be->rmsnorm_forward(be, NULL, c, c, a, a, 1, 0, 1e-5f) < 0);
  CHECK(be->rope(be, NULL, c, 1, 1, 1, 3, 3, 0, (tsl_rope_freqs){.theta = 10000.0f}, 0) < 0); /* odd head size */
  CHECK(be->swiglu_forward(be, NULL, c, a, a, -1) < 0);
  CHECK(be->layernorm_forward(be, NULL, c, c, c, a, a, a, 1, 0, 1e-5f) < 0);
  CHECK(be->layernorm_forward(be, NULL, c, c, c, a, a, a, 1, 1, -1.0f) < 0); /* negative eps */
  CHECK(be->gelu_forward(be, NULL, c, a, -1) < 0);
  CHECK(be->adamw(be, NULL, c, c, a, c, c, 4, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 1.0f, 0) < 0);
  CHECK(c[0] == 9.0f && c[3] == 9.0f);
}

/* Only OpenBLAS's Prescott fallback is replaced, and only by kernels whose
** every instruction set the CPU reports. */
static void test_blas_core_choice(void) {
  const tsl_cpu_features none = {0}, sse_only = {.fma = 1};
  const tsl_cpu_features avx2 = {.avx2 = 1, .fma = 1};
  const tsl_cpu_features avx512 = {.avx2 = 1, .fma = 1, .avx512f = 1, .avx512bw = 1, .avx512dq = 1,
                                   .avx512vl = 1, .avx512cd = 1};
  tsl_cpu_features avx512bf16 = avx512, avx512_no_bw = avx512;
  avx512bf16.avx512bf16 = 1;
  avx512_no_bw.avx512bw = 0;
  CHECK(tsl_cpu_blas_core_for("Prescott", &none) == NULL);
  CHECK(tsl_cpu_blas_core_for("Prescott", &sse_only) == NULL);
  CHECK(strcmp(tsl_cpu_blas_core_for("Prescott", &avx2), "Haswell") == 0);
  CHECK(strcmp(tsl_cpu_blas_core_for("Prescott", &avx512), "SkylakeX") == 0);
  CHECK(strcmp(tsl_cpu_blas_core_for("prescott", &avx512bf16), "Cooperlake") == 0);
  CHECK(strcmp(tsl_cpu_blas_core_for("Prescott", &avx512_no_bw), "Haswell") == 0);
  /* a core OpenBLAS recognised is its own table's choice: kept */
  CHECK(tsl_cpu_blas_core_for("Haswell", &avx512bf16) == NULL);
  CHECK(tsl_cpu_blas_core_for("Zen", &avx512) == NULL);
  CHECK(tsl_cpu_blas_core_for(NULL, &avx512) == NULL);
}

int main(void) {
  RUN(test_table_identity);
  RUN(test_init_threads);
  RUN(test_alloc);
  RUN(test_copy_and_zero);
  RUN(test_streams_are_null);
  RUN(test_bad_arguments);
  RUN(test_blas_core_choice);
  return HARNESS_EXIT();
}
