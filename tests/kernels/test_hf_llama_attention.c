/*
** tests/kernels/test_hf_llama_attention.c — one Llama self-attention
** sub-block of a Hugging Face model, rebuilt from backend kernels alone,
** against the output transformers computed.
**
** Fixture: tests/fixtures/llama_tiny (a LlamaForCausalLM saved by
** save_pretrained: hidden 64, 4 heads, 2 kv heads, head size 16) and
** tests/fixtures/llama_tiny_io.safetensors, whose attn_input and
** attn_output are layer 0's input_layernorm output and o_proj output for
** input_ids [2, 16]. Both come from transformers 4.44 on PyTorch, fp32, by
** tests/fixtures/make_hf_fixtures.py; its header says how to regenerate.
**
** The sub-block: q = x·W_qᵀ, k = x·W_kᵀ, v = x·W_vᵀ (nn.Linear keeps
** weights [out, in], so gemm with B transposed), rotary on q and k at
** positions 0..15 with the config's rope_theta, causal attention with
** query head h reading kv head h / 2, then out = a·W_oᵀ. This pins the
** rotary convention (rotate-half, HF's frequencies) and the GQA head
** mapping at the kernel level: either wrong changes the output by O(1),
** which the last check shows by leaving the rotary out.
**
** Tolerance: 1e-5 relative, as for the whole-model fixture. Both sides are
** fp32 with different summation orders: a few u (6e-8) times the
** magnitudes of sums of 64 terms, so ~1e-6 of the output's scale. Checked
** normwise, ‖got − ref‖₂ <= 1e-5·‖ref‖₂, and elementwise against the
** output's root mean square, |got − ref| <= 1e-5·(|ref| + rms(ref)).
**
** The frequencies of Llama 3's scaled rotary positions are checked bit for
** bit against those transformers computed (tests/fixtures/
** llama3_rope_io.safetensors, by the same script).
*/
#include <cjson/cJSON.h>

#include "ckpt/safetensors.h"
#include "common/util.h"
#include "kernel_test.h"

#define FIXTURES "tests/fixtures/"
enum { B = 2, T = 16, C = 64, H = 4, KV = 2, HS = 16 };

/* A copy of the named fp32 tensor, which must have `numel` elements. */
static float *tensor(tsl_st_file *f, const char *name, int64_t numel) {
  const int i = tsl_st_find(f, name);
  REQUIRE(i >= 0);
  const tsl_st_desc *d = tsl_st_desc_at(f, i);
  uint64_t bytes = 0;
  const void *p = tsl_st_data(f, i, &bytes);
  REQUIRE(d->dtype == TESSEL_F32 && bytes == (uint64_t)numel * sizeof(float));
  float *x = kt_floats(numel);
  memcpy(x, p, bytes); /* an unpadded header leaves the data unaligned */
  return x;
}

/* The number under `key` of fixture `model`'s config.json (`object`: a
** key holding an object, whose member `key` is read; NULL: the top level). */
static double model_config_number(const char *model, const char *object, const char *key) {
  char path[256], *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, FIXTURES "%s/config.json", model);
  REQUIRE(tsl_read_file(path, &text, &len) == 0);
  cJSON *root = cJSON_Parse(text);
  free(text);
  REQUIRE(root != NULL);
  const cJSON *in = object ? cJSON_GetObjectItemCaseSensitive(root, object) : root;
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(in, key);
  REQUIRE(cJSON_IsNumber(v));
  double out = v->valuedouble;
  cJSON_Delete(root);
  return out;
}

static double config_number(const char *key) { return model_config_number("llama_tiny", NULL, key); }

/* The sub-block's output [B·T, C] from x [B·T, C]; rotary applied or not. */
static float *attention_block(tsl_st_file *w, const float *x, int rotary) {
  tsl_backend *be = kt_backend();
  const tsl_rope_freqs freqs = {.theta = (float)config_number("rope_theta")};
  float *wq = tensor(w, "model.layers.0.self_attn.q_proj.weight", H * HS * C);
  float *wk = tensor(w, "model.layers.0.self_attn.k_proj.weight", KV * HS * C);
  float *wv = tensor(w, "model.layers.0.self_attn.v_proj.weight", KV * HS * C);
  float *wo = tensor(w, "model.layers.0.self_attn.o_proj.weight", C * H * HS);
  float *q = kt_floats(B * T * H * HS), *k = kt_floats(B * T * KV * HS), *v = kt_floats(B * T * KV * HS);
  float *a = kt_floats(B * T * H * HS), *lse = kt_floats(B * H * T), *out = kt_floats(B * T * C);
  CHECK_EQ_INT(be->gemm(be, NULL, 0, 1, B * T, H * HS, C, 1.0f, x, C, wq, C, 0.0f, q, H * HS, TESSEL_F32), 0);
  CHECK_EQ_INT(be->gemm(be, NULL, 0, 1, B * T, KV * HS, C, 1.0f, x, C, wk, C, 0.0f, k, KV * HS, TESSEL_F32), 0);
  CHECK_EQ_INT(be->gemm(be, NULL, 0, 1, B * T, KV * HS, C, 1.0f, x, C, wv, C, 0.0f, v, KV * HS, TESSEL_F32), 0);
  if (rotary) {
    CHECK_EQ_INT(be->rope(be, NULL, q, B, T, H, HS, H * HS, 0, freqs, 0), 0);
    CHECK_EQ_INT(be->rope(be, NULL, k, B, T, KV, HS, KV * HS, 0, freqs, 0), 0);
  }
  const tsl_attn_shape sh = {B, T, H, KV, HS, H * HS, KV * HS, KV * HS, 0, 0, 0};
  CHECK_EQ_INT(be->attention_forward(be, NULL, a, lse, q, k, v, &sh), 0);
  CHECK_EQ_INT(be->gemm(be, NULL, 0, 1, B * T, C, H * HS, 1.0f, a, H * HS, wo, H * HS, 0.0f, out, C, TESSEL_F32), 0);
  free(wq), free(wk), free(wv), free(wo), free(q), free(k), free(v), free(a), free(lse);
  return out;
}

/* ‖got − ref‖₂ / ‖ref‖₂, and the worst |got − ref| / (|ref| + rms(ref)) */
static void errors(const float *got, const float *ref, int64_t n, double *norm_rel, double *worst) {
  double e2 = 0.0, r2 = 0.0;
  for (int64_t i = 0; i < n; i++) {
    const double e = (double)got[i] - ref[i];
    e2 += e * e, r2 += (double)ref[i] * ref[i];
  }
  const double rms = sqrt(r2 / (double)n);
  *worst = 0.0;
  for (int64_t i = 0; i < n; i++) *worst = fmax(*worst, fabs((double)got[i] - ref[i]) / (fabs(ref[i]) + rms));
  *norm_rel = sqrt(e2 / r2);
}

static void test_attention_sub_block(void) {
  tsl_st_file *w = NULL, *io = NULL;
  REQUIRE(tsl_st_open(FIXTURES "llama_tiny/model.safetensors", &w) == 0);
  REQUIRE(tsl_st_open(FIXTURES "llama_tiny_io.safetensors", &io) == 0);
  CHECK_EQ_INT(config_number("num_attention_heads"), H);
  CHECK_EQ_INT(config_number("num_key_value_heads"), KV);
  CHECK_EQ_INT(config_number("hidden_size"), C);
  float *x = tensor(io, "attn_input", B * T * C), *want = tensor(io, "attn_output", B * T * C);
  float *got = attention_block(w, x, 1);
  double norm_rel, worst;
  errors(got, want, B * T * C, &norm_rel, &worst);
  fprintf(stderr, "  normwise relative error %.3g, worst elementwise %.3g\n", norm_rel, worst);
  CHECK_CLOSE(norm_rel, 0.0, 1e-5, 0.0);
  CHECK_CLOSE(worst, 0.0, 1e-5, 0.0);
  /* the fixture is sensitive to the rotary: without it the error is O(1) */
  float *plain = attention_block(w, x, 0);
  errors(plain, want, B * T * C, &norm_rel, &worst);
  CHECK(norm_rel > 1e-2);
  free(x), free(want), free(got), free(plain);
  tsl_st_close(w), tsl_st_close(io);
}

/* The frequencies f gives a head of hs elements in a sequence of `length`
** positions against transformers' `want`, bit for bit, or within `ulps`
** units in the last place; returns how many of want differ from plain
** theta's. */
static int check_frequencies_at(tsl_rope_freqs f, int64_t hs, int64_t length, const float *want, int ulps) {
  float got[256], plain[256];
  REQUIRE(hs / 2 <= 256);
  CHECK(tsl_rope_freqs_valid(f, hs));
  tsl_rope_inv_freqs(f, hs, length, got);
  tsl_rope_inv_freqs((tsl_rope_freqs){.theta = f.theta}, hs, length, plain);
  int differ = 0, scaled = 0;
  for (int64_t i = 0; i < hs / 2; i++) {
    int32_t a, b;
    memcpy(&a, &got[i], sizeof a), memcpy(&b, &want[i], sizeof b);
    differ += abs(a - b) > ulps; /* positive floats order as their bits */
    scaled += plain[i] != want[i];
    if (a != b) fprintf(stderr, "  inv_freq[%lld]: %.9g, transformers %.9g\n", (long long)i, got[i], want[i]);
  }
  CHECK_EQ_INT(differ, 0);
  return scaled;
}

static int check_frequencies(tsl_rope_freqs f, int64_t hs, const float *want) {
  return check_frequencies_at(f, hs, 1, want, 0);
}

/* The kernel turns by the frequencies want: pair i at position POS of a
** (1, 0) pair becomes attention·(cos, sin) of the fp32 angle POS·want_i,
** within tol (libm's cos and sin, and the scale's rounding). */
static void check_turns(tsl_rope_freqs f, const float *want, double attention, double tol) {
  enum { POS = 40 };
  float x[(POS + 1) * HS] = {0};
  for (int t = 0; t <= POS; t++)
    for (int i = 0; i < HS / 2; i++) x[t * HS + i] = 1.0f;
  tsl_backend *be = kt_backend();
  CHECK_EQ_INT(be->rope(be, NULL, x, 1, POS + 1, 1, HS, HS, 0, f, 0), 0);
  for (int i = 0; i < HS / 2; i++) {
    const double a = (float)POS * want[i];
    CHECK_CLOSE(x[POS * HS + i], attention * cos(a), tol, tol);
    CHECK_CLOSE(x[POS * HS + HS / 2 + i], attention * sin(a), tol, tol);
  }
}

/* Llama 3's scaled frequencies are transformers' own, bit for bit
** (rope_freq.c repeats its fp32 operations in order, without fused
** multiply-adds): the fixture llama3_rope's (rope_scaling "llama3" with
** factor 8, low 1, high 4, original context 32, whose 8 frequencies of a
** 16-wide head fall in all three bands), and Llama 3.2 1B's 32. The
** kernel turns by them: pair i at position p of a (1, 0) pair becomes
** (cos, sin) of the fp32 angle p·inv_freq_i, within 2u (libm's cos/sin). */
static void test_llama3_frequencies(void) {
  tsl_st_file *io = NULL;
  REQUIRE(tsl_st_open(FIXTURES "llama3_rope_io.safetensors", &io) == 0);
  float *want = tensor(io, "inv_freq", HS / 2), *want32 = tensor(io, "inv_freq_llama32", 32);
  const char *m = "llama3_rope", *s = "rope_scaling";
  const tsl_rope_freqs f = {.theta = (float)model_config_number(m, NULL, "rope_theta"),
                            .factor = model_config_number(m, s, "factor"),
                            .low_freq_factor = model_config_number(m, s, "low_freq_factor"),
                            .high_freq_factor = model_config_number(m, s, "high_freq_factor"),
                            .original_positions = model_config_number(m, s, "original_max_position_embeddings")};
  CHECK(check_frequencies(f, HS, want) >= HS / 2 - 1); /* all scaled but the highest */
  const tsl_rope_freqs llama32 = {.theta = 500000.0f, .factor = 32, .low_freq_factor = 1, .high_freq_factor = 4,
                                  .original_positions = 8192};
  CHECK(check_frequencies(llama32, 64, want32) > 16);
  check_turns(f, want, 1.0, 2 * KT_U);
  free(want), free(want32);
  tsl_st_close(io);
}

/* One double of the io file (the attention factors). */
static double scalar(tsl_st_file *f, const char *name) {
  const int i = tsl_st_find(f, name);
  REQUIRE(i >= 0 && tsl_st_desc_at(f, i)->dtype == TESSEL_F64);
  uint64_t bytes = 0;
  double v;
  memcpy(&v, tsl_st_data(f, i, &bytes), sizeof v);
  return v;
}

/* YaRN's frequencies are transformers' own, bit for bit: the fixture
** llama_yarn's (factor 4 over an original context of 16, a ramp over its
** pairs 0 to 3) and a Qwen-like model's under Qwen's long-context setting
** (head size 128, theta 1e6, factor 4 over 32768). Its attention factor,
** derived as transformers derives it, is transformers' double exactly (one
** Qwen frequency within an ulp, where the plain one is already), and
** the kernel scales cos and sin by it in fp32: pair i at position p of a
** (1, 0) pair becomes attention·(cos, sin) of p·inv_freq_i, within 3u. */
static void test_yarn_frequencies(void) {
  tsl_st_file *io = NULL;
  REQUIRE(tsl_st_open(FIXTURES "llama_yarn_io.safetensors", &io) == 0);
  float *want = tensor(io, "inv_freq", HS / 2), *want_qwen = tensor(io, "inv_freq_qwen_yarn", 64);
  const char *m = "llama_yarn", *s = "rope_scaling";
  const double factor = model_config_number(m, s, "factor");
  const tsl_rope_freqs f = {.theta = (float)model_config_number(m, NULL, "rope_theta"), .factor = factor,
                            .original_positions = model_config_number(m, s, "original_max_position_embeddings"),
                            .kind = TSL_ROPE_YARN, .beta_fast = model_config_number(m, s, "beta_fast"),
                            .beta_slow = model_config_number(m, s, "beta_slow"),
                            .attention_factor = 0.1 * log(factor) + 1.0};
  CHECK(check_frequencies(f, HS, want) >= HS / 2 - 1); /* all but the highest moved */
  CHECK(f.attention_factor == scalar(io, "attention_factor"));
  const tsl_rope_freqs qwen = {.theta = 1e6f, .factor = 4, .original_positions = 32768, .kind = TSL_ROPE_YARN, .beta_fast = 32,
                               .beta_slow = 1, .attention_factor = 0.1 * log(4.0) + 1.0};
  /* one ulp: pair 37's plain frequency (head size 128, theta 1e6) is the
  ** one powf gives one ulp from PyTorch's pow (kernels/rope_freq.h) */
  CHECK(check_frequencies_at(qwen, 128, 1, want_qwen, 1) > 32);
  CHECK(qwen.attention_factor == scalar(io, "attention_factor_qwen_yarn"));
  check_turns(f, want, (float)f.attention_factor, 3 * KT_U);
  free(want), free(want_qwen);
  tsl_st_close(io);
}

/* Linear scaling's frequencies are transformers' own, bit for bit: the
** fixture llama_linear's, each plain frequency divided by 3 in fp32 (times
** the fp32 reciprocal of 3 moves some by an ulp, which this would see),
** and the kernel turns by them, within 2u. */
static void test_linear_frequencies(void) {
  tsl_st_file *io = NULL;
  REQUIRE(tsl_st_open(FIXTURES "llama_linear_io.safetensors", &io) == 0);
  float *want = tensor(io, "inv_freq", HS / 2);
  const char *m = "llama_linear";
  const tsl_rope_freqs f = {.theta = (float)model_config_number(m, NULL, "rope_theta"),
                            .factor = model_config_number(m, "rope_scaling", "factor"), .kind = TSL_ROPE_LINEAR};
  CHECK(f.factor == 3);
  CHECK_EQ_INT(check_frequencies(f, HS, want), HS / 2); /* every one scaled */
  check_turns(f, want, 1.0, 2 * KT_U);
  free(want);
  tsl_st_close(io);
}

/* LongRoPE's frequencies are transformers' own, bit for bit, from the
** fixture phi3_longrope (its original context 16): the short factors for
** sequences of up to 16 positions, the long ones beyond; the attention
** factor, √(1 + ln 4 / ln 16) as transformers derives it from 64 / 16
** positions, transformers' double exactly; the kernel turns a sequence of
** 41 by the long set, scaled. The plain frequencies, or either set for
** every length, fail it. */
static void test_longrope_frequencies(void) {
  static const double short_factor[] = {1.0, 1.1, 1.25, 1.5, 2.0, 2.5, 3.0, 3.3};
  static const double long_factor[] = {1.0, 1.7, 2.9, 4.1, 6.0, 9.3, 12.0, 16.7};
  tsl_st_file *io = NULL;
  REQUIRE(tsl_st_open(FIXTURES "phi3_longrope_io.safetensors", &io) == 0);
  float *want_short = tensor(io, "inv_freq_short", HS / 2), *want_long = tensor(io, "inv_freq_long", HS / 2);
  const char *m = "phi3_longrope";
  const double original = model_config_number(m, NULL, "original_max_position_embeddings");
  const double factor = model_config_number(m, NULL, "max_position_embeddings") / original;
  const tsl_rope_freqs f = {.theta = (float)model_config_number(m, NULL, "rope_theta"), .factor = factor,
                            .original_positions = original, .kind = TSL_ROPE_LONGROPE,
                            .attention_factor = sqrt(1.0 + log(factor) / log(original)),
                            .short_factor = short_factor, .long_factor = long_factor, .pairs = HS / 2};
  CHECK(original == 16);
  CHECK_EQ_INT(check_frequencies_at(f, HS, 16, want_short, 0), HS / 2 - 1); /* all but the first, whose factor is 1 */
  CHECK_EQ_INT(check_frequencies_at(f, HS, 17, want_long, 0), HS / 2 - 1);
  CHECK(f.attention_factor == scalar(io, "attention_factor"));
  check_turns(f, want_long, (float)f.attention_factor, 3 * KT_U);
  tsl_rope_freqs short_only = f;
  short_only.pairs = HS / 2 - 1;
  CHECK(!tsl_rope_freqs_valid(short_only, HS));
  free(want_short), free(want_long);
  tsl_st_close(io);
}

int main(void) {
  RUN(test_attention_sub_block);
  RUN(test_longrope_frequencies);
  RUN(test_llama3_frequencies);
  RUN(test_yarn_frequencies);
  RUN(test_linear_frequencies);
  return HARNESS_EXIT();
}
