/*
** core/train/session.h — a training run as an object (struct tessel_run):
** the runtime built from a config on a world of ranks, its run directory,
** and its trainer. The public C API (tessel/tessel.h) is its outside;
** `tessel run` (run.h) drives one to its end.
*/
#ifndef TSL_SESSION_H
#define TSL_SESSION_H

#include "tessel/tessel.h"
#include "train/trainer.h"

/* Collective over `w`: load `config` (with --set overrides), start the
** strategy, lock the run directory, start the devices and communicators —
** agreeing across ranks after each stage, each failure printed as it is
** agreed on — and open the trainer. */
tsl_status tsl_session_open(const tsl_world *w, const char *config, const char *const *sets, int n_sets,
                            const tsl_train_opts *opts, tessel_run **out);
tsl_trainer *tsl_session_trainer(tessel_run *run);
tsl_runtime *tsl_session_runtime(tessel_run *run);

#endif
