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
** same plugin build, then unless every rank's mesh hook gave the same mesh. */
tsl_status tsl_strategy_check_agreement(tsl_runtime *rt);

/* Host tables of other modules. */
const tessel_model_api *tsl_host_model(void);
const tessel_comm_api *tsl_host_comm(void);
const tessel_state_api *tsl_host_state(void);

/* Calling a hook. Before it: tsl_hook_enter clears the instance's error
** buffer and the core's message. After a failure: tsl_hook_failed frames
** the plugin's message (or, when it set none, the message of the host call
** that failed) as "strategy 'NAME' failed in HOOK on rank R: ..."; a
** configuration error without a position gets the plugin section's.
** tsl_hook_status does the same for a status that may be success. A
** status that is neither 0 nor a TESSEL_E_* (a positive one too) is the
** plugin's bug, reported as such: callers treat any status != TESSEL_OK
** from a hook as its failure.
** tsl_hook_refuse: the hook succeeded but the core refuses its answer; the
** core's message (set with tsl_error just before) framed the same way, as
** TESSEL_E_INTERNAL. */
void tsl_hook_enter(tsl_runtime *rt);
tsl_status tsl_hook_failed(tsl_runtime *rt, tsl_status st, const char *hook_fmt, ...) TSL_PRINTF(3, 4);
tsl_status tsl_hook_refuse(tsl_runtime *rt, const char *hook_fmt, ...) TSL_PRINTF(2, 3);
tsl_status tsl_hook_status(tsl_runtime *rt, tsl_status st, const char *hook);
/* Whether the plugin itself called set_error with `st` since the last
** tsl_hook_enter: its own word, not a host call's status passed on. */
int tsl_hook_said(tsl_runtime *rt, tsl_status st);

#endif
