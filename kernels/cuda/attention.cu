/*
** kernels/cuda/attention.cu — causal multi-head self-attention as batched
** cuBLASLt products around fused causal-softmax kernels.
**
** Layout (kernels/backend.h): qkv [B, T, 3C] with q, k, v as three C-wide
** column blocks, head h in columns h·hs .. h·hs+hs−1 of each (C = NH·hs);
** out [B, T, C]; att [B, NH, T, T] bf16, the softmax probabilities saved
** for backward with the upper triangle (t2 > t) exactly 0.
**
** The products read q, k, v and write out and dqkv in place, with no
** permuted copies: for one head, the B sequences' [T, hs] slices sit at a
** fixed stride (T·3C elements), so each product is one strided batch over
** the B sequences; the heads are a loop (NH calls per product). The
** scores are written straight into att (bf16) and the softmax turns them
** into probabilities in place: a warp per row, max, Σexp in fp32, then
** normalised, masked, and rounded once to bf16. Full T×T products are
** computed and the upper triangle masked, as llm.c's non-cuDNN path does:
** O(T²) memory and work, like the CPU backend.
**
** Backward, per head, with dS a [B, T, T] bf16 scratch:
**   dv = attᵀ · dout            dS = dout · vᵀ
**   dS = att ⊙ (dS − rowsum(att ⊙ dS)) / √hs      (masked, in place)
**   dq = dS · k                 dk = dSᵀ · q
** each written over its block of dqkv (beta 0), so dqkv is overwritten.
*/
#include <math.h>

#include "device.cuh"

/* In place over rows of att viewed [rows, T]: row r is query t = r mod T. */
static __global__ void causal_softmax_kernel(bf16 *att, int64_t rows, int64_t T) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  bf16 *p = att + row * T;
  const int64_t t = row % T;
  float mx = -CUDART_INF_F;
  for (int64_t j = lane; j <= t; j += 32) mx = fmaxf(mx, ld_bf16(p + j));
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int64_t j = lane; j <= t; j += 32) sum += expf(ld_bf16(p + j) - mx);
  const float inv = 1.0f / warp_sum(sum);
  for (int64_t j = lane; j < T; j += 32) st_bf16(p + j, j <= t ? expf(ld_bf16(p + j) - mx) * inv : 0.0f);
}

/* One head's softmax backward, in place over ds [B, T, T]:
** ds = att·(ds − Σ att·ds)·scale for t2 <= t, 0 above; att rows are those
** of the same head, sequence b at att + b·att_stride. */
static __global__ void causal_softmax_backward_kernel(bf16 *ds, const bf16 *att, int64_t batch, int64_t att_stride,
                                                      int64_t T, float scale) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= batch * T) return;
  const int64_t b = row / T, t = row % T;
  bf16 *d = ds + row * T;
  const bf16 *a = att + b * att_stride + t * T;
  float dot = 0.0f;
  for (int64_t j = lane; j <= t; j += 32) dot += ld_bf16(a + j) * ld_bf16(d + j);
  dot = warp_sum(dot);
  for (int64_t j = lane; j < T; j += 32) st_bf16(d + j, j <= t ? ld_bf16(a + j) * (ld_bf16(d + j) - dot) * scale : 0.0f);
}

enum { ROWS_PER_BLOCK = TSL_THREADS / 32 };

static int causal_softmax(tsl_backend *be, tsl_stream *s, void *att, int64_t rows, int64_t seq) {
  if (rows <= 0) return TESSEL_OK;
  unsigned blocks = (unsigned)((rows + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
  return TSL_CU((causal_softmax_kernel<<<blocks, TSL_THREADS, 0, tsl_cuda_stream(be, s)->s>>>((bf16 *)att, rows, seq),
                 cudaGetLastError()));
}

static int causal_softmax_backward(tsl_backend *be, tsl_stream *s, void *ds, const void *att, int64_t batch,
                                   int64_t att_batch_stride, int64_t seq, float scale) {
  if (batch <= 0 || seq <= 0) return TESSEL_OK;
  unsigned blocks = (unsigned)((batch * seq + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK);
  return TSL_CU((causal_softmax_backward_kernel<<<blocks, TSL_THREADS, 0, tsl_cuda_stream(be, s)->s>>>(
                     (bf16 *)ds, (const bf16 *)att, batch, att_batch_stride, seq, scale),
                 cudaGetLastError()));
}

static int check_shape(int64_t batch, int64_t seq, int64_t heads, int64_t head_size) {
  if (batch < 0 || seq < 0 || heads < 0 || head_size <= 0)
    return TSL_CUDA_FAIL(TESSEL_E_INTERNAL, "attention: bad shape (batch %lld, seq %lld, heads %lld, head size %lld)",
                         (long long)batch, (long long)seq, (long long)heads, (long long)head_size);
  if (batch > INT32_MAX) return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "attention: batch %lld too large", (long long)batch);
  return TESSEL_OK;
}

/* One strided batch over the B sequences (row-major, see matmul.c). */
static int batched(tsl_backend *be, tsl_stream *s, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                   const bf16 *a, int64_t lda, int64_t sa, const bf16 *b, int64_t ldb, int64_t sb, bf16 *c,
                   int64_t ldc, int64_t sc, int64_t batch) {
  tsl_cuda_mm mm = {ta, tb, m, n, k, alpha, 0.0f, a, lda, sa, b, ldb, sb, c, ldc, sc, batch, TESSEL_BF16, NULL};
  return tsl_cuda_matmul(be, s, &mm);
}

/* out [B, T, C] and att [B, NH, T, T] from qkv [B, T, 3C] */
extern "C" int tsl_cuda_attention_forward(tsl_backend *be, tsl_stream *s, void *out, void *att, const void *qkv,
                                          int64_t batch, int64_t seq, int64_t heads, int64_t head_size) {
  int rc = check_shape(batch, seq, heads, head_size);
  if (rc < 0 || batch == 0 || seq == 0 || heads == 0) return rc;
  const int64_t T = seq, hs = head_size, C = heads * hs, TT = T * T;
  const float scale = 1.0f / sqrtf((float)hs);
  const bf16 *x = (const bf16 *)qkv;
  bf16 *o = (bf16 *)out, *a = (bf16 *)att;
  /* att[b, h] = scale · q[b, :, h] · k[b, :, h]ᵀ   [T, T] */
  for (int64_t h = 0; h < heads && rc >= 0; h++)
    rc = batched(be, s, 0, 1, T, T, hs, scale, x + h * hs, 3 * C, T * 3 * C, x + C + h * hs, 3 * C, T * 3 * C,
                 a + h * TT, T, heads * TT, batch);
  if (rc >= 0) rc = causal_softmax(be, s, att, batch * heads * T, T);
  /* out[b, :, h] = att[b, h] · v[b, :, h]   [T, hs] */
  for (int64_t h = 0; h < heads && rc >= 0; h++)
    rc = batched(be, s, 0, 0, T, hs, T, 1.0f, a + h * TT, T, heads * TT, x + 2 * C + h * hs, 3 * C, T * 3 * C,
                 o + h * hs, C, T * C, batch);
  return rc;
}

/* dqkv [B, T, 3C] (overwritten) from dout [B, T, C], qkv and the saved att */
extern "C" int tsl_cuda_attention_backward(tsl_backend *be, tsl_stream *s, void *dqkv, const void *dout,
                                           const void *qkv, const void *att, int64_t batch, int64_t seq,
                                           int64_t heads, int64_t head_size) {
  int rc = check_shape(batch, seq, heads, head_size);
  if (rc < 0 || batch == 0 || seq == 0 || heads == 0) return rc;
  const int64_t T = seq, hs = head_size, C = heads * hs, TT = T * T;
  const float scale = 1.0f / sqrtf((float)hs);
  const bf16 *x = (const bf16 *)qkv, *d = (const bf16 *)dout, *a = (const bf16 *)att;
  bf16 *dx = (bf16 *)dqkv, *ds;
  if ((rc = tsl_cuda_scratch(be, tsl_cuda_stream(be, s), (size_t)(batch * TT) * sizeof(bf16), (void **)&ds)) < 0)
    return rc;
  for (int64_t h = 0; h < heads && rc >= 0; h++) {
    const bf16 *ah = a + h * TT, *dh = d + h * hs, *q = x + h * hs, *k = x + C + h * hs, *v = x + 2 * C + h * hs;
    /* dv = attᵀ · dout   [T, hs] */
    rc = batched(be, s, 1, 0, T, hs, T, 1.0f, ah, T, heads * TT, dh, C, T * C, dx + 2 * C + h * hs, 3 * C,
                 T * 3 * C, batch);
    /* dS = dout · vᵀ   [T, T] */
    if (rc >= 0) rc = batched(be, s, 0, 1, T, T, hs, 1.0f, dh, C, T * C, v, 3 * C, T * 3 * C, ds, T, TT, batch);
    if (rc >= 0) rc = causal_softmax_backward(be, s, ds, ah, batch, heads * TT, T, scale);
    /* dq = dS · k   [T, hs] */
    if (rc >= 0)
      rc = batched(be, s, 0, 0, T, hs, T, 1.0f, ds, T, TT, k, 3 * C, T * 3 * C, dx + h * hs, 3 * C, T * 3 * C, batch);
    /* dk = dSᵀ · q   [T, hs] */
    if (rc >= 0)
      rc = batched(be, s, 1, 0, T, hs, T, 1.0f, ds, T, TT, q, 3 * C, T * 3 * C, dx + C + h * hs, 3 * C, T * 3 * C,
                   batch);
  }
  return rc;
}
