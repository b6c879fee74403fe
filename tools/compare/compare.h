/*
** tools/compare/compare.h — `tessel compare`: the same training run under
** several configurations (typically several strategies), side by side,
** for a decision that holds up to the machine's noise.
**
** Every configuration trains the same model on the same data with the same
** seed for the same number of steps (checked before anything runs, as is
** each configuration with `tessel check --world N`). Each runs K times,
** interleaved, every other round reversed (A B C, C B A, A B C ...), so
** slow drifts of the machine hit every configuration alike; each trial writes only inside its own directory
** OUT/<index>-<label>/trial-<k>/ (log, metrics, checkpoints, TensorBoard),
** never where the configuration itself points. The metrics and summaries
** are then read back: loss equivalence against the first configuration
** (or, for a strategy that declares itself lossy, validation loss),
** throughput as the median and spread over trials, time and memory split,
** traffic per communicator, and a verdict that names the faster
** configuration only when the difference exceeds the noise.
*/
#ifndef TSL_COMPARE_H
#define TSL_COMPARE_H

#include <stdint.h>
#include <stdio.h>
#include "common/status.h"

#define TSL_CMP_MAX_GROUPS 16
#define TSL_CMP_MAX_TRIALS 32
#define TSL_CMP_KINDS 5 /* params, grads, optim, activations, scratch */
/* --out at most: a run's directory (out/N-label, label < 64) and the files in it
** must fit the 4096-byte path buffers below. */
#define TSL_CMP_MAX_OUT 3072

typedef struct tsl_cmp_group {
  char name[64];
  double payload, bus; /* bytes per step: the mean over the measured steps
                          (a strategy that talks every few steps counts) */
  double *payload_steps, *bus_steps; /* per measured step, 0 where silent */
} tsl_cmp_group;

/* A memory tier's peak (largest over ranks) and what it was made of. */
typedef struct tsl_cmp_memory {
  double peak, kind[TSL_CMP_KINDS];
  int rank; /* the rank with that peak */
} tsl_cmp_memory;

/* The mean step, in seconds: parts are means over ranks (the *_max the
** largest rank's), averaged over the measured steps. */
typedef struct tsl_cmp_split {
  double step, compute, comm_wait, bubble, comm_wait_max, bubble_max;
} tsl_cmp_split;

/* One run of one configuration. */
typedef struct tsl_cmp_trial {
  char dir[4200];
  int failed;
  char error[1024];
  int n_steps;
  double *loss, *tps, *step_s; /* per step */
  double val_loss;             /* the last one logged, NAN when none */
  double tokens_per_s, step_ms, mfu;
  tsl_cmp_split split;
  tsl_cmp_memory memory[3]; /* device, host, nvme: from summary.json */
  int oversubscribed, lossy;
  tsl_cmp_group groups[TSL_CMP_MAX_GROUPS];
  int n_groups;
} tsl_cmp_trial;

typedef struct tsl_cmp_run {
  char *config;   /* the file as given */
  char label[64]; /* NAME@RANKS, with #2, #3 ... when two would be the same */
  int ranks;
  int tensorboard; /* the config writes TensorBoard files (redirected too) */
  int text_data;   /* the config prepares data.text (into OUT/data) */
  char *resolved;  /* resolved YAML of the config as run */
  char dir[4096];  /* OUT/<index>-<label> */
  int failed;      /* every trial failed, or the config did not load */
  char error[1024];
  tsl_cmp_trial trials[TSL_CMP_MAX_TRIALS];
  int typical;     /* the trial with the median throughput: its figures are shown */
  int n_ok;        /* trials that completed */
  /* over trials */
  double tps, tps_lo, tps_hi, spread; /* median, min, max of the trials' medians; spread = (hi-lo)/median */
  double final_loss, max_dloss, max_rel, val_rel; /* max_*: over the steps where both losses are finite */
  char nonfinite[160]; /* "": every loss finite on both sides; else the first step where one is not, said */
  int equivalent, lossy, reproducible, oversubscribed;
} tsl_cmp_run;

typedef struct tsl_compare {
  tsl_cmp_run *runs;
  int n_runs;
  int64_t steps;
  int repeat;           /* trials per configuration */
  double tolerance;     /* relative loss difference per step called "equivalent" */
  double val_tolerance; /* relative validation-loss difference for a lossy strategy */
  int warmup;           /* steps left out of throughput figures */
  const char *const *sets;
  int n_sets;
  char out[4096];       /* the report folder: at most TSL_CMP_MAX_OUT bytes, so that a
                        ** run's directory and files under it fit their buffers */
  int allow_different;
} tsl_compare;

#define TSL_CMP_MAX_TIED 64

/* The decision. Only runs that completed and train what the first trains
** take part. The fastest is compared with each other one; those it is not
** measurably faster than are tied with it, and among the tied the one with
** the least device memory per rank is the choice. */
typedef struct tsl_cmp_verdict {
  const tsl_cmp_run *fastest, *runner_up; /* runner_up: the next fastest, NULL when none */
  const tsl_cmp_run *smallest;            /* least device memory per rank of all */
  const tsl_cmp_run *choice;              /* the recommendation */
  const tsl_cmp_run *tied[TSL_CMP_MAX_TIED]; /* the fastest and those not measurably slower */
  int n_tied;
  /* what percent and spread compare the fastest with: the slowest of those
  ** tied with it, or the runner-up when none is */
  const tsl_cmp_run *versus;
  double percent;                          /* how much faster the fastest is than versus (median tokens/s) */
  double spread;                           /* the larger spread of those two, percent */
  int measurable;                          /* that difference exceeds the noise */
} tsl_cmp_verdict;

/* Load every configuration (with the shared --set overrides and the step
** count), give each a unique label and keep its resolved YAML. Model, data,
** seed and batch must agree with the first: otherwise a TESSEL_E_CONFIG
** error naming the difference, unless allow_different. Then `tessel check
** --world N` each one as it will run; any failure is TESSEL_E_CONFIG with
** every failing configuration's error, before anything has run. */
tsl_status tsl_compare_plan(tsl_compare *c);
/* The arguments that put a trial's files under `dir` (and prepared data
** under OUT/data): appended after the user's --set, so they win. Writes
** up to `cap` pointers into argv, into storage `buf`; returns the count. */
int tsl_compare_redirects(const tsl_compare *c, const tsl_cmp_run *run, const char *dir, char (*buf)[4200],
                          const char **argv, int cap);
/* Run the trials, interleaved (A B C, C B A, ...), each in
** OUT/<index>-<label>/trial-<k>/. */
void tsl_compare_run_all(tsl_compare *c);
/* Read every trial's metrics and summary and compute the figures. */
tsl_status tsl_compare_measure(tsl_compare *c);
/* Loss equivalence of `run` against `ref` (their typical trials): per step
** within c->tolerance for an exact strategy, by validation loss within
** c->val_tolerance for a lossy one. A NaN or infinite loss at any step, on
** either side or on both, is a difference (run->nonfinite says where). */
void tsl_compare_judge(const tsl_compare *c, tsl_cmp_run *run, const tsl_cmp_run *ref);
/* The decision: fastest, by how much, whether it exceeds the noise. */
void tsl_compare_verdict(const tsl_compare *c, tsl_cmp_verdict *v);
/* The tables (tables.c): runs, time split, memory split, traffic. */
struct tsl_table;
void tsl_compare_runs_table(const tsl_compare *c, struct tsl_table *t);
void tsl_compare_time_table(const tsl_compare *c, struct tsl_table *t);
void tsl_compare_memory_table(const tsl_compare *c, struct tsl_table *t);
void tsl_compare_comm_table(const tsl_compare *c, struct tsl_table *t);
/* The tables on `out`, report.md and the charts in the report folder. */
tsl_status tsl_compare_report(tsl_compare *c, FILE *out);
/* gnuplot charts: loss, Δloss against the first, throughput, memory.
** 0 when drawn; otherwise why in `why`. */
int tsl_compare_charts(const tsl_compare *c, char *why, size_t cap);
void tsl_compare_free(tsl_compare *c);
/* tessel's own error line in a log (a positioned config error or an
** "error:" line, not mpirun's banner around it); "see LOG" when none. */
void tsl_compare_first_error(const char *log, char *out, size_t cap);

#endif
