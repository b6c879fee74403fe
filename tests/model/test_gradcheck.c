/*
** tests/model/test_gradcheck.c — the whole model's gradients.
**
** The core's analytic gradients (fp32 forward and backward through every
** layer) are compared with central finite differences of an independent,
** naive double-precision forward written here, on a tiny model, for every
** element of every parameter: GPT-2, and a Llama with grouped-query
** attention. Also: the fp32 loss matches the double one, and splitting a
** batch into micro-batches accumulates the same gradient.
**
** The Llama reference pins the conventions a Llama implementation can get
** wrong while still training: rotary positions rotate (x_i, x_{i+hs/2}) by
** pos·θ^(-2i/hs) (Hugging Face's rotate-half, not the interleaved
** (x_2i, x_2i+1) pairs of the paper and of Meta's reference code), and query head h
** reads key/value head h / (heads / kv_heads). With head size 4 the two
** rotary conventions pair different dimensions, and with 4 query heads on
** 2 kv heads a wrong mapping reads other keys and values. In this
** nonlinear regime either mistake moves the loss itself (measured with each
** bug put into the CPU kernels on purpose: 2.844 becomes 3.188 with
** interleaved pairs, 3.705 with query heads 0, 1 reading kv head 1) and
** fails the check of ~4250 of the ~6000 gradient elements.
**
** The same Llama with Qwen3's norms over each head of q and k (qk_norm)
** pins where they act: on each head of 4 alone, after the projections and
** before rotary.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "harness.h"

enum { L = 2, H = 2, C = 8, T = 5, V = 11, B = 2 };
/* The Llama: 4 query heads on 2 key/value heads of 4 dimensions, a SwiGLU
** MLP of 24, rotary base 100 so that both frequencies of a head turn by
** O(1) over the 5 positions (θ^(-2i/hs) = 1 and 0.1). */
enum { LC = 16, LH = 4, LKV = 2, LHS = LC / LH, LF = 24 };
#define THETA 100.0

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
  double *p[4 + 12 * L]; /* in registration order (params.c); the Llama's 3 + (9 or 11)·L fit */
} ref;

/* The Llama reference has q_norm and k_norm (parameters 9 and 10 of a block). */
static int qk_norm;

static void layernorm(const double *x, const double *w, const double *b, double *out) {
  double mean = 0, var = 0;
  for (int c = 0; c < C; c++) mean += x[c];
  mean /= C;
  for (int c = 0; c < C; c++) var += (x[c] - mean) * (x[c] - mean);
  double rstd = 1.0 / sqrt(var / C + 1e-5);
  for (int c = 0; c < C; c++) out[c] = (x[c] - mean) * rstd * w[c] + b[c];
}

/* out[n] = in[k] · W[k, n] + bias[n] (bias NULL: none) */
static void linear(const double *in, const double *W, const double *bias, int k, int n, double *out) {
  for (int j = 0; j < n; j++) {
    double s = bias ? bias[j] : 0.0;
    for (int i = 0; i < k; i++) s += in[i] * W[i * n + j];
    out[j] = s;
  }
}

static double gelu(double x) { return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

/* Mean cross-entropy of the whole batch: GPT-2. */
static double gpt2_loss(const ref *r) {
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

/* ---- the Llama reference ---- */

static void rmsnorm(const double *x, const double *w, double *out) {
  double ss = 0;
  for (int c = 0; c < LC; c++) ss += x[c] * x[c];
  double r = 1.0 / sqrt(ss / LC + 1e-5);
  for (int c = 0; c < LC; c++) out[c] = x[c] * r * w[c];
}

/* One head's vector at position pos, rotate-half: dimension i < hs/2 turns
** with dimension i + hs/2 by pos·θ^(-2i/hs). */
static void rotate(double *x, int pos) {
  for (int i = 0; i < LHS / 2; i++) {
    double a = pos * pow(THETA, -2.0 * i / LHS), x0 = x[i], x1 = x[i + LHS / 2];
    x[i] = x0 * cos(a) - x1 * sin(a);
    x[i + LHS / 2] = x1 * cos(a) + x0 * sin(a);
  }
}

/* One head's RMS norm (q_norm, k_norm: one weight per element of a head). */
static void head_rmsnorm(double *x, const double *w) {
  double ss = 0;
  for (int i = 0; i < LHS; i++) ss += x[i] * x[i];
  double r = 1.0 / sqrt(ss / LHS + 1e-5);
  for (int i = 0; i < LHS; i++) x[i] = x[i] * r * w[i];
}

static double silu(double x) { return x / (1.0 + exp(-x)); }

/* Causal attention of one sequence; query head h reads kv head h / group. */
static void gqa(double q[T][LC], double k[T][LKV * LHS], double v[T][LKV * LHS], double out[T][LC]) {
  for (int h = 0; h < LH; h++)
    for (int t = 0; t < T; t++) {
      int kv = h / (LH / LKV);
      double s[T], mx = -1e300, z = 0;
      for (int u = 0; u <= t; u++) {
        s[u] = 0;
        for (int i = 0; i < LHS; i++) s[u] += q[t][h * LHS + i] * k[u][kv * LHS + i];
        s[u] /= sqrt((double)LHS);
        mx = fmax(mx, s[u]);
      }
      for (int u = 0; u <= t; u++) z += exp(s[u] - mx);
      for (int i = 0; i < LHS; i++) {
        double o = 0;
        for (int u = 0; u <= t; u++) o += exp(s[u] - mx) / z * v[u][kv * LHS + i];
        out[t][h * LHS + i] = o;
      }
    }
}

/* Mean cross-entropy of the whole batch: Llama (parameters: embed_tokens,
** per block input_layernorm, q, k, v, o, post_attention_layernorm, gate, up,
** down, all [in, out], and under qk_norm q_norm and k_norm; then model.norm
** and lm_head [V, C]). */
static double llama_loss(const ref *r) {
  static double x[T][LC], n[T][LC], q[T][LC], k[T][LKV * LHS], v[T][LKV * LHS], att[T][LC], tmp[T][LC];
  static double gate[T][LF], up[T][LF];
  double total = 0;
  const int per_block = qk_norm ? 11 : 9;
  for (int b = 0; b < B; b++) {
    for (int t = 0; t < T; t++)
      for (int c = 0; c < LC; c++) x[t][c] = r->p[0][tokens[b * T + t] * LC + c];
    for (int l = 0; l < L; l++) {
      double *const *w = &r->p[1 + per_block * l];
      for (int t = 0; t < T; t++) {
        rmsnorm(x[t], w[0], n[t]);
        linear(n[t], w[1], NULL, LC, LC, q[t]);
        linear(n[t], w[2], NULL, LC, LKV * LHS, k[t]);
        linear(n[t], w[3], NULL, LC, LKV * LHS, v[t]);
        for (int h = 0; qk_norm && h < LH; h++) head_rmsnorm(&q[t][h * LHS], w[9]);
        for (int h = 0; qk_norm && h < LKV; h++) head_rmsnorm(&k[t][h * LHS], w[10]);
        for (int h = 0; h < LH; h++) rotate(&q[t][h * LHS], t);
        for (int h = 0; h < LKV; h++) rotate(&k[t][h * LHS], t);
      }
      gqa(q, k, v, att);
      for (int t = 0; t < T; t++) {
        linear(att[t], w[4], NULL, LC, LC, tmp[t]);
        for (int c = 0; c < LC; c++) x[t][c] += tmp[t][c];
        rmsnorm(x[t], w[5], n[t]);
        linear(n[t], w[6], NULL, LC, LF, gate[t]);
        linear(n[t], w[7], NULL, LC, LF, up[t]);
        for (int j = 0; j < LF; j++) gate[t][j] = silu(gate[t][j]) * up[t][j];
        linear(gate[t], w[8], NULL, LF, LC, tmp[t]);
        for (int c = 0; c < LC; c++) x[t][c] += tmp[t][c];
      }
    }
    for (int t = 0; t < T; t++) {
      rmsnorm(x[t], r->p[1 + per_block * L], n[t]);
      double logits[V], mx = -1e300, z = 0;
      for (int u = 0; u < V; u++) {
        logits[u] = 0;
        for (int c = 0; c < LC; c++) logits[u] += n[t][c] * r->p[2 + per_block * L][u * LC + c];
        mx = fmax(mx, logits[u]);
      }
      for (int u = 0; u < V; u++) z += exp(logits[u] - mx);
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
  if (tsl_model_create(rt, &d, &(uint64_t){99}, &m) < 0) return NULL;
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

/* Every element of every parameter: the analytic gradient of the model in
** rt against central differences of `loss`, the same model in doubles. */
static void check_gradients(tsl_runtime *rt, double (*loss_of)(const ref *), int n_params, int min_checked) {
  ref r;
  float loss;
  for (int i = 0; i < B * T + 1; i++) tokens[i] = (i * 7 + 3) % V;
  tsl_model *m = trained_model(rt, B, &r, &loss);
  REQUIRE(m != NULL);
  const tsl_params *ps = tsl_model_params(m);
  REQUIRE(ps->n == n_params);
  /* fp32 vs fp64 forward of a tiny model: a few ulps of ~2.4 */
  CHECK_CLOSE(loss, loss_of(&r), 1e-5, 1e-5);
  const double h = 1e-5;
  int checked = 0, bad = 0;
  for (int i = 0; i < ps->n; i++) {
    const tsl_param *p = &ps->p[i];
    for (uint64_t k = 0; k < p->local_numel; k++) {
      double keep = r.p[i][k];
      r.p[i][k] = keep + h;
      double up = loss_of(&r);
      r.p[i][k] = keep - h;
      double down = loss_of(&r);
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
  CHECK(checked > min_checked);
  for (int i = 0; i < ps->n; i++) free(r.p[i]);
}

static void test_gradients_match_finite_differences(void) {
  tsl_runtime rt;
  REQUIRE(fixture_runtime(&rt, L, H, C, T, V) == 0);
  check_gradients(&rt, gpt2_loss, 4 + 12 * L, 1500);
  fixture_release(&rt);
}

static void test_llama_gradients_match_finite_differences(void) {
  tsl_runtime rt;
  REQUIRE(fixture_llama_runtime(&rt, L, LH, LKV, LC, LF, T, V, THETA) == 0);
  check_gradients(&rt, llama_loss, 3 + 9 * L, 5000);
  fixture_release(&rt);
}

static void test_qk_norm_gradients_match_finite_differences(void) {
  tsl_runtime rt;
  tsl_settings s = fixture_settings(TSL_ARCH_LLAMA, L, LH, LKV, LC, LF, T, V, THETA);
  s.model.qk_norm = 1;
  REQUIRE(tsl_runtime_local(&rt, &s, 2) >= 0);
  qk_norm = 1;
  check_gradients(&rt, llama_loss, 3 + 11 * L, 5000);
  qk_norm = 0;
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
  RUN(test_llama_gradients_match_finite_differences);
  RUN(test_qk_norm_gradients_match_finite_differences);
  RUN(test_micro_batches_accumulate_the_same_gradient);
  return HARNESS_EXIT();
}
