/*
** core/train/trainer.h — `tessel run`: the training loop.
**
** Per step: the strategy's (or default) schedule runs forward and backward
** over the micro-batches; the loss is averaged over every token of the
** global batch; the gradient norm is taken and clipped; the optimizer
** steps; metrics are reported. Validation every train.eval_every steps and
** at the end; checkpoints every checkpoint.every steps and at the end; a
** sample of generated text at the end. A NaN or infinite loss stops the run
** before the bad gradient is applied, naming the step and the last good
** checkpoint. A signal, train.stop_after or train.stop_after_time stops it
** after a step with a checkpoint (signals.h). The run ends with a summary
** (summary.h).
*/
#ifndef TSL_TRAINER_H
#define TSL_TRAINER_H

#include "runtime/runtime.h"
#include "train/report.h"
#include "train/summary.h"

typedef struct tsl_train_opts {
  const char *resume_dir; /* resume from this checkpoint (overrides checkpoint.resume) */
  /* how the caller names a checkpoint to resume from, as messages advise
  ** it: the command line's "tessel run CONFIG --resume"; NULL where it
  ** cannot (the C API: messages name the record automatic resume follows) */
  const char *resume_cmd;
  int world_abort;        /* abort the whole job on a rank-local failure */
  double started;         /* tsl_now() when the command began (0: when training begins) */
} tsl_train_opts;

/* tsl_run_config's status when it stopped early with a checkpoint to resume
** from (positive: not a failure). */
#define TSL_TRAIN_STOPPED 1

typedef struct tsl_trainer tsl_trainer;

/* Collective: the data, the model (initialised, or resumed from a
** checkpoint), the metrics; prints the run's header. The runtime must have
** its config, strategy, devices and communicators. */
tsl_status tsl_trainer_open(tsl_runtime *rt, const tsl_train_opts *opts, tsl_trainer **out);
/* Collective: the next step — train, validate when due, agree on the
** figures and on stopping (r->stop), report, checkpoint when due (every
** checkpoint.every steps, the last step, a stop). After a stop every later
** step is refused. A failure is printed, and with world_abort one rank's
** failure ends the job. */
tsl_status tsl_trainer_step(tsl_trainer *t, tsl_step_report *r);
/* Collective: the validation loss over train.eval_batches batches. */
tsl_status tsl_trainer_evaluate(tsl_trainer *t, double *val_loss);
/* Collective: a checkpoint of the newest step (unless one exists); *path
** is its directory, valid until the next save or close. */
tsl_status tsl_trainer_save(tsl_trainer *t, const char **path);
int64_t tsl_trainer_last_step(const tsl_trainer *t);
/* Collective: the end of `tessel run` — the stop message or the final
** validation loss, the summary, the sample. */
tsl_status tsl_trainer_finish(tsl_trainer *t, tsl_run_end *end);
void tsl_trainer_close(tsl_trainer *t);

#endif
