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

typedef struct tsl_train_opts {
  const char *resume_dir; /* resume from this checkpoint (overrides checkpoint.resume) */
  int world_abort;        /* abort the whole job on a rank-local failure */
  double started;         /* tsl_now() when the command began (0: when training begins) */
} tsl_train_opts;

/* tsl_train's status when it stopped early with a checkpoint to resume from
** (positive: not a failure). */
#define TSL_TRAIN_STOPPED 1

/* Run the configured training. The runtime must have its config, strategy,
** devices and communicators. */
tsl_status tsl_train(tsl_runtime *rt, const tsl_train_opts *opts);

#endif
