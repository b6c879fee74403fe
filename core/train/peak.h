/*
** core/train/peak.h — the peak FLOP/s that MFU is measured against.
**
** device.peak_tflops when the config gives it; otherwise the CPU backend's
** sustained sgemm rate on this machine, measured once — by `tessel bench
** peak`, or automatically by the first run on a machine that has no record
** — and kept per host in $XDG_CACHE_HOME/tessel (or ~/.cache/tessel), so
** machines sharing a home directory each keep their own.
*/
#ifndef TSL_PEAK_H
#define TSL_PEAK_H

#include "backend.h"
#include "runtime/runtime.h"
#include "runtime/settings.h"

/* Where this machine's measurement is kept (heap string). */
char *tsl_peak_cache_path(void);
/* Best sgemm GFLOP/s of the started backend `be` over square sizes up to
** `max_n`, printing each size's rate to `out` when not NULL. */
double tsl_peak_measure(tsl_backend *be, int max_n, FILE *out);
/* Record `gflops` measured with `threads` threads for this machine. */
tsl_status tsl_peak_save(int threads, double gflops);
/* Peak FLOP/s of one rank for MFU: device.peak_tflops, else the recorded
** rate per thread times `cores` (the cores the rank's threads really get),
** else 0 (unknown: the backend is not the CPU's, or nothing is recorded with
** the OpenBLAS kernels loaded now). */
double tsl_peak_flops(const tsl_settings *s, double cores);
/* Collective: with no peak on record for this CPU (and no
** device.peak_tflops), the first local rank of each machine measures it
** with the started backend (a second or two, once per machine) while the
** others wait. A failure to record it is a warning: MFU is then unknown. */
tsl_status tsl_peak_ensure(tsl_runtime *rt);

#endif
