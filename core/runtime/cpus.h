/*
** core/runtime/cpus.h — the CPU cores a rank may use.
**
** A rank's cores are its affinity mask (sched_getaffinity): what taskset,
** Slurm's --cpus-per-task, a cgroup cpuset or mpirun's --bind-to left it,
** not the machine's core count. Ranks on one machine whose masks overlap
** share those cores, so each gets its part of them; when more ranks share a
** set than it has cores, the machine is oversubscribed and timings measure
** the sharing, not the strategy.
*/
#ifndef TSL_CPUS_H
#define TSL_CPUS_H

#include <stddef.h>
#include <stdint.h>

#define TSL_CPUS_MASK_BYTES 128 /* 1024 CPUs, glibc's cpu_set_t */

typedef struct tsl_cpus {
  int cores;                              /* CPUs in this process's affinity mask (>= 1) */
  int share;                              /* ranks on this machine whose masks overlap it, itself included */
  unsigned char mask[TSL_CPUS_MASK_BYTES]; /* the mask, as bytes (for exchanging between ranks) */
  char list[128];                         /* the mask as a CPU list, e.g. "0-3,8" */
} tsl_cpus;

/* This process's affinity mask; share = 1. Falls back to the online CPU
** count when the mask cannot be read. */
void tsl_cpus_self(tsl_cpus *c);
/* Whether two masks (TSL_CPUS_MASK_BYTES each) have a CPU in common. */
int tsl_cpus_overlap(const unsigned char *a, const unsigned char *b);
/* Threads a rank should run with: `requested` (device.threads) when set,
** else its part of the cores it shares; never more than its cores. */
int tsl_cpus_threads(const tsl_cpus *c, int requested);
/* The cores a rank's threads really get: its threads, or less when ranks
** sharing its cores outnumber them (the basis of MFU). */
double tsl_cpus_effective(const tsl_cpus *c, int threads);
/* More threads on the shared cores than there are cores. */
int tsl_cpus_oversubscribed(const tsl_cpus *c, int threads);

#endif
