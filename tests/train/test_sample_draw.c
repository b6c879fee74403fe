/*
** tests/train/test_sample_draw.c — the distribution a token is drawn from:
** temperature, top-k and top-p (nucleus) as transformers' logits warpers
** apply them, in that order; and the repetition penalty before them.
**
** The reference here follows TopPLogitsWarper's own formulation: sort the
** temperature-scaled, top-k-filtered logits ascending, take the cumulative
** softmax, and drop every token whose cumulative mass is at most 1 − top_p
** (at least one token kept). tessel's draw finds the nucleus the other way
** round, from the most likely token down, so the two formulations meet only
** if both are right.
**
** Each case draws with N = 20000 evenly spaced u = (i + ½)/N: an exact
** inverse-CDF sampler then draws token v floor-or-ceil(p_v·N) times, so
** every count is within 1 of N·p_v (checked at 2, for the rounding of the
** cumulative sums in float and double). A token outside the nucleus or the
** top k must never be drawn.
*/
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "train/sample.h"

enum { N = 20000, MAXV = 16 };

typedef struct dcase {
  int V;
  float logits[MAXV];
  double temperature;
  int top_k;
  double top_p;
} dcase;

static const dcase cases[] = {
    /* probabilities .4 .25 .15 .1 .05 .03 .01 .01 at temperature 1 */
    {8, {-0.916f, -1.386f, -1.897f, -2.303f, -2.996f, -3.507f, -4.605f, -4.605f}, 1.0, 0, 0.7},
    {8, {-0.916f, -1.386f, -1.897f, -2.303f, -2.996f, -3.507f, -4.605f, -4.605f}, 1.0, 0, 0.95},
    {8, {-0.916f, -1.386f, -1.897f, -2.303f, -2.996f, -3.507f, -4.605f, -4.605f}, 2.0, 0, 0.5},
    {8, {-0.916f, -1.386f, -1.897f, -2.303f, -2.996f, -3.507f, -4.605f, -4.605f}, 1.0, 0, 1.0},
    /* top-k first, then the nucleus of what it left */
    {8, {-0.916f, -1.386f, -1.897f, -2.303f, -2.996f, -3.507f, -4.605f, -4.605f}, 0.7, 3, 0.8},
    /* unsorted logits, one token far above the rest: the nucleus is that token */
    {12, {0.3f, -1.0f, 2.5f, 9.0f, 0.0f, 1.1f, -3.0f, 2.4f, 0.7f, 0.2f, -0.5f, 1.9f}, 1.0, 0, 0.5},
    {12, {0.3f, -1.0f, 2.5f, 9.0f, 0.0f, 1.1f, -3.0f, 2.4f, 0.7f, 0.2f, -0.5f, 1.9f}, 3.0, 0, 0.9},
    {12, {0.3f, -1.0f, 2.5f, 9.0f, 0.0f, 1.1f, -3.0f, 2.4f, 0.7f, 0.2f, -0.5f, 1.9f}, 3.0, 5, 0.6},
};

typedef struct scored {
  double s;
  int v;
} scored;

static int ascending(const void *a, const void *b) {
  double x = ((const scored *)a)->s, y = ((const scored *)b)->s;
  return (x > y) - (x < y);
}

/* The warped distribution, in double: logits / T; the k largest kept;
** then TopPLogitsWarper's rule. */
static void reference(const dcase *c, double *p) {
  scored t[MAXV];
  for (int v = 0; v < c->V; v++) t[v] = (scored){c->logits[v] / c->temperature, v};
  qsort(t, (size_t)c->V, sizeof *t, ascending);
  int first = c->top_k > 0 && c->top_k < c->V ? c->V - c->top_k : 0; /* ascending: the k largest are at the end */
  double mx = t[c->V - 1].s, total = 0, cum = 0;
  for (int i = first; i < c->V; i++) total += exp(t[i].s - mx);
  int kept[MAXV] = {0};
  for (int i = first; i < c->V; i++) {
    cum += exp(t[i].s - mx) / total;
    kept[i] = !(cum <= 1 - c->top_p) || i == c->V - 1;
  }
  double z = 0;
  for (int v = 0; v < c->V; v++) p[v] = 0;
  for (int i = first; i < c->V; i++)
    if (kept[i]) z += exp(t[i].s - mx);
  for (int i = first; i < c->V; i++)
    if (kept[i]) p[t[i].v] = exp(t[i].s - mx) / z;
}

static void test_matches_the_warpers(void) {
  float scratch[MAXV];
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const dcase *c = &cases[k];
    double p[MAXV];
    int count[MAXV] = {0}, kept = 0, before = harness_failures;
    reference(c, p);
    for (int i = 0; i < N; i++) {
      int v = tsl_sample_draw(c->logits, scratch, c->V, c->temperature, c->top_k, c->top_p, (i + 0.5) / N);
      REQUIRE(v >= 0 && v < c->V);
      count[v]++;
    }
    for (int v = 0; v < c->V; v++) {
      kept += p[v] > 0;
      if (p[v] == 0) CHECK_EQ_INT(count[v], 0);
      else CHECK_CLOSE(count[v], N * p[v], 2.0, 0.0);
    }
    if (harness_failures != before) fprintf(stderr, "  case %zu: %d tokens kept\n", k, kept);
  }
}

/* The cases mean something: the nucleus of the first case is three tokens
** of eight, the 0.5 nucleus of a dominant token is that token alone. */
static void test_cases_cut(void) {
  double p[MAXV];
  int kept = 0;
  reference(&cases[0], p);
  for (int v = 0; v < cases[0].V; v++) kept += p[v] > 0;
  CHECK_EQ_INT(kept, 3);
  reference(&cases[5], p);
  CHECK_CLOSE(p[3], 1.0, 1e-12, 0.0);
}

/* The repetition penalty as transformers' RepetitionPenaltyLogitsProcessor
** computes it: a seen token's logit divided by the penalty when positive or
** zero, multiplied when negative; unseen ones untouched. Greedy then picks
** the best token not seen. */
static void test_repetition_penalty(void) {
  float logits[6] = {3.0f, -1.0f, 0.0f, 2.5f, 1.0f, -0.5f}, scratch[6];
  const uint8_t seen[6] = {1, 1, 1, 0, 0, 0};
  const float want[6] = {2.0f, -1.5f, 0.0f, 2.5f, 1.0f, -0.5f};
  tsl_sample_penalize(logits, 6, seen, 1.5);
  for (int v = 0; v < 6; v++) CHECK_CLOSE(logits[v], want[v], 0.0, 1e-7);
  CHECK_EQ_INT(tsl_sample_draw(logits, scratch, 6, 0.0, 0, 1.0, 0.5), 3);
}

/* temperature 0 is the most likely token whatever top_k and top_p say */
static void test_greedy(void) {
  float scratch[MAXV];
  const dcase *c = &cases[5];
  CHECK_EQ_INT(tsl_sample_draw(c->logits, scratch, c->V, 0.0, 3, 0.2, 0.99), 3);
}

int main(void) {
  RUN(test_matches_the_warpers);
  RUN(test_cases_cut);
  RUN(test_repetition_penalty);
  RUN(test_greedy);
  return HARNESS_EXIT();
}
