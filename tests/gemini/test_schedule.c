/*
** tests/gemini/test_schedule.c — gemini's schedule of a step in isolation:
** every visit, position and next use the tables answer equals what a walk
** over the whole step finds (the definition: per micro-batch, forward units
** 0..U-1, then backward U-1..0), at one to five micro-batches; and a step of
** two billion visits is scheduled in tables of one micro-batch (once a table
** of every visit × chunk, tens of gigabytes, built in minutes).
*/
#include <limits.h>

#include "../../plugins/gemini/gemini.h"
#include "fake_host.h"
#include "harness.h"

static const tessel_host_api fake_api = {.size = sizeof(tessel_host_api), .set_error = fake_host_set_error};

/* Units using chunks: unit u uses the chunks listed in uses[u] (ascending,
** −1 ends), like an embedding and a head that share the tied table. */
enum { UNITS = 5, CHUNKS = 6 };
static const int uses[UNITS][4] = {{0, 5, -1}, {1, -1}, {1, 2, 3, -1}, {3, 4, -1}, {4, 5, -1}};

static void setup(gemini *g, int micro_steps) {
  memset(g, 0, sizeof *g);
  g->api = &fake_api;
  g->cs.nc = CHUNKS;
  g->dims.micro_steps = micro_steps;
  g->nunits = UNITS;
  g->units = calloc(UNITS, sizeof *g->units);
  for (int u = 0; u < UNITS; u++) {
    g->units[u].chunks = calloc(4, sizeof(int));
    while (uses[u][g->units[u].nc] >= 0) {
      g->units[u].chunks[g->units[u].nc] = uses[u][g->units[u].nc];
      g->units[u].nc++;
    }
  }
}

/* The definition, step position by position. */
static gm_visit visit_of(int p, int training) {
  int per = training ? 2 * UNITS : UNITS, k = p % per, back = k >= UNITS, unit = back ? per - 1 - k : k;
  return (gm_visit){unit, back, p / per, training && (back || unit == UNITS - 1)};
}

static int used_at(int p, int training, int chunk) {
  gm_visit v = visit_of(p, training);
  for (int i = 0; uses[v.unit][i] >= 0; i++)
    if (uses[v.unit][i] == chunk) return 1;
  return 0;
}

static void check_schedule(const gemini *g, const gm_schedule *s, int training, int micro_steps) {
  int n = micro_steps * (training ? 2 : 1) * UNITS;
  CHECK_EQ_INT(s->n, n);
  for (int p = 0; p < n; p++) {
    gm_visit want = visit_of(p, training), got = gm_visit_at(s, p);
    CHECK(got.unit == want.unit && got.backward == want.backward && got.micro == want.micro &&
          got.grads == want.grads);
    CHECK_EQ_INT(gm_position(s, want.unit, want.micro, want.backward), p);
    for (int c = 0; c < CHUNKS; c++) {
      int next = n;
      for (int q = p + 1; q < n && next == n; q++)
        if (used_at(q, training, c)) next = q;
      CHECK_EQ_INT(gm_uses(g, s, p, c), used_at(p, training, c));
      CHECK_EQ_INT(gm_next_use(g, s, p, c), next);
    }
  }
  CHECK_EQ_INT(gm_position(s, 0, micro_steps, 0), -1);
  CHECK_EQ_INT(gm_position(s, UNITS, 0, 0), -1);
  if (!training) CHECK_EQ_INT(gm_position(s, 0, 0, 1), -1);
}

/* Next uses within a micro-batch, across into the next one, and none
** after the last; training and evaluation. */
static void test_against_the_walk(void) {
  for (int m = 1; m <= 5; m++) {
    gemini g;
    setup(&g, m);
    REQUIRE(gm_schedules_build(&g) == TESSEL_OK);
    check_schedule(&g, &g.train, 1, m);
    check_schedule(&g, &g.eval, 0, m);
    gm_schedules_free(&g);
  }
}

/* The largest step an int numbers: answers at its far end without a table
** of every visit. */
static void test_two_billion_visits(void) {
  gemini g;
  int m = INT_MAX / (2 * UNITS), per = 2 * UNITS, last = (m - 1) * per;
  setup(&g, m);
  REQUIRE(gm_schedules_build(&g) == TESSEL_OK);
  CHECK_EQ_INT(g.train.n, m * per);
  CHECK_EQ_INT(gm_visit_at(&g.train, last + per - 1).micro, m - 1);
  CHECK_EQ_INT(gm_next_use(&g, &g.train, last - 1, 0), last);           /* the next micro-batch's embedding */
  CHECK_EQ_INT(gm_next_use(&g, &g.train, last + per - 2, 2), g.train.n); /* none after the step */
  CHECK_EQ_INT(gm_next_use(&g, &g.train, last + 1, 5), last + UNITS - 1); /* the head, then */
  CHECK_EQ_INT(gm_position(&g.train, 0, m - 1, 1), last + per - 1);
  gm_schedules_free(&g);
}

int main(void) {
  RUN(test_against_the_walk);
  RUN(test_two_billion_visits);
  return HARNESS_EXIT();
}
