/*
** tests/compare/test_verdict.c — the decision rule of tessel compare on
** made-up trial results, where the right answer is known by construction:
** overlapping trials are a tie (settled by memory), separated ones name the
** faster, a measurably slower configuration is not chosen for its memory,
** one trial never proves a difference, and a run that trains something else
** takes no part.
*/
#include "compare/compare.h"
#include "harness.h"

/* A run whose trials' median tokens/s are lo, mid, hi (n of them used). */
static void make_run(tsl_cmp_run *r, const char *label, double lo, double mid, double hi, int n, double peak) {
  memset(r, 0, sizeof *r);
  snprintf(r->label, sizeof r->label, "%s", label);
  r->n_ok = n;
  r->tps = mid;
  r->tps_lo = n > 1 ? lo : mid;
  r->tps_hi = n > 1 ? hi : mid;
  r->spread = (r->tps_hi - r->tps_lo) / mid;
  r->equivalent = 1;
  r->trials[0].memory[0].peak = peak;
}

/* The verdict over n runs of `repeat` trials. */
static tsl_cmp_verdict decide(tsl_cmp_run *runs, int n, int repeat) {
  tsl_compare c = {.runs = runs, .n_runs = n, .repeat = repeat};
  tsl_cmp_verdict v;
  tsl_compare_verdict(&c, &v);
  return v;
}

static void test_overlapping_trials_tie(void) {
  static tsl_cmp_run r[2];
  make_run(&r[0], "a", 980, 1000, 1030, 3, 100);
  make_run(&r[1], "b", 990, 1010, 1020, 3, 80);
  tsl_cmp_verdict v = decide(r, 2, 3);
  CHECK(!v.measurable);
  CHECK_EQ_INT(v.n_tied, 2);
  CHECK(v.fastest == &r[1] && v.choice == &r[1]); /* b: as fast, and less memory */
}

static void test_separated_trials_name_the_faster(void) {
  static tsl_cmp_run r[2];
  make_run(&r[0], "slow", 480, 500, 510, 3, 50);
  make_run(&r[1], "fast", 990, 1000, 1010, 3, 100);
  tsl_cmp_verdict v = decide(r, 2, 3);
  CHECK(v.measurable);
  CHECK(v.choice == &r[1] && v.runner_up == &r[0] && v.versus == &r[0]);
  CHECK_CLOSE(v.percent, 100.0, 1e-9, 0); /* 1000 / 500 - 1 */
  CHECK_CLOSE(v.spread, 6.0, 1e-9, 0);    /* slow: (510 - 480) / 500 */
  CHECK(v.smallest == &r[0]);             /* reported, not chosen: it is measurably slower */
}

static void test_difference_within_twice_the_spread_is_noise(void) {
  static tsl_cmp_run r[2];
  /* ranges do not overlap, but 10% apart with a 6% spread is not twice it */
  make_run(&r[0], "a", 1050, 1100, 1116, 3, 100); /* spread 66 / 1100 = 6% */
  make_run(&r[1], "b", 970, 1000, 1000, 3, 100);
  tsl_cmp_verdict v = decide(r, 2, 3);
  CHECK(!v.measurable);
  CHECK_EQ_INT(v.n_tied, 2);
}

static void test_slower_config_is_not_chosen_for_memory(void) {
  static tsl_cmp_run r[3];
  make_run(&r[0], "a", 990, 1000, 1010, 3, 100);
  make_run(&r[1], "b", 985, 995, 1005, 3, 90);
  make_run(&r[2], "c", 490, 500, 505, 3, 10);
  tsl_cmp_verdict v = decide(r, 3, 3);
  CHECK_EQ_INT(v.n_tied, 2);
  CHECK(v.choice == &r[1]);
  CHECK(v.smallest == &r[2]);
}

/* Two runs of one config on a machine with bursts of load (measured): the
** medians are 56× apart, but each run's trials spread wider than the gap
** between A's slowest and B's fastest. The medians' difference was once
** the test, and called them different. */
static void test_wild_trials_of_one_config_tie(void) {
  static tsl_cmp_run r[2];
  make_run(&r[0], "same", 322, 322, 5489, 2, 100);
  make_run(&r[1], "same#2", 18085, 18085, 44661, 2, 100);
  tsl_cmp_verdict v = decide(r, 2, 2);
  CHECK(!v.measurable);
  CHECK_EQ_INT(v.n_tied, 2);
}

/* The figures beside a tie are those of the pair that is tied: with a and
** b separated and c tied with a by its spread, they compare a with c. */
static void test_tie_is_reported_with_the_tied_pair(void) {
  static tsl_cmp_run r[3];
  make_run(&r[0], "a", 2996, 3000, 3234, 3, 100);
  make_run(&r[1], "b", 2159, 2160, 2194, 3, 100);
  make_run(&r[2], "c", 2118, 2120, 2737, 3, 100);
  tsl_cmp_verdict v = decide(r, 3, 3);
  CHECK(v.fastest == &r[0] && v.runner_up == &r[1] && v.versus == &r[2]);
  CHECK_EQ_INT(v.n_tied, 2);
  CHECK(!v.measurable);
  CHECK_CLOSE(v.percent, 100.0 * (3000.0 / 2120.0 - 1.0), 1e-9, 0);
}

static void test_one_trial_proves_nothing(void) {
  static tsl_cmp_run r[2];
  make_run(&r[0], "a", 0, 2000, 0, 1, 100);
  make_run(&r[1], "b", 0, 1000, 0, 1, 100);
  tsl_cmp_verdict v = decide(r, 2, 1);
  CHECK(!v.measurable);
}

static void test_other_function_takes_no_part(void) {
  static tsl_cmp_run r[2];
  make_run(&r[0], "ref", 490, 500, 510, 3, 100);
  make_run(&r[1], "wrong", 1990, 2000, 2010, 3, 10);
  r[1].equivalent = 0;
  tsl_cmp_verdict v = decide(r, 2, 3);
  CHECK(v.fastest == &r[0] && v.choice == &r[0] && !v.runner_up);
}

int main(void) {
  RUN(test_overlapping_trials_tie);
  RUN(test_separated_trials_name_the_faster);
  RUN(test_difference_within_twice_the_spread_is_noise);
  RUN(test_slower_config_is_not_chosen_for_memory);
  RUN(test_wild_trials_of_one_config_tie);
  RUN(test_tie_is_reported_with_the_tied_pair);
  RUN(test_one_trial_proves_nothing);
  RUN(test_other_function_takes_no_part);
  return HARNESS_EXIT();
}
