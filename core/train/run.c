/* core/train/run.c — `tessel run`: a session driven to its end. */
#include "train/run.h"

#include <math.h>

#include "train/session.h"
#include "train/signals.h"

tsl_status tsl_run_config(const tsl_world *w, const char *config, const char *const *sets, int n_sets,
                          const tsl_train_opts *opts) {
  tessel_run *run = NULL;
  tsl_run_end end = {.final_loss = NAN, .val_loss = NAN};
  tsl_train_opts o = *opts;
  o.world_abort = w->size > 1;
  tsl_status st = tsl_session_open(w, config, sets, n_sets, &o, &run);
  if (st < 0) { /* nothing to save: mpirun's SIGTERM as the ranks leave is not a stop request */
    tsl_signals_settle();
    return st;
  }
  tsl_trainer *t = tsl_session_trainer(run);
  const tsl_settings *s = &tsl_session_runtime(run)->settings;
  while (st >= 0 && !end.stop && tsl_trainer_last_step(t) < s->train.steps) {
    tsl_step_report r;
    st = tsl_trainer_step(t, &r);
    if (st < 0) break;
    end.stop = r.stop;
    end.final_loss = r.loss;
    if (!isnan(r.val_loss)) end.val_loss = r.val_loss;
  }
  if (st >= 0) st = tsl_trainer_finish(t, &end);
  tessel_run_close(run);
  return st >= 0 && end.stop ? TSL_TRAIN_STOPPED : st;
}
