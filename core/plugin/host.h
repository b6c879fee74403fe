/*
** core/plugin/host.h — the services table the core hands to a plugin, and
** the calls that run a plugin's setup hooks with the core's error framing.
*/
#ifndef TSL_HOST_H
#define TSL_HOST_H

#include "runtime/runtime.h"

const tessel_host_api *tsl_host_api(void);

/* Load the configured strategy (rt->settings.plugin), create its instance
** from its config section, check the section for unknown keys, and ask for
** its mesh over `world_size` ranks. A config without a plugin gets the
** one-axis mesh "dp" of size 1 (and an error for a larger world). */
tsl_status tsl_strategy_start(tsl_runtime *rt, int world_size);
/* Destroy the instance (the library stays loaded). */
void tsl_strategy_stop(tsl_runtime *rt);

/* Collective: stop with a per-rank report unless every rank loaded the
** same plugin build. */
tsl_status tsl_strategy_check_agreement(tsl_runtime *rt);

/* Host tables of other modules. */
const tessel_model_api *tsl_host_model(void);

#endif
