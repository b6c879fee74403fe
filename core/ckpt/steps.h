/*
** core/ckpt/steps.h — the checkpoint directory's step_N directories, its
** `latest` record and temporaries (internal to the checkpoint module).
*/
#ifndef TSL_CKPT_STEPS_H
#define TSL_CKPT_STEPS_H

#include <stdint.h>

#include "common/status.h"

/* This process's temporary directory for step `step` in `dir` (heap): what
** a save writes before renaming it into place, and what a prune renames a
** step to before removing it; the next start sweeps away any a crash left. */
char *tsl_ckpt_temporary_dir(const char *dir, int64_t step);
/* Put the finished temporary directory in place of `final` (moving an
** existing one aside until the new one is there). */
tsl_status tsl_ckpt_rename_into_place(const char *tmp, const char *final);
/* Record `step` in dir/latest as the newest checkpoint of the run. */
tsl_status tsl_ckpt_track(const char *dir, int64_t step);
/* After the save of step `saved` (rank 0): list in dir/abandoned every step
** above it that is there (the part of a run that went back), and take
** `saved` off that list. Pruning and automatic resume pass over what it
** lists. */
tsl_status tsl_ckpt_note_abandoned(const char *dir, int64_t saved);
/* Keep the newest `keep` steps up to `just_saved` (0: all), of those
** dir/abandoned does not list; an old step that cannot be removed is a
** warning. */
tsl_status tsl_ckpt_prune(const char *dir, int keep, int64_t just_saved);
/* dir/latest, where each save names itself, must be a file when it is
** there: a directory (or another kind) in its place let a run train a
** step, fail at its first save with a file-system error, and do so again
** at every rerun, one step further each time. Checked by the run before
** its first step and by tessel check. */
tsl_status tsl_ckpt_check_latest(const char *dir);
/* tsl_ckpt_latest; `warn`: say so when the latest file cannot be followed. */
tsl_status tsl_ckpt_latest_of(const char *dir, int warn, char **path, int64_t *step);

#endif
