/*
** tests/cuda/test_nccl_watch.c — the CUDA backend's NCCL error path
** (kernels/cuda/nccl_watch.h) against a fake engine: communicators whose
** asynchronous state the test scripts (ready, still in progress, failed
** after some polls), a clock that advances half a second per pause, and a
** "device" that never finishes, as a GPU spinning in a collective whose
** peer died never does. Runs without a GPU.
**
** Properties: a wait ends as soon as one communicator reports a failure,
** with TESSEL_E_COMM and NCCL's reason; every communicator of the rank is
** then aborted exactly once and never polled again; a non-blocking call
** that does not settle in time is aborted and reported; nothing healthy
** is ever aborted.
*/
#include "../../kernels/cuda/nccl_watch.h"
#include "harness.h"
#include "tessel/plugin.h"

typedef struct fake_comm {
  int polls, aborted, polled_after_abort;
  int fail_at;    /* poll at which it reports a failure; 0: never */
  int pending_to; /* polls during which a non-blocking call is in progress */
} fake_comm;

typedef struct fake_engine {
  double clock;
  int pauses;
} fake_engine;

static tsl_nccl_state fake_state(void *ctx, void *comm, char *why, size_t cap) {
  (void)ctx;
  fake_comm *c = comm;
  if (c->aborted) c->polled_after_abort++;
  c->polls++;
  if (c->fail_at && c->polls >= c->fail_at) {
    snprintf(why, cap, "remote process exited or there was a network error");
    return TSL_NCCL_FAILED;
  }
  return c->polls <= c->pending_to ? TSL_NCCL_PENDING : TSL_NCCL_READY;
}

static void fake_abort(void *ctx, void *comm) {
  (void)ctx;
  ((fake_comm *)comm)->aborted++;
}

static double fake_now(void *ctx) { return ((fake_engine *)ctx)->clock; }

static void fake_pause(void *ctx) {
  fake_engine *e = ctx;
  e->clock += 0.5;
  e->pauses++;
}

static fake_engine engine;
static tsl_nccl_watch watch;

static void setup(void) {
  memset(&engine, 0, sizeof engine);
  tsl_nccl_ops ops = {fake_state, fake_abort, fake_now, fake_pause, &engine};
  tsl_nccl_watch_init(&watch, &ops);
}

/* The device: done after `left` polls, never when left < 0, or failing. */
typedef struct device {
  int left, polls, status;
} device;

static int device_done(void *arg) {
  device *d = arg;
  d->polls++;
  if (d->status < 0) return d->status;
  if (d->left < 0) return 0;
  return d->left-- == 0;
}

static void test_healthy_wait_finishes(void) {
  setup();
  fake_comm a = {0}, b = {0};
  REQUIRE(tsl_nccl_watch_add(&watch, &a, 0, 2) == 0);
  REQUIRE(tsl_nccl_watch_add(&watch, &b, 1, 4) == 0);
  device d = {.left = 5};
  CHECK_EQ_INT(tsl_nccl_watch_wait(&watch, device_done, &d, 0, "waiting for the GPU"), TESSEL_OK);
  CHECK_EQ_INT(d.polls, 6);
  /* the communicators were polled between the device's polls, and stay */
  CHECK(a.polls >= 5 && b.polls >= 5);
  CHECK_EQ_INT(a.aborted + b.aborted, 0);
  CHECK_EQ_INT(tsl_nccl_watch_remove(&watch, &a), 0);
  CHECK_EQ_INT(tsl_nccl_watch_remove(&watch, &b), 0);
  tsl_nccl_watch_free(&watch);
}

/* A peer dies while the GPU spins in a collective: the third poll of one
** communicator reports it, and the wait ends there, not when the GPU does
** (never). */
static void test_async_error_aborts_every_communicator(void) {
  setup();
  fake_comm a = {0}, b = {.fail_at = 3}, c = {0};
  REQUIRE(tsl_nccl_watch_add(&watch, &a, 0, 2) == 0);
  REQUIRE(tsl_nccl_watch_add(&watch, &b, 3, 4) == 0);
  REQUIRE(tsl_nccl_watch_add(&watch, &c, 1, 2) == 0);
  device d = {.left = -1};
  CHECK_EQ_INT(tsl_nccl_watch_wait(&watch, device_done, &d, 0, "waiting for the GPU"), TESSEL_E_COMM);
  CHECK_EQ_INT(d.polls, 3);
  CHECK_EQ_INT(engine.pauses, 2); /* ended at the first poll that saw it */
  CHECK_EQ_INT(a.aborted, 1);
  CHECK_EQ_INT(b.aborted, 1);
  CHECK_EQ_INT(c.aborted, 1);
  CHECK_STR_CONTAINS(watch.failure, "waiting for the GPU");
  CHECK_STR_CONTAINS(watch.failure, "a group of 4 ranks (this rank is 3 in it)");
  CHECK_STR_CONTAINS(watch.failure, "remote process exited or there was a network error");
  /* later waits and checks fail at once, abort nothing twice, poll nothing */
  d.left = 0;
  CHECK_EQ_INT(tsl_nccl_watch_wait(&watch, device_done, &d, 0, "again"), TESSEL_OK); /* a finished device is fine */
  d.left = -1;
  CHECK_EQ_INT(tsl_nccl_watch_wait(&watch, device_done, &d, 0, "again"), TESSEL_E_COMM);
  CHECK_EQ_INT(tsl_nccl_watch_check(&watch), TESSEL_E_COMM);
  CHECK_EQ_INT(a.aborted + b.aborted + c.aborted, 3);
  CHECK_EQ_INT(a.polled_after_abort + b.polled_after_abort + c.polled_after_abort, 0);
  CHECK_STR_CONTAINS(watch.failure, "waiting for the GPU"); /* the first failure is what is reported */
  /* destroying them afterwards must not touch what is gone */
  CHECK_EQ_INT(tsl_nccl_watch_remove(&watch, &a), 1);
  CHECK_EQ_INT(tsl_nccl_watch_remove(&watch, &b), 1);
  CHECK_EQ_INT(tsl_nccl_watch_remove(&watch, &c), 1);
  tsl_nccl_watch_free(&watch);
}

/* A device failure is the device's to report: returned as it is. */
static void test_device_failure_is_returned(void) {
  setup();
  fake_comm a = {0};
  REQUIRE(tsl_nccl_watch_add(&watch, &a, 0, 2) == 0);
  device d = {.status = TESSEL_E_DEVICE};
  CHECK_EQ_INT(tsl_nccl_watch_wait(&watch, device_done, &d, 0, "waiting for the GPU"), TESSEL_E_DEVICE);
  CHECK_EQ_INT(a.aborted, 0);
  tsl_nccl_watch_free(&watch);
}

/* A wait with a time limit that the device never meets: abort, say so. */
static void test_wait_time_limit(void) {
  setup();
  fake_comm a = {0};
  REQUIRE(tsl_nccl_watch_add(&watch, &a, 0, 2) == 0);
  device d = {.left = -1};
  CHECK_EQ_INT(tsl_nccl_watch_wait(&watch, device_done, &d, 5.0, "finalising"), TESSEL_E_COMM);
  CHECK(engine.clock > 5.0 && engine.clock <= 6.0);
  CHECK_EQ_INT(a.aborted, 1);
  CHECK_STR_CONTAINS(watch.failure, "finalising: no progress within 5 s");
  tsl_nccl_watch_free(&watch);
}

/* Creation: in progress for a while, then ready; nothing aborted. */
static void test_settle_when_ready(void) {
  setup();
  fake_comm fresh = {.pending_to = 4};
  CHECK_EQ_INT(tsl_nccl_watch_settle(&watch, &fresh, 1, 2, 300.0, "creating"), TESSEL_OK);
  CHECK_EQ_INT(fresh.polls, 5);
  CHECK_EQ_INT(fresh.aborted, 0);
  tsl_nccl_watch_free(&watch);
}

/* Creation that never settles (a peer that never joined): only the new
** communicator is aborted, after the time limit; the rank's others stay. */
static void test_settle_time_limit(void) {
  setup();
  fake_comm old = {0}, fresh = {.pending_to = 1 << 30};
  REQUIRE(tsl_nccl_watch_add(&watch, &old, 0, 2) == 0);
  CHECK_EQ_INT(tsl_nccl_watch_settle(&watch, &fresh, 1, 8, 10.0, "creating an NCCL communicator"), TESSEL_E_COMM);
  CHECK(engine.clock > 10.0 && engine.clock <= 11.0);
  CHECK_EQ_INT(fresh.aborted, 1);
  CHECK_EQ_INT(old.aborted, 0);
  CHECK_STR_CONTAINS(watch.failure, "still in progress after 10 s");
  CHECK_STR_CONTAINS(watch.failure, "a group of 8 ranks (this rank is 1 in it)");
  CHECK_EQ_INT(tsl_nccl_watch_check(&watch), TESSEL_OK);
  tsl_nccl_watch_free(&watch);
}

/* A collective on a live communicator that connects lazily and then
** fails: the rank has failed, so everything is aborted. */
static void test_settle_failure_of_a_live_communicator(void) {
  setup();
  fake_comm a = {.pending_to = 2, .fail_at = 3}, b = {0};
  REQUIRE(tsl_nccl_watch_add(&watch, &a, 0, 2) == 0);
  REQUIRE(tsl_nccl_watch_add(&watch, &b, 0, 2) == 0);
  CHECK_EQ_INT(tsl_nccl_watch_settle(&watch, &a, 0, 2, 300.0, "ncclAllReduce"), TESSEL_E_COMM);
  CHECK_EQ_INT(a.aborted, 1);
  CHECK_EQ_INT(b.aborted, 1);
  CHECK_STR_CONTAINS(watch.failure, "ncclAllReduce: the NCCL communicator of a group of 2 ranks");
  tsl_nccl_watch_free(&watch);
}

/* Many communicators (every group of a 3D mesh): none is lost. */
static void test_many_communicators(void) {
  setup();
  fake_comm c[40];
  memset(c, 0, sizeof c);
  for (int i = 0; i < 40; i++) REQUIRE(tsl_nccl_watch_add(&watch, &c[i], 0, 2) == 0);
  c[37].fail_at = 1;
  CHECK_EQ_INT(tsl_nccl_watch_check(&watch), TESSEL_E_COMM);
  int aborted = 0;
  for (int i = 0; i < 40; i++) aborted += c[i].aborted;
  CHECK_EQ_INT(aborted, 40);
  tsl_nccl_watch_free(&watch);
}

int main(void) {
  RUN(test_healthy_wait_finishes);
  RUN(test_async_error_aborts_every_communicator);
  RUN(test_device_failure_is_returned);
  RUN(test_wait_time_limit);
  RUN(test_settle_when_ready);
  RUN(test_settle_time_limit);
  RUN(test_settle_failure_of_a_live_communicator);
  RUN(test_many_communicators);
  return HARNESS_EXIT();
}
