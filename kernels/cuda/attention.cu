/*
** kernels/cuda/attention.cu — causal grouped-query attention by the
** FlashAttention-2 algorithm, on tensor cores (WMMA, bf16 in, fp32
** accumulate), without a T×T matrix in memory.
**
** Layout (kernels/backend.h): q [B, T, H, hs] rows ldq apart; k, v
** [B, T, KV, hs] rows ldk, ldv apart; query head h reads kv head h/(H/KV);
** out [B, T, H·hs]; lse [B, H, T] fp32.
**
** Tiles of 64 query rows by 64 keys, four warps per block, each warp owning
** 16 rows of every tile it computes. The head dimension is padded with
** zeros to HP = 16, 32, 64 or 128 (a template parameter, so accumulators
** stay in registers); larger heads are refused.
**
** Forward: one block per (64 query rows, head, sequence). For each key
** tile up to the diagonal: S = q·kᵀ (WMMA into shared fp32), an online
** softmax per row in fp32 (running max and sum; the output rows rescaled
** when the max grows), P rounded to bf16, O += P·v (WMMA, fp32 in shared
** memory). At the end out = O/l in bf16 and lse = m + log l.
**
** Backward, three kernels and no atomics, so every run gives the same bits:
**   D = rowsum(dO ⊙ O)                          one warp per row
**   dq: one block per (64 query rows, head): for each key tile up to the
**       diagonal, P = e^(S − lse), dP = dO·vᵀ, dS = P ⊙ (dP − D)/√hs
**       (bf16), dq += dS·k in registers
**   dk, dv: one block per (64 keys, kv head): for each query head of the
**       group and each query tile from the diagonal on, Pᵀ and dSᵀ as
**       above, dv += Pᵀ·dO, dk += dSᵀ·q in registers; the group's sum is
**       formed inside the block.
** Where bf16 rounds: the inputs, P before P·v, dS and P before the gradient
** products, and each output once (tests/gpu/test_cuda_attention.c derives
** its tolerances from these).
*/
#include <math.h>
#include <mma.h>

#include "device.cuh"

using namespace nvcuda;

enum { BR = 64, BC = 64, AT_THREADS = 128, LDS = BC + 4, LDP = BC + 8, MAX_HEAD = 128 };

/* Blocks of a backward kernel an SM should hold at once: up to a head of
** 64, shared memory has room for three, and capping registers at a third
** of the file keeps them (more warps to hide latency with); a wider head's
** shared memory allows fewer anyway, so its registers stay uncapped. */
#define BLOCKS_PER_SM(HP) ((HP) <= 64 ? 3 : 1)

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> frag_b;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> frag_bt;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/* The sizes every kernel needs. */
struct attn_params {
  int64_t T, H, KV, hs, ldq, ldk, ldv;
  int64_t g; /* query heads per kv head */
  float scale;
};

/* Bump allocator over shared memory (base NULL: sizing on the host); every
** region starts on 128 bytes, more than WMMA's 32-byte alignment. */
struct carver {
  char *base;
  size_t used;
  template <typename T>
  __host__ __device__ T *take(size_t count) {
    T *p = (T *)(base + used);
    used += (count * sizeof(T) + 127) & ~(size_t)127;
    return p;
  }
};

/* Tiles of rows [row0, row0 + ROWS) of a [T, stride] bf16 tensor, columns
** [0, hs), for shared memory [ROWS, ld]: zeros past T and from hs up to
** HP. Every thread of the block takes part.
**
** When rows can be read whole as 16-byte vectors (hs = HP, stride a
** multiple of 8, src 16-byte aligned: every head size of 16, 32, 64 or 128
** in a dense layout), fetch issues all of a thread's loads into registers
** and put stores them, so that one memory latency covers a tile rather
** than one per element; and a loop over tiles can fetch the next tile
** before it computes on this one, so that the loads fly while it does.
** Otherwise fetch does nothing and put copies element by element. */
template <int ROWS, int HP>
struct tile_loader {
  static constexpr int VPR = HP / 8, NV = ROWS * VPR, PER = (NV + AT_THREADS - 1) / AT_THREADS;
  const bf16 *src;
  int64_t stride, hs;
  bool vec;
  uint4 reg[PER];

  __device__ tile_loader(const bf16 *src_, int64_t stride_, int64_t hs_)
      : src(src_), stride(stride_), hs(hs_), vec(hs_ == HP && stride_ % 8 == 0 && ((uintptr_t)src_ & 15) == 0) {}

  __device__ void fetch(int64_t row0, int64_t T) {
    if (!vec) return;
#pragma unroll
    for (int i = 0; i < PER; i++) {
      const int e = (int)threadIdx.x + i * AT_THREADS;
      const int64_t t = row0 + e / VPR;
      reg[i] = e < NV && t < T ? *(const uint4 *)(src + t * stride + (e % VPR) * 8) : make_uint4(0, 0, 0, 0);
    }
  }

  /* the tile of rows from row0 (the rows fetch loaded, on the vector path) */
  __device__ void put(bf16 *dst, int ld, int64_t row0, int64_t T) const {
    if (vec) {
#pragma unroll
      for (int i = 0; i < PER; i++) {
        const int e = (int)threadIdx.x + i * AT_THREADS;
        if (e < NV) *(uint4 *)(dst + (e / VPR) * ld + (e % VPR) * 8) = reg[i];
      }
      return;
    }
    for (int e = threadIdx.x; e < ROWS * HP; e += blockDim.x) {
      const int r = e / HP, c = e % HP;
      const int64_t t = row0 + r;
      dst[r * ld + c] = t < T && c < hs ? src[t * stride + c] : __float2bfloat16(0.0f);
    }
  }
};

/* One tile at once: fetch, then put. */
template <int ROWS, int HP>
static __device__ void load_tile(bf16 *dst, int ld, const bf16 *src, int64_t stride, int64_t row0, int64_t T,
                                 int64_t hs) {
  tile_loader<ROWS, HP> l(src, stride, hs);
  l.fetch(row0, T);
  l.put(dst, ld, row0, T);
}

/* Two tiles of the same rows, every load of both issued before the first
** store. */
template <int ROWS, int HP>
static __device__ void load_tiles(bf16 *dst0, const bf16 *src0, int64_t stride0, bf16 *dst1, const bf16 *src1,
                                  int64_t stride1, int ld, int64_t row0, int64_t T, int64_t hs) {
  tile_loader<ROWS, HP> a(src0, stride0, hs), b(src1, stride1, hs);
  a.fetch(row0, T);
  b.fetch(row0, T);
  a.put(dst0, ld, row0, T);
  b.put(dst1, ld, row0, T);
}

/* The key and value tiles of one kv head in turn, for a loop over key
** tiles below kend: the first tile's loads are issued at construction, and
** each next() stores the tile fetched before into shared memory (visible
** to the whole block on return) and issues the loads of the tile after
** it, which fly while the caller computes. */
template <int HP>
struct kv_tiles {
  tile_loader<BC, HP> k, v;

  __device__ kv_tiles(const bf16 *k0, int64_t ldk, const bf16 *v0, int64_t ldv, int64_t hs, int64_t T)
      : k(k0, ldk, hs), v(v0, ldv, hs) {
    k.fetch(0, T);
    v.fetch(0, T);
  }

  __device__ void next(bf16 *ks, bf16 *vs, int ld, int64_t s0, int64_t kend, int64_t T) {
    __syncthreads(); /* every warp is done with the previous tiles */
    k.put(ks, ld, s0, T);
    v.put(vs, ld, s0, T);
    __syncthreads();
    if (s0 + BC < kend) k.fetch(s0 + BC, T), v.fetch(s0 + BC, T);
  }
};

/* The warp's 16 rows of a bf16 matrix in shared memory (row stride ld),
** columns [0, 16·N), as N A-fragments: operands kept in registers across
** the products that reuse them instead of read from shared memory again. */
template <int N>
static __device__ __forceinline__ void load_rows(frag_a (&f)[N], const bf16 *a, int ld) {
#pragma unroll
  for (int kk = 0; kk < N; kk++) wmma::load_matrix_sync(f[kk], a + kk * 16, ld);
}

/* c[16, 16·NT] = A·Bᵀ for one warp's 16 rows, stored to shared fp32: A as
** NK fragments, B's rows at b (ld ldb). */
template <int NK, int NT>
static __device__ void scores(float *c, int ldc, const frag_a (&a)[NK], const bf16 *b, int ldb) {
  frag_bt fb;
#pragma unroll
  for (int nf = 0; nf < NT; nf++) {
    frag_c acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < NK; kk++) {
      wmma::load_matrix_sync(fb, b + (size_t)nf * 16 * ldb + kk * 16, ldb);
      wmma::mma_sync(acc, a[kk], fb, acc);
    }
    wmma::store_matrix_sync(c + nf * 16, acc, ldc, wmma::mem_row_major);
  }
}

/* acc += A·B: A as NK fragments, B's rows at b (ld ldb) */
template <int NK>
static __device__ __forceinline__ void mma_rows(frag_c &acc, const frag_a (&a)[NK], const bf16 *b, int ldb) {
  frag_b fb;
#pragma unroll
  for (int kk = 0; kk < NK; kk++) {
    wmma::load_matrix_sync(fb, b + (size_t)kk * 16 * ldb, ldb);
    wmma::mma_sync(acc, a[kk], fb, acc);
  }
}

/* Shared memory of the forward for head size padded to HP. */
template <int HP>
struct fwd_smem {
  bf16 *q, *k, *v, *p;
  float *s, *o, *m, *l, *alpha;
  __host__ __device__ static size_t carve(char *base, fwd_smem *out) {
    carver c = {base, 0};
    fwd_smem t;
    t.q = c.take<bf16>(BR * (HP + 8)), t.k = c.take<bf16>(BC * (HP + 8)), t.v = c.take<bf16>(BC * (HP + 8));
    t.p = c.take<bf16>(BR * LDP), t.s = c.take<float>(BR * LDS), t.o = c.take<float>(BR * (HP + 4));
    t.m = c.take<float>(BR), t.l = c.take<float>(BR), t.alpha = c.take<float>(BR);
    if (out) *out = t;
    return c.used;
  }
};

/* The online softmax of a warp's 16 rows over a key tile, all rows at
** once: lanes 2i and 2i + 1 share row i, each taking every other score of
** it, so that a tile costs one pass of BC / 2 scores per lane and one
** exchange between the pair, not 16 rows of warp-wide reductions one after
** another. Scores from s (the warp's first row, unscaled; row i at
** i·LDS), P to p (row i at i·LDP) in bf16; row i's running max and sum
** m[i], l[i] updated and the factor for its output rows left in alpha[i].
** t: the query position of row 0; s0: the key position of column 0. */
static __device__ void online_rows(const float *s, bf16 *p, float *m, float *l, float *alpha, int64_t t, int64_t s0,
                                   int64_t T, float scale, int lane) {
  const int i = lane >> 1, half = lane & 1;
  const float *srow = s + i * LDS;
  bf16 *prow = p + i * LDP;
  t += i;
  float sv[BC / 2], mx = -CUDART_INF_F;
#pragma unroll
  for (int u = 0; u < BC / 2; u++) {
    const int j = 2 * u + half;
    sv[u] = s0 + j <= t && t < T ? srow[j] * scale : -CUDART_INF_F;
    mx = fmaxf(mx, sv[u]);
  }
  mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
  const float mold = m[i], mn = fmaxf(mold, mx);
  const bool any = mn != -CUDART_INF_F;
  float sum = 0.0f;
#pragma unroll
  for (int u = 0; u < BC / 2; u++) {
    const float pv = any ? expf(sv[u] - mn) : 0.0f; /* a masked score is −inf: e^−inf = 0 */
    sum += pv;
    prow[2 * u + half] = __float2bfloat16(pv);
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  const float a = any ? expf(mold - mn) : 1.0f; /* 0 on the first tile (mold = −inf) */
  __syncwarp();                                  /* both lanes of the pair have read m[i] */
  if (!half) m[i] = mn, l[i] = l[i] * a + sum, alpha[i] = a;
}

template <int HP>
static __global__ void __launch_bounds__(AT_THREADS)
    flash_forward_kernel(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, attn_params p) {
  constexpr int LDH = HP + 8, LDO = HP + 4, NF = HP / 16;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  fwd_smem<HP> sm;
  fwd_smem<HP>::carve((char *)smem_raw, &sm);
  const int64_t b = blockIdx.z, h = blockIdx.y, t0 = (int64_t)blockIdx.x * BR, kvh = h / p.g;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r0 = warp * 16;
  /* the first k, v tiles are on their way while q is brought in */
  kv_tiles<HP> tiles(k + b * p.T * p.ldk + kvh * p.hs, p.ldk, v + b * p.T * p.ldv + kvh * p.hs, p.ldv, p.hs, p.T);
  load_tile<BR, HP>(sm.q, LDH, q + b * p.T * p.ldq + h * p.hs, p.ldq, t0, p.T, p.hs);
  for (int e = threadIdx.x; e < BR * LDO; e += blockDim.x) sm.o[e] = 0.0f;
  for (int e = threadIdx.x; e < BR; e += blockDim.x) sm.m[e] = -CUDART_INF_F, sm.l[e] = 0.0f;
  __syncthreads();
  frag_a qf[NF], pf[BC / 16];
  load_rows(qf, sm.q + r0 * LDH, LDH);
  const int64_t kend = t0 + BR < p.T ? t0 + BR : p.T;
  for (int64_t s0 = 0; s0 < kend; s0 += BC) {
    tiles.next(sm.k, sm.v, LDH, s0, kend, p.T);
    scores<NF, BC / 16>(sm.s + r0 * LDS, LDS, qf, sm.k, LDH);
    __syncwarp();
    online_rows(sm.s + r0 * LDS, sm.p + r0 * LDP, sm.m + r0, sm.l + r0, sm.alpha + r0, t0 + r0, s0, p.T, p.scale,
                lane);
    __syncwarp();
    for (int e = lane; e < 16 * HP; e += 32) sm.o[(r0 + e / HP) * LDO + e % HP] *= sm.alpha[r0 + e / HP];
    __syncwarp();
    load_rows(pf, sm.p + r0 * LDP, LDP);
    for (int nf = 0; nf < NF; nf++) {
      frag_c acc;
      wmma::load_matrix_sync(acc, sm.o + r0 * LDO + nf * 16, LDO, wmma::mem_row_major);
      mma_rows(acc, pf, sm.v + nf * 16, LDH);
      wmma::store_matrix_sync(sm.o + r0 * LDO + nf * 16, acc, LDO, wmma::mem_row_major);
    }
    __syncwarp();
  }
  const int64_t C = p.H * p.hs;
  for (int64_t e = lane; e < 16 * p.hs; e += 32) {
    const int r = r0 + (int)(e / p.hs);
    const int64_t col = e % p.hs, t = t0 + r;
    if (t < p.T) out[(b * p.T + t) * C + h * p.hs + col] = __float2bfloat16(sm.o[r * LDO + col] / sm.l[r]);
  }
  if (lane < 16 && t0 + r0 + lane < p.T)
    lse[(b * p.H + h) * p.T + t0 + r0 + lane] = sm.m[r0 + lane] + logf(sm.l[r0 + lane]);
}

/* D[b, h, t] = Σ_i dout·out over one row of head h, one warp per row */
static __global__ void attn_rowdot_kernel(float *D, const bf16 *dout, const bf16 *out, int64_t rows, int64_t T,
                                          int64_t H, int64_t hs) {
  const int64_t row = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  float dot = 0.0f;
  for (int64_t i = lane; i < hs; i += 32) dot += ld_bf16(dout + row * hs + i) * ld_bf16(out + row * hs + i);
  dot = warp_sum(dot);
  const int64_t bt = row / H, h = row % H, b = bt / T, t = bt % T;
  if (lane == 0) D[(b * H + h) * T + t] = dot;
}

/* Shared memory of the dq kernel: k and v adjacent, so that the pair can
** hold the fp32 result [BR, HP + 4] at the end. */
template <int HP>
struct dq_smem {
  bf16 *q, *dout, *k, *v, *ds;
  float *s, *dp, *lse, *d;
  __host__ __device__ static size_t carve(char *base, dq_smem *out) {
    carver c = {base, 0};
    dq_smem t;
    t.q = c.take<bf16>(BR * (HP + 8)), t.dout = c.take<bf16>(BR * (HP + 8));
    t.k = c.take<bf16>(BC * (HP + 8)), t.v = c.take<bf16>(BC * (HP + 8));
    t.ds = c.take<bf16>(BR * LDP), t.s = c.take<float>(BR * LDS), t.dp = c.take<float>(BR * LDS);
    t.lse = c.take<float>(BR), t.d = c.take<float>(BR);
    if (out) *out = t;
    return c.used;
  }
};

/* per-row statistics of rows [t0, t0 + BR) of head h: lse and D (0 past T) */
static __device__ void load_row_stats(float *lse_s, float *d_s, const float *lse, const float *D, int64_t base,
                                      int64_t t0, int64_t T) {
  for (int e = threadIdx.x; e < BR; e += blockDim.x) {
    const bool in = t0 + e < T;
    lse_s[e] = in ? lse[base + t0 + e] : 0.0f;
    d_s[e] = in ? D[base + t0 + e] : 0.0f;
  }
}

/* the fp32 results of one warp's 16 rows in stage [16·4 rows, HP + 4], to
** the bf16 rows dst + t·ld for t = row0 + r < T, columns [0, hs) */
static __device__ void write_rows(bf16 *dst, int64_t ld, const float *stage, int lds, int64_t row0, int r0,
                                  int64_t T, int64_t hs, int lane) {
  for (int64_t e = lane; e < 16 * hs; e += 32) {
    const int r = r0 + (int)(e / hs);
    const int64_t col = e % hs, t = row0 + r;
    if (t < T) dst[t * ld + col] = __float2bfloat16(stage[r * lds + col]);
  }
}

template <int HP>
static __global__ void __launch_bounds__(AT_THREADS, BLOCKS_PER_SM(HP))
    flash_dq_kernel(bf16 *dq, const bf16 *dout, const float *lse, const float *D, const bf16 *q, const bf16 *k,
                    const bf16 *v, attn_params p) {
  constexpr int LDH = HP + 8, NF = HP / 16;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  dq_smem<HP> sm;
  dq_smem<HP>::carve((char *)smem_raw, &sm);
  const int64_t b = blockIdx.z, h = blockIdx.y, t0 = (int64_t)blockIdx.x * BR, kvh = h / p.g;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r0 = warp * 16;
  kv_tiles<HP> tiles(k + b * p.T * p.ldk + kvh * p.hs, p.ldk, v + b * p.T * p.ldv + kvh * p.hs, p.ldv, p.hs, p.T);
  load_tiles<BR, HP>(sm.q, q + b * p.T * p.ldq + h * p.hs, p.ldq, sm.dout, dout + b * p.T * p.H * p.hs + h * p.hs,
                     p.H * p.hs, LDH, t0, p.T, p.hs);
  load_row_stats(sm.lse, sm.d, lse, D, (b * p.H + h) * p.T, t0, p.T);
  frag_c acc[NF];
  for (int nf = 0; nf < NF; nf++) wmma::fill_fragment(acc[nf], 0.0f);
  /* one operand's fragments at a time, loaded once per tile: a warp's q or
  ** dout rows (NF), then its dS rows (BC / 16) */
  frag_a qd[NF], ds[BC / 16];
  const int64_t kend = t0 + BR < p.T ? t0 + BR : p.T;
  for (int64_t s0 = 0; s0 < kend; s0 += BC) {
    tiles.next(sm.k, sm.v, LDH, s0, kend, p.T);
    load_rows(qd, sm.q + r0 * LDH, LDH);
    scores<NF, BC / 16>(sm.s + r0 * LDS, LDS, qd, sm.k, LDH);
    load_rows(qd, sm.dout + r0 * LDH, LDH);
    scores<NF, BC / 16>(sm.dp + r0 * LDS, LDS, qd, sm.v, LDH);
    __syncwarp();
    for (int e = lane; e < 16 * BC; e += 32) {
      const int r = r0 + e / BC, j = e % BC;
      const int64_t t = t0 + r;
      const bool ok = s0 + j <= t && t < p.T;
      const float pv = ok ? expf(sm.s[r * LDS + j] * p.scale - sm.lse[r]) : 0.0f;
      sm.ds[r * LDP + j] = __float2bfloat16(pv * (sm.dp[r * LDS + j] - sm.d[r]) * p.scale);
    }
    __syncwarp();
    load_rows(ds, sm.ds + r0 * LDP, LDP);
    for (int nf = 0; nf < NF; nf++) mma_rows(acc[nf], ds, sm.k + nf * 16, LDH);
  }
  __syncthreads(); /* k and v become the output stage */
  float *stage = (float *)sm.k;
  for (int nf = 0; nf < NF; nf++)
    wmma::store_matrix_sync(stage + r0 * (HP + 4) + nf * 16, acc[nf], HP + 4, wmma::mem_row_major);
  __syncwarp();
  write_rows(dq + b * p.T * p.ldq + h * p.hs, p.ldq, stage, HP + 4, t0, r0, p.T, p.hs, lane);
}

/* Shared memory of the dk/dv kernel: q and dout adjacent (the output stage). */
template <int HP>
struct dkv_smem {
  bf16 *k, *v, *q, *dout, *pt, *dst;
  float *st, *dpt, *lse, *d;
  __host__ __device__ static size_t carve(char *base, dkv_smem *out) {
    carver c = {base, 0};
    dkv_smem t;
    t.k = c.take<bf16>(BC * (HP + 8)), t.v = c.take<bf16>(BC * (HP + 8));
    t.q = c.take<bf16>(BR * (HP + 8)), t.dout = c.take<bf16>(BR * (HP + 8));
    t.pt = c.take<bf16>(BC * LDP), t.dst = c.take<bf16>(BC * LDP);
    t.st = c.take<float>(BC * LDS), t.dpt = c.take<float>(BC * LDS);
    t.lse = c.take<float>(BR), t.d = c.take<float>(BR);
    if (out) *out = t;
    return c.used;
  }
};

template <int HP>
static __global__ void __launch_bounds__(AT_THREADS, BLOCKS_PER_SM(HP))
    flash_dkdv_kernel(bf16 *dk, bf16 *dv, const bf16 *dout, const float *lse, const float *D, const bf16 *q,
                      const bf16 *k, const bf16 *v, attn_params p) {
  constexpr int LDH = HP + 8, NF = HP / 16;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  dkv_smem<HP> sm;
  dkv_smem<HP>::carve((char *)smem_raw, &sm);
  const int64_t b = blockIdx.z, kvh = blockIdx.y, s0 = (int64_t)blockIdx.x * BC;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r0 = warp * 16;
  load_tiles<BC, HP>(sm.k, k + b * p.T * p.ldk + kvh * p.hs, p.ldk, sm.v, v + b * p.T * p.ldv + kvh * p.hs, p.ldv,
                     LDH, s0, p.T, p.hs);
  frag_c dka[NF], dva[NF];
  for (int nf = 0; nf < NF; nf++) wmma::fill_fragment(dka[nf], 0.0f), wmma::fill_fragment(dva[nf], 0.0f);
  /* one operand's fragments at a time, loaded once per tile: a warp's k or
  ** v rows (NF), then its Pᵀ or dSᵀ rows (BR / 16) */
  frag_a kv[NF], ps[BR / 16];
  for (int64_t hh = 0; hh < p.g; hh++) {
    const int64_t h = kvh * p.g + hh;
    for (int64_t t0 = s0 / BR * BR; t0 < p.T; t0 += BR) {
      __syncthreads();
      load_tiles<BR, HP>(sm.q, q + b * p.T * p.ldq + h * p.hs, p.ldq, sm.dout,
                         dout + b * p.T * p.H * p.hs + h * p.hs, p.H * p.hs, LDH, t0, p.T, p.hs);
      load_row_stats(sm.lse, sm.d, lse, D, (b * p.H + h) * p.T, t0, p.T);
      __syncthreads();
      /* Sᵀ = k·qᵀ and dPᵀ = v·dOᵀ for this warp's 16 keys */
      load_rows(kv, sm.k + r0 * LDH, LDH);
      scores<NF, BR / 16>(sm.st + r0 * LDS, LDS, kv, sm.q, LDH);
      load_rows(kv, sm.v + r0 * LDH, LDH);
      scores<NF, BR / 16>(sm.dpt + r0 * LDS, LDS, kv, sm.dout, LDH);
      __syncwarp();
      for (int e = lane; e < 16 * BR; e += 32) {
        const int i = r0 + e / BR, j = e % BR;
        const int64_t s = s0 + i, t = t0 + j;
        const bool ok = s <= t && t < p.T;
        const float pv = ok ? expf(sm.st[i * LDS + j] * p.scale - sm.lse[j]) : 0.0f;
        sm.pt[i * LDP + j] = __float2bfloat16(pv);
        sm.dst[i * LDP + j] = __float2bfloat16(pv * (sm.dpt[i * LDS + j] - sm.d[j]) * p.scale);
      }
      __syncwarp();
      load_rows(ps, sm.pt + r0 * LDP, LDP);
      for (int nf = 0; nf < NF; nf++) mma_rows(dva[nf], ps, sm.dout + nf * 16, LDH);
      load_rows(ps, sm.dst + r0 * LDP, LDP);
      for (int nf = 0; nf < NF; nf++) mma_rows(dka[nf], ps, sm.q + nf * 16, LDH);
    }
  }
  __syncthreads(); /* q and dout become the output stage */
  float *stage = (float *)sm.q;
  for (int nf = 0; nf < NF; nf++)
    wmma::store_matrix_sync(stage + r0 * (HP + 4) + nf * 16, dka[nf], HP + 4, wmma::mem_row_major);
  __syncwarp();
  write_rows(dk + b * p.T * p.ldk + kvh * p.hs, p.ldk, stage, HP + 4, s0, r0, p.T, p.hs, lane);
  __syncwarp();
  for (int nf = 0; nf < NF; nf++)
    wmma::store_matrix_sync(stage + r0 * (HP + 4) + nf * 16, dva[nf], HP + 4, wmma::mem_row_major);
  __syncwarp();
  write_rows(dv + b * p.T * p.ldv + kvh * p.hs, p.ldv, stage, HP + 4, s0, r0, p.T, p.hs, lane);
}

static int check_shape(const tsl_attn_shape *sh) {
  if (!sh || sh->batch < 0 || sh->seq < 0 || sh->heads < 0 || sh->kv_heads <= 0 || sh->head_size <= 0 ||
      sh->heads % sh->kv_heads || sh->ldq < sh->heads * sh->head_size ||
      sh->ldk < sh->kv_heads * sh->head_size || sh->ldv < sh->kv_heads * sh->head_size)
    return TSL_CUDA_FAIL(TESSEL_E_INTERNAL,
                         "attention: bad shape (batch %lld, seq %lld, heads %lld, kv heads %lld, head size %lld, "
                         "row strides %lld, %lld, %lld)",
                         sh ? (long long)sh->batch : 0, sh ? (long long)sh->seq : 0, sh ? (long long)sh->heads : 0,
                         sh ? (long long)sh->kv_heads : 0, sh ? (long long)sh->head_size : 0,
                         sh ? (long long)sh->ldq : 0, sh ? (long long)sh->ldk : 0, sh ? (long long)sh->ldv : 0);
  if (sh->past || (sh->kv_seq && sh->kv_seq != sh->seq))
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "attention: no key/value cache in the CUDA kernels (past %lld)",
                         (long long)sh->past);
  if (sh->window)
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "attention: no sliding window in the CUDA kernels (window %lld)",
                         (long long)sh->window);
  if (sh->head_size > MAX_HEAD)
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "attention: head size %lld is above the CUDA kernels' %d",
                         (long long)sh->head_size, MAX_HEAD);
  if (sh->batch > 65535 || sh->heads > 65535 || (sh->seq + BR - 1) / BR > INT32_MAX)
    return TSL_CUDA_FAIL(TESSEL_E_UNSUPPORTED, "attention: batch %lld or heads %lld above 65535, or seq %lld too long",
                         (long long)sh->batch, (long long)sh->heads, (long long)sh->seq);
  return TESSEL_OK;
}

static attn_params params_of(const tsl_attn_shape *sh) {
  attn_params p = {sh->seq, sh->heads, sh->kv_heads, sh->head_size, sh->ldq, sh->ldk, sh->ldv,
                   sh->heads / sh->kv_heads, 1.0f / sqrtf((float)sh->head_size)};
  return p;
}

/* The launches for one padded head size. */
template <int HP>
struct flash {
  static int forward(cudaStream_t st, bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v,
                     const tsl_attn_shape *sh) {
    const size_t bytes = fwd_smem<HP>::carve(NULL, NULL);
    const dim3 grid((unsigned)((sh->seq + BR - 1) / BR), (unsigned)sh->heads, (unsigned)sh->batch);
    int rc = TSL_CU(cudaFuncSetAttribute(flash_forward_kernel<HP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)bytes));
    if (rc < 0) return rc;
    return TSL_CU((flash_forward_kernel<HP><<<grid, AT_THREADS, bytes, st>>>(out, lse, q, k, v, params_of(sh)),
                   cudaGetLastError()));
  }
  static int backward(cudaStream_t st, bf16 *dq, bf16 *dk, bf16 *dv, const bf16 *dout, const float *lse,
                      const float *D, const bf16 *q, const bf16 *k, const bf16 *v, const tsl_attn_shape *sh) {
    const attn_params p = params_of(sh);
    const size_t dq_bytes = dq_smem<HP>::carve(NULL, NULL), kv_bytes = dkv_smem<HP>::carve(NULL, NULL);
    int rc = TSL_CU(cudaFuncSetAttribute(flash_dq_kernel<HP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)dq_bytes));
    if (rc >= 0)
      rc = TSL_CU(cudaFuncSetAttribute(flash_dkdv_kernel<HP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       (int)kv_bytes));
    if (rc < 0) return rc;
    const unsigned tiles = (unsigned)((sh->seq + BR - 1) / BR);
    rc = TSL_CU((flash_dq_kernel<HP><<<dim3(tiles, (unsigned)sh->heads, (unsigned)sh->batch), AT_THREADS, dq_bytes,
                                       st>>>(dq, dout, lse, D, q, k, v, p),
                 cudaGetLastError()));
    if (rc < 0) return rc;
    return TSL_CU((flash_dkdv_kernel<HP><<<dim3(tiles, (unsigned)sh->kv_heads, (unsigned)sh->batch), AT_THREADS,
                                           kv_bytes, st>>>(dk, dv, dout, lse, D, q, k, v, p),
                   cudaGetLastError()));
  }
};

/* out [B, T, H·hs], lse [B, H, T] from q, k, v */
extern "C" int tsl_cuda_attention_forward(tsl_backend *be, tsl_stream *s, void *out, float *lse, const void *q,
                                          const void *k, const void *v, const tsl_attn_shape *sh) {
  int rc = check_shape(sh);
  if (rc < 0 || sh->batch == 0 || sh->seq == 0 || sh->heads == 0) return rc;
  cudaStream_t st = tsl_cuda_stream(be, s)->s;
  bf16 *o = (bf16 *)out;
  const bf16 *qq = (const bf16 *)q, *kk = (const bf16 *)k, *vv = (const bf16 *)v;
  const int64_t hs = sh->head_size;
  if (hs <= 16) return flash<16>::forward(st, o, lse, qq, kk, vv, sh);
  if (hs <= 32) return flash<32>::forward(st, o, lse, qq, kk, vv, sh);
  if (hs <= 64) return flash<64>::forward(st, o, lse, qq, kk, vv, sh);
  return flash<128>::forward(st, o, lse, qq, kk, vv, sh);
}

/* dq, dk, dv (overwritten) from dout, out, lse and q, k, v */
extern "C" int tsl_cuda_attention_backward(tsl_backend *be, tsl_stream *s, void *dq, void *dk, void *dv,
                                           const void *dout, const void *out, const float *lse, const void *q,
                                           const void *k, const void *v, const tsl_attn_shape *sh) {
  int rc = check_shape(sh);
  if (rc < 0 || sh->batch == 0 || sh->seq == 0 || sh->heads == 0) return rc;
  struct tsl_stream *ts = tsl_cuda_stream(be, s);
  const int64_t rows = sh->batch * sh->seq * sh->heads;
  float *D;
  if ((rc = tsl_cuda_scratch(be, ts, (size_t)rows * sizeof(float), (void **)&D)) < 0) return rc;
  const unsigned blocks = (unsigned)((rows + AT_THREADS / 32 - 1) / (AT_THREADS / 32));
  rc = TSL_CU((attn_rowdot_kernel<<<blocks, AT_THREADS, 0, ts->s>>>(D, (const bf16 *)dout, (const bf16 *)out, rows,
                                                                     sh->seq, sh->heads, sh->head_size),
               cudaGetLastError()));
  if (rc < 0) return rc;
  bf16 *a = (bf16 *)dq, *b = (bf16 *)dk, *c = (bf16 *)dv;
  const bf16 *d = (const bf16 *)dout, *qq = (const bf16 *)q, *kk = (const bf16 *)k, *vv = (const bf16 *)v;
  const int64_t hs = sh->head_size;
  if (hs <= 16) return flash<16>::backward(ts->s, a, b, c, d, lse, D, qq, kk, vv, sh);
  if (hs <= 32) return flash<32>::backward(ts->s, a, b, c, d, lse, D, qq, kk, vv, sh);
  if (hs <= 64) return flash<64>::backward(ts->s, a, b, c, d, lse, D, qq, kk, vv, sh);
  return flash<128>::backward(ts->s, a, b, c, d, lse, D, qq, kk, vv, sh);
}
