/*
** core/optim/optim.h — the learning-rate schedule, gradient clipping and
** the AdamW step over core-stored parameters.
*/
#ifndef TSL_OPTIM_H
#define TSL_OPTIM_H

#include "model/gpt.h"

/* Learning rate for optimizer step `step` (1-based): linear warm-up over
** warmup_steps to lr, then cosine (or linear, or constant) decay to min_lr
** at the last step. */
double tsl_lr_at(const tsl_settings *s, int64_t step);

/* The global gradient norm: the strategy's grad_norm hook, or the norm of
** this rank's core-stored gradients (right when they are replicated). */
tsl_status tsl_grad_norm(tsl_model *m, double *norm);

/* Multiplier that clips a gradient of norm `norm` to `clip` (1 when clip is
** 0 or the norm is within it). */
float tsl_clip_scale(double norm, double clip);

/* One optimizer step: the strategy's optimizer_step when it owns the
** optimizer, else AdamW on every core-stored parameter, with decoupled
** weight decay on parameters without TESSEL_PARAM_NO_DECAY. */
tsl_status tsl_optimizer_step(tsl_model *m, int64_t step, double lr, float grad_scale);

#endif
