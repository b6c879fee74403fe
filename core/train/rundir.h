/*
** core/train/rundir.h — claiming a run's directories before training.
**
** Two runs writing one log.dir (or one checkpoint.dir) delete each other's
** checkpoints and interleave their metrics. So before it touches anything,
** rank 0 of a run takes an exclusive flock(2) on DIR/.tessel-lock in both
** directories and writes its host and PID there; a second run is refused
** with the holder's host and PID. The kernel drops the lock when the
** holder exits, however it exits (kill -9 included), so a lock never goes
** stale.
**
** Holding the lock, rank 0 then removes what an interrupted run left:
** .tmp-step_* and step_*.old-* directories in checkpoint.dir, the metrics
** file's .tmp, and half-written shards (NAME.tmp.PID) in a data.dir inside
** log.dir. And it checks that checkpoint.dir can take a checkpoint: that it
** is a directory, writable, with room for one checkpoint of the configured
** model — so a run that could never save fails in its first second, not
** after hours.
*/
#ifndef TSL_RUNDIR_H
#define TSL_RUNDIR_H

#include "runtime/runtime.h"

typedef struct tsl_run_dir {
  int fds[2];       /* the held lock files, -1 when unused */
  char *locked[2];  /* the directories whose locks they are */
  int n;
  char *made[2];   /* the directories this run created (log.dir, then checkpoint.dir) */
  int made_deep[2]; /* how many levels of each it created: 2 when its parent was new too */
  int n_made;
} tsl_run_dir;

/* Rank 0 claims, cleans and checks; other ranks do nothing (agree on the
** result with tsl_world_agree). TESSEL_E_IO when another run holds a
** directory, or checkpoint.dir is not a writable directory or lacks room. */
tsl_status tsl_run_dir_open(tsl_runtime *rt, tsl_run_dir *d);
/* Release the locks (a no-op on ranks other than 0). */
void tsl_run_dir_close(tsl_run_dir *d);
/* For a run that failed before it trained (a mistake found once the
** world is known, say): remove the directories it created, parents such
** as runs/ included, that hold nothing but their lock file, so that it
** leaves nothing behind; then release the locks. */
void tsl_run_dir_abandon(tsl_run_dir *d);

#endif
