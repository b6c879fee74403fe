/*
** kernels/cuda/matmul.c — dense products through cuBLASLt: bf16 inputs,
** fp32 accumulation (CUBLAS_COMPUTE_32F), bf16 or fp32 output.
**
** Row-major to cuBLAS's column-major. A row-major [r, c] matrix with row
** stride ld is, read column-major, the [c, r] matrix with the same ld: its
** transpose. So row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ:
** cuBLAS multiplies B (as stored) by A (as stored) with m and n swapped,
** and op(B)ᵀ is "no transpose" exactly when B was not transposed.
**
** Plans are cached. Creating a matmul descriptor, three layouts, a
** preference and running the heuristic costs tens of microseconds, so a
** plan is kept per shape: sizes, leading dimensions, batch strides, output
** type, epilogue and the alignment class of every pointer (cuBLASLt assumes
** 256-byte aligned buffers unless told otherwise, and parameters packed back
** to back in one buffer are often less aligned; the heuristic then picks
** only algorithms that accept what we have). A training step uses a few
** dozen shapes; the cache holds CACHE_SLOTS and replaces round-robin.
**
** Bias. linear_forward adds a 16-byte aligned bias in cuBLASLt's epilogue;
** any other runs as "broadcast the bias into C, then C += A·B", decided
** before a plan is chosen (bias_route.h says why the heuristic cannot be
** asked).
*/
#include <cublasLt.h>
#include <stdlib.h>
#include <string.h>

#include "bias_route.h"
#include "tsl_cuda.h"

#define CACHE_SLOTS 128

/* Everything that decides the plan: the product in cuBLAS's column-major
** terms, and the alignment classes of the buffers. Zero-filled before use,
** so that it compares with memcmp. */
typedef struct plan_key {
  int32_t op_a, op_b, c_type, bias;
  int64_t m, n, k, lda, ldb, ldc;
  int64_t batch, stride_a, stride_b, stride_c;
  uint32_t align_a, align_b, align_c, align_bias;
} plan_key;

typedef struct plan {
  plan_key key;
  int used;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulAlgo_t algo;
} plan;

struct tsl_cuda_gemm_cache {
  plan slots[CACHE_SLOTS];
  int next;
};

int tsl_cuda_gemm_cache_create(tsl_cuda_gemm_cache **out) {
  *out = calloc(1, sizeof **out);
  return *out ? TESSEL_OK : TSL_CUDA_FAIL(TESSEL_E_NOMEM, "out of host memory for the GEMM plan cache");
}

static void plan_destroy(plan *p) {
  if (p->lc) (void)TSL_BLAS(cublasLtMatrixLayoutDestroy(p->lc));
  if (p->lb) (void)TSL_BLAS(cublasLtMatrixLayoutDestroy(p->lb));
  if (p->la) (void)TSL_BLAS(cublasLtMatrixLayoutDestroy(p->la));
  if (p->desc) (void)TSL_BLAS(cublasLtMatmulDescDestroy(p->desc));
  memset(p, 0, sizeof *p);
}

void tsl_cuda_gemm_cache_destroy(tsl_cuda_gemm_cache *cache) {
  if (!cache) return;
  for (int i = 0; i < CACHE_SLOTS; i++)
    if (cache->slots[i].used) plan_destroy(&cache->slots[i]);
  free(cache);
}

/* The largest power of two (at most 256) dividing the address and, in a
** batch, the byte stride between matrices. */
static uint32_t align_of(const void *p, int64_t stride_bytes) {
  uintptr_t v = (uintptr_t)p | 256u;
  if (stride_bytes > 0) v |= (uintptr_t)stride_bytes;
  return (uint32_t)(v & (~v + 1));
}

static plan_key key_of(const tsl_cuda_mm *p) {
  plan_key k;
  memset(&k, 0, sizeof k);
  int64_t cs = p->c_dtype == TESSEL_F32 ? 4 : 2, batched = p->batch > 1;
  k.op_a = p->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N; /* A' is B as stored */
  k.op_b = p->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N; /* B' is A as stored */
  k.c_type = p->c_dtype == TESSEL_F32 ? CUDA_R_32F : CUDA_R_16BF;
  k.bias = p->bias != NULL;
  k.m = p->n;
  k.n = p->m;
  k.k = p->k;
  k.lda = p->ldb;
  k.ldb = p->lda;
  k.ldc = p->ldc;
  k.batch = batched ? p->batch : 1;
  k.stride_a = batched ? p->stride_b : 0;
  k.stride_b = batched ? p->stride_a : 0;
  k.stride_c = batched ? p->stride_c : 0;
  k.align_a = align_of(p->b, 2 * k.stride_a);
  k.align_b = align_of(p->a, 2 * k.stride_b);
  k.align_c = align_of(p->c, cs * k.stride_c);
  k.align_bias = p->bias ? align_of(p->bias, 0) : 0;
  return k;
}

static int layout(cublasLtMatrixLayout_t *out, int32_t type, int64_t rows, int64_t cols, int64_t ld,
                  int64_t batch, int64_t stride) {
  int st = TSL_BLAS(cublasLtMatrixLayoutCreate(out, (cudaDataType)type, (uint64_t)rows, (uint64_t)cols, ld));
  if (st < 0 || batch <= 1) return st;
  int32_t count = (int32_t)batch;
  st = TSL_BLAS(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
  if (st >= 0)
    st = TSL_BLAS(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                   sizeof stride));
  return st;
}

static int set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, uint32_t value) {
  return TSL_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof value));
}

/* Descriptors and the heuristic's first choice for key k. */
static int plan_create(cublasLtHandle_t lt, const plan_key *k, const void *bias, plan *p) {
  cublasLtMatmulPreference_t pref = NULL;
  memset(p, 0, sizeof *p);
  p->key = *k;
  p->used = 1;
  int st = TSL_BLAS(cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  if (st >= 0)
    st = TSL_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &k->op_a, sizeof k->op_a));
  if (st >= 0)
    st = TSL_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &k->op_b, sizeof k->op_b));
  if (st >= 0 && k->bias) {
    uint32_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    st = TSL_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue));
    /* the heuristic judges the bias pointer's alignment from its value */
    if (st >= 0)
      st = TSL_BLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  /* A' [m, k] or, transposed, [k, m]; B' [k, n] or [n, k]; C = D [m, n] */
  int ta = k->op_a == CUBLAS_OP_T, tb = k->op_b == CUBLAS_OP_T;
  if (st >= 0) st = layout(&p->la, CUDA_R_16BF, ta ? k->k : k->m, ta ? k->m : k->k, k->lda, k->batch, k->stride_a);
  if (st >= 0) st = layout(&p->lb, CUDA_R_16BF, tb ? k->n : k->k, tb ? k->k : k->n, k->ldb, k->batch, k->stride_b);
  if (st >= 0) st = layout(&p->lc, k->c_type, k->m, k->n, k->ldc, k->batch, k->stride_c);
  if (st >= 0) st = TSL_BLAS(cublasLtMatmulPreferenceCreate(&pref));
  if (st >= 0) {
    uint64_t ws = TSL_CUDA_WORKSPACE_BYTES;
    st = TSL_BLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  }
  if (st >= 0) st = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, k->align_a);
  if (st >= 0) st = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, k->align_b);
  if (st >= 0) st = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, k->align_c);
  if (st >= 0) st = set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, k->align_c);
  /* a split-K plan may add its slices' partial sums in the output type
  ** (in place in D, or in a workspace of that type): in bf16 every slice
  ** would round again. Partial sums stay in fp32. */
  if (st >= 0)
    st = set_pref(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                  CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
  if (st >= 0) {
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    memset(&res, 0, sizeof res);
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &found);
    if (hs == CUBLAS_STATUS_SUCCESS && found > 0 && res.state == CUBLAS_STATUS_SUCCESS) {
      p->algo = res.algo;
    } else {
      /* the heuristic may succeed and still offer nothing: say which */
      const char *why = hs != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusString(hs)
                        : found == 0               ? "the heuristic offered no algorithm"
                                                   : cublasLtGetStatusString(res.state);
      st = TSL_CUDA_FAIL(TESSEL_E_DEVICE,
                         "cuBLASLt has no algorithm for a bf16 product (column-major m %lld, n %lld, k %lld, "
                         "ld %lld/%lld/%lld, batch %lld, alignment %u/%u/%u%s): %s",
                         (long long)k->m, (long long)k->n, (long long)k->k, (long long)k->lda, (long long)k->ldb,
                         (long long)k->ldc, (long long)k->batch, k->align_a, k->align_b, k->align_c,
                         k->bias ? ", bias epilogue" : "", why);
    }
  }
  if (pref) (void)TSL_BLAS(cublasLtMatmulPreferenceDestroy(pref));
  if (st < 0) plan_destroy(p);
  return st;
}

static int plan_for(tsl_cuda_ctx *ctx, const plan_key *k, const void *bias, plan **out) {
  tsl_cuda_gemm_cache *cache = ctx->gemms;
  for (int i = 0; i < CACHE_SLOTS; i++) {
    plan *p = &cache->slots[i];
    if (p->used && memcmp(&p->key, k, sizeof *k) == 0) {
      *out = p;
      return TESSEL_OK;
    }
  }
  plan *p = &cache->slots[cache->next];
  cache->next = (cache->next + 1) % CACHE_SLOTS;
  if (p->used) plan_destroy(p);
  int st = plan_create((cublasLtHandle_t)ctx->lt, k, bias, p);
  if (st < 0) return st;
  *out = p;
  return TESSEL_OK;
}

int tsl_cuda_matmul(tsl_backend *be, tsl_stream *s, const tsl_cuda_mm *p) {
  tsl_cuda_ctx *ctx = tsl_cuda(be);
  struct tsl_stream *st = tsl_cuda_stream(be, s);
  int rc;
  if (!st->workspace && (rc = tsl_cuda_device_alloc(be, TSL_CUDA_WORKSPACE_BYTES, &st->workspace)) < 0) return rc;
  switch (tsl_cuda_bias_route(p->bias, p->batch, p->ldc, p->n, p->beta)) {
    case TSL_BIAS_INVALID:
      return TSL_CUDA_FAIL(TESSEL_E_INTERNAL,
                           "a bias needs one product with beta 0 and, when it is not %d-byte aligned, a dense C "
                           "(batch %lld, beta %g, ldc %lld, n %lld)",
                           TSL_CUDA_BIAS_ALIGN, (long long)p->batch, (double)p->beta, (long long)p->ldc,
                           (long long)p->n);
    case TSL_BIAS_BROADCAST: {
      /* C = bias broadcast over rows, then C += A·B */
      if ((rc = tsl_cuda_broadcast_rows(be, s, p->c, p->bias, p->m, p->n)) < 0) return rc;
      tsl_cuda_mm plain = *p;
      plain.bias = NULL;
      plain.beta = 1.0f;
      return tsl_cuda_matmul(be, s, &plain);
    }
    case TSL_BIAS_NONE:
    case TSL_BIAS_EPILOGUE: break;
  }
  plan_key key = key_of(p);
  plan *pl;
  if ((rc = plan_for(ctx, &key, p->bias, &pl)) < 0) return rc;
  if (p->bias &&
      (rc = TSL_BLAS(cublasLtMatmulDescSetAttribute(pl->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p->bias,
                                                    sizeof p->bias))) < 0)
    return rc;
  /* A' = B and B' = A (see the top of this file); C and D are one buffer */
  return TSL_BLAS(cublasLtMatmul((cublasLtHandle_t)ctx->lt, pl->desc, &p->alpha, p->b, pl->la, p->a, pl->lb, &p->beta,
                                 p->c, pl->lc, p->c, pl->lc, &pl->algo, st->workspace, TSL_CUDA_WORKSPACE_BYTES, st->s));
}

/* C[m,n] = alpha·op(A)·op(B) + beta·C, row-major, A and B bf16, C bf16 or
** fp32. Argument checks mirror the CPU backend's. */
int tsl_cuda_gemm(tsl_backend *be, tsl_stream *s, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                  float alpha, const void *a, int64_t lda, const void *b, int64_t ldb, float beta, void *c,
                  int64_t ldc, tessel_dtype c_dtype) {
  if (c_dtype != TESSEL_F32 && c_dtype != TESSEL_BF16)
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "gemm: C must be fp32 or bf16 (dtype %d)", (int)c_dtype);
  if (m < 0 || n < 0 || k < 0 || lda < 0 || ldb < 0 || ldc < 0)
    return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "gemm: negative size (m %lld, n %lld, k %lld)", (long long)m,
                         (long long)n, (long long)k);
  if (m == 0 || n == 0) return TESSEL_OK;
  if (ldc < n) return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "gemm: ldc %lld < n %lld", (long long)ldc, (long long)n);
  if (k == 0) return tsl_cuda_scale_matrix(be, s, c, c_dtype, m, n, ldc, beta);
  if (lda < (trans_a ? m : k) || ldb < (trans_b ? k : n))
    return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "gemm: leading dimension too small (lda %lld, ldb %lld)",
                         (long long)lda, (long long)ldb);
  tsl_cuda_mm mm = {.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
                    .a = a, .lda = lda, .b = b, .ldb = ldb, .c = c, .ldc = ldc, .batch = 1, .c_dtype = c_dtype};
  return tsl_cuda_matmul(be, s, &mm);
}
