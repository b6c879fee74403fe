/*
** tests/train/test_rundir.c — what a run that never trained takes away.
**
** Two runs started together, both finding their checkpoint.dir missing:
** the first takes its lock, the second is refused there. The second once
** removed the first's lock file (and the directory, were it empty), since
** it had seen the directory missing and took it for its own: the first
** trained on unlocked, and a third run could take the directory too. The
** second run's state is built here as claim leaves it: log.dir made and
** locked by it, checkpoint.dir made (seen missing) but locked by another.
*/
#include <fcntl.h>
#include <unistd.h>

#include "../data/scratch.h"
#include "harness.h"
#include "train/rundir.h"

static void test_abandon_leaves_another_runs_lock(void) {
  char log_dir[1024], ckpt_dir[1024], lock[1100];
  scratch_path(log_dir, "mine/run");
  scratch_path(ckpt_dir, "shared/checkpoints");
  REQUIRE(tsl_mkdir_p(log_dir) == TESSEL_OK && tsl_mkdir_p(ckpt_dir) == TESSEL_OK);
  snprintf(lock, sizeof lock, "%s/.tessel-lock", log_dir);
  scratch_write(lock, "host me, PID 1\n", 15);
  snprintf(lock, sizeof lock, "%s/.tessel-lock", ckpt_dir);
  scratch_write(lock, "host other, PID 2\n", 18); /* the other run's */
  tsl_run_dir d = {.fds = {-1, -1}, .n = 1, .n_made = 2};
  d.locked[0] = tsl_strdup(log_dir);
  d.made[0] = tsl_strdup(log_dir);
  d.made_deep[0] = 2; /* mine/ was new too */
  d.made[1] = tsl_strdup(ckpt_dir);
  d.made_deep[1] = 2;
  tsl_run_dir_abandon(&d);
  char mine[1024];
  CHECK(!tsl_path_exists(scratch_path(mine, "mine"))); /* this run's own, parents included */
  CHECK(tsl_path_exists(lock));                        /* the other run's lock stays */
  CHECK(tsl_path_exists(ckpt_dir));
}

int main(void) {
  RUN(test_abandon_leaves_another_runs_lock);
  scratch_cleanup();
  return HARNESS_EXIT();
}
