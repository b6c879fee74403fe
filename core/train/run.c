/* core/train/run.c */
#include "train/run.h"

#include "plugin/host.h"
#include "common/util.h"
#include "runtime/build.h"
#include "train/rundir.h"

tsl_status tsl_run_config(const tsl_world *w, const char *config, const char *const *sets, int n_sets,
                          const tsl_train_opts *opts) {
  tsl_runtime rt = {0};
  rt.world = *w;
  tsl_train_opts o = *opts;
  o.world_abort = w->size > 1;
  if (!o.started) o.started = tsl_now();
  tsl_status st = tsl_runtime_configure(&rt, config, sets, n_sets, rt.world.size);
  st = tsl_world_agree(&rt.world, st);
  if (st >= 0) st = tsl_world_agree(&rt.world, tsl_strategy_check_agreement(&rt));
  tsl_run_dir dir = {.n = 0};
  if (st >= 0) st = tsl_world_agree(&rt.world, tsl_run_dir_open(&rt, &dir));
  if (st >= 0) st = tsl_world_agree(&rt.world, tsl_runtime_devices(&rt));
  if (st >= 0) st = tsl_world_agree(&rt.world, tsl_runtime_comm(&rt));
  if (st >= 0) st = tsl_train(&rt, &o);
  tsl_run_dir_close(&dir);
  tsl_runtime_destroy(&rt);
  return st;
}
