/*
** kernels/cuda/attention.cu — causal grouped-query attention by the
** FlashAttention-2 algorithm, on tensor cores (mma.sync m16n8k16, bf16 in,
** fp32 accumulate), without a T×T matrix in memory.
**
** Layout (kernels/backend.h): q [B, T, H, hs] rows ldq apart; k, v
** [B, T, KV, hs] rows ldk, ldv apart; query head h reads kv head h/(H/KV);
** out [B, T, H·hs]; lse [B, H, T] fp32.
**
** Tiles of 64 query rows by 64 keys, four warps per block, each warp owning
** 16 rows of every tile it computes. The head dimension is padded with
** zeros to HP = 16, 32, 64 or 128 (a template parameter, so accumulators
** stay in registers); larger heads are refused. Only the q, k, v (and dO)
** tiles pass through shared memory: scores, probabilities and outputs stay
** in registers, where an accumulator's fragment of S is, element for
** element, the A operand fragment of the next product (FlashAttention-2's
** layout), so P·v and dS·k read P and dS from the registers that computed
** them.
**
** Forward: one block per (64 query rows, head, sequence). For each key
** tile up to the diagonal: S = q·kᵀ, an online softmax per row in fp32
** (running max and sum; the output rows rescaled when the max grows), P
** rounded to bf16, O += P·v. At the end out = O/l in bf16 and
** lse = m + log l.
**
** Backward, three kernels and no atomics, so every run gives the same bits:
**   D = rowsum(dO ⊙ O)                          one warp per row
**   dq: one block per (64 query rows, head): for each key tile up to the
**       diagonal, P = e^(S − lse), dP = dO·vᵀ, dS = P ⊙ (dP − D)/√hs
**       (bf16), dq += dS·k
**   dk, dv: one block per (64 keys, kv head): for each query head of the
**       group and each query tile from the diagonal on, Pᵀ and dSᵀ as
**       above, dv += Pᵀ·dO, dk += dSᵀ·q; the group's sum is formed inside
**       the block.
** Where bf16 rounds: the inputs, P before P·v, dS and P before the gradient
** products, and each output once (tests/gpu/test_cuda_attention.c derives
** its tolerances from these).
*/
#include <math.h>

#include "device.cuh"

enum { BR = 64, BC = 64, AT_THREADS = 128, MAX_HEAD = 128 };
static_assert(BR == BC, "the causal masks take the diagonal tile to be the one starting where the query tile does");

/* log2(e) and ln(2): the softmax runs on 2^(score·scale·log2 e − max),
** one FMA and one ex2 per score */
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* The sizes every kernel needs. */
struct attn_params {
  int64_t T, H, KV, hs, ldq, ldk, ldv;
  int64_t g; /* query heads per kv head */
  float scale;
};

/* Bump allocator over shared memory (base NULL: sizing on the host); every
** region starts on 128 bytes, more than the 16 that cp.async and ldmatrix
** need. */
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

/* ---- tiles into shared memory
**
** A tile is rows [row0, row0 + ROWS) of a [T, stride] bf16 tensor, columns
** [0, hs), in shared memory [ROWS, ld]: zeros past T and from hs up to HP.
** Every thread of the block takes part. Where rows can be read whole as
** 16-byte vectors (hs = HP, stride a multiple of 8, src 16-byte aligned:
** every head size of 16, 32, 64 or 128 in a dense layout) the copy is
** asynchronous (cp.async, no registers held; rows past T zero-filled) and
** lands at the next async_wait(); otherwise it is done element by element
** before issue returns. The loops stream tiles through two buffers: wait
** for tile i, one barrier (tile i visible, every warp done with tile
** i − 1), issue tile i + 1 into the other buffer, compute on tile i. */
static __device__ __forceinline__ void cp_async16(bf16 *dst, const bf16 *src, bool full) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(full ? 16 : 0));
}
static __device__ __forceinline__ void async_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }
/* this thread's copies done; a barrier makes everyone's visible */
static __device__ __forceinline__ void async_wait(void) { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }

/* buffer i of two, chosen in registers (indexing the pair would put it in
** local memory) */
template <typename T>
static __device__ __forceinline__ T *pick(T *const (&pair)[2], int64_t i) {
  return i ? pair[1] : pair[0];
}

template <int ROWS, int HP>
struct tile_src {
  const bf16 *src;
  int64_t stride, hs;
  bool vec;

  __device__ tile_src(const bf16 *src_, int64_t stride_, int64_t hs_)
      : src(src_), stride(stride_), hs(hs_), vec(hs_ == HP && stride_ % 8 == 0 && ((uintptr_t)src_ & 15) == 0) {}

  __device__ void issue(bf16 *dst, int ld, int64_t row0, int64_t T) const {
    if (vec) {
      constexpr int VPR = HP / 8;
      for (int e = threadIdx.x; e < ROWS * VPR; e += AT_THREADS) {
        const int r = e / VPR, c = (e % VPR) * 8;
        const int64_t t = row0 + r;
        cp_async16(dst + r * ld + c, src + (t < T ? t : 0) * stride + c, t < T); /* row 0: any address will do */
      }
      return;
    }
    for (int e = threadIdx.x; e < ROWS * HP; e += AT_THREADS) {
      const int r = e / HP, c = e % HP;
      const int64_t t = row0 + r;
      dst[r * ld + c] = t < T && c < hs ? src[t * stride + c] : __float2bfloat16(0.0f);
    }
  }
};

/* ---- tensor-core fragments
**
** mma.m16n8k16 with bf16 operands and fp32 accumulators, d += a·b. Lane
** 4g + c holds (PTX ISA, "Matrix fragments for mma.m16n8k16"; two bf16 to
** a register, the lower column in the lower half):
**   a[0] = A[g][2c, 2c+1]      a[1] = A[g+8][2c, 2c+1]
**   a[2] = A[g][2c+8, 2c+9]    a[3] = A[g+8][2c+8, 2c+9]
**   b0 = B[2c, 2c+1][g]        b1 = B[2c+8, 2c+9][g]
**   d[0], d[1] = D[g][2c, 2c+1]    d[2], d[3] = D[g+8][2c, 2c+1]
** An accumulator's 16 × 16 block (two n-tiles) therefore holds, as bf16
** pairs, exactly the A fragment of that block: to_frag_a. */
typedef uint32_t frag4[4];

static __device__ __forceinline__ void mma_bf16(float (&d)[4], const frag4 &a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static __device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *(const uint32_t *)&v;
}

/* Four 8 × 8 bf16 blocks of shared memory (ldmatrix): lanes 8j to 8j + 7
** give the addresses of block j's rows, 16-byte aligned, and r[j] is the
** fragment register that block makes: for lane 4g + c, its row g, columns
** 2c and 2c + 1 (an A or, where M's rows are B's columns, a B register);
** transposed, its rows 2c and 2c + 1 of column g (a B register where M's
** rows are B's k index). */
static __device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], const bf16 *p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
static __device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const bf16 *p) {
  const unsigned a = (unsigned)__cvta_generic_to_shared(p);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

/* The A fragments of a warp's 16 rows at a (shared memory, row stride ld
** a multiple of 8), columns [16·kk, 16·kk + 16) for kk < NK: blocks (rows
** 0-7, 8-15) × (columns 0-7, 8-15) are a[0], a[1], a[2], a[3]. Rows
** ld = HP + 8 bf16 apart put each 8-row phase of ldmatrix in 32
** different banks. */
template <int NK>
static __device__ __forceinline__ void frag_rows(frag4 (&f)[NK], const bf16 *a, int ld, int lane) {
  const bf16 *p = a + ((lane & 7) + (lane & 8)) * ld + (lane >> 4) * 8;
#pragma unroll
  for (int kk = 0; kk < NK; kk++) ldsm_x4(f[kk], p + kk * 16);
}

/* s[16, 8·NT] = A·Mᵀ for a warp's 16 rows (NT even): A as NK fragments (the
** contraction over 16·NK columns), M's rows at m (shared memory, stride
** ld): B[k][n] = M[n][k]. One ldmatrix gives two n-tiles' b0 and b1:
** blocks (rows 0-7, columns 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15). */
template <int NK, int NT>
static __device__ __forceinline__ void scores(float (&s)[NT][4], const frag4 (&a)[NK], const bf16 *m, int ld,
                                              int lane) {
  const bf16 *p = m + ((lane & 7) + ((lane >> 4) << 3)) * ld + (lane & 8);
#pragma unroll
  for (int nt = 0; nt < NT; nt++) s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.0f;
#pragma unroll
  for (int np = 0; np < NT / 2; np++) {
#pragma unroll
    for (int kk = 0; kk < NK; kk++) {
      uint32_t r[4];
      ldsm_x4(r, p + np * 16 * ld + kk * 16);
      mma_bf16(s[2 * np], a[kk], r[0], r[1]);
      mma_bf16(s[2 * np + 1], a[kk], r[2], r[3]);
    }
  }
}

/* acc[16, 8·NT] += A·M for a warp's 16 rows: A as NK fragments, M's 16·NK
** rows at m (shared memory, stride ld a multiple of 8): B[k][n] = M[k][n],
** two n-tiles per transposed ldmatrix. NT is even. */
template <int NK, int NT>
static __device__ __forceinline__ void mma_cols(float (&acc)[NT][4], const frag4 (&a)[NK], const bf16 *m, int ld,
                                                int lane) {
  /* lanes 0-7: rows 0-7 of columns 0-7; 8-15: rows 8-15; 16-23 and 24-31
  ** the same of columns 8-15 */
  const bf16 *p = m + ((lane & 7) + (lane & 8)) * ld + (lane >> 4) * 8;
#pragma unroll
  for (int kk = 0; kk < NK; kk++) {
#pragma unroll
    for (int np = 0; np < NT / 2; np++) {
      uint32_t r[4];
      ldsm_x4_trans(r, p + kk * 16 * ld + np * 16);
      mma_bf16(acc[2 * np], a[kk], r[0], r[1]);
      mma_bf16(acc[2 * np + 1], a[kk], r[2], r[3]);
    }
  }
}

/* The accumulators s[16, 8·NT] (NT even) rounded to bf16 as the A
** fragments of NT / 2 column blocks of 16. */
template <int NT>
static __device__ __forceinline__ void to_frag_a(frag4 (&a)[NT / 2], const float (&s)[NT][4]) {
#pragma unroll
  for (int kk = 0; kk < NT / 2; kk++) {
    a[kk][0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
    a[kk][1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
    a[kk][2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
    a[kk][3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
  }
}

/* A lane's column of accumulator element e of n-tile nt, and its row (0:
** the lane's first row g, 1: row g + 8). */
#define ACC_COL(nt, e, lane) ((nt) * 8 + 2 * ((lane) & 3) + ((e) & 1))
#define ACC_ROW(e) ((e) >> 1)

/* Causal masks. With BR = BC and tiles that start on multiples of 64, the
** key tile that starts where the query tile does (the diagonal) is the only
** one that holds keys after some of its queries, and the only one that can
** hold keys past T: every other tile's scores are all taken. Query rows
** past T (the last tile's padding) are never stored, and their zero q and
** dO rows make their scores finite and their gradient terms zero, so other
** tiles need no row check either.
**
** The rows of the tile starting at t0 that lie before T (at most BR). */
static __device__ __forceinline__ int block_rows(int64_t t0, int64_t T) {
  return T - t0 < BR ? (int)(T - t0) : BR;
}
/* On the diagonal tile, sets to v every element of a warp's accumulators
** [16 rows from r0, 8·NT columns from c0] whose key its query may not see
** (both counted from the tile's start): the key is the column and the query the
** row, or, with KEYS_IN_ROWS (the transposed products of dk and dv), the
** other way round; rows: block_rows. A separate pass, so that the other
** tiles' loops carry no test. */
template <bool KEYS_IN_ROWS, int NT>
static __device__ __forceinline__ void mask_diagonal(float (&s)[NT][4], int r0, int c0, int rows, float v,
                                                     int lane) {
#pragma unroll
  for (int nt = 0; nt < NT; nt++) {
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int row = r0 + (lane >> 2) + 8 * ACC_ROW(e), col = c0 + ACC_COL(nt, e, lane);
      const int key = KEYS_IN_ROWS ? row : col, query = KEYS_IN_ROWS ? col : row;
      if (key > query || query >= rows) s[nt][e] = v;
    }
  }
}

/* 2^x by the hardware's approximation (relative error near 2^-22, far
** below the bf16 rounding of what it feeds; 2^-inf = 0) */
static __device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/* A warp's accumulators [16, 8·NO] times mul[row], as bf16 to the rows
** dst + t·ld for t = tr[0], tr[1] (the lane's two rows) below T, columns
** below hs. */
template <int NO>
static __device__ __forceinline__ void store_rows(bf16 *dst, int64_t ld, const float (&acc)[NO][4],
                                                  const int64_t (&tr)[2], const float (&mul)[2], int64_t T,
                                                  int64_t hs, int lane) {
#pragma unroll
  for (int nt = 0; nt < NO; nt++) {
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int col = ACC_COL(nt, e, lane), r = ACC_ROW(e);
      if (tr[r] < T && col < hs) dst[tr[r] * ld + col] = __float2bfloat16(acc[nt][e] * mul[r]);
    }
  }
}

/* Shared memory of the forward for head size padded to HP: two buffers of
** the k and v tiles. */
template <int HP>
struct fwd_smem {
  bf16 *q, *k[2], *v[2];
  __host__ __device__ static size_t carve(char *base, fwd_smem *out) {
    carver c = {base, 0};
    fwd_smem t;
    t.q = c.take<bf16>(BR * (HP + 8));
    for (int i = 0; i < 2; i++) t.k[i] = c.take<bf16>(BC * (HP + 8)), t.v[i] = c.take<bf16>(BC * (HP + 8));
    if (out) *out = t;
    return c.used;
  }
};

template <int HP>
static __global__ void __launch_bounds__(AT_THREADS)
    flash_forward_kernel(bf16 *out, float *lse, const bf16 *q, const bf16 *k, const bf16 *v, attn_params p) {
  constexpr int LDH = HP + 8, NK = HP / 16, NO = HP / 8, NS = BC / 8;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  fwd_smem<HP> sm;
  fwd_smem<HP>::carve((char *)smem_raw, &sm);
  const int64_t b = blockIdx.z, h = blockIdx.y, t0 = (int64_t)blockIdx.x * BR, kvh = h / p.g;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r0 = warp * 16;
  const tile_src<BC, HP> kt(k + b * p.T * p.ldk + kvh * p.hs, p.ldk, p.hs);
  const tile_src<BC, HP> vt(v + b * p.T * p.ldv + kvh * p.hs, p.ldv, p.hs);
  tile_src<BR, HP>(q + b * p.T * p.ldq + h * p.hs, p.ldq, p.hs).issue(sm.q, LDH, t0, p.T);
  kt.issue(sm.k[0], LDH, 0, p.T);
  vt.issue(sm.v[0], LDH, 0, p.T);
  async_commit();
  /* the lane's two rows: their positions, running max (of scores times
  ** scale·log2 e) and the lane's part of their running sums */
  const int rl[2] = {r0 + (lane >> 2), r0 + (lane >> 2) + 8}, rows = block_rows(t0, p.T);
  const int64_t tr[2] = {t0 + rl[0], t0 + rl[1]};
  float m[2] = {-CUDART_INF_F, -CUDART_INF_F}, l[2] = {0.0f, 0.0f}, o[NO][4];
#pragma unroll
  for (int nt = 0; nt < NO; nt++) o[nt][0] = o[nt][1] = o[nt][2] = o[nt][3] = 0.0f;
  const float sl2 = p.scale * LOG2E;
  const int64_t kend = t0 + BR < p.T ? t0 + BR : p.T;
  frag4 qa[NK];
  for (int64_t s0 = 0, i = 0; s0 < kend; s0 += BC, i ^= 1) {
    async_wait();
    __syncthreads();
    if (s0 + BC < kend) kt.issue(pick(sm.k, i ^ 1), LDH, s0 + BC, p.T), vt.issue(pick(sm.v, i ^ 1), LDH, s0 + BC, p.T);
    async_commit();
    if (s0 == 0) frag_rows(qa, sm.q + r0 * LDH, LDH, lane);
    float s[NS][4], mx[2] = {-CUDART_INF_F, -CUDART_INF_F};
    scores<NK, NS>(s, qa, pick(sm.k, i), LDH, lane);
    if (s0 == t0) mask_diagonal<false>(s, r0, 0, rows, -CUDART_INF_F, lane);
#pragma unroll
    for (int nt = 0; nt < NS; nt++) {
#pragma unroll
      for (int e = 0; e < 4; e++) mx[ACC_ROW(e)] = fmaxf(mx[ACC_ROW(e)], s[nt][e]);
    }
    /* a row's max over the four lanes that hold it, scaled (scale > 0) */
    float alpha[2], neg[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float mn = fmaxf(m[r], mx[r] * sl2);
      /* a row with no key yet keeps max −inf: its factor 1, its terms
      ** 2^(−inf + 0) = 0; otherwise the factor is 0 on its first keys */
      alpha[r] = mn == -CUDART_INF_F ? 1.0f : fast_exp2(m[r] - mn);
      neg[r] = mn == -CUDART_INF_F ? 0.0f : -mn;
      m[r] = mn;
      l[r] *= alpha[r];
    }
#pragma unroll
    for (int nt = 0; nt < NS; nt++) {
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const float pv = fast_exp2(fmaf(s[nt][e], sl2, neg[ACC_ROW(e)])); /* masked: 2^−inf = 0 */
        s[nt][e] = pv;
        l[ACC_ROW(e)] += pv;
      }
    }
#pragma unroll
    for (int nt = 0; nt < NO; nt++) {
      o[nt][0] *= alpha[0], o[nt][1] *= alpha[0];
      o[nt][2] *= alpha[1], o[nt][3] *= alpha[1];
    }
    frag4 pa[NS / 2];
    to_frag_a<NS>(pa, s);
    mma_cols<NS / 2, NO>(o, pa, pick(sm.v, i), LDH, lane);
  }
  float inv[2];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 1);
    l[r] += __shfl_xor_sync(0xffffffffu, l[r], 2);
    inv[r] = 1.0f / l[r];
  }
  store_rows<NO>(out + b * p.T * p.H * p.hs + h * p.hs, p.H * p.hs, o, tr, inv, p.T, p.hs, lane);
  if ((lane & 3) == 0) {
#pragma unroll
    for (int r = 0; r < 2; r++)
      if (tr[r] < p.T) lse[(b * p.H + h) * p.T + tr[r]] = m[r] * LN2 + logf(l[r]);
  }
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

/* Shared memory of the dq kernel. */
template <int HP>
struct dq_smem {
  bf16 *q, *dout, *k[2], *v[2];
  __host__ __device__ static size_t carve(char *base, dq_smem *out) {
    carver c = {base, 0};
    dq_smem t;
    t.q = c.take<bf16>(BR * (HP + 8)), t.dout = c.take<bf16>(BR * (HP + 8));
    for (int i = 0; i < 2; i++) t.k[i] = c.take<bf16>(BC * (HP + 8)), t.v[i] = c.take<bf16>(BC * (HP + 8));
    if (out) *out = t;
    return c.used;
  }
};

/* per-row statistics of rows [t0, t0 + BR) of head h: lse·log2 e and D (0
** past T) */
static __device__ void load_row_stats(float *lse_s, float *d_s, const float *lse, const float *D, int64_t base,
                                      int64_t t0, int64_t T) {
  for (int e = threadIdx.x; e < BR; e += blockDim.x) {
    const bool in = t0 + e < T;
    lse_s[e] = in ? lse[base + t0 + e] * LOG2E : 0.0f;
    d_s[e] = in ? D[base + t0 + e] : 0.0f;
  }
}

template <int HP>
static __global__ void __launch_bounds__(AT_THREADS)
    flash_dq_kernel(bf16 *dq, const bf16 *dout, const float *lse, const float *D, const bf16 *q, const bf16 *k,
                    const bf16 *v, attn_params p) {
  constexpr int LDH = HP + 8, NK = HP / 16, NO = HP / 8, NS = BC / 8;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  dq_smem<HP> sm;
  dq_smem<HP>::carve((char *)smem_raw, &sm);
  const int64_t b = blockIdx.z, h = blockIdx.y, t0 = (int64_t)blockIdx.x * BR, kvh = h / p.g;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r0 = warp * 16;
  const tile_src<BC, HP> kt(k + b * p.T * p.ldk + kvh * p.hs, p.ldk, p.hs);
  const tile_src<BC, HP> vt(v + b * p.T * p.ldv + kvh * p.hs, p.ldv, p.hs);
  tile_src<BR, HP>(q + b * p.T * p.ldq + h * p.hs, p.ldq, p.hs).issue(sm.q, LDH, t0, p.T);
  tile_src<BR, HP>(dout + b * p.T * p.H * p.hs + h * p.hs, p.H * p.hs, p.hs).issue(sm.dout, LDH, t0, p.T);
  kt.issue(sm.k[0], LDH, 0, p.T);
  vt.issue(sm.v[0], LDH, 0, p.T);
  async_commit();
  /* the lane's two rows: positions, lse·log2 e and D */
  const int rl[2] = {r0 + (lane >> 2), r0 + (lane >> 2) + 8}, rows = block_rows(t0, p.T);
  const int64_t tr[2] = {t0 + rl[0], t0 + rl[1]};
  float lse2[2], dd[2];
#pragma unroll
  for (int r = 0; r < 2; r++) {
    const bool in = tr[r] < p.T;
    lse2[r] = in ? lse[(b * p.H + h) * p.T + tr[r]] * LOG2E : 0.0f;
    dd[r] = in ? D[(b * p.H + h) * p.T + tr[r]] : 0.0f;
  }
  float acc[NO][4];
#pragma unroll
  for (int nt = 0; nt < NO; nt++) acc[nt][0] = acc[nt][1] = acc[nt][2] = acc[nt][3] = 0.0f;
  const float sl2 = p.scale * LOG2E;
  const int64_t kend = t0 + BR < p.T ? t0 + BR : p.T;
  for (int64_t s0 = 0, i = 0; s0 < kend; s0 += BC, i ^= 1) {
    async_wait();
    __syncthreads();
    if (s0 + BC < kend) kt.issue(pick(sm.k, i ^ 1), LDH, s0 + BC, p.T), vt.issue(pick(sm.v, i ^ 1), LDH, s0 + BC, p.T);
    async_commit();
    frag4 fa[NK];
    float s[NS][4], dp[NS][4];
    frag_rows(fa, sm.q + r0 * LDH, LDH, lane);
    scores<NK, NS>(s, fa, pick(sm.k, i), LDH, lane);
    frag_rows(fa, sm.dout + r0 * LDH, LDH, lane);
    scores<NK, NS>(dp, fa, pick(sm.v, i), LDH, lane);
#pragma unroll
    for (int nt = 0; nt < NS; nt++) {
#pragma unroll
      for (int e = 0; e < 4; e++) {
        const int r = ACC_ROW(e);
        const float pv = fast_exp2(fmaf(s[nt][e], sl2, -lse2[r]));
        s[nt][e] = (dp[nt][e] - dd[r]) * (pv * p.scale); /* dS */
      }
    }
    if (s0 == t0) mask_diagonal<false>(s, r0, 0, rows, 0.0f, lane);
    frag4 da[NS / 2];
    to_frag_a<NS>(da, s);
    mma_cols<NS / 2, NO>(acc, da, pick(sm.k, i), LDH, lane);
  }
  const float one[2] = {1.0f, 1.0f};
  store_rows<NO>(dq + b * p.T * p.ldq + h * p.hs, p.ldq, acc, tr, one, p.T, p.hs, lane);
}

/* Shared memory of the dk/dv kernel. */
template <int HP>
struct dkv_smem {
  bf16 *k, *v, *q[2], *dout[2];
  float *lse[2], *d[2];
  __host__ __device__ static size_t carve(char *base, dkv_smem *out) {
    carver c = {base, 0};
    dkv_smem t;
    t.k = c.take<bf16>(BC * (HP + 8)), t.v = c.take<bf16>(BC * (HP + 8));
    for (int i = 0; i < 2; i++) {
      t.q[i] = c.take<bf16>(BR * (HP + 8)), t.dout[i] = c.take<bf16>(BR * (HP + 8));
      t.lse[i] = c.take<float>(BR), t.d[i] = c.take<float>(BR);
    }
    if (out) *out = t;
    return c.used;
  }
};

/* Up to a head of 64 the kernel needs 170 registers; capped at 168, three
** blocks fit on an SM instead of two. */
template <int HP>
static __global__ void __launch_bounds__(AT_THREADS, HP <= 64 ? 3 : 1)
    flash_dkdv_kernel(bf16 *dk, bf16 *dv, const bf16 *dout, const float *lse, const float *D, const bf16 *q,
                      const bf16 *k, const bf16 *v, attn_params p) {
  constexpr int LDH = HP + 8, NK = HP / 16, NO = HP / 8;
  extern __shared__ __align__(128) unsigned char smem_raw[];
  dkv_smem<HP> sm;
  dkv_smem<HP>::carve((char *)smem_raw, &sm);
  const int64_t b = blockIdx.z, kvh = blockIdx.y, s0 = (int64_t)blockIdx.x * BC;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, r0 = warp * 16;
  /* the stream of query tiles: for each query head of the group, the
  ** tiles from the diagonal on; item n is head kvh·g + n / per, rows from
  ** s0 + (n % per)·BR */
  const int64_t per = (p.T - s0 + BR - 1) / BR, items = p.g * per;
  auto issue = [&](int64_t n, int buf) {
    const int64_t h = kvh * p.g + n / per, t0 = s0 + n % per * BR;
    tile_src<BR, HP>(q + b * p.T * p.ldq + h * p.hs, p.ldq, p.hs).issue(pick(sm.q, buf), LDH, t0, p.T);
    tile_src<BR, HP>(dout + b * p.T * p.H * p.hs + h * p.hs, p.H * p.hs, p.hs).issue(pick(sm.dout, buf), LDH, t0, p.T);
    load_row_stats(pick(sm.lse, buf), pick(sm.d, buf), lse, D, (b * p.H + h) * p.T, t0, p.T);
  };
  tile_src<BC, HP>(k + b * p.T * p.ldk + kvh * p.hs, p.ldk, p.hs).issue(sm.k, LDH, s0, p.T);
  tile_src<BC, HP>(v + b * p.T * p.ldv + kvh * p.hs, p.ldv, p.hs).issue(sm.v, LDH, s0, p.T);
  issue(0, 0);
  async_commit();
  /* the lane's two keys; its rows of dk and dv */
  const int kl[2] = {r0 + (lane >> 2), r0 + (lane >> 2) + 8};
  const int64_t sr[2] = {s0 + kl[0], s0 + kl[1]};
  float dka[NO][4], dva[NO][4];
#pragma unroll
  for (int nt = 0; nt < NO; nt++)
    dka[nt][0] = dka[nt][1] = dka[nt][2] = dka[nt][3] = dva[nt][0] = dva[nt][1] = dva[nt][2] = dva[nt][3] = 0.0f;
  const float sl2 = p.scale * LOG2E;
  for (int64_t n = 0, i = 0; n < items; n++, i ^= 1) {
    async_wait();
    __syncthreads();
    if (n + 1 < items) issue(n + 1, (int)i ^ 1);
    async_commit();
    const int64_t t0 = s0 + n % per * BR;
    const bool diag = t0 == s0;
    const int rows = block_rows(t0, p.T);
    /* the tile's queries in two halves, which halves the score registers
    ** (three blocks fit on an SM where two did); on the diagonal, the
    ** first half lies wholly before the keys of warps 2 and 3 */
#pragma unroll
    for (int hq = 0; hq < 2; hq++) {
      constexpr int HALF = BR / 2, NH = HALF / 8;
      if (diag && hq == 0 && r0 >= HALF) continue;
      const bf16 *qh = pick(sm.q, i) + hq * HALF * LDH, *doh = pick(sm.dout, i) + hq * HALF * LDH;
      const float *lse2 = pick(sm.lse, i) + hq * HALF, *dd = pick(sm.d, i) + hq * HALF;
      /* Sᵀ = k·qᵀ and dPᵀ = v·dOᵀ for this warp's 16 keys */
      frag4 fa[NK];
      float st[NH][4], dpt[NH][4];
      frag_rows(fa, sm.k + r0 * LDH, LDH, lane);
      scores<NK, NH>(st, fa, qh, LDH, lane);
      frag_rows(fa, sm.v + r0 * LDH, LDH, lane);
      scores<NK, NH>(dpt, fa, doh, LDH, lane);
#pragma unroll
      for (int nt = 0; nt < NH; nt++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
          const int j = ACC_COL(nt, e, lane);
          const float pv = fast_exp2(fmaf(st[nt][e], sl2, -lse2[j]));
          st[nt][e] = pv;                                    /* Pᵀ */
          dpt[nt][e] = (dpt[nt][e] - dd[j]) * (pv * p.scale); /* dSᵀ */
        }
      }
      if (diag) {
        mask_diagonal<true>(st, r0, hq * HALF, rows, 0.0f, lane);
        mask_diagonal<true>(dpt, r0, hq * HALF, rows, 0.0f, lane);
      }
      frag4 pa[NH / 2];
      to_frag_a<NH>(pa, st);
      mma_cols<NH / 2, NO>(dva, pa, doh, LDH, lane);
      to_frag_a<NH>(pa, dpt);
      mma_cols<NH / 2, NO>(dka, pa, qh, LDH, lane);
    }
  }
  const float one[2] = {1.0f, 1.0f};
  store_rows<NO>(dk + b * p.T * p.ldk + kvh * p.hs, p.ldk, dka, sr, one, p.T, p.hs, lane);
  store_rows<NO>(dv + b * p.T * p.ldv + kvh * p.hs, p.ldv, dva, sr, one, p.T, p.hs, lane);
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
