/*
** tests/kernels/test_cpu_rope.c — rotary position embedding against a
** double reference that forms the angles as transformers does, its inverse,
** its gradient, and its strides.
**
** The reference takes transformers' fp32 angle a = (float)pos·inv_freq_i,
** inv_freq_i = 1/theta^((float)2i/hs) (fp32 operations, as
** LlamaRotaryEmbedding computes them), then rotates in double with the
** exact cos and sin of that fp32 angle. The kernel rounds cos and sin (libm:
** within an ulp), the two products and the sum: 4u of |x|·|cos| + |y|·|sin|
** in all, checked at twice that. Positions reach 10^5 through pos_offset,
** where an angle formed in double instead of fp32 would differ by up to
** half an fp32 ulp of 10^5 rad (~0.004 rad), far outside the tolerance.
** One case (and the gradient) turns by Llama 3's scaled frequencies; two
** turn only the first elements of each head (Phi-4 mini's 96 of 128), the
** frequencies those of a head that size, the rest left as they are.
*/
#include "kernel_test.h"

typedef struct rope_case {
  int64_t B, T, heads, hs, ld, pos_offset;
  int scaled; /* Llama 3's frequencies (LLAMA3), else plain (PLAIN) */
  int64_t rotary; /* the elements of each head turned; 0: all */
} rope_case;

static const rope_case cases[] = {
    {2, 7, 3, 8, 24, 0, 0, 0},          {1, 33, 4, 64, 256 + 9, 5, 0, 0}, {3, 16, 2, 2, 4, 0, 0, 0},
    {1, 20, 2, 128, 256, 100000, 0, 0}, {2, 5, 1, 16, 16, 4090, 0, 0},   {2, 9, 3, 64, 200, 8190, 1, 0},
    {2, 7, 3, 16, 48, 3, 0, 8},         {1, 9, 2, 128, 256, 1000, 1, 96},
};
#define THETA 10000.0f
static const tsl_rope_freqs PLAIN = {.theta = THETA};
/* Llama 3.2's scaling, whose bands the 32 frequencies of a 64-wide head
** all reach at original_positions 8192 */
static const tsl_rope_freqs LLAMA3 = {.theta = 500000.0f, .factor = 32, .low_freq_factor = 1,
                                      .high_freq_factor = 4, .original_positions = 8192};

/* transformers' fp32 frequencies of a head of hs (at most 512): plain ones
** formed here as LlamaRotaryEmbedding forms them; scaled ones from
** tsl_rope_inv_freqs, which test_hf_llama_attention checks bit for bit
** against transformers' own. The angle is the fp32 product pos·inv[i]. */
static void hf_frequencies(int64_t hs, int scaled, float *inv) {
  REQUIRE(hs / 2 <= 256);
  if (scaled) tsl_rope_inv_freqs(LLAMA3, hs, 1, inv);
  for (int64_t i = 0; !scaled && i < hs / 2; i++) inv[i] = 1.0f / powf(THETA, (float)(2 * i) / (float)hs);
}

static int rope(float *x, const rope_case *c, int inverse) {
  tsl_backend *be = kt_backend();
  tsl_rope_freqs f = c->scaled ? LLAMA3 : PLAIN;
  f.rotary = c->rotary;
  return be->rope(be, NULL, x, c->B, c->T, c->heads, c->hs, c->ld, c->pos_offset, f, inverse);
}

/* x rotated in double (sign −1: the inverse), with the magnitudes of
** the two products of each result in mag */
static void ref_rope(double *out, double *mag, const float *x, const rope_case *c, double sign) {
  const int64_t turned = c->rotary ? c->rotary : c->hs, half = turned / 2;
  float inv[256];
  hf_frequencies(turned, c->scaled, inv);
  for (int64_t r = 0; r < c->B * c->T; r++)
    for (int64_t h = 0; h < c->heads; h++) {
      for (int64_t j = turned; j < c->hs; j++) { /* not turned: as it was */
        const int64_t e = r * c->ld + h * c->hs + j;
        out[e] = x[e], mag[e] = 0;
      }
      for (int64_t i = 0; i < half; i++) {
        const double a = (float)(r % c->T + c->pos_offset) * inv[i];
        const double cs = cos(a), sn = sign * sin(a);
        const int64_t lo = r * c->ld + h * c->hs + i, hi = lo + half;
        out[lo] = x[lo] * cs - x[hi] * sn, out[hi] = x[hi] * cs + x[lo] * sn;
        mag[lo] = fabs(x[lo]) * fabs(cs) + fabs(x[hi]) * fabs(sn);
        mag[hi] = fabs(x[hi]) * fabs(cs) + fabs(x[lo]) * fabs(sn);
      }
    }
}

static int64_t count(const rope_case *c) { return c->B * c->T * c->ld; }

/* padding elements of each row (beyond heads·hs) are NaN in x and must stay so */
static float *make_input(uint64_t *rng, const rope_case *c) {
  float *x = kt_random(rng, count(c), -2, 2);
  for (int64_t r = 0; r < c->B * c->T; r++) kt_fill(x + r * c->ld + c->heads * c->hs, c->ld - c->heads * c->hs, NAN);
  return x;
}

/* the elements rope owns: got against ref within factor·mag; padding NaN */
static void check_rows(const float *got, const double *ref, const double *mag, const rope_case *c, double factor) {
  const int64_t w = c->heads * c->hs, n = c->B * c->T * w;
  float *g = kt_floats(n);
  double *r = kt_doubles(n), *m = kt_doubles(n);
  int64_t touched = 0;
  for (int64_t row = 0; row < c->B * c->T; row++) {
    memcpy(g + row * w, got + row * c->ld, (size_t)w * sizeof(float));
    memcpy(r + row * w, ref + row * c->ld, (size_t)w * sizeof(double));
    memcpy(m + row * w, mag + row * c->ld, (size_t)w * sizeof(double));
    for (int64_t j = w; j < c->ld; j++) touched += !isnan(got[row * c->ld + j]);
  }
  CHECK_ARRAY_BOUND(g, r, m, n, factor);
  CHECK_EQ_INT(touched, 0);
  free(g), free(r), free(m);
}

static void test_forward_and_inverse(void) {
  uint64_t rng = 51;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const rope_case *c = &cases[k];
    for (int inverse = 0; inverse < 2; inverse++) {
      float *x = make_input(&rng, c), *y = kt_floats(count(c));
      memcpy(y, x, (size_t)count(c) * sizeof(float));
      double *ref = kt_doubles(count(c)), *mag = kt_doubles(count(c));
      ref_rope(ref, mag, x, c, inverse ? -1.0 : 1.0);
      CHECK_EQ_INT(rope(y, c, inverse), 0);
      check_rows(y, ref, mag, c, 2 * 4 * KT_U);
      free(x), free(y), free(ref), free(mag);
    }
  }
}

/* the inverse undoes the rotation: back to x within the two passes'
** roundings, 2·4u of |x| + |y| */
static void test_inverse_undoes(void) {
  uint64_t rng = 52;
  const rope_case *c = &cases[1];
  float *x = make_input(&rng, c), *y = kt_floats(count(c));
  memcpy(y, x, (size_t)count(c) * sizeof(float));
  CHECK_EQ_INT(rope(y, c, 0), 0);
  CHECK_EQ_INT(rope(y, c, 1), 0);
  double *ref = kt_widen(x, count(c)), *mag = kt_doubles(count(c));
  const int64_t half = c->hs / 2;
  for (int64_t r = 0; r < c->B * c->T; r++)
    for (int64_t h = 0; h < c->heads; h++)
      for (int64_t i = 0; i < half; i++) {
        const int64_t lo = r * c->ld + h * c->hs + i;
        mag[lo] = mag[lo + half] = fabs(x[lo]) + fabs(x[lo + half]);
      }
  check_rows(y, ref, mag, c, 2 * 2 * 4 * KT_U);
  free(x), free(y), free(ref), free(mag);
}

/* The backward is the inverse: dL/dx for L = Σ g·rope(x) by central
** differences of the double rotation (linear, so the quotient is exact up
** to rounding, ~1e-12) against the kernel's inverse applied to g. */
static void test_inverse_is_the_gradient(void) {
  uint64_t rng = 53;
  const rope_case c = {1, 6, 2, 8, 16, 3, 1, 0};
  float *x = make_input(&rng, &c), *g = kt_random(&rng, count(&c), -1, 1);
  double *fd = kt_doubles(count(&c)), *out = kt_doubles(count(&c)), *mag = kt_doubles(count(&c));
  for (int64_t e = 0; e < count(&c); e++) {
    const float keep = x[e];
    double l[2];
    for (int s = 0; s < 2; s++) {
      x[e] = keep + (s ? -0.25f : 0.25f);
      ref_rope(out, mag, x, &c, 1.0);
      l[s] = 0.0;
      for (int64_t j = 0; j < count(&c); j++) l[s] += g[j] * out[j];
    }
    x[e] = keep;
    fd[e] = (l[0] - l[1]) / 0.5;
  }
  CHECK_EQ_INT(rope(g, &c, 1), 0);
  CHECK_ARRAY_CLOSE(g, fd, count(&c), 1e-6, 1e-5);
  free(x), free(g), free(fd), free(out), free(mag);
}

/* Known values: position 1, pair 0 turns by exactly 1 rad (inv_freq_0 =
** 1); position 0 leaves x as it is, bit for bit. */
static void test_known_values(void) {
  tsl_backend *be = kt_backend();
  float x[2 * 4] = {1, 0, 0, 0, 1, 0.5f, 0, 0}; /* T = 2, hs = 4: rows t = 0, 1 */
  CHECK_EQ_INT(be->rope(be, NULL, x, 1, 2, 1, 4, 4, 0, PLAIN, 0), 0);
  CHECK(x[0] == 1.0f && x[1] == 0.0f && x[2] == 0.0f && x[3] == 0.0f);
  CHECK_CLOSE(x[4], cos(1.0), 2 * KT_U, 0.0);
  CHECK_CLOSE(x[6], sin(1.0), 2 * KT_U, 0.0);
  /* pair 1: inv_freq = 1/100, angle 0.01 */
  CHECK_CLOSE(x[5], 0.5 * cos(0.01), 2 * KT_U, 0.0);
  CHECK_CLOSE(x[7], 0.5 * sin(0.01), 2 * KT_U, 0.0);
}

static void test_bad_shapes(void) {
  tsl_backend *be = kt_backend();
  float x[8] = {7, 7, 7, 7, 7, 7, 7, 7};
  CHECK_EQ_INT(be->rope(be, NULL, x, 0, 2, 1, 4, 4, 0, PLAIN, 0), 0);
  CHECK(be->rope(be, NULL, x, 1, 2, 1, 3, 3, 0, PLAIN, 0) < 0);  /* odd head size */
  CHECK(be->rope(be, NULL, x, 1, 2, 2, 4, 4, 0, PLAIN, 0) < 0);  /* row narrower than heads·hs */
  CHECK(be->rope(be, NULL, x, 1, 2, 1, 4, 4, 0, (tsl_rope_freqs){0}, 0) < 0); /* theta 0 */
  CHECK(be->rope(be, NULL, x, 1, 2, 1, 4, 4, -1, PLAIN, 0) < 0); /* negative position */
  /* scalings transformers refuses: factor below 1, high band not above the low one */
  tsl_rope_freqs bad = LLAMA3;
  bad.factor = 0.5f;
  CHECK(be->rope(be, NULL, x, 1, 2, 1, 4, 4, 0, bad, 0) < 0);
  bad = LLAMA3;
  bad.high_freq_factor = bad.low_freq_factor;
  CHECK(be->rope(be, NULL, x, 1, 2, 1, 4, 4, 0, bad, 0) < 0);
  /* a turned part that is odd or wider than the head */
  bad = PLAIN;
  bad.rotary = 3;
  CHECK(be->rope(be, NULL, x, 1, 2, 1, 4, 4, 0, bad, 0) < 0);
  bad.rotary = 6;
  CHECK(be->rope(be, NULL, x, 1, 2, 1, 4, 4, 0, bad, 0) < 0);
  CHECK(x[0] == 7.0f && x[7] == 7.0f);
}

int main(void) {
  RUN(test_forward_and_inverse);
  RUN(test_inverse_undoes);
  RUN(test_inverse_is_the_gradient);
  RUN(test_known_values);
  RUN(test_bad_shapes);
  return HARNESS_EXIT();
}
