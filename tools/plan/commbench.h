/*
** tools/plan/commbench.h — `tessel bench comm`: an α–β model of every
** collective at every group size the ranks at hand can form, measured
** through the core's communication front end (MPI on the CPU backend,
** NCCL on the CUDA backend), and the memory bandwidth a rank streams at
** while all ranks do: a machine profile for `tessel plan` (profile.h).
*/
#ifndef TSL_COMMBENCH_H
#define TSL_COMMBENCH_H

#include <stdio.h>

#include "runtime/mpi.h"
#include "runtime/settings.h"

typedef struct tsl_commbench_opts {
  tsl_device_kind device;
  int threads;       /* CPU threads per rank (0: the cores shared among the ranks of a machine) */
  double max_bytes;  /* largest message (payload bytes) */
  const char *previous; /* rank 0: the profile recorded before (NULL: none) */
} tsl_commbench_opts;

/* Measure (collective over the world) and, on rank 0, return the profile
** as JSON text (heap) with a table of the fits printed on `log`. Links of
** `previous` measured at other world sizes are kept: a profile can hold
** the same machine at 2, 4 and 8 ranks. */
tsl_status tsl_commbench_run(const tsl_world *w, const tsl_commbench_opts *o, FILE *log, char **json);

#endif
