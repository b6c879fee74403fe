/*
** tests/model/test_gradcheck.c — the whole model's gradients.
**
** The core's analytic gradients (fp32 forward and backward through every
** layer) are compared with central finite differences of an independent,
** naive double-precision GPT-2 forward written here, on a tiny model, for
** every element of every parameter. Also: the fp32 loss matches the double
** one, and splitting a batch into micro-batches accumulates the same
** gradient.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "harness.h"

enum { L = 2, H = 2, C = 8, T = 5, V = 11, B = 2 };

static int32_t tokens[B * T + 1];

static tsl_status fixed_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets) {
  int per = *(const int *)ctx; /* sequences per micro-batch */
  for (int i = 0; i < per * T; i++) {
    int b = micro * per + i / T, t = i % T;
    inputs[i] = tokens[b * T + t];
    targets[i] = tokens[b * T + t + 1];
  }
  return TESSEL_OK;
}

/* ---- the double-precision reference ---- */

typedef struct ref {
  double *p[4 + 12 * L]; /* in registration order (params.c) */
} ref;

static void layernorm(const double *x, const double *w, const double *b, double *out) {
  double mean = 0, var = 0;
  for (int c = 0; c < C; c++) mean += x[c];
  mean /= C;
  for (int c = 0; c < C; c++) var += (x[c] - mean) * (x[c] - mean);
  double rstd = 1.0 / sqrt(var / C + 1e-5);
  for (int c = 0; c < C; c++) out[c] = (x[c] - mean) * rstd * w[c] + b[c];
}

/* out[n] = in[k] · W[k, n] + bias[n] */
static void linear(const double *in, const double *W, const double *bias, int k, int n, double *out) {
  for (int j = 0; j < n; j++) {
    double s = bias[j];
    for (int i = 0; i < k; i++) s += in[i] * W[i * n + j];
    out[j] = s;
  }
}

static double gelu(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

/* Mean cross-entropy of the whole batch. */
static double ref_loss(const ref *r) {
  static double x[T][C], ln[T][C], qkv[T][3 * C], att[T][C], tmp[T][4 * C], h[T][4 * C];
  double total = 0;
  int hs = C / H;
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++)
      for (int c = 0; c < C; c++) x[t][c] = r->p[0][tokens[b * T + t] * C + c] + r->p[1][t * C + c];
    for (int l = 0; l < L; l++) {
      double *const *w = &r->p[2 + 12 * l];
      for (int t = 0; t < T; t++) {
        layernorm(x[t], w[0], w[1], ln[t]);
        linear(ln[t], w[2], w[3], C, 3 * C, qkv[t]);
      }
      for (int hd = 0; hd < H; hd++)
        for (int t = 0; t < T; t++) {
          double s[T], mx = -1e300, z = 0;
          for (int u = 0; u <= t; u++) {
            s[u] = 0;
            for (int i = 0; i < hs; i++) s[u] += qkv[t][hd * hs + i] * qkv[u][C + hd * hs + i];
            s[u] /= sqrt((double)hs);
            mx = fmax(mx, s[u]);
          }
          for (int u = 0; u <= t; u++) z += exp(s[u] - mx);
          for (int i = 0; i < hs; i++) {
            double o = 0;
            for (int u = 0; u <= t; u++) o += exp(s[u] - mx) / z * qkv[u][2 * C + hd * hs + i];
            att[t][hd * hs + i] = o;
          }
        }
      for (int t = 0; t < T; t++) {
        linear(att[t], w[4], w[5], C, C, tmp[t]);
        for (int c = 0; c < C; c++) x[t][c] += tmp[t][c];
        layernorm(x[t], w[6], w[7], ln[t]);
        linear(ln[t], w[8], w[9], C, 4 * C, h[t]);
        for (int j = 0; j < 4 * C; j++) h[t][j] = gelu(h[t][j]);
        linear(h[t], w[10], w[11], 4 * C, C, tmp[t]);
        for (int c = 0; c < C; c++) x[t][c] += tmp[t][c];
      }
    }
    for (int t = 0; t < T; t++) {
      layernorm(x[t], r->p[2 + 12 * L], r->p[3 + 12 * L], ln[t]);
      double logits[V], mx = -1e300, z = 0;
      for (int v = 0; v < V; v++) {
        logits[v] = 0;
        for (int c = 0; c < C; c++) logits[v] += ln[t][c] * r->p[0][v * C + c];
        mx = fmax(mx, logits[v]);
      }
      for (int v = 0; v < V; v++) z += exp(logits[v] - mx);
      total += log(z) + mx - logits[tokens[b * T + t + 1]];
    }
  }
  return total / (B * T);
}

/* GPT-2's 0.02-scale init keeps a tiny model almost linear, where wrong
** nonlinearities would go unnoticed: use O(1) parameters instead, so every
** layer (softmax, GELU, layer norm) works in its curved range. */
static void randomize(tsl_model *m) {
  uint64_t state = 42;
  tsl_params *ps = tsl_model_params(m);
  for (int i = 0; i < ps->n; i++) {
    tsl_param *p = &ps->p[i];
    int is_ln_weight = p->init == TSL_INIT_ONE;
    for (uint64_t k = 0; k < p->local_numel; k++) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      double u = (double)(state >> 11) / 9007199254740992.0 - 0.5; /* [-0.5, 0.5) */
      p->master[k] = (float)(is_ln_weight ? 1.0 + u : 1.2 * u);
    }
  }
}

/* Build the model, run one forward+backward with `per` sequences per
** micro-batch, and copy its parameters into r (doubles). */
static tsl_model *trained_model(tsl_runtime *rt, int per, ref *r, float *loss) {
  tsl_model *m;
  static int per_ctx;
  per_ctx = per;
  tessel_model_dims d = fixture_dims(rt, per, B / per);
  if (tsl_model_create(rt, &d, 99, &m) < 0) return NULL;
  randomize(m);
  tsl_model_set_batch(m, fixed_batch, &per_ctx);
  if (tsl_model_train_step(m) < 0) return NULL;
  double sum, count;
  tsl_model_loss_sum(m, d.micro_steps, &sum, &count);
  *loss = (float)(sum / count);
  const tsl_params *ps = tsl_model_params(m);
  for (int i = 0; r && i < ps->n; i++) {
    const tsl_param *p = &ps->p[i];
    r->p[i] = malloc(sizeof(double) * p->local_numel);
    for (uint64_t k = 0; k < p->local_numel; k++) r->p[i][k] = p->master[k];
  }
  return m;
}

static void test_gradients_match_finite_differences(void) {
  tsl_runtime rt;
  ref r;
  float loss;
  REQUIRE(fixture_runtime(&rt, L, H, C, T, V) == 0);
  for (int i = 0; i < B * T + 1; i++) tokens[i] = (i * 7 + 3) % V;
  tsl_model *m = trained_model(&rt, B, &r, &loss);
  REQUIRE(m != NULL);
  const tsl_params *ps = tsl_model_params(m);
  REQUIRE(ps->n == 4 + 12 * L);
  /* fp32 vs fp64 forward of a tiny model: a few ulps of ~2.4 */
  CHECK_CLOSE(loss, ref_loss(&r), 1e-5, 1e-5);
  const double h = 1e-5;
  int checked = 0, bad = 0;
  for (int i = 0; i < ps->n; i++) {
    const tsl_param *p = &ps->p[i];
    for (uint64_t k = 0; k < p->local_numel; k++) {
      double keep = r.p[i][k];
      r.p[i][k] = keep + h;
      double up = ref_loss(&r);
      r.p[i][k] = keep - h;
      double down = ref_loss(&r);
      r.p[i][k] = keep;
      double fd = (up - down) / (2 * h), an = p->grad[k];
      /* central differences in fp64 are exact to ~1e-9 here; the analytic
      ** gradient is fp32 through ~10 layers of sums of a few dozen terms,
      ** so 1e-5 absolute plus 1e-3 relative separates rounding from a wrong
      ** gradient, which is off by its whole size */
      if (!(fabs(an - fd) <= 1e-5 + 1e-3 * fabs(fd))) {
        if (bad++ < 10) fprintf(stderr, "  %s[%llu]: analytic %.8g, numeric %.8g\n", p->name, (unsigned long long)k, an, fd);
      }
      checked++;
    }
  }
  CHECK_EQ_INT(bad, 0);
  CHECK(checked > 1500);
  for (int i = 0; i < ps->n; i++) free(r.p[i]);
  fixture_release(&rt);
}

static void test_micro_batches_accumulate_the_same_gradient(void) {
  tsl_runtime rt1, rt2;
  float loss1, loss2;
  REQUIRE(fixture_runtime(&rt1, L, H, C, T, V) == 0);
  REQUIRE(fixture_runtime(&rt2, L, H, C, T, V) == 0);
  tsl_model *whole = trained_model(&rt1, B, NULL, &loss1);
  tsl_model *split = trained_model(&rt2, 1, NULL, &loss2);
  REQUIRE(whole && split);
  /* same tokens, same mean: only fp32 summation order differs */
  CHECK_CLOSE(loss1, loss2, 1e-6, 1e-6);
  double worst = 0;
  const tsl_state *sw = tsl_model_state(whole), *ss = tsl_model_state(split);
  for (uint64_t k = 0; k < sw->numel; k++) {
    double a = sw->grad[k], b = ss->grad[k];
    worst = fmax(worst, fabs(a - b) / (1e-3 + fabs(a)));
  }
  /* two micro-batches summed vs one batch: fp32 reassociation only, 1e-4
  ** relative. The floor, 1e-7 absolute, is for gradients that are zero in
  ** exact arithmetic (the key bias: softmax ignores a shift shared by a
  ** row's scores), which are rounding noise of sums of O(0.1) terms, a few
  ** u times the terms' magnitude either way */
  CHECK(worst < 1e-4);
  fixture_release(&rt1);
  fixture_release(&rt2);
}

int main(void) {
  RUN(test_gradients_match_finite_differences);
  RUN(test_micro_batches_accumulate_the_same_gradient);
  return HARNESS_EXIT();
}
