/*
** tests/compare/test_losses.c — tessel compare's loss check
** (tsl_compare_judge) on made-up losses. A NaN or infinite loss on either
** side, or on both at the same step, makes the runs differ and is named;
** it once passed as "equivalent" (fmax drops a NaN, and an infinite
** reference gave inf/inf = NaN). The trainer stops at a NaN loss first, so
** real runs seldom show one: the function is tested directly.
*/
#include <math.h>

#include "compare/compare.h"
#include "harness.h"

enum { STEPS = 4 };

static const tsl_compare check = {.tolerance = 1e-5, .val_tolerance = 0.02};

/* A run whose typical trial has `loss` (STEPS of them) and val_loss `val`. */
static void make_run(tsl_cmp_run *r, double *loss, double val, int lossy) {
  memset(r, 0, sizeof *r);
  r->trials[0].loss = loss;
  r->trials[0].n_steps = STEPS;
  r->trials[0].val_loss = val;
  r->lossy = lossy;
}

/* `mine` judged against `theirs` (both exact); run->nonfinite as said. */
static tsl_cmp_run *judge(double *mine, double *theirs) {
  static tsl_cmp_run run, ref;
  make_run(&run, mine, 4.0, 0);
  make_run(&ref, theirs, 4.0, 0);
  tsl_compare_judge(&check, &run, &ref);
  return &run;
}

static void test_finite_losses_within_the_tolerance_are_equivalent(void) {
  double a[STEPS] = {5.5, 5.0, 4.5, 4.0}, b[STEPS] = {5.5, 5.0, 4.5 * (1 + 1e-7), 4.0};
  tsl_cmp_run *r = judge(a, b);
  CHECK(r->equivalent);
  CHECK(r->nonfinite[0] == '\0');
  CHECK_CLOSE(r->max_rel, 4.5e-7 / (4.5 * (1 + 1e-7)), 1e-12, 1e-6);
}

static void test_a_finite_difference_past_the_tolerance_differs(void) {
  double a[STEPS] = {5.5, 5.0, 4.5, 4.0}, b[STEPS] = {5.5, 5.0, 4.6, 4.0};
  tsl_cmp_run *r = judge(a, b);
  CHECK(!r->equivalent);
  CHECK(r->nonfinite[0] == '\0');
}

static void test_nan_in_the_run_differs(void) {
  double a[STEPS] = {5.5, 5.0, NAN, 4.0}, b[STEPS] = {5.5, 5.0, 4.5, 4.0};
  tsl_cmp_run *r = judge(a, b);
  CHECK(!r->equivalent);
  CHECK_STR_CONTAINS(r->nonfinite, "its loss at step 3 is NaN, the reference's 4.5");
  CHECK(r->max_rel == 0); /* the finite steps agree: only the NaN differs */
}

static void test_nan_in_the_reference_differs(void) {
  double a[STEPS] = {5.5, 5.0, 4.5, 4.0}, b[STEPS] = {5.5, NAN, 4.5, 4.0};
  tsl_cmp_run *r = judge(a, b);
  CHECK(!r->equivalent);
  CHECK_STR_CONTAINS(r->nonfinite, "its loss at step 2 is 5, the reference's NaN");
}

static void test_inf_on_either_side_differs(void) {
  double a[STEPS] = {5.5, 5.0, 4.5, 4.0}, b[STEPS] = {5.5, 5.0, 4.5, INFINITY};
  tsl_cmp_run *r = judge(a, b); /* inf/inf was NaN, and dropped */
  CHECK(!r->equivalent);
  CHECK_STR_CONTAINS(r->nonfinite, "its loss at step 4 is 4, the reference's inf");
  double c[STEPS] = {5.5, -INFINITY, 4.5, 4.0}, d[STEPS] = {5.5, 5.0, 4.5, 4.0};
  r = judge(c, d);
  CHECK(!r->equivalent);
  CHECK_STR_CONTAINS(r->nonfinite, "its loss at step 2 is -inf, the reference's 5");
}

static void test_both_nan_at_the_same_step_differs_and_says_so(void) {
  double a[STEPS] = {5.5, 5.0, NAN, NAN}, b[STEPS] = {5.5, 5.0, NAN, NAN};
  tsl_cmp_run *r = judge(a, b);
  CHECK(!r->equivalent);
  CHECK_STR_CONTAINS(r->nonfinite, "its loss at step 3 is NaN, and the reference's is NaN too");
}

static void test_the_reference_against_itself(void) {
  static tsl_cmp_run ref;
  double a[STEPS] = {5.5, 5.0, 4.5, 4.0};
  make_run(&ref, a, 4.0, 0);
  tsl_compare_judge(&check, &ref, &ref);
  CHECK(ref.equivalent);
  a[1] = NAN;
  tsl_compare_judge(&check, &ref, &ref);
  CHECK(!ref.equivalent);
  CHECK_STR_CONTAINS(ref.nonfinite, "its loss at step 2 is NaN");
  CHECK(strstr(ref.nonfinite, "reference") == NULL);
}

static void test_a_lossy_run_with_a_nan_loss_differs(void) {
  static tsl_cmp_run run, ref;
  double a[STEPS] = {5.5, 5.2, NAN, 4.3}, b[STEPS] = {5.5, 5.0, 4.5, 4.0};
  make_run(&run, a, 4.01, 1);
  make_run(&ref, b, 4.0, 0);
  tsl_compare_judge(&check, &run, &ref);
  CHECK(run.val_rel <= check.val_tolerance); /* its validation loss alone would pass */
  CHECK(!run.equivalent);
  a[2] = 4.7;
  tsl_compare_judge(&check, &run, &ref);
  CHECK(run.equivalent);
}

int main(void) {
  RUN(test_finite_losses_within_the_tolerance_are_equivalent);
  RUN(test_a_finite_difference_past_the_tolerance_differs);
  RUN(test_nan_in_the_run_differs);
  RUN(test_nan_in_the_reference_differs);
  RUN(test_inf_on_either_side_differs);
  RUN(test_both_nan_at_the_same_step_differs_and_says_so);
  RUN(test_the_reference_against_itself);
  RUN(test_a_lossy_run_with_a_nan_loss_differs);
  return HARNESS_EXIT();
}
