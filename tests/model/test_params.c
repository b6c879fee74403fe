/*
** tests/model/test_params.c — parameters, initialisation and the optimizer
** schedule.
**
** GPT-2's names and shapes; its initialisation statistics; the init being
** layout-independent (any split or flat shard holds exactly the elements of
** the whole tensor it covers); the learning-rate schedule's shape; gradient
** clipping; weight decay only on 2-D weights.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "harness.h"
#include "optim/optim.h"

enum { L = 3, C = 48, T = 16, V = 64 };

static void test_gpt2_names_and_shapes(void) {
  tsl_params ps;
  REQUIRE(fixture_gpt2_params(&ps, L, C, T, V, 4, 4) == 0);
  CHECK_EQ_INT(ps.n, 4 + 12 * L);
  int i = tsl_params_find(&ps, "h.2.attn.c_attn.weight");
  REQUIRE(i >= 0);
  CHECK_EQ_INT(ps.p[i].info.shape[0], C);
  CHECK_EQ_INT(ps.p[i].info.shape[1], 3 * C);
  CHECK_EQ_INT(ps.p[i].info.segments, 3);
  CHECK_EQ_INT(ps.p[i].info.role, TESSEL_ROLE_LINEAR_IN);
  CHECK_EQ_INT(ps.p[i].info.segment_dims[1], TESSEL_DIM_KV_HEADS);
  CHECK_EQ_INT(ps.p[i].info.first_unit, 3);
  CHECK_EQ_INT(ps.p[i].info.last_unit, 3);
  /* the tied table: used by the embedding and by the head */
  const tessel_param_info *wte = &ps.p[tsl_params_find(&ps, "wte.weight")].info;
  CHECK(wte->flags & TESSEL_PARAM_TIED);
  CHECK_EQ_INT(wte->first_unit, 0);
  CHECK_EQ_INT(wte->last_unit, L + 1);
  CHECK_EQ_INT(ps.p[tsl_params_find(&ps, "h.1.attn.c_proj.bias")].info.role, TESSEL_ROLE_BIAS_OUT);
  i = tsl_params_find(&ps, "h.0.mlp.c_proj.weight");
  REQUIRE(i >= 0);
  CHECK_EQ_INT(ps.p[i].info.shape[0], 4 * C);
  CHECK_EQ_INT(ps.p[i].info.shape[1], C);
  CHECK_EQ_INT(ps.p[tsl_params_find(&ps, "wte.weight")].info.shape[0], V);
  CHECK_EQ_INT(ps.p[tsl_params_find(&ps, "wpe.weight")].info.shape[0], T);
  CHECK(tsl_params_find(&ps, "ln_f.bias") == ps.n - 1);
  /* Ψ = V·C + T·C + L·(12C² + 13C) + 2C */
  CHECK_EQ_INT(ps.total_numel, (uint64_t)V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C);
  /* decay only for 2-D weights */
  for (int k = 0; k < ps.n; k++)
    CHECK_EQ_INT(!!(ps.p[k].info.flags & TESSEL_PARAM_NO_DECAY), ps.p[k].info.ndim == 1);
  tsl_params_free(&ps);
}

/* Mean and standard deviation of a parameter's initial values. */
static void stats(const tsl_param *p, double *mean, double *sd) {
  uint64_t n = (uint64_t)p->info.shape[0] * (uint64_t)p->info.shape[1];
  float *v = malloc(n * sizeof(float));
  tsl_param_init_values(p, 1337, 0, n, v);
  double s = 0, s2 = 0;
  for (uint64_t k = 0; k < n; k++) s += v[k], s2 += (double)v[k] * v[k];
  *mean = s / n;
  *sd = sqrt(s2 / n - *mean * *mean);
  free(v);
}

/* GPT-2 124M as transformers counts it (GPT2LMHeadModel's num_parameters():
** 124,439,808, the tied head counted once); the 47 rows its vocabulary of
** 50,257 is padded to inside tessel are not parameters of the model. The
** start-up line once said 124.48M. */
static void test_gpt2_124m_parameter_count(void) {
  tsl_params ps;
  REQUIRE(fixture_gpt2_params(&ps, 12, 768, 1024, 50257, 12, 12) == 0);
  CHECK_EQ_INT(ps.real_numel, 124439808);
  CHECK_EQ_INT(ps.total_numel, 124439808 + (50304 - 50257) * 768);
  tsl_params_free(&ps);
}

static void test_gpt2_initialisation(void) {
  tsl_params ps;
  double mean, sd;
  REQUIRE(fixture_gpt2_params(&ps, L, C, T, V, 4, 4) == 0);
  /* N(0, 0.02) over 3072+ samples: the sample sd is within a few % of 0.02 */
  stats(&ps.p[tsl_params_find(&ps, "wte.weight")], &mean, &sd);
  CHECK_CLOSE(sd, 0.02, 0, 0.05);
  CHECK(fabs(mean) < 0.002);
  stats(&ps.p[tsl_params_find(&ps, "h.1.attn.c_attn.weight")], &mean, &sd);
  CHECK_CLOSE(sd, 0.02, 0, 0.05);
  /* residual projections: 0.02 / sqrt(2L) */
  stats(&ps.p[tsl_params_find(&ps, "h.1.mlp.c_proj.weight")], &mean, &sd);
  CHECK_CLOSE(sd, 0.02 / sqrt(2.0 * L), 0, 0.05);
  stats(&ps.p[tsl_params_find(&ps, "h.0.attn.c_proj.weight")], &mean, &sd);
  CHECK_CLOSE(sd, 0.02 / sqrt(2.0 * L), 0, 0.05);
  /* constants: biases 0, layer-norm weights 1 */
  stats(&ps.p[tsl_params_find(&ps, "h.2.ln_2.weight")], &mean, &sd);
  CHECK(mean == 1.0 && sd == 0.0);
  stats(&ps.p[tsl_params_find(&ps, "h.2.mlp.c_fc.bias")], &mean, &sd);
  CHECK(mean == 0.0 && sd == 0.0);
  /* a different seed gives different weights */
  const tsl_param *w = &ps.p[0];
  float a[8], b[8];
  tsl_param_init_values(w, 1, 0, 8, a);
  tsl_param_init_values(w, 2, 0, 8, b);
  CHECK(memcmp(a, b, sizeof a) != 0);
  tsl_params_free(&ps);
}

/* Every shard under a layout initialises to exactly the whole tensor's
** elements it covers, whatever the cut. */
static void check_shard(const tsl_param *whole, tessel_layout l, const float *full) {
  tsl_param part = *whole;
  part.layout = l;
  part.local_shape[0] = whole->info.shape[0];
  part.local_shape[1] = whole->info.shape[1];
  if (l.kind == TESSEL_LAYOUT_FLAT) {
    part.local_shape[0] = 1;
    part.local_shape[1] = (int64_t)(l.flat_end - l.flat_begin);
  }
  for (int i = 0; l.kind == TESSEL_LAYOUT_SPLIT && i < l.nsplit; i++) part.local_shape[l.split[i].dim] /= l.split[i].parts;
  part.local_numel = (uint64_t)part.local_shape[0] * (uint64_t)part.local_shape[1];
  float *local = malloc(part.local_numel * sizeof(float)), *cut = malloc(part.local_numel * sizeof(float));
  tsl_param_init_local(&part, 1337, local);
  tsl_param_extract(&part, full, cut);
  CHECK(memcmp(local, cut, part.local_numel * sizeof(float)) == 0);
  free(local);
  free(cut);
}

static void test_init_is_layout_independent(void) {
  tsl_params ps;
  REQUIRE(fixture_gpt2_params(&ps, L, C, T, V, 4, 4) == 0);
  const tsl_param *qkv = &ps.p[tsl_params_find(&ps, "h.0.attn.c_attn.weight")];
  uint64_t n = (uint64_t)C * 3 * C;
  float *full = malloc(n * sizeof(float));
  tsl_param_init_values(qkv, 1337, 0, n, full);
  /* columns in 4 parts, each part whole heads of q, k and v */
  for (int k = 0; k < 4; k++)
    check_shard(qkv, (tessel_layout){.kind = TESSEL_LAYOUT_SPLIT, .nsplit = 1, .split = {{1, 4, k}}}, full);
  /* a 2-D grid of 2 × 3 blocks */
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 3; c++)
      check_shard(qkv, (tessel_layout){.kind = TESSEL_LAYOUT_SPLIT, .nsplit = 2, .split = {{0, 2, r}, {1, 3, c}}}, full);
  check_shard(qkv, (tessel_layout){.kind = TESSEL_LAYOUT_FLAT, .flat_begin = 1000, .flat_end = 2345}, full);
  /* the whole-head property itself: piece 1 of 4 holds q columns C/4..C/2 */
  tsl_param part = *qkv;
  part.layout = (tessel_layout){.kind = TESSEL_LAYOUT_SPLIT, .nsplit = 1, .split = {{1, 4, 1}}};
  part.local_shape[1] = 3 * C / 4;
  CHECK_EQ_INT(tsl_param_global_index(&part, 0), C / 4);
  CHECK_EQ_INT(tsl_param_global_index(&part, C / 4), C + C / 4);         /* k block */
  CHECK_EQ_INT(tsl_param_global_index(&part, 2 * C / 4), 2 * C + C / 4); /* v block */
  free(full);
  tsl_params_free(&ps);
}

/* Grouped-query attention fuses runs of unequal width: 4 query heads and
** 2 key/value heads of 12 give q|k|v runs of 48, 24 and 24 columns. A
** 2-way column split keeps whole heads of each run. */
static void test_unequal_runs_split_by_heads(void) {
  tsl_params ps;
  REQUIRE(fixture_gpt2_params(&ps, L, C, T, V, 4, 2) == 0);
  const tsl_param *qkv = &ps.p[tsl_params_find(&ps, "h.0.attn.c_attn.weight")];
  CHECK_EQ_INT(qkv->info.shape[1], C + 2 * (C / 2));
  uint64_t n = (uint64_t)qkv->info.shape[0] * (uint64_t)qkv->info.shape[1];
  float *full = malloc(n * sizeof(float));
  tsl_param_init_values(qkv, 1337, 0, n, full);
  for (int k = 0; k < 2; k++)
    check_shard(qkv, (tessel_layout){.kind = TESSEL_LAYOUT_SPLIT, .nsplit = 1, .split = {{1, 2, k}}}, full);
  tsl_param part = *qkv;
  part.layout = (tessel_layout){.kind = TESSEL_LAYOUT_SPLIT, .nsplit = 1, .split = {{1, 2, 1}}};
  part.local_shape[1] = qkv->info.shape[1] / 2;
  /* local columns: q 24 (global 24..47), k 12 (global 48+12..), v 12 (global 72+12..) */
  CHECK_EQ_INT(tsl_param_global_index(&part, 0), C / 2);
  CHECK_EQ_INT(tsl_param_global_index(&part, C / 2), C + C / 4);
  CHECK_EQ_INT(tsl_param_global_index(&part, C / 2 + C / 4), C + C / 2 + C / 4);
  free(full);
  tsl_params_free(&ps);
}

/* The schedule llm.c's train_gpt2.c computes (its step is ours − 1):
** warm-up lr·(step+1)/w, then min + ½(1 + cos π·(step − w)/(N − w))·(lr − min). */
static double llmc_lr(int64_t step, int64_t warm, int64_t total, double lr, double min_lr) {
  int64_t it = step - 1;
  if (it < warm) return lr * (double)(it + 1) / (double)warm;
  return min_lr + 0.5 * (1.0 + cos(M_PI * (double)(it - warm) / (double)(total - warm))) * (lr - min_lr);
}

static void test_learning_rate_schedule(void) {
  tsl_settings s = {0};
  s.train.steps = 1000;
  s.optim.lr = 1e-3;
  s.optim.min_lr = 1e-4;
  s.optim.warmup_steps = 100;
  s.optim.decay = TSL_DECAY_COSINE;
  CHECK_CLOSE(tsl_lr_at(&s, 1), 1e-5, 1e-15, 0);   /* linear warm-up from 0 */
  CHECK_CLOSE(tsl_lr_at(&s, 50), 5e-4, 1e-15, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 100), 1e-3, 1e-15, 0); /* peak at the end of warm-up */
  CHECK_CLOSE(tsl_lr_at(&s, 101), 1e-3, 1e-15, 0); /* and at the decay's first step */
  CHECK_CLOSE(tsl_lr_at(&s, 551), 5.5e-4, 1e-12, 0); /* cosine midpoint: (lr + min_lr) / 2 */
  for (int64_t k = 1; k <= 1000; k++) CHECK_CLOSE(tsl_lr_at(&s, k), llmc_lr(k, 100, 1000, 1e-3, 1e-4), 1e-15, 0);
  CHECK(tsl_lr_at(&s, 1000) > 1e-4); /* min_lr comes after the last step */
  for (int64_t k = 101; k < 1000; k++) CHECK(tsl_lr_at(&s, k + 1) <= tsl_lr_at(&s, k)); /* monotone decay */
  s.optim.decay = TSL_DECAY_LINEAR;
  CHECK_CLOSE(tsl_lr_at(&s, 551), 5.5e-4, 1e-12, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 326), 7.75e-4, 1e-12, 0);
  s.optim.decay = TSL_DECAY_CONSTANT;
  CHECK_CLOSE(tsl_lr_at(&s, 900), 1e-3, 1e-15, 0);
  /* WSD: lr until the last 180 steps (a fifth of the 900 after warm-up),
  ** then linear towards min_lr at step 1001 */
  s.optim.decay = TSL_DECAY_WSD;
  CHECK_CLOSE(tsl_lr_at(&s, 50), 5e-4, 1e-15, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 820), 1e-3, 1e-15, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 821), 1e-3, 1e-15, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 911), 5.5e-4, 1e-12, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 1000), 1e-4 + 0.9e-3 / 180, 1e-12, 0);
  s.optim.decay_steps = 10;
  CHECK_CLOSE(tsl_lr_at(&s, 990), 1e-3, 1e-15, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 996), 5.5e-4, 1e-12, 0);
  /* the 1 − √p cool-down: a quarter of the way down at p = 1/16, half at 1/4 */
  s.optim.decay_sqrt = 1;
  s.optim.decay_steps = 16;
  CHECK_CLOSE(tsl_lr_at(&s, 984), 1e-3, 1e-15, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 986), 1e-3 - 0.25 * 0.9e-3, 1e-12, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 989), 5.5e-4, 1e-12, 0);
  for (int64_t k = 985; k < 1000; k++) CHECK(tsl_lr_at(&s, k + 1) < tsl_lr_at(&s, k));
  s.optim.decay_sqrt = 0;
  /* a cool-down as long as the run after warm-up is the linear decay */
  s.optim.decay_steps = 5000;
  for (int64_t k = 1; k <= 1000; k++) {
    s.optim.decay = TSL_DECAY_LINEAR;
    double linear = tsl_lr_at(&s, k);
    s.optim.decay = TSL_DECAY_WSD;
    CHECK(tsl_lr_at(&s, k) == linear);
  }
  s.optim.decay_steps = 0;
  /* the default cool-down of the longest run train.steps allows: a fifth
  ** of INT64_MAX rounded up, computed without overflow (UBSan found
  ** (steps + 4) / 5 past int64) */
  s.optim.warmup_steps = 0;
  s.train.steps = INT64_MAX;
  const int64_t cool = INT64_MAX / 5 + 1, flat = INT64_MAX - cool;
  CHECK_CLOSE(tsl_lr_at(&s, flat), 1e-3, 1e-15, 0);
  CHECK_CLOSE(tsl_lr_at(&s, flat + 1), 1e-3, 1e-15, 0);
  CHECK_CLOSE(tsl_lr_at(&s, flat + cool / 2 + 1), 5.5e-4, 1e-12, 0);
  CHECK_CLOSE(tsl_lr_at(&s, INT64_MAX), 1e-4, 1e-12, 0);
  s.train.steps = 1000;
  s.optim.warmup_steps = 100;
  /* no warm-up: the first step at the peak (it once started decayed, and
  ** train.steps: 1 trained at min_lr) */
  s.optim.warmup_steps = 0;
  s.optim.decay = TSL_DECAY_COSINE;
  CHECK_CLOSE(tsl_lr_at(&s, 1), 1e-3, 1e-15, 0);
  CHECK_CLOSE(tsl_lr_at(&s, 2), llmc_lr(2, 0, 1000, 1e-3, 1e-4), 1e-15, 0);
  s.train.steps = 1;
  CHECK_CLOSE(tsl_lr_at(&s, 1), 1e-3, 1e-15, 0);
}

static void test_gradient_clipping(void) {
  CHECK(tsl_clip_scale(0.5, 1.0) == 1.0f);   /* within the limit: untouched */
  CHECK(tsl_clip_scale(1.0, 1.0) == 1.0f);
  CHECK_CLOSE(tsl_clip_scale(4.0, 1.0), 0.25, 1e-7, 0);
  CHECK(tsl_clip_scale(1e9, 0.0) == 1.0f);    /* clip 0 = off */
  CHECK(tsl_clip_scale(NAN, 1.0) == 1.0f);    /* NaN norms are the trainer's to stop on */
}

/* One AdamW step from zero gradients but non-zero weights: only decayed
** parameters move, by lr·wd·w. */
static void test_weight_decay_only_on_matrices(void) {
  tsl_runtime rt;
  tsl_model *m;
  REQUIRE(fixture_runtime(&rt, 1, 2, 8, 4, 16) == 0);
  rt.settings.optim.beta1 = 0.9, rt.settings.optim.beta2 = 0.95, rt.settings.optim.eps = 1e-8;
  rt.settings.optim.weight_decay = 0.5;
  tessel_model_dims d = fixture_dims(&rt, 1, 1);
  REQUIRE(tsl_model_create(&rt, &d, &(uint64_t){3}, &m) == TESSEL_OK);
  const tsl_params *ps = tsl_model_params(m);
  const tsl_state *s = tsl_model_state(m);
  float *before = malloc(s->numel * sizeof(float));
  memcpy(before, s->master, s->numel * sizeof(float));
  REQUIRE(tsl_optimizer_step(m, 1, 0.1, 1.0f) == TESSEL_OK);
  for (int i = 0; i < ps->n; i++) {
    const tsl_param *p = &ps->p[i];
    for (uint64_t k = 0; k < p->local_numel; k++) {
      float w0 = before[p->offset + k], w1 = p->master[k];
      if (p->info.ndim == 1) CHECK(w1 == w0);
      else CHECK_CLOSE(w1, w0 * (1.0f - 0.1f * 0.5f), 1e-9, 1e-6);
    }
  }
  free(before);
  fixture_release(&rt);
}

int main(void) {
  RUN(test_gpt2_names_and_shapes);
  RUN(test_gpt2_124m_parameter_count);
  RUN(test_gpt2_initialisation);
  RUN(test_init_is_layout_independent);
  RUN(test_unequal_runs_split_by_heads);
  RUN(test_learning_rate_schedule);
  RUN(test_gradient_clipping);
  RUN(test_weight_decay_only_on_matrices);
  return HARNESS_EXIT();
}
