/*
** core/optim/optim.h — learning-rate schedule, gradient norm and clipping,
** and the optimizer over the core's placed state.
**
** The optimizer is AdamW with decoupled weight decay (off for parameters
** flagged TESSEL_PARAM_NO_DECAY) and two slots, "m" and "v". It runs over
** this rank's owned pieces of the flat state (all of it when unsharded),
** parameter by parameter, wherever the master weights and slots live: on
** the device, or streamed through device scratch from the host or NVMe
** tier. With sharded slots the updated master and working weights are then
** all-gathered piece by piece over the shard group.
*/
#ifndef TSL_OPTIM_H
#define TSL_OPTIM_H

#include "model/model.h"

/* The optimizer's name and slots. */
void tsl_optimizer_describe(const tsl_settings *s, tessel_optimizer_info *out);

/* Learning rate for optimizer step `step` (1-based): linear warm-up over
** optimizer.warmup_steps, then the decay schedule down to min_lr. */
double tsl_lr_at(const tsl_settings *s, int64_t step);

/* The global gradient norm (collective): the strategy's grad_norm hook, or
** the core's, which counts every logical gradient element once. */
tsl_status tsl_grad_norm(tsl_model *m, double *norm);

/* Multiplier that clips a gradient of norm `norm` to `clip` (1 when clip is
** 0 or the norm is within it). */
float tsl_clip_scale(double norm, double clip);

/* One optimizer step: the strategy's optimizer_step when it owns the
** optimizer, else the core's over its state. */
tsl_status tsl_optimizer_step(tsl_model *m, int64_t step, double lr, float grad_scale);

#endif
