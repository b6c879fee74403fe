/*
** tests/model/test_batch_load.c — which batch a slot holds.
**
** A unit reloads its slot's tokens only when the (step, micro-batch) pair
** changes. With more than 65,536 micro-batches per step, a pair packed as
** step·65536 + micro made the first micro-batch of step s+1 look like the
** last of step s, so a step silently trained on the previous step's tokens.
*/
#include "fixture.h"
#include "harness.h"
#include "model/internal.h"

static int loads;
static int last_micro;

static tsl_status counting_batch(void *ctx, int micro, int32_t *inputs, int32_t *targets) {
  (void)ctx;
  loads++;
  last_micro = micro;
  inputs[0] = micro % 2;
  targets[0] = 0;
  return TESSEL_OK;
}

static void test_every_step_loads_its_own_batch(void) {
  tsl_runtime rt;
  REQUIRE(fixture_runtime(&rt, 1, 1, 4, 1, 2) == 0);
  /* one sequence of one token per micro-batch keeps 65,537 of them cheap */
  tessel_model_dims d = fixture_dims(&rt, 1, 65537);
  tsl_model *m = NULL;
  REQUIRE(tsl_model_create(&rt, &d, &(uint64_t){1}, &m) == TESSEL_OK);
  tsl_model_set_batch(m, counting_batch, NULL);
  m->step_serial++; /* step s: its last micro-batch */
  REQUIRE(tsl_model_forward(m, 65536, 0, 0) == TESSEL_OK);
  CHECK_EQ_INT(loads, 1);
  m->step_serial++; /* step s + 1: its first micro-batch is new data */
  REQUIRE(tsl_model_forward(m, 0, 0, 0) == TESSEL_OK);
  CHECK_EQ_INT(loads, 2);
  CHECK_EQ_INT(last_micro, 0);
  /* the same pair again is not reloaded */
  REQUIRE(tsl_model_forward(m, 0, 0, 0) == TESSEL_OK);
  CHECK_EQ_INT(loads, 2);
  fixture_release(&rt);
}

int main(void) {
  RUN(test_every_step_loads_its_own_batch);
  return HARNESS_EXIT();
}
