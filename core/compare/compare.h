/*
** core/compare/compare.h — `tessel compare`: the same training run under
** several configurations (typically several strategies), side by side.
**
** Every configuration trains the same model on the same data with the same
** seed for the same number of steps (checked before anything runs), each
** through mpirun when it asks for more than one rank. Their metrics files
** are then read back and summarised: final loss, the largest per-step loss
** difference against the first configuration with an equivalence verdict,
** throughput, MFU, peak memory per tier and rank, and bytes sent per step
** per communicator. A run that fails is reported as failed with its error;
** the others still run.
*/
#ifndef TSL_COMPARE_H
#define TSL_COMPARE_H

#include <stdint.h>
#include <stdio.h>
#include "common/status.h"

#define TSL_CMP_MAX_GROUPS 16
/* --out at most: a run's directory (out/N-label, label < 64) and the files in it
** must fit the 4096-byte path buffers below. */
#define TSL_CMP_MAX_OUT 3072

typedef struct tsl_cmp_group {
  char name[64];
  double payload, bus; /* bytes per step: the median over the measured steps
                          (a validation step sends more; it is not typical) */
  double *payload_steps, *bus_steps; /* per measured step, 0 where silent */
} tsl_cmp_group;

typedef struct tsl_cmp_run {
  char *config;   /* the file as given */
  char label[64]; /* NAME@RANKS: the file name without directory and extension */
  int ranks;
  char *resolved; /* resolved YAML of the config as run */
  char dir[4096]; /* its log directory */
  int failed;
  char error[1024];
  /* from the metrics file */
  int n_steps;
  double *loss;   /* per step */
  double *tps;    /* tokens/s per step */
  double *step_s; /* seconds per step */
  double final_loss, max_dloss, max_rel;
  int equivalent;
  double tps_median, tps_min, tps_max, step_ms, mfu; /* mfu NAN when unknown */
  double peak[3];                                    /* device, host, nvme: largest over steps and ranks */
  tsl_cmp_group groups[TSL_CMP_MAX_GROUPS];
  int n_groups;
} tsl_cmp_run;

typedef struct tsl_compare {
  tsl_cmp_run *runs;
  int n_runs;
  int64_t steps;
  double tolerance; /* relative loss difference called "equivalent" */
  int warmup;       /* steps left out of throughput figures */
  const char *const *sets;
  int n_sets;
  char out[4096];   /* the report folder: at most TSL_CMP_MAX_OUT bytes, so that a
                    ** run's directory and files under it fit their buffers */
  int allow_different;
} tsl_compare;

/* Load every configuration (with the shared --set overrides and the step
** count) and keep its resolved YAML. One that does not load becomes a failed
** row with its error. Model, data, seed and batch must agree with the first
** that loads: otherwise a TESSEL_E_CONFIG error naming the difference,
** unless allow_different. */
tsl_status tsl_compare_plan(tsl_compare *c);
/* Run each configuration in turn into OUT/<index>-<label>/. */
void tsl_compare_run_all(tsl_compare *c);
/* Read the metrics of every run that did not fail and compute its figures. */
tsl_status tsl_compare_measure(tsl_compare *c);
/* The table on `out`, report.md and the charts in the report folder. */
tsl_status tsl_compare_report(tsl_compare *c, FILE *out);
void tsl_compare_free(tsl_compare *c);

#endif
