/*
** tests/gpu/test_cuda_attention.c — causal attention forward and backward
** against the CPU backend, with error bounds derived from where the CUDA
** kernels round to bf16.
**
** Forward. The scores S = q·kᵀ/√hs are written to att in bf16 (half an ulp,
** 2^-9·|S|) before the softmax; perturbing a row's scores by at most ε
** moves each probability by at most p·(e^{2ε} − 1) ≈ 2ε·p, and storing p in
** bf16 adds 2^-9·p. With ε = 2^-9·max|S| of the row, the check allows
** p·2^-8·(2·max|S| + 1) (twice the bound). out = Σ p·v inherits
** Σ|Δp|·|v| plus its own rounding (GT_BF16·|out|) and fp32 order.
**
** Backward. Both backends get the same probabilities (the CPU's, rounded
** to bf16), so the difference comes from the CUDA kernel alone: dP =
** dout·vᵀ is stored in bf16 (2^-9 of Σ|dout||v| =: mP), so dP − Σp·dP errs
** by 2^-9·(mP + max mP); times p·scale, plus dS's own rounding, is the
** error of dS, which dq = dS·k and dk = dSᵀ·q carry as Σ|ΔdS|·|k| and
** Σ|ΔdS|·|q|. dv = attᵀ·dout only rounds its output. All bounds are doubled.
*/
#include "gpu_test.h"

typedef struct shape {
  int64_t B, T, NH, hs;
} shape;

#define SUM_BOUND(k) (2.0 * ((double)(k) + 4.0) * KT_U)

/* element d of head h's q (part 0), k (1) or v (2) at sequence b, step t */
static double qkv_at(const float *x, const shape *s, int part, int64_t b, int64_t t, int64_t h, int64_t d) {
  const int64_t C = s->NH * s->hs;
  return x[(b * s->T + t) * 3 * C + part * C + h * s->hs + d];
}

/* the same for [B, T, C] arrays (out, dout) */
static int64_t bthd(const shape *s, int64_t b, int64_t t, int64_t h, int64_t d) {
  return (b * s->T + t) * s->NH * s->hs + h * s->hs + d;
}

static void check_forward(const shape *s, uint64_t *rng) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  const int64_t B = s->B, T = s->T, NH = s->NH, hs = s->hs, C = NH * hs;
  const int64_t nx = B * T * 3 * C, nout = B * T * C, natt = B * NH * T * T;
  const double scale = 1.0 / sqrt((double)hs);
  float *x = gt_random(rng, nx, -1, 1), *out = kt_floats(nout), *att = kt_floats(natt);
  CHECK_EQ_INT(cpu->attention_forward(cpu, NULL, out, att, x, B, T, NH, hs), 0);
  void *dx = gt_up_bf16(x, nx), *dout = gt_alloc((uint64_t)nout * 2), *datt = gt_alloc((uint64_t)natt * 2);
  GT_OK(be->attention_forward(be, gt_s, dout, datt, dx, B, T, NH, hs));
  float *gatt = gt_down_bf16(datt, natt), *gout = gt_down_bf16(dout, nout);
  double *att_tol = kt_doubles(natt), *out_mag = kt_doubles(nout);
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < NH; h++)
      for (int64_t t = 0; t < T; t++) {
        double smax = 0;
        for (int64_t j = 0; j <= t; j++) {
          double sc = 0;
          for (int64_t d = 0; d < hs; d++) sc += qkv_at(x, s, 0, b, t, h, d) * qkv_at(x, s, 1, b, j, h, d);
          smax = fmax(smax, fabs(sc * scale));
        }
        const double rel = GT_BF16 * (2.0 * smax + 1.0);
        const float *p = att + ((b * NH + h) * T + t) * T;
        for (int64_t j = 0; j < T; j++) att_tol[((b * NH + h) * T + t) * T + j] = p[j] * rel;
        for (int64_t d = 0; d < hs; d++) {
          double m = 0;
          for (int64_t j = 0; j <= t; j++) m += p[j] * fabs(qkv_at(x, s, 2, b, j, h, d));
          out_mag[bthd(s, b, t, h, d)] = m * (rel + SUM_BOUND(T));
        }
      }
  /* att: the allowed error is att_tol itself (factor 1), exact zeros above the diagonal */
  gt_check("att", gatt, att, att_tol, natt, 1e-7, 0.0, 1.0);
  int upper_zero = 1;
  for (int64_t r = 0; r < B * NH * T; r++)
    for (int64_t j = r % T + 1; j < T; j++) upper_zero &= gatt[r * T + j] == 0.0f;
  CHECK(upper_zero);
  gt_check("attention out", gout, out, out_mag, nout, 1e-7, GT_BF16, 1.0);
  gt_free(dx), gt_free(dout), gt_free(datt);
  free(x), free(out), free(att), free(gatt), free(gout), free(att_tol), free(out_mag);
}

static void check_backward(const shape *s, uint64_t *rng) {
  tsl_backend *be = gt_cuda(), *cpu = kt_backend();
  const int64_t B = s->B, T = s->T, NH = s->NH, hs = s->hs, C = NH * hs;
  const int64_t nx = B * T * 3 * C, nout = B * T * C, natt = B * NH * T * T;
  const double scale = 1.0 / sqrt((double)hs);
  float *x = gt_random(rng, nx, -1, 1), *dy = gt_random(rng, nout, -1, 1);
  float *out = kt_floats(nout), *att = kt_floats(natt), *dx = kt_floats(nx);
  CHECK_EQ_INT(cpu->attention_forward(cpu, NULL, out, att, x, B, T, NH, hs), 0);
  gt_round(att, natt); /* the same probabilities on both sides */
  CHECK_EQ_INT(cpu->attention_backward(cpu, NULL, dx, dy, x, att, B, T, NH, hs), 0);
  void *ddx = gt_up_bf16(x, nx), *ddy = gt_up_bf16(dy, nout), *datt = gt_up_bf16(att, natt);
  void *dgrad = gt_alloc((uint64_t)nx * 2);
  GT_OK(be->attention_backward(be, gt_s, dgrad, ddy, ddx, datt, B, T, NH, hs));
  float *got = gt_down_bf16(dgrad, nx);

  /* per (b, h): the bound on ΔdS, then carried into dq, dk; dv's rounding */
  double *mag = kt_doubles(nx), *ds_err = kt_doubles(T * T), *ds_mag = kt_doubles(T * T);
  double *mp = kt_doubles(T), *dp = kt_doubles(T);
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < NH; h++) {
      const float *p = att + (b * NH + h) * T * T;
      for (int64_t t = 0; t < T; t++) {
        double mp_max = 0, dot = 0;
        for (int64_t j = 0; j <= t; j++) {
          mp[j] = dp[j] = 0;
          for (int64_t d = 0; d < hs; d++) {
            double dv = dy[bthd(s, b, t, h, d)], v = qkv_at(x, s, 2, b, j, h, d);
            dp[j] += dv * v;
            mp[j] += fabs(dv * v);
          }
          mp_max = fmax(mp_max, mp[j]);
          dot += p[t * T + j] * dp[j];
        }
        for (int64_t j = 0; j < T; j++) {
          double ds = j <= t ? p[t * T + j] * (dp[j] - dot) * scale : 0.0;
          ds_mag[t * T + j] = fabs(ds);
          ds_err[t * T + j] = j <= t ? p[t * T + j] * scale * (mp[j] + mp_max) * GT_BF16 / 2 + fabs(ds) * GT_BF16 / 2 : 0;
        }
      }
      for (int64_t t = 0; t < T; t++)
        for (int64_t d = 0; d < hs; d++) {
          double eq = 0, ek = 0, mq = 0, mk = 0, mv = 0;
          for (int64_t j = 0; j < T; j++) {
            /* dq[t] = Σ_j dS[t, j]·k[j]; dk[t] = Σ_j dS[j, t]·q[j]; dv[t] = Σ_j p[j, t]·dout[j] */
            double kj = fabs(qkv_at(x, s, 1, b, j, h, d)), qj = fabs(qkv_at(x, s, 0, b, j, h, d));
            eq += ds_err[t * T + j] * kj;
            mq += ds_mag[t * T + j] * kj;
            ek += ds_err[j * T + t] * qj;
            mk += ds_mag[j * T + t] * qj;
            mv += p[j * T + t] * fabs(dy[bthd(s, b, j, h, d)]);
          }
          const int64_t row = (b * T + t) * 3 * C + h * hs + d;
          mag[row] = 2.0 * eq + SUM_BOUND(T) * mq;
          mag[row + C] = 2.0 * ek + SUM_BOUND(T) * mk;
          mag[row + 2 * C] = SUM_BOUND(T) * mv;
        }
    }
  gt_check("attention dqkv", got, dx, mag, nx, 1e-7, GT_BF16, 1.0);
  gt_free(ddx), gt_free(ddy), gt_free(datt), gt_free(dgrad);
  free(x), free(dy), free(out), free(att), free(dx), free(got), free(mag), free(ds_err), free(ds_mag), free(mp), free(dp);
}

/* odd T (not a multiple of a warp), several heads, head sizes 8..64 */
static const shape shapes[] = {{2, 37, 3, 16}, {1, 64, 2, 64}, {3, 5, 4, 8}, {1, 1, 1, 8}};

static void test_forward(void) {
  uint64_t rng = 31;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_forward(&shapes[i], &rng);
}

static void test_backward(void) {
  uint64_t rng = 32;
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) check_backward(&shapes[i], &rng);
}

int main(void) {
  gt_cuda();
  RUN(test_forward);
  RUN(test_backward);
  return HARNESS_EXIT();
}
