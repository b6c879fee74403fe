/*
** kernels/cpu/attention.c — causal grouped-query attention by the
** FlashAttention algorithm: no T×T matrix is ever stored.
**
** Forward, per block of query rows: walk the key blocks up to the diagonal,
** S = q·kᵀ/√hs by sgemm, then an online softmax per row (running max m and
** sum l, the output rows rescaled by e^(m_old − m_new) when the max grows),
** and O += P·v by sgemm; at the end O /= l and lse = m + log l is saved. The
** backward recomputes P = e^(S − lse) per block and forms
**   dV += Pᵀ·dO,  dP = dO·vᵀ,  dS = P ⊙ (dP − D)/√hs,  dQ += dS·k,  dK += dSᵀ·q
** with D = rowsum(dO ⊙ O). Memory: lse [B, H, T] plus per-thread blocks.
**
** Grouped queries. The g = heads/kv_heads query heads that share a kv head
** are packed into one block (rows ordered time step, then head) before the
** products, so each key block is multiplied once for the whole group, and
** dK, dV sum over the group's heads inside the sgemm. Packing also turns
** strided q rows (GPT-2's fused qkv) into a contiguous operand.
**
** Sliding window. With sh->window = W > 0, the query at position i sees
** the keys i − W < j <= i (Mistral's and Phi-3's windowed attention): the
** walk starts at the key block holding the block's first visible key, and
** each row's keys outside its window get probability 0, as those above the
** diagonal do.
**
** Decoding. With a cache of keys and values (shape past > 0), query t is
** position past + t and walks the keys up to it in the same blocks: a
** query meets the same keys in the same order whether it runs with its
** whole sequence or one step at a time.
**
** Parallel work. The forward runs over (sequence, kv head, query block)
** triples, which write disjoint rows of out and lse. The backward runs over
** (sequence, kv head) pairs: a thread owns the kv head's dk and dv rows and
** the dq rows of its query heads, so nothing is shared and no reduction
** crosses threads; the result does not depend on the thread count.
** Products are single-threaded sgemm calls (OpenBLAS runs one thread per
** call, see matmul.c), so the team's calls run side by side.
**
** Block sizes: QUERY_ROWS packed rows (time steps × group heads) per
** query block, KEY_BLOCK keys per key block. Measured on one thread (CPU
** time, best of two interleaved rounds) at B,T,H,KV = 4,64,4,4 /
** 4,256,12,12 / 1,1024,12,12 / 1,1024,12,4, forward + backward in ms:
**   rows\keys      64                    128                   256
**   32      2.3 / 83 / 287 / 287   2.2 / 81 / 301 / 268   2.3 / 77 / 266 / 266
**   64      2.8 / 84 / 263 / 255   2.7 / 97 / 310 / 243   2.6 / 78 / 252 / 252
**   128     2.7 / 95 / 278 / 256   2.6 / 91 / 265 / 235   2.7 / 89 / 248 / 245
** (the shared machine was loaded: absolute times are several times the
** unloaded ones). Differences under ~10% were within its noise; 64 × 256 is
** among the best at every length.
*/
#include <limits.h>
#include <omp.h>
#include <stdlib.h>

#include "cpu.h"

enum { QUERY_ROWS = 64, KEY_BLOCK = 256 };

/* The operands of one call, resolved to floats, with the derived sizes. */
typedef struct attn {
  const float *q, *k, *v, *out, *dout, *lse_in;
  float *o, *lse, *dq, *dk, *dv;
  int64_t B, T, H, KV, hs, g, ldq, ldk, ldv, qb, kb;
  int64_t P, KT; /* positions before the first query; k, v rows per sequence */
  int64_t W;     /* sliding window: keys per query, its own included; 0: all */
  float scale;
} attn;

/* Time steps per query block: QUERY_ROWS packed rows, at least one step. */
static int64_t query_steps(int64_t g) { return g >= QUERY_ROWS ? 1 : QUERY_ROWS / g; }

/* Negative or inconsistent shapes are caller bugs; sizes past an int cannot
** be passed to sgemm. */
static int check_shape(const tsl_attn_shape *sh) {
  if (!sh || sh->batch < 0 || sh->seq < 0 || sh->heads < 0 || sh->kv_heads <= 0 ||
      sh->head_size <= 0 || sh->heads % sh->kv_heads || sh->past < 0 || sh->window < 0 ||
      (sh->kv_seq && sh->kv_seq < sh->past + sh->seq))
    return TESSEL_E_INTERNAL;
  if (sh->ldq < sh->heads * sh->head_size || sh->ldk < sh->kv_heads * sh->head_size ||
      sh->ldv < sh->kv_heads * sh->head_size)
    return TESSEL_E_INTERNAL;
  if (sh->past + sh->seq > INT_MAX || sh->kv_seq > INT_MAX || sh->ldq > INT_MAX || sh->ldk > INT_MAX || sh->ldv > INT_MAX ||
      sh->heads > INT_MAX / QUERY_ROWS / sh->head_size)
    return TESSEL_E_UNSUPPORTED;
  return TESSEL_OK;
}

static attn attn_of(const tsl_attn_shape *sh) {
  attn a = {.B = sh->batch, .T = sh->seq, .H = sh->heads, .KV = sh->kv_heads,
            .hs = sh->head_size, .ldq = sh->ldq, .ldk = sh->ldk, .ldv = sh->ldv,
            .P = sh->past, .KT = sh->kv_seq ? sh->kv_seq : sh->seq, .W = sh->window};
  a.g = a.H / a.KV;
  a.qb = query_steps(a.g);
  a.kb = KEY_BLOCK;
  a.scale = 1.0f / sqrtf((float)a.hs);
  return a;
}

/* dst[(t − t0)·g·hs ..] = the group's g·hs contiguous values of row t, for
** t in [t0, t1); rows of src are ld apart. */
static void pack_rows(float *dst, const float *src, int64_t ld, int64_t t0, int64_t t1,
                      int64_t width) {
  for (int64_t t = t0; t < t1; t++)
    memcpy(dst + (t - t0) * width, src + t * ld, (size_t)width * sizeof(float));
}

/* The keys of packed row r (position t = t0 + r/g) within the key block
** [s0, s0 + n): indices [*first, end), the keys t − W < s <= t (all s <= t
** when W is 0); empty when end <= *first. */
static int64_t visible_keys(const attn *a, int64_t r, int64_t t0, int64_t s0, int64_t n, int64_t *first) {
  const int64_t t = t0 + r / a->g;
  *first = a->W ? TSL_MIN(n, TSL_MAX(0, t - a->W + 1 - s0)) : 0;
  return TSL_MIN(n, t - s0 + 1);
}

/* The first key block that a query block starting at position t0 meets:
** the one holding key t0 − W + 1 under a window, else block 0. Blocks start
** on multiples of kb whatever the queries, so that a query meets the same
** blocks alone (decoding) as with its whole sequence. */
static int64_t first_block(const attn *a, int64_t t0) {
  return a->W && t0 - a->W + 1 > 0 ? (t0 - a->W + 1) / a->kb * a->kb : 0;
}

/* One row of the online softmax over a key block: p[0..n) holds the scaled
** scores and becomes e^(s − m_new) over the visible keys [first, nv) and 0
** elsewhere; the running max and sum are updated and the row's output
** accumulator o[0..hs) rescaled to the new max. */
static void online_row(float *p, int64_t n, int64_t first, int64_t nv, float *mx, float *sum, float *o,
                       int64_t hs) {
  if (nv <= first) {
    memset(p, 0, (size_t)n * sizeof(float));
    return;
  }
  memset(p, 0, (size_t)first * sizeof(float));
  float bm = -INFINITY;
#pragma omp simd reduction(max : bm)
  for (int64_t j = first; j < nv; j++) bm = p[j] > bm ? p[j] : bm;
  const float mn = *mx > bm ? *mx : bm;
  const float alpha = tsl_cpu_expf(*mx - mn); /* 0 on the first block (m = −inf) */
  float l = 0.0f;
#pragma omp simd reduction(+ : l)
  for (int64_t j = first; j < nv; j++) {
    p[j] = tsl_cpu_expf(p[j] - mn);
    l += p[j];
  }
  memset(p + nv, 0, (size_t)(n - nv) * sizeof(float));
  if (alpha != 1.0f) {
#pragma omp simd
    for (int64_t i = 0; i < hs; i++) o[i] *= alpha;
  }
  *sum = *sum * alpha + l;
  *mx = mn;
}

/* Forward of one (sequence, kv head, query block); scratch holds
** M·(2·hs + kb + 2) floats for M = qb·g packed rows. Query t is position
** P + t and meets the keys up to it. */
static void block_forward(const attn *a, int64_t b, int64_t kvh, int64_t t0, float *scratch) {
  const int64_t g = a->g, hs = a->hs, T = a->T, gw = g * hs, C = a->H * hs;
  const int64_t t1 = TSL_MIN(t0 + a->qb, T), M = (t1 - t0) * g, end = a->P + t1;
  float *qp = scratch, *op = qp + M * hs, *sc = op + M * hs, *mx = sc + M * a->kb, *sum = mx + M;
  const float *q0 = a->q + b * T * a->ldq + kvh * gw;
  const float *k0 = a->k + b * a->KT * a->ldk + kvh * hs, *v0 = a->v + b * a->KT * a->ldv + kvh * hs;
  pack_rows(qp, q0, a->ldq, t0, t1, gw);
  memset(op, 0, (size_t)(M * hs) * sizeof(float));
  for (int64_t r = 0; r < M; r++) mx[r] = -INFINITY, sum[r] = 0.0f;
  for (int64_t s0 = first_block(a, a->P + t0); s0 < end; s0 += a->kb) {
    const int64_t n = TSL_MIN(a->kb, end - s0);
    /* sc[M, n] = scale · qp · k[s0:s0+n]ᵀ */
    tsl_cpu_sgemm(0, 1, M, n, hs, a->scale, qp, hs, k0 + s0 * a->ldk, a->ldk, 0.0f, sc, n);
    for (int64_t r = 0; r < M; r++) {
      int64_t first;
      const int64_t nv = visible_keys(a, r, a->P + t0, s0, n, &first);
      online_row(sc + r * n, n, first, nv, mx + r, sum + r, op + r * hs, hs);
    }
    /* op[M, hs] += p · v[s0:s0+n] */
    tsl_cpu_sgemm(0, 0, M, hs, n, 1.0f, sc, n, v0 + s0 * a->ldv, a->ldv, 1.0f, op, hs);
  }
  for (int64_t r = 0; r < M; r++) {
    const int64_t t = t0 + r / g, h = kvh * g + r % g;
    const float inv = 1.0f / sum[r];
    float *o = a->o + (b * T + t) * C + h * hs;
#pragma omp simd
    for (int64_t i = 0; i < hs; i++) o[i] = op[r * hs + i] * inv;
    if (a->lse) a->lse[(b * a->H + h) * T + t] = mx[r] + logf(sum[r]);
  }
}

/* Per-thread scratch, rounded up to whole cache lines so that neighbouring
** threads never write to the same line; NULL when out of memory. */
static float *thread_scratch(int64_t per_thread, int64_t *stride) {
  *stride = (per_thread + 15) & ~(int64_t)15;
  return aligned_alloc(64, (size_t)(*stride * omp_get_max_threads()) * sizeof(float));
}

/* out [B, T, H·hs], lse [B, H, T] (NULL: not kept) from q, k, v */
int tsl_cpu_attention_forward(tsl_backend *be, tsl_stream *s, void *out, float *lse, const void *q,
                              const void *k, const void *v, const tsl_attn_shape *sh) {
  int st = check_shape(sh);
  if (st) return st;
  attn a = attn_of(sh);
  if (a.B == 0 || a.T == 0 || a.H == 0) return TESSEL_OK;
  a.q = q, a.k = k, a.v = v, a.o = out, a.lse = lse;
  const int64_t M = a.qb * a.g, blocks = (a.T + a.qb - 1) / a.qb, units = a.B * a.KV * blocks;
  int64_t stride;
  float *scratch = thread_scratch(M * (2 * a.hs + a.kb + 2), &stride);
  if (!scratch) return TESSEL_E_NOMEM;
#pragma omp parallel
  {
    float *mine = scratch + stride * omp_get_thread_num();
    /* later query blocks meet more keys: hand them out first, one at a time */
#pragma omp for schedule(dynamic)
    for (int64_t u = 0; u < units; u++) {
      const int64_t pairs = a.B * a.KV, blk = blocks - 1 - u / pairs, pair = u % pairs;
      block_forward(&a, pair / a.KV, pair % a.KV, blk * a.qb, mine);
    }
  }
  free(scratch);
  return TESSEL_OK;
}

/* Backward of one query block of one (sequence, kv head), accumulating into
** the kv head's dk, dv rows (already initialised) and writing the block's
** dq rows. scratch holds M·(3·hs + 2·kb + 2) floats. */
static void block_backward(const attn *a, int64_t b, int64_t kvh, int64_t t0, float *scratch) {
  const int64_t g = a->g, hs = a->hs, T = a->T, gw = g * hs, C = a->H * hs, kb = a->kb;
  const int64_t t1 = TSL_MIN(t0 + a->qb, T), M = (t1 - t0) * g;
  float *qp = scratch, *dop = qp + M * hs, *dqp = dop + M * hs, *p = dqp + M * hs;
  float *dp = p + M * kb, *lse = dp + M * kb, *dsum = lse + M;
  const float *k0 = a->k + b * T * a->ldk + kvh * hs, *v0 = a->v + b * T * a->ldv + kvh * hs;
  float *dk0 = a->dk + b * T * a->ldk + kvh * hs, *dv0 = a->dv + b * T * a->ldv + kvh * hs;
  pack_rows(qp, a->q + b * T * a->ldq + kvh * gw, a->ldq, t0, t1, gw);
  pack_rows(dop, a->dout + b * T * C + kvh * gw, C, t0, t1, gw);
  memset(dqp, 0, (size_t)(M * hs) * sizeof(float));
  for (int64_t r = 0; r < M; r++) {
    const int64_t t = t0 + r / g, h = kvh * g + r % g;
    const float *o = a->out + (b * T + t) * C + h * hs, *d = dop + r * hs;
    float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
    for (int64_t i = 0; i < hs; i++) dot += d[i] * o[i];
    dsum[r] = dot;
    lse[r] = a->lse_in[(b * a->H + h) * T + t];
  }
  for (int64_t s0 = first_block(a, t0); s0 < t1; s0 += kb) {
    const int64_t n = TSL_MIN(kb, t1 - s0);
    const float *kb0 = k0 + s0 * a->ldk, *vb0 = v0 + s0 * a->ldv;
    /* p = e^(scale · qp · kᵀ − lse), 0 above the diagonal */
    tsl_cpu_sgemm(0, 1, M, n, hs, a->scale, qp, hs, kb0, a->ldk, 0.0f, p, n);
    /* dp = dop · vᵀ */
    tsl_cpu_sgemm(0, 1, M, n, hs, 1.0f, dop, hs, vb0, a->ldv, 0.0f, dp, n);
    for (int64_t r = 0; r < M; r++) {
      int64_t first;
      const int64_t nv = TSL_MAX(visible_keys(a, r, t0, s0, n, &first), first);
      float *pr = p + r * n, *dr = dp + r * n;
      const float m = lse[r], dd = dsum[r], sc = a->scale;
      memset(pr, 0, (size_t)first * sizeof(float));
      memset(dr, 0, (size_t)first * sizeof(float));
#pragma omp simd
      for (int64_t j = first; j < nv; j++) {
        pr[j] = tsl_cpu_expf(pr[j] - m);
        dr[j] = pr[j] * (dr[j] - dd) * sc;
      }
      memset(pr + nv, 0, (size_t)(n - nv) * sizeof(float));
      memset(dr + nv, 0, (size_t)(n - nv) * sizeof(float));
    }
    /* dv += pᵀ · dop; dqp += ds · k; dk += dsᵀ · qp (ds is in dp) */
    tsl_cpu_sgemm(1, 0, n, hs, M, 1.0f, p, n, dop, hs, 1.0f, dv0 + s0 * a->ldv, a->ldv);
    tsl_cpu_sgemm(0, 0, M, hs, n, 1.0f, dp, n, kb0, a->ldk, 1.0f, dqp, hs);
    tsl_cpu_sgemm(1, 0, n, hs, M, 1.0f, dp, n, qp, hs, 1.0f, dk0 + s0 * a->ldk, a->ldk);
  }
  for (int64_t t = t0; t < t1; t++)
    memcpy(a->dq + (b * T + t) * a->ldq + kvh * gw, dqp + (t - t0) * gw, (size_t)gw * sizeof(float));
}

/* dq, dk, dv (overwritten) from dout, out, lse and q, k, v */
int tsl_cpu_attention_backward(tsl_backend *be, tsl_stream *s, void *dq, void *dk, void *dv,
                               const void *dout, const void *out, const float *lse, const void *q,
                               const void *k, const void *v, const tsl_attn_shape *sh) {
  int st = check_shape(sh);
  if (st) return st;
  if (sh->past || (sh->kv_seq && sh->kv_seq != sh->seq)) return TESSEL_E_INTERNAL; /* training has no cache */
  attn a = attn_of(sh);
  if (a.B == 0 || a.T == 0 || a.H == 0) return TESSEL_OK;
  a.q = q, a.k = k, a.v = v, a.out = out, a.dout = dout, a.lse_in = lse;
  a.dq = dq, a.dk = dk, a.dv = dv;
  const int64_t M = a.qb * a.g, pairs = a.B * a.KV;
  int64_t stride;
  float *scratch = thread_scratch(M * (3 * a.hs + 2 * a.kb + 2), &stride);
  if (!scratch) return TESSEL_E_NOMEM;
#pragma omp parallel
  {
    float *mine = scratch + stride * omp_get_thread_num();
#pragma omp for schedule(static)
    for (int64_t u = 0; u < pairs; u++) {
      const int64_t b = u / a.KV, kvh = u % a.KV;
      for (int64_t t = 0; t < a.T; t++) {
        memset(a.dk + (b * a.T + t) * a.ldk + kvh * a.hs, 0, (size_t)a.hs * sizeof(float));
        memset(a.dv + (b * a.T + t) * a.ldv + kvh * a.hs, 0, (size_t)a.hs * sizeof(float));
      }
      for (int64_t t0 = 0; t0 < a.T; t0 += a.qb) block_backward(&a, b, kvh, t0, mine);
    }
  }
  free(scratch);
  return TESSEL_OK;
}
