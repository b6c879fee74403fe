/*
** tests/recompute/test_recompute.c — activation recomputation and offload.
**
** 1. The plans (core/model/recompute.c) of GPT-2's and Llama's blocks: which
**    buffers selective and full recompute keep and which ops they rerun,
**    written out here from the architectures' descriptions.
** 2. One training step (two micro-batches, so kept buffers are reused) of a
**    tiny GPT-2 and a tiny Llama with O(1) parameters under every
**    placement — everything kept, selective, full, the first 2 blocks full,
**    the kept part on the host with and without selective recompute, and
**    with the first 2 blocks in full —
**    gives the same loss and the same gradient, bit for bit, as keeping
**    everything: recomputation reruns the same kernels on the same inputs
**    and offload copies bytes, so no tolerance is due. A second step and an
**    evaluation after it agree too.
** 3. The activation memory the ledger counts shrinks as it should: device
**    bytes of activations strictly fall from none to selective to full,
**    offload moves bytes to the host tier and off the device, and full
**    recompute of some blocks with offload takes no more of the device than
**    either alone; and it is what tsl_model_act_bytes, which planners
**    ask, says it will be.
*/
#include <string.h>

#include "harness.h"
#include "model/fixture.h"
#include "mem/ledger.h"
#include "model/internal.h"

enum { L = 4, H = 4, C = 16, T = 8, V = 11, MICRO = 2 };

static int32_t tokens[MICRO * T + 1];

static tsl_status fixed_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets) {
  (void)ctx;
  for (int t = 0; t < T; t++) {
    inputs[t] = tokens[micro * T + t];
    targets[t] = tokens[micro * T + t + 1];
  }
  return TESSEL_OK;
}

typedef struct variant {
  const char *name;
  int recompute, layers, offload;
} variant;

static const variant variants[] = {
    {"none", TESSEL_RECOMPUTE_NONE, 0, 0},          {"selective", TESSEL_RECOMPUTE_SELECTIVE, 0, 0},
    {"full", TESSEL_RECOMPUTE_FULL, 0, 0},          {"first 2 blocks full", TESSEL_RECOMPUTE_FULL, 2, 0},
    {"offload", TESSEL_RECOMPUTE_NONE, 0, 1},       {"selective offload", TESSEL_RECOMPUTE_SELECTIVE, 0, 1},
    {"first 2 full offload", TESSEL_RECOMPUTE_FULL, 2, 1},
};
enum { NV = sizeof variants / sizeof variants[0] };

/* the Llama with Qwen3's per-head q/k norms */
static int qk_norm;

static int make_runtime(tsl_runtime *rt, tsl_arch_kind arch, const variant *v) {
  tsl_settings s = {0};
  s.model.arch = arch;
  s.model.layers = L;
  s.model.heads = H;
  s.model.kv_heads = arch == TSL_ARCH_LLAMA ? 2 : H;
  s.model.channels = C;
  s.model.ffn = arch == TSL_ARCH_LLAMA ? 24 : 4 * C;
  s.model.seq_len = T;
  s.model.positions = T;
  s.model.vocab_size = V;
  s.model.norm_eps = 1e-5;
  s.model.rope_theta = 10000.0;
  s.model.tie_embeddings = arch == TSL_ARCH_GPT2;
  s.model.qk_norm = qk_norm;
  s.train.seed = 1234;
  s.train.recompute = v->recompute;
  s.train.recompute_layers = v->layers;
  s.train.offload_activations = v->offload;
  return tsl_runtime_local(rt, &s, 2) < 0 ? -1 : 0;
}

typedef struct result {
  double loss[2], eval;
  float *grad;
  uint64_t numel, act_device, act_host;
} result;

static void train(tsl_arch_kind arch, const variant *v, result *out) {
  tsl_runtime rt;
  tsl_model *m;
  double sum, count;
  REQUIRE(make_runtime(&rt, arch, v) == 0);
  tessel_model_dims d;
  tsl_model_dims_single(&rt, &d);
  d.micro_steps = MICRO;
  REQUIRE(tsl_model_create(&rt, &d, &(uint64_t){99}, &m) >= 0);
  fixture_randomize(m, 42);
  tsl_model_set_batch(m, fixed_batch, NULL);
  out->act_device = rt.ledger.tier[TESSEL_TIER_DEVICE].by_kind[TESSEL_MEM_ACT];
  out->act_host = rt.ledger.tier[TESSEL_TIER_HOST].by_kind[TESSEL_MEM_ACT];
  /* the sizes a planner asks for are the bytes the model then takes */
  uint64_t sized_device, sized_host;
  REQUIRE(tsl_model_act_bytes(m, &m->geo, &sized_device, &sized_host) >= 0);
  CHECK_EQ_INT(sized_device, out->act_device);
  CHECK_EQ_INT(sized_host, out->act_host);
  const tsl_state *st = tsl_model_state(m);
  out->numel = st->numel;
  out->grad = malloc(st->numel * sizeof(float));
  REQUIRE(out->grad);
  for (int step = 0; step < 2; step++) {
    REQUIRE(tsl_model_train_step(m) >= 0);
    REQUIRE(tsl_model_loss_sum(m, MICRO, &sum, &count) >= 0);
    out->loss[step] = sum / count;
    if (step == 0) memcpy(out->grad, st->grad, st->numel * sizeof(float));
  }
  REQUIRE(tsl_model_eval_step(m, MICRO) >= 0);
  REQUIRE(tsl_model_loss_sum(m, MICRO, &sum, &count) >= 0);
  out->eval = sum / count;
  tsl_runtime_destroy(&rt);
}

static void check_variants(tsl_arch_kind arch) {
  result r[NV];
  for (int i = 0; i < (int)NV; i++) train(arch, &variants[i], &r[i]);
  for (int i = 1; i < (int)NV; i++) {
    const char *n = variants[i].name;
    if (memcmp(r[i].loss, r[0].loss, sizeof r[0].loss) || r[i].eval != r[0].eval)
      fprintf(stderr, "  %s: losses %.17g %.17g eval %.17g, none %.17g %.17g eval %.17g\n", n, r[i].loss[0],
              r[i].loss[1], r[i].eval, r[0].loss[0], r[0].loss[1], r[0].eval);
    CHECK(memcmp(r[i].loss, r[0].loss, sizeof r[0].loss) == 0 && r[i].eval == r[0].eval);
    REQUIRE(r[i].numel == r[0].numel);
    uint64_t differ = 0;
    for (uint64_t k = 0; k < r[0].numel; k++) differ += memcmp(&r[i].grad[k], &r[0].grad[k], sizeof(float)) != 0;
    if (differ) fprintf(stderr, "  %s: %llu of %llu gradient elements differ\n", n, (unsigned long long)differ,
                        (unsigned long long)r[0].numel);
    CHECK(differ == 0);
  }
  /* the activation arena shrinks: none > selective > full on the device;
  ** recomputing the first 2 of 4 blocks saves one block (the workspace
  ** holds the other's while it runs); offload moves kept parts to the host
  ** (the device keeps two staging buffers of one block's part, less than
  ** four blocks' parts) */
  CHECK(r[1].act_device < r[0].act_device);
  CHECK(r[2].act_device < r[1].act_device);
  CHECK(r[3].act_device < r[0].act_device && r[3].act_device > r[2].act_device);
  CHECK(r[0].act_host == 0 && r[4].act_host > 0 && r[5].act_host > 0 && r[5].act_host < r[4].act_host);
  CHECK(r[4].act_device < r[0].act_device);
  CHECK(r[5].act_device < r[1].act_device);
  /* recomputing blocks that are offloaded anyway costs no device memory:
  ** a block recomputed in full runs its transient part where a staging
  ** buffer would be, so the two savings together are never worse than
  ** the better alone */
  CHECK(r[6].act_device <= r[4].act_device && r[6].act_device <= r[3].act_device);
  CHECK(r[6].act_host > 0 && r[6].act_host < r[4].act_host);
  for (int i = 0; i < (int)NV; i++) {
    fprintf(stderr, "  %-18s device %6llu B, host %6llu B of activations\n", variants[i].name,
            (unsigned long long)r[i].act_device, (unsigned long long)r[i].act_host);
    free(r[i].grad);
  }
}

static void test_gpt2_placements_are_bit_identical(void) { check_variants(TSL_ARCH_GPT2); }
static void test_llama_placements_are_bit_identical(void) { check_variants(TSL_ARCH_LLAMA); }
static void test_qk_norm_placements_are_bit_identical(void) {
  qk_norm = 1;
  check_variants(TSL_ARCH_LLAMA);
  qk_norm = 0;
}

/* The plan of a block, as lists of buffer names and op indices. */
static void plan_of(tsl_arch_kind arch, int recompute, const tsl_unit_decl **d, tsl_unit_plan *p) {
  static tsl_arch a;
  tsl_settings s = {0};
  s.model.arch = arch;
  s.model.tie_embeddings = arch == TSL_ARCH_GPT2;
  s.model.qk_norm = qk_norm;
  if (arch == TSL_ARCH_GPT2) tsl_arch_gpt2(&s, &a);
  else tsl_arch_llama(&s, &a);
  *d = &a.block;
  tessel_placement pl = {.size = sizeof pl, .tier = TESSEL_TIER_DEVICE, .recompute = recompute};
  REQUIRE(tsl_unit_plan_for(*d, &pl, p) >= 0);
}

/* The plan of arch's block under `recompute`: its kept buffers' names,
** its rerun ops' indices and how many statistics it keeps. */
static void expect_plan(tsl_arch_kind arch, int recompute, const char *kept, const char *rerun, int stats) {
  const tsl_unit_decl *d;
  tsl_unit_plan p;
  char k[512] = "", r[128] = "";
  int n = 0;
  plan_of(arch, recompute, &d, &p);
  for (int a = 0; a < d->n_acts; a++)
    if (p.keep[a]) snprintf(k + strlen(k), sizeof k - strlen(k), "%s%s", k[0] ? "," : "", d->acts[a].name);
  for (int i = 0; i < d->n_ops; i++) {
    if (p.rerun[i]) snprintf(r + strlen(r), sizeof r - strlen(r), "%s%d", r[0] ? "," : "", i);
    n += p.keep_saved[i];
  }
  if (strcmp(k, kept) || strcmp(r, rerun) || n != stats)
    fprintf(stderr, "  %s %s: kept {%s} rerun {%s} %d statistics; expected {%s} {%s} %d\n",
            arch == TSL_ARCH_GPT2 ? "gpt2" : "llama", tsl_recompute_name(recompute), k, r, n, kept, rerun, stats);
  CHECK(strcmp(k, kept) == 0 && strcmp(r, rerun) == 0 && n == stats);
}

/* GPT-2's block ops: 0 ln_1, 1 c_attn, 2 attention, 3 c_proj, 4 residual,
** 5 ln_2, 6 c_fc, 7 gelu, 8 mlp c_proj, 9 residual */
static void test_gpt2_plans(void) {
  expect_plan(TSL_ARCH_GPT2, TESSEL_RECOMPUTE_NONE,
              "ln_1,qkv,attention,attention projection,residual,ln_2,fc,gelu,mlp projection", "", 3);
  expect_plan(TSL_ARCH_GPT2, TESSEL_RECOMPUTE_SELECTIVE, "qkv,attention projection,fc", "0,2,4,5,7", 0);
  expect_plan(TSL_ARCH_GPT2, TESSEL_RECOMPUTE_FULL, "", "0,1,2,3,4,5,6,7", 0);
}

/* Llama's: 0 norm, 1-3 q/k/v, 4 rotary, 5 attention, 6 o_proj, 7 residual,
** 8 norm, 9 gate, 10 up, 11 swiglu, 12 down, 13 residual. Rotary turns q
** and k in place: selective keeps them turned and does not rerun it. */
static void test_llama_plans(void) {
  expect_plan(TSL_ARCH_LLAMA, TESSEL_RECOMPUTE_SELECTIVE, "q,k,v,o_proj,gate,up", "0,5,7,8,11", 0);
  expect_plan(TSL_ARCH_LLAMA, TESSEL_RECOMPUTE_FULL, "", "0,1,2,3,4,5,6,7,8,9,10,11", 0);
}

/* With qk_norm: 0 norm, 1-3 q_proj/k_proj/v, 4-5 q_norm/k_norm, 6 rotary,
** 7 attention, 8 o_proj, 9 residual, 10 norm, 11 gate, 12 up, 13 swiglu,
** 14 down, 15 residual. q and k are now a norm's output, turned in place:
** selective keeps the projections' outputs and reruns both norms and
** rotary. */
static void test_qk_norm_plans(void) {
  qk_norm = 1;
  expect_plan(TSL_ARCH_LLAMA, TESSEL_RECOMPUTE_SELECTIVE, "v,o_proj,gate,up,q_proj,k_proj", "0,4,5,6,7,9,10,13", 0);
  expect_plan(TSL_ARCH_LLAMA, TESSEL_RECOMPUTE_FULL, "", "0,1,2,3,4,5,6,7,8,9,10,11,12,13", 0);
  qk_norm = 0;
}

int main(void) {
  for (int i = 0; i < MICRO * T + 1; i++) tokens[i] = (i * 7 + 3) % V;
  RUN(test_gpt2_plans);
  RUN(test_llama_plans);
  RUN(test_qk_norm_plans);
  RUN(test_gpt2_placements_are_bit_identical);
  RUN(test_llama_placements_are_bit_identical);
  RUN(test_qk_norm_placements_are_bit_identical);
  return HARNESS_EXIT();
}
