/*
** core/train/run.h — one training run from a config file, every stage.
*/
#ifndef TSL_RUN_H
#define TSL_RUN_H

#include "train/trainer.h"

/* Build a runtime for `config` (with --set overrides) on the world `w`,
** agreeing across ranks after each stage (config and strategy, plugin
** builds, devices, communicators), train, and release everything. Errors
** are printed as they are agreed on; the status says how it ended. */
tsl_status tsl_run_config(const tsl_world *w, const char *config, const char *const *sets, int n_sets,
                          const tsl_train_opts *opts);

#endif
