/*
** core/runtime/build.h — building a runtime in stages (see runtime.h).
*/
#ifndef TSL_BUILD_H
#define TSL_BUILD_H

#include "runtime/runtime.h"

/* Load the configuration (with --set overrides), read the core's settings,
** check the files they name, start the strategy for `world_size` ranks
** (when the settings are valid) and report keys nobody read; sets the log
** level. A failure reports every configuration mistake found on the way
** (tsl_config_outcome). */
tsl_status tsl_runtime_configure(tsl_runtime *rt, const char *path, const char *const *sets, int n_sets,
                                  int world_size);
/* The same without the strategy: every mistake of the configuration outside
** its plugin section (whose keys are left to the strategy), for planning
** before any strategy is chosen. */
tsl_status tsl_runtime_configure_core(tsl_runtime *rt, const char *path, const char *const *sets, int n_sets);
/* Compare every rank's resolved configuration with rank 0's (collective;
** after tsl_runtime_configure succeeded on every rank, before anything is
** sized from the configuration). Where some differ: TESSEL_E_CONFIG on
** every rank, with the same report naming each rank that differs, the
** first key where it does and both values with where they were written.
** The few keys that may differ per rank are listed in build.c. */
tsl_status tsl_runtime_check_config_agreement(tsl_runtime *rt);
/* The threads a rank is asked for: device.threads, else OMP_NUM_THREADS
** when it is a plain count, else 0 (the rank's share of its CPUs). */
int tsl_threads_asked(const tsl_settings *s);
/* Does this build have the backend device.kind asks for? The CUDA backend
** is a separate file (libtessel-cuda.so, built where nvcc is found):
** without it, a FILE:LINE:COL error at device.kind, the one
** tsl_runtime_devices would give. Loads nothing: a build with the file
** passes here on a machine without a GPU. */
tsl_status tsl_runtime_check_backend(tsl_runtime *rt);
/* Select and start the device backend, the memory ledger and the streams. */
tsl_status tsl_runtime_devices(tsl_runtime *rt);
/* Build the communicators of the strategy's mesh (collective). */
tsl_status tsl_runtime_comm(tsl_runtime *rt);
/* A private one-rank runtime on the CPU backend with an unbounded device
** tier and no strategy, for work beside a run (sampling) and for tests;
** `s` supplies the model and seed. Release with tsl_runtime_destroy. */
tsl_status tsl_runtime_local(tsl_runtime *rt, const tsl_settings *s, int threads);
/* Release everything the runtime holds, in reverse order. */
void tsl_runtime_destroy(tsl_runtime *rt);

#endif
