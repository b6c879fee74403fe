/*
** tests/model/test_head.c — the core's head, which runs block by block of
** rows and never holds every row's logits.
**
** A Llama with an untied head over a 65 536-token vocabulary: one row of
** logits is 256 KiB, so a block is 256 rows and the 512 rows of a batch of
** 8 × 64 take two blocks. After one training step the head's results are
** compared with a double-precision computation from the head's own input X
** (the final norm's output, kept) and weight W:
**   per-token losses  = logsumexp(X Wᵀ) − (X Wᵀ)[target]
**   input gradient    = dlogits · W        dlogits = (softmax − onehot)/rows
**   weight gradient   = dlogitsᵀ · X       (lm_head's alone: untied)
** and, after an evaluation, the logits sampling reads are X Wᵀ.
** Tolerances: a logit sums C = 8 products, within 8u·Σ|x·w| of the exact
** value (u = 2^-24), and the loss adds the log-sum-exp's few ulps: 4e-6
** absolute for O(1) logits. A gradient element sums (dlogits·w) over V or
** (dlogits·x) over the rows, fp32 products of fp32-rounded dlogits: within
** (K + 8)·u·Σ|terms| for K terms, checked as (K + 16)·u·Σ|terms|.
*/
#include <string.h>

#include "harness.h"
#include "model/fixture.h"
#include "model/internal.h"

enum { L = 1, H = 2, C = 8, T = 64, V = 65536, B = 8 };
#define U_ROUND (1.0 / 16777216.0)

static tsl_status batch(void *ctx, int micro, int32_t *inputs, int32_t *targets) {
  (void)ctx, (void)micro;
  for (int i = 0; i < B * T; i++) {
    inputs[i] = (int32_t)((i * 7919u + 13u) % V);
    targets[i] = (int32_t)((i * 104729u + 7u) % V);
  }
  return TESSEL_OK;
}

static void test_blocked_head_matches_double(void) {
  tsl_settings s = {0};
  s.model = (tsl_model_settings){.arch = TSL_ARCH_LLAMA, .layers = L, .heads = H, .kv_heads = 1, .channels = C,
                                 .ffn = 16, .seq_len = T, .positions = T, .vocab_size = V, .rope_theta = 10000.0, .norm_eps = 1e-5};
  s.train.seed = 5;
  tsl_runtime rt;
  tsl_model *m;
  REQUIRE(tsl_runtime_local(&rt, &s, 2) >= 0);
  tessel_model_dims d;
  tsl_model_dims_single(&rt, &d);
  d.micro_batch = B;
  REQUIRE(tsl_model_create(&rt, &d, &(uint64_t){1}, &m) >= 0);
  fixture_randomize(m, 7);
  tsl_model_set_batch(m, batch, NULL);
  const int64_t R = (int64_t)B * T;
  CHECK(tsl_op_head_block_rows(m) < R); /* the point of the test: more than one block */
  REQUIRE(tsl_model_train_step(m) >= 0);

  const tsl_unit *head = &m->units[m->dims.units - 1];
  int k = 0;
  while (head->ops[k].kind != TESSEL_OP_HEAD) k++;
  int64_t ld;
  const float *X = tsl_act_ptr(m, 0, m->dims.units - 1, head->decl->ops[k].in[0], &ld);
  const float *dX = m->grads[2].buf[head->decl->ops[k].in[0]];
  const tsl_param *w = &tsl_model_params(m)->p[head->ops[k].weight];
  REQUIRE(strcmp(w->name, "lm_head.weight") == 0);
  const float *wd = w->data;
  int32_t *in = malloc(sizeof(int32_t) * R), *tg = malloc(sizeof(int32_t) * R);
  double *logit = malloc(sizeof(double) * V), *dW = calloc((size_t)V * C, sizeof(double));
  double *dWmag = calloc((size_t)V * C, sizeof(double));
  REQUIRE(in && tg && logit && dW && dWmag);
  batch(NULL, 0, in, tg);
  int bad_loss = 0, bad_dx = 0, bad_dw = 0;
  for (int64_t r = 0; r < R; r++) {
    const float *x = X + r * C;
    double mx = -1e300, z = 0;
    for (int64_t v = 0; v < V; v++) {
      double l = 0;
      for (int c = 0; c < C; c++) l += (double)x[c] * wd[v * C + c];
      logit[v] = l;
      mx = l > mx ? l : mx;
    }
    for (int64_t v = 0; v < V; v++) z += exp(logit[v] - mx);
    double loss = log(z) + mx - logit[tg[r]];
    if (!(fabs(m->losses[r] - loss) <= 4e-6) && bad_loss++ < 5)
      fprintf(stderr, "  row %lld: loss %.9g, double %.9g\n", (long long)r, m->losses[r], loss);
    double dx[C] = {0}, dxmag[C] = {0};
    for (int64_t v = 0; v < V; v++) {
      double g = (exp(logit[v] - mx) / z - (v == tg[r])) / (double)R;
      for (int c = 0; c < C; c++) {
        dx[c] += g * wd[v * C + c];
        dxmag[c] += fabs(g * wd[v * C + c]);
        dW[v * C + c] += g * x[c];
        dWmag[v * C + c] += fabs(g * x[c]);
      }
    }
    for (int c = 0; c < C; c++)
      if (!(fabs(dX[r * C + c] - dx[c]) <= (V + 16) * U_ROUND * dxmag[c] + 1e-30) && bad_dx++ < 5)
        fprintf(stderr, "  dX[%lld, %d]: %.9g, double %.9g\n", (long long)r, c, dX[r * C + c], dx[c]);
  }
  for (int64_t i = 0; i < (int64_t)V * C; i++)
    if (!(fabs(w->grad[i] - dW[i]) <= (R + 16) * U_ROUND * dWmag[i] + 1e-30) && bad_dw++ < 5)
      fprintf(stderr, "  dW[%lld]: %.9g, double %.9g\n", (long long)i, w->grad[i], dW[i]);
  CHECK_EQ_INT(bad_loss, 0);
  CHECK_EQ_INT(bad_dx, 0);
  CHECK_EQ_INT(bad_dw, 0);

  /* sampling reads every row's logits, made again from the head's input */
  REQUIRE(tsl_model_eval_step(m, 1) >= 0);
  const void *lg;
  int64_t rows, vocab;
  REQUIRE(tsl_model_logits(m, &lg, &rows, &vocab) >= 0);
  CHECK(rows == R && vocab == V);
  int bad_logit = 0;
  for (int64_t r = R - 3; r < R; r++)
    for (int64_t v = 0; v < V; v++) {
      double l = 0, mag = 0;
      for (int c = 0; c < C; c++) {
        l += (double)X[r * C + c] * wd[v * C + c];
        mag += fabs((double)X[r * C + c] * wd[v * C + c]);
      }
      bad_logit += !(fabs(((const float *)lg)[r * V + v] - l) <= 8 * U_ROUND * mag + 1e-30);
    }
  CHECK_EQ_INT(bad_logit, 0);
  free(in), free(tg), free(logit), free(dW), free(dWmag);
  tsl_runtime_destroy(&rt);
}

int main(void) {
  RUN(test_blocked_head_matches_double);
  return HARNESS_EXIT();
}
