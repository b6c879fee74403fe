/*
** bench/kernels.c — speed of the CPU backend's kernels.
**
** Prints the sgemm ceiling (best GFLOP/s over square sizes 512, 1024 and
** 2048), then the time per call of every kernel, forward and backward, at
** the "small" model's shapes: B=4, T=64, C=256, NH=4 (hs=64), V=256, so
** rows = B·T = 256, and finally one whole transformer block (forward then
** backward) built from those kernels, as training runs them back to back.
**
** With the argument `attention`, it times causal attention forward and
** backward instead at T = 64, 256 and 1024 (GPT-2 head shapes, and one
** grouped-query shape), and at T = 2048 with and without a sliding window
** of 256 (model.sliding_window), each in its own process, and reports the
** bytes attention keeps for backward and the process's peak resident
** memory.
** It gives CPU time per call beside wall-clock time: on a shared machine
** the CPU time of a one-thread run is the steadier figure.
**
** GFLOP/s counts the arithmetic a kernel must do: 2·m·n·k for products
** (attention only over the keys each query sees: the causal triangle, or
** its band under a window), and for the memory-bound
** kernels a nominal count per element given beside each row; GB/s counts
** each input read and output written once. Times are the best of several
** repeats of a loop long enough to dwarf the clock.
**
** Then each fusion against the kernels it replaces, timed alternately
** (parts, fused, parts, fused, ...) so that both see the same machine
** load, as the median over the repeats, in wall-clock and CPU time; and one
** block both ways. Last, zeroing and copying the small model's gradients
** on the calling thread against the backend's calls, which cut them between
** the team, timed alternately the same way.
**
** Usage: bench_kernels [attention] [threads]
**        (threads default: OMP_NUM_THREADS or all cores)
*/
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include "common/util.h"
#include "cpu/cpu.h"

enum { B = 4, T = 64, C = 256, NH = 4, HS = C / NH, V = 256, ROWS = B * T, NPARAM = 1 << 20 };
enum { NGRAD = 3225088 }; /* the small model's parameters, whose gradients a step zeroes */

/* Every buffer the kernels at the small shapes touch. */
typedef struct bench {
  tsl_backend *be;
  float *x, *ln, *qkv, *lse, *atty, *fch, *fcg, *logits, *dlogits;
  float *d_x, *d_ln, *d_qkv, *d_atty, *d_fch, *d_fcg;
  float *w_qkv, *w_proj, *w_fc, *w_fcp, *b_qkv, *b_proj, *b_fc, *b_fcp, *lnw, *lnb, *wte, *wpe;
  float *g_qkv, *g_proj, *g_fc, *g_fcp, *gb_qkv, *gb_proj, *gb_fc, *gb_fcp, *g_lnw, *g_lnb;
  float *g_wte, *g_wpe, *mean, *rstd, *rowmax, *losses;
  float *gate, *up, *swi, *d_gate, *d_up;
  tsl_attn_shape sweep;                       /* the attention sweep's shape */
  float *s_q, *s_k, *s_v, *s_out, *s_lse, *s_dout, *s_dq, *s_dk, *s_dv;
  float *master, *grad, *m, *v;
  float *grads, *grads_copy; /* NGRAD each */
  double *sums, *sumsq;
  int32_t *tokens;
} bench;

typedef int (*bench_fn)(bench *);

static void fill(float *p, int64_t n, uint64_t *seed) {
  for (int64_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)((*seed >> 40) * (1.0 / 16777216.0)) - 0.5f;
  }
}

static float *buffer(int64_t n, uint64_t *seed) {
  float *p = aligned_alloc(64, (size_t)((n + 15) & ~(int64_t)15) * sizeof(float));
  if (!p) {
    fprintf(stderr, "bench: out of memory\n");
    exit(1);
  }
  fill(p, n, seed);
  return p;
}

/* This process's CPU time in seconds (all its threads): on a shared
** machine, the time a kernel was actually given a core. */
static double cpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Seconds per call of fn on the clock `now`: best of `repeats` timed
** loops, each sized to last at least 20 ms. */
static double time_on(double (*now)(void), bench_fn fn, bench *b, int repeats) {
  if (fn(b) != 0) {
    fprintf(stderr, "bench: kernel failed\n");
    exit(1);
  }
  int iters = 1;
  for (;;) {
    double t0 = now();
    for (int i = 0; i < iters; i++) fn(b);
    if (now() - t0 > 0.02) break;
    iters *= 2;
  }
  double best = 1e30;
  for (int r = 0; r < repeats; r++) {
    double t0 = now();
    for (int i = 0; i < iters; i++) fn(b);
    best = TSL_MIN(best, (now() - t0) / iters);
  }
  return best;
}

/* wall-clock seconds per call */
static double time_call(bench_fn fn, bench *b, int repeats) { return time_on(tsl_now, fn, b, repeats); }

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, c = *(const double *)y;
  return (a > c) - (a < c);
}

/* Median seconds per call of fa and of fb, timed in alternation on the
** clock `now`, each repeat a loop of at least 10 ms. */
static void time_pair(double (*now)(void), bench_fn fa, bench_fn fb, bench *b, int repeats, double *ta, double *tb) {
  double a[64], c[64];
  int iters = 1;
  if (fa(b) || fb(b)) {
    fprintf(stderr, "bench: kernel failed\n");
    exit(1);
  }
  for (;;) {
    double t0 = now();
    for (int i = 0; i < iters; i++) fa(b);
    if (now() - t0 > 0.01) break;
    iters *= 2;
  }
  repeats = TSL_MIN(repeats, 64);
  for (int r = 0; r < repeats; r++) {
    double t0 = now();
    for (int i = 0; i < iters; i++) fa(b);
    double t1 = now();
    for (int i = 0; i < iters; i++) fb(b);
    a[r] = (t1 - t0) / iters;
    c[r] = (now() - t1) / iters;
  }
  qsort(a, (size_t)repeats, sizeof *a, cmp_double);
  qsort(c, (size_t)repeats, sizeof *c, cmp_double);
  *ta = a[repeats / 2];
  *tb = c[repeats / 2];
}

/* bytes = 0: no GB/s column (a mix of kernels) */
static void report(const char *name, const char *shape, double sec, double flops, double bytes) {
  printf("%-24s %-26s %9.1f us %8.2f GFLOP/s", name, shape, sec * 1e6, flops / sec * 1e-9);
  if (bytes > 0) printf(" %7.2f GB/s", bytes / sec * 1e-9);
  printf("\n");
}

/* ---- the sgemm ceiling ---- */

/* Best GFLOP/s of an n×n×n product over 5 runs after a warm-up, through
** the backend's gemm (the whole team, as the kernels use it) or through a
** bare cblas_sgemm (one thread: the backend sets OpenBLAS to one). */
static double square_gflops(tsl_backend *be, int n, int through_backend) {
  uint64_t seed = 1;
  float *a = buffer((int64_t)n * n, &seed), *bm = buffer((int64_t)n * n, &seed);
  float *c = buffer((int64_t)n * n, &seed);
  double top = 0.0;
  for (int r = 0; r < 6; r++) {
    double t0 = tsl_now();
    if (through_backend)
      be->gemm(be, NULL, 0, 0, n, n, n, 1.0f, a, n, bm, n, 0.0f, c, n, TESSEL_F32);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, bm, n, 0.0f, c,
                  n);
    double gf = 2.0 * n * n * (double)n / (tsl_now() - t0) * 1e-9;
    if (r > 0) top = TSL_MAX(top, gf);
  }
  free(a), free(bm), free(c);
  return top;
}

static void sgemm_ceiling(tsl_backend *be) {
  const int sizes[] = {512, 1024, 2048};
  double best = 0.0;
  printf("sgemm ceiling (square, best of 5):   backend gemm   cblas, 1 thread\n");
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    double team = square_gflops(be, sizes[i], 1), one = square_gflops(be, sizes[i], 0);
    printf("  %4d:                              %7.1f GFLOP/s %7.1f GFLOP/s\n", sizes[i], team,
           one);
    best = TSL_MAX(best, team);
  }
  printf("  ceiling: %.1f GFLOP/s\n\n", best);
}

/* ---- one function per timed call ---- */

#define LIN_FWD(name, out, inp, w, bias, ic, oc)                                            \
  static int name(bench *b) {                                                               \
    return b->be->linear_forward(b->be, NULL, b->out, b->inp, b->w, b->bias, ROWS, ic, oc); \
  }
#define LIN_BWD(name, dinp, dw, db, dout, inp, w, ic, oc)                                          \
  static int name(bench *b) {                                                                      \
    return b->be->linear_backward(b->be, NULL, b->dinp, b->dw, b->db, b->dout, b->inp, b->w, ROWS, \
                                  ic, oc);                                                         \
  }
LIN_FWD(qkv_fwd, qkv, ln, w_qkv, b_qkv, C, 3 * C)
LIN_BWD(qkv_bwd, d_ln, g_qkv, gb_qkv, d_qkv, ln, w_qkv, C, 3 * C)
LIN_FWD(proj_fwd, x, atty, w_proj, b_proj, C, C)
LIN_BWD(proj_bwd, d_atty, g_proj, gb_proj, d_x, atty, w_proj, C, C)
LIN_FWD(fc_fwd, fch, ln, w_fc, b_fc, C, 4 * C)
LIN_BWD(fc_bwd, d_ln, g_fc, gb_fc, d_fch, ln, w_fc, C, 4 * C)
LIN_FWD(fcp_fwd, x, fcg, w_fcp, b_fcp, 4 * C, C)
LIN_BWD(fcp_bwd, d_fcg, g_fcp, gb_fcp, d_x, fcg, w_fcp, 4 * C, C)

/* the tied lm head: logits = ln · wteᵀ; backward d_ln = dlogits · wte,
** dwte += dlogitsᵀ · ln */
static int head_fwd(bench *b) {
  return b->be->gemm(b->be, NULL, 0, 1, ROWS, V, C, 1.0f, b->ln, C, b->wte, C, 0.0f, b->logits, V,
                     TESSEL_F32);
}
static int head_bwd(bench *b) {
  int st = b->be->gemm(b->be, NULL, 0, 0, ROWS, C, V, 1.0f, b->dlogits, V, b->wte, C, 0.0f, b->d_ln,
                       C, TESSEL_F32);
  return st ? st
            : b->be->gemm(b->be, NULL, 1, 0, V, C, ROWS, 1.0f, b->dlogits, V, b->ln, C, 1.0f,
                          b->g_wte, C, TESSEL_F32);
}
static int ln_fwd(bench *b) {
  return b->be->layernorm_forward(b->be, NULL, b->ln, b->mean, b->rstd, b->x, b->lnw, b->lnb, ROWS,
                                  C, 1e-5f);
}
static int ln_bwd(bench *b) {
  return b->be->layernorm_backward(b->be, NULL, b->d_x, b->g_lnw, b->g_lnb, b->d_ln, b->x, b->lnw,
                                   b->mean, b->rstd, ROWS, C);
}
/* attention on the fused qkv, as GPT-2 calls it */
static const tsl_attn_shape attn_shape = {B, T, NH, NH, HS, 3 * C, 3 * C, 3 * C, 0, 0, 0};
static int attn_fwd(bench *b) {
  return b->be->attention_forward(b->be, NULL, b->atty, b->lse, b->qkv, b->qkv + C, b->qkv + 2 * C,
                                  &attn_shape);
}
static int attn_bwd(bench *b) {
  return b->be->attention_backward(b->be, NULL, b->d_qkv, b->d_qkv + C, b->d_qkv + 2 * C, b->d_atty,
                                   b->atty, b->lse, b->qkv, b->qkv + C, b->qkv + 2 * C, &attn_shape);
}
static int rms_fwd(bench *b) {
  return b->be->rmsnorm_forward(b->be, NULL, b->ln, b->rstd, b->x, b->lnw, ROWS, C, 1e-5f);
}
static int rms_bwd(bench *b) {
  return b->be->rmsnorm_backward(b->be, NULL, b->d_x, b->g_lnw, b->d_ln, b->x, b->lnw, b->rstd, ROWS,
                                 C);
}
/* rotary on q and k of the fused qkv (in place, forward then inverse, so
** repeated calls stay on the same values) */
static int rope_qk(bench *b) {
  int st = 0;
  for (int inverse = 0; inverse < 2 && !st; inverse++)
    for (int part = 0; part < 2 && !st; part++)
      st = b->be->rope(b->be, NULL, b->qkv + part * C, B, T, NH, HS, 3 * C, 0, (tsl_rope_freqs){.theta = 10000.0f},
                       inverse);
  return st;
}
static int swiglu_fwd(bench *b) {
  return b->be->swiglu_forward(b->be, NULL, b->swi, b->gate, b->up, ROWS * 4 * C);
}
static int swiglu_bwd(bench *b) {
  return b->be->swiglu_backward(b->be, NULL, b->d_gate, b->d_up, b->d_fcg, b->gate, b->up,
                                ROWS * 4 * C);
}
static int gelu_fwd(bench *b) {
  return b->be->gelu_forward(b->be, NULL, b->fcg, b->fch, ROWS * 4 * C);
}
static int gelu_bwd(bench *b) {
  return b->be->gelu_backward(b->be, NULL, b->d_fch, b->fch, b->d_fcg, ROWS * 4 * C);
}
static int residual(bench *b) { return b->be->add(b->be, NULL, b->x, b->x, b->atty, ROWS * C); }
static int embed_fwd(bench *b) {
  int st = b->be->embed_tokens_forward(b->be, NULL, b->x, b->tokens, b->wte, ROWS, C, 0, V);
  return st ? st : b->be->embed_positions_forward(b->be, NULL, b->x, b->wpe, B, T, C);
}
static int embed_bwd(bench *b) {
  int st = b->be->embed_tokens_backward(b->be, NULL, b->g_wte, b->d_x, b->tokens, ROWS, C, 0, V);
  return st ? st : b->be->embed_positions_backward(b->be, NULL, b->g_wpe, b->d_x, B, T, C);
}
/* the three cross-entropy phases, with the gradient (dscale != 0) */
static int ce(bench *b) {
  memcpy(b->dlogits, b->logits, sizeof(float) * ROWS * V);
  int st = b->be->ce_rowmax(b->be, NULL, b->rowmax, b->dlogits, ROWS, V, V);
  if (!st) st = b->be->ce_sums(b->be, NULL, b->sums, b->dlogits, b->rowmax, b->tokens, ROWS, 0, V, V);
  if (!st)
    st = b->be->ce_finish(b->be, NULL, b->losses, b->dlogits, b->rowmax, b->sums, b->tokens, ROWS,
                          0, V, V, 1.0f / ROWS);
  return st;
}
static int adamw(bench *b) {
  return b->be->adamw(b->be, NULL, b->master, b->master, b->grad, b->m, b->v, NPARAM, 1e-4f, 0.9f,
                      0.95f, 1e-8f, 0.1f, 1.0f, 10);
}
static int sumsq(bench *b) { return b->be->sumsq(b->be, NULL, b->sumsq, b->grad, NPARAM); }

/* one transformer block, forward then backward, as training calls it */
static int block(bench *b) {
  const bench_fn steps[] = {ln_fwd, qkv_fwd,  attn_fwd, proj_fwd, residual, ln_fwd,
                            fc_fwd, gelu_fwd, fcp_fwd,  residual, fcp_bwd,  gelu_bwd,
                            fc_bwd, ln_bwd,   proj_bwd, attn_bwd, qkv_bwd,  ln_bwd};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    int st = steps[i](b);
    if (st) return st;
  }
  return 0;
}

/* ---- fusions: the parts, and the fused kernel ---- */

/* The gradients again as at the start. Kernels timed over and over on the
** same buffers drive the gradients towards subnormal values (19% of the
** GELU's incoming gradient, measured), and a GEMM fed subnormals runs tens
** of times slower: that would time the CPU's subnormal arithmetic, not the
** fusion. */
static void fresh_gradients(bench *b) {
  uint64_t seed = 11;
  float *grads[] = {b->d_x, b->d_ln, b->d_atty};
  for (size_t i = 0; i < sizeof grads / sizeof grads[0]; i++) fill(grads[i], ROWS * C, &seed);
  fill(b->d_qkv, ROWS * 3 * C, &seed);
  fill(b->d_fch, ROWS * 4 * C, &seed);
  fill(b->d_fcg, ROWS * 4 * C, &seed);
  fill(b->dlogits, ROWS * V, &seed);
}

static int fc_gelu_parts(bench *b) { return fc_fwd(b) ? 1 : gelu_fwd(b); }
static int fc_gelu_fused(bench *b) {
  return b->be->linear_gelu_forward(b->be, NULL, b->fch, b->fcg, b->ln, b->w_fc, b->b_fc, ROWS, C, 4 * C);
}
/* GELU backward, then fc's backward (which sums the bias gradient), or the
** GELU backward that sums it and fc's backward without it */
static int gelu_bias_parts(bench *b) { return gelu_bwd(b) ? 1 : fc_bwd(b); }
static int gelu_bias_fused(bench *b) {
  int st = b->be->gelu_backward_bias(b->be, NULL, b->d_fch, b->gb_fc, b->fch, b->d_fcg, ROWS, 4 * C);
  return st ? st : b->be->linear_backward(b->be, NULL, b->d_ln, b->g_fc, NULL, b->d_fch, b->ln, b->w_fc, ROWS, C, 4 * C);
}
static int add_ln_parts(bench *b) {
  int st = b->be->add(b->be, NULL, b->d_x, b->x, b->atty, ROWS * C);
  return st ? st
            : b->be->layernorm_forward(b->be, NULL, b->ln, b->mean, b->rstd, b->d_x, b->lnw, b->lnb, ROWS, C, 1e-5f);
}
static int add_ln_fused(bench *b) {
  return b->be->add_layernorm_forward(b->be, NULL, b->d_x, b->ln, b->mean, b->rstd, b->x, b->atty, b->lnw, b->lnb,
                                      ROWS, C, 1e-5f);
}
/* the norm's input gradient into a scratch, then added to the stream's */
static int ln_add_parts(bench *b) {
  int st = b->be->layernorm_backward(b->be, NULL, b->d_atty, b->g_lnw, b->g_lnb, b->d_ln, b->x, b->lnw, b->mean,
                                     b->rstd, ROWS, C);
  return st ? st : b->be->axpy(b->be, NULL, TESSEL_F32, b->d_x, 1.0f, b->d_atty, ROWS * C);
}
static int ln_add_fused(bench *b) {
  return b->be->layernorm_backward_add(b->be, NULL, b->d_x, b->g_lnw, b->g_lnb, b->d_ln, b->x, b->lnw, b->mean,
                                       b->rstd, ROWS, C);
}
static int ce_fused(bench *b) {
  memcpy(b->dlogits, b->logits, sizeof(float) * ROWS * V);
  return b->be->ce_fused(b->be, NULL, b->losses, b->dlogits, b->tokens, ROWS, V, V, 1.0f / ROWS);
}
/* one block as the interpreter runs it with the fusions */
static int block_fused(bench *b) {
  const bench_fn steps[] = {ln_fwd,          qkv_fwd,  attn_fwd,    proj_fwd, add_ln_fused, fc_gelu_fused,
                            fcp_fwd,         residual, fcp_bwd,     gelu_bias_fused, ln_add_fused, proj_bwd,
                            attn_bwd,        qkv_bwd,  ln_add_fused};
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    int st = steps[i](b);
    if (st) return st;
  }
  return 0;
}

/* A step's passes over whole gradient buffers: on the calling thread, as
** before the backend cut them between the team, and as the backend runs
** them now. */
static int zero_one(bench *b) {
  memset(b->grads, 0, sizeof(float) * NGRAD);
  return 0;
}
static int zero_team(bench *b) { return b->be->memset_zero(b->be, b->grads, sizeof(float) * NGRAD, NULL); }
static int copy_one(bench *b) {
  memcpy(b->grads_copy, b->grads, sizeof(float) * NGRAD);
  return 0;
}
static int copy_team(bench *b) {
  return b->be->copy(b->be, b->grads_copy, b->grads, sizeof(float) * NGRAD, TSL_COPY_D2D, NULL);
}

static void byte_passes(bench *b) {
  static const struct {
    const char *name;
    bench_fn one, team;
  } pairs[] = {{"zero", zero_one, zero_team}, {"copy", copy_one, copy_team}};
  printf("\n%.1f MB of gradients, median of 15 alternating repeats:  calling thread, team, change\n",
         NGRAD * 4.0 * 1e-6);
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    double one, team;
    time_pair(tsl_now, pairs[i].one, pairs[i].team, b, 15, &one, &team);
    printf("  %-26s %9.1f us %9.1f us %+6.1f%%\n", pairs[i].name, one * 1e6, team * 1e6, 100.0 * (team - one) / one);
  }
}

static void fusions(bench *b) {
  static const struct {
    const char *name;
    bench_fn parts, fused;
  } pairs[] = {
      {"fc + GELU", fc_gelu_parts, fc_gelu_fused},
      {"GELU bwd + fc bias grad", gelu_bias_parts, gelu_bias_fused},
      {"residual add + layernorm", add_ln_parts, add_ln_fused},
      {"layernorm bwd + add", ln_add_parts, ln_add_fused},
      {"cross-entropy, 3 phases", ce, ce_fused},
      {"one block fwd+bwd", block, block_fused},
  };
  printf("\nfusions, median of 15 alternating repeats:  wall clock: parts, fused, change;  CPU time: same\n");
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    double wp, wf, cp, cf;
    fresh_gradients(b);
    time_pair(tsl_now, pairs[i].parts, pairs[i].fused, b, 15, &wp, &wf);
    time_pair(cpu_now, pairs[i].parts, pairs[i].fused, b, 15, &cp, &cf);
    printf("  %-26s %9.1f us %9.1f us %+6.1f%%   %9.1f us %9.1f us %+6.1f%%\n", pairs[i].name, wp * 1e6, wf * 1e6,
           100.0 * (wf - wp) / wp, cp * 1e6, cf * 1e6, 100.0 * (cf - cp) / cp);
  }
}

static void setup(bench *b, tsl_backend *be) {
  uint64_t seed = 7;
  memset(b, 0, sizeof *b);
  b->be = be;
  float **bufs[][2] = {{&b->x, &b->d_x}, {&b->ln, &b->d_ln}, {&b->atty, &b->d_atty}};
  for (size_t i = 0; i < 3; i++)
    *bufs[i][0] = buffer(ROWS * C, &seed), *bufs[i][1] = buffer(ROWS * C, &seed);
  b->qkv = buffer(ROWS * 3 * C, &seed), b->d_qkv = buffer(ROWS * 3 * C, &seed);
  b->fch = buffer(ROWS * 4 * C, &seed), b->d_fch = buffer(ROWS * 4 * C, &seed);
  b->fcg = buffer(ROWS * 4 * C, &seed), b->d_fcg = buffer(ROWS * 4 * C, &seed);
  b->gate = buffer(ROWS * 4 * C, &seed), b->up = buffer(ROWS * 4 * C, &seed);
  b->swi = buffer(ROWS * 4 * C, &seed), b->d_gate = buffer(ROWS * 4 * C, &seed);
  b->d_up = buffer(ROWS * 4 * C, &seed);
  b->lse = buffer((int64_t)B * NH * T, &seed);
  b->logits = buffer(ROWS * V, &seed), b->dlogits = buffer(ROWS * V, &seed);
  b->w_qkv = buffer(C * 3 * C, &seed), b->g_qkv = buffer(C * 3 * C, &seed);
  b->w_proj = buffer(C * C, &seed), b->g_proj = buffer(C * C, &seed);
  b->w_fc = buffer(C * 4 * C, &seed), b->g_fc = buffer(C * 4 * C, &seed);
  b->w_fcp = buffer(4 * C * C, &seed), b->g_fcp = buffer(4 * C * C, &seed);
  b->b_qkv = buffer(3 * C, &seed), b->gb_qkv = buffer(3 * C, &seed);
  b->b_proj = buffer(C, &seed), b->gb_proj = buffer(C, &seed);
  b->b_fc = buffer(4 * C, &seed), b->gb_fc = buffer(4 * C, &seed);
  b->b_fcp = buffer(C, &seed), b->gb_fcp = buffer(C, &seed);
  b->lnw = buffer(C, &seed), b->lnb = buffer(C, &seed);
  b->g_lnw = buffer(C, &seed), b->g_lnb = buffer(C, &seed);
  b->wte = buffer(V * C, &seed), b->g_wte = buffer(V * C, &seed);
  b->wpe = buffer(T * C, &seed), b->g_wpe = buffer(T * C, &seed);
  b->mean = buffer(ROWS, &seed), b->rstd = buffer(ROWS, &seed);
  b->rowmax = buffer(ROWS, &seed), b->losses = buffer(ROWS, &seed);
  b->master = buffer(NPARAM, &seed), b->grad = buffer(NPARAM, &seed);
  b->m = buffer(NPARAM, &seed), b->v = buffer(NPARAM, &seed);
  b->grads = buffer(NGRAD, &seed), b->grads_copy = buffer(NGRAD, &seed);
  for (int64_t i = 0; i < NPARAM; i++) b->v[i] = b->v[i] * b->v[i];
  b->sums = calloc(2 * ROWS, sizeof(double));
  b->sumsq = calloc(1, sizeof(double));
  b->tokens = calloc(ROWS, sizeof(int32_t));
  if (!b->sums || !b->sumsq || !b->tokens) exit(1);
  for (int i = 0; i < ROWS; i++) b->tokens[i] = (int32_t)((i * 7919) % V);
  /* a real forward so that atty and lse are what the backward expects */
  if (ln_fwd(b) || qkv_fwd(b) || attn_fwd(b) || head_fwd(b)) exit(1);
}

/* ---- attention against T ---- */

static int sweep_fwd(bench *b) {
  return b->be->attention_forward(b->be, NULL, b->s_out, b->s_lse, b->s_q, b->s_k, b->s_v, &b->sweep);
}
static int sweep_bwd(bench *b) {
  return b->be->attention_backward(b->be, NULL, b->s_dq, b->s_dk, b->s_dv, b->s_dout, b->s_out,
                                   b->s_lse, b->s_q, b->s_k, b->s_v, &b->sweep);
}

/* One shape, in a child process so that its peak resident memory is its
** own: q, k, v in one fused row as GPT-2 passes them (kv heads sized for
** grouped queries), forward and backward timed, then the bytes kept for
** backward (lse) and the peak RSS. */
static void attention_shape(const tsl_backend_opts *opts, int64_t batch, int64_t seq, int64_t heads,
                            int64_t kv_heads, int64_t window) {
  tsl_backend be = *tsl_cpu_backend();
  if (be.init(&be, opts) != 0) exit(1);
  bench b;
  memset(&b, 0, sizeof b);
  b.be = &be;
  const int64_t hs = HS, qw = heads * hs, kw = kv_heads * hs, w = qw + 2 * kw, rows = batch * seq;
  uint64_t seed = 11;
  float *qkv = buffer(rows * w, &seed), *dqkv = buffer(rows * w, &seed);
  b.sweep = (tsl_attn_shape){batch, seq, heads, kv_heads, hs, w, w, w, 0, 0, window};
  b.s_q = qkv, b.s_k = qkv + qw, b.s_v = qkv + qw + kw;
  b.s_dq = dqkv, b.s_dk = dqkv + qw, b.s_dv = dqkv + qw + kw;
  b.s_out = buffer(rows * qw, &seed), b.s_dout = buffer(rows * qw, &seed);
  b.s_lse = buffer(batch * heads * seq, &seed);
  /* Σ_t min(t + 1, W): the keys the queries see */
  const int64_t band = window && window < seq ? window : seq;
  const double tri = (double)batch * heads * ((double)band * (band + 1) / 2 + (double)(seq - band) * band);
  const double fwd = time_call(sweep_fwd, &b, 5), bwd = time_call(sweep_bwd, &b, 5);
  const double fwd_cpu = time_on(cpu_now, sweep_fwd, &b, 5), bwd_cpu = time_on(cpu_now, sweep_bwd, &b, 5);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("%2lld %5lld %3lld %3lld %5lld %9.2f %7.1f %9.2f %7.1f %9.2f %9.2f %9.1f %8.1f\n", (long long)batch,
         (long long)seq, (long long)heads, (long long)kv_heads, (long long)window, fwd * 1e3, 4 * hs * tri / fwd * 1e-9,
         bwd * 1e3, 8 * hs * tri / bwd * 1e-9, fwd_cpu * 1e3, bwd_cpu * 1e3,
         batch * heads * seq * 4.0 / 1024, ru.ru_maxrss / 1024.0);
  fflush(stdout);
  be.shutdown(&be);
}

static int attention_sweep(const tsl_backend_opts *opts) {
  const int64_t shapes[][5] = {{4, 64, 4, 4, 0},      {4, 256, 12, 12, 0},   {1, 1024, 12, 12, 0},
                               {1, 1024, 12, 4, 0},   {1, 2048, 12, 4, 0},   {1, 2048, 12, 4, 256}};
  printf("causal attention, hs=%d, q/k/v in one fused row (best of 5; ms per call, wall clock\n"
         "and this process's CPU time; KiB kept for backward; peak resident MiB):\n", HS);
  printf(" B     T  NH  KV     W   fwd ms GFLOP/s    bwd ms GFLOP/s  fwd cpu   bwd cpu  saved KiB peak MiB\n");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      attention_shape(opts, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3], shapes[i][4]);
      _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) return 1;
  }
  return 0;
}

int main(int argc, char **argv) {
  tsl_cpu_blas_restart(argv); /* the kernels `tessel` runs, not OpenBLAS's fallback */
  const int sweep = argc > 1 && strcmp(argv[1], "attention") == 0;
  const char *threads = argc > 1 + sweep ? argv[1 + sweep] : NULL;
  tsl_backend_opts opts = {.size = sizeof opts, .threads = threads ? atoi(threads) : 0};
  /* before any OpenMP team exists: the children fork from a single thread */
  if (sweep) return attention_sweep(&opts);
  tsl_backend be = *tsl_cpu_backend();
  if (be.init(&be, &opts) != 0) return 1;
  printf("%s\n\n", be.describe(&be));
  sgemm_ceiling(&be);

  bench b;
  setup(&b, &be);
  const double f = 4.0; /* bytes per float */
  const double lin[][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}};
  const bench_fn lin_fwd[] = {qkv_fwd, proj_fwd, fc_fwd, fcp_fwd};
  const bench_fn lin_bwd[] = {qkv_bwd, proj_bwd, fc_bwd, fcp_bwd};
  const char *lin_name[] = {"linear qkv", "linear attn_proj", "linear fc", "linear fc_proj"};
  const int reps = 7;
  printf("kernels at B=%d T=%d C=%d NH=%d hs=%d V=%d (rows=%d):\n", B, T, C, NH, HS, V, ROWS);
  for (int i = 0; i < 4; i++) {
    char shape[64];
    const double ic = lin[i][0], oc = lin[i][1], mnk = (double)ROWS * ic * oc;
    snprintf(shape, sizeof shape, "%dx%d -> %d", ROWS, (int)ic, (int)oc);
    report(lin_name[i], shape, time_call(lin_fwd[i], &b, reps), 2 * mnk,
           f * (ROWS * ic + ic * oc + ROWS * oc));
    report("  backward", "dinp, dw, db", time_call(lin_bwd[i], &b, reps), 4 * mnk,
           f * (2 * ROWS * ic + 3 * ic * oc + ROWS * oc));
  }
  const double hmnk = (double)ROWS * V * C;
  report("lm head (gemm B^T)", "256x256 . 256x256^T", time_call(head_fwd, &b, reps), 2 * hmnk,
         f * (ROWS * C + V * C + ROWS * V));
  report("  backward", "d_ln, dwte (2 gemms)", time_call(head_bwd, &b, reps), 4 * hmnk,
         f * (2 * ROWS * V + 2 * ROWS * C + 2 * V * C));
  const double tri = (double)B * NH * T * (T + 1) / 2; /* causal (t, t2) pairs */
  report("attention", "causal, B*NH=16", time_call(attn_fwd, &b, reps), 4 * HS * tri,
         f * (ROWS * 3 * C + (double)B * NH * T * T + ROWS * C));
  report("  backward", "O(T^2 hs)", time_call(attn_bwd, &b, reps), 8 * HS * tri,
         f * (2 * ROWS * 3 * C + (double)B * NH * T * T + ROWS * C));
  const double n_ln = ROWS * C, n_fc = ROWS * 4 * C;
  report("layernorm (8 flop/el)", "256x256", time_call(ln_fwd, &b, reps), 8 * n_ln, f * 2 * n_ln);
  report("  backward (14 flop/el)", "dinp, dw, db", time_call(ln_bwd, &b, reps), 14 * n_ln,
         f * 4 * n_ln);
  report("rmsnorm (5 flop/el)", "256x256", time_call(rms_fwd, &b, reps), 5 * n_ln, f * 2 * n_ln);
  report("  backward (8 flop/el)", "dinp, dw", time_call(rms_bwd, &b, reps), 8 * n_ln,
         f * 4 * n_ln);
  report("rope q, k (6 flop/el)", "fwd + inverse", time_call(rope_qk, &b, reps), 2 * 6 * 2 * n_ln,
         f * 2 * 2 * 2 * n_ln);
  report("swiglu (20 flop/el)", "256x1024", time_call(swiglu_fwd, &b, reps), 20 * n_fc,
         f * 3 * n_fc);
  report("  backward (28 flop/el)", "256x1024", time_call(swiglu_bwd, &b, reps), 28 * n_fc,
         f * 5 * n_fc);
  report("gelu (20 flop/el)", "256x1024", time_call(gelu_fwd, &b, reps), 20 * n_fc, f * 2 * n_fc);
  report("  backward (28 flop/el)", "256x1024", time_call(gelu_bwd, &b, reps), 28 * n_fc,
         f * 3 * n_fc);
  report("residual add (1 flop/el)", "256x256", time_call(residual, &b, reps), n_ln, f * 3 * n_ln);
  report("embedding", "tokens + positions", time_call(embed_fwd, &b, reps), n_ln, f * 3 * n_ln);
  report("  backward", "dwte, dwpe", time_call(embed_bwd, &b, reps), 2 * n_ln, f * 5 * n_ln);
  report("cross-entropy (20 fl/el)", "256x256, loss+grad", time_call(ce, &b, reps), 20.0 * ROWS * V,
         f * 3 * ROWS * V);
  report("adamw (18 flop/el)", "1M params", time_call(adamw, &b, reps), 18.0 * NPARAM,
         f * 7 * NPARAM);
  report("sumsq (2 flop/el)", "1M", time_call(sumsq, &b, reps), 2.0 * NPARAM, f * NPARAM);
  const double block_flops =
      3 * 2 * ROWS * (double)(C * 3 * C + C * C + 2 * C * 4 * C) + 12 * HS * tri;
  report("one block fwd+bwd", "18 kernel calls", time_call(block, &b, reps), block_flops, 0.0);
  fusions(&b);
  byte_passes(&b);
  be.shutdown(&be);
  return 0;
}
