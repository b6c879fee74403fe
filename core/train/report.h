/*
** core/train/report.h — what a run tells people and files about each step:
** one JSON object per step in the metrics file (JSONL), TensorBoard scalars
** when log.tensorboard is set, one human line per logged step, on a terminal
** a progress bar with an ETA, and at the end a summary (summary.h).
*/
#ifndef TSL_REPORT_H
#define TSL_REPORT_H

#include <stdio.h>
#include "runtime/runtime.h"
#include "train/tfevents.h"

/* A step's wall time and the parts it splits into. compute is everything
** the rank did not spend blocked in communication (comm.h): kernels, the
** optimizer, host work. comm_wait is time blocked in collectives; bubble
** is time blocked in point-to-point transfers, where a pipeline stage
** waits for its neighbour. compute + comm_wait + bubble = step. */
typedef struct tsl_phases {
  double step, compute, comm_wait, bubble;
} tsl_phases;

typedef struct tsl_step_report {
  int64_t step, steps;
  uint64_t tokens;                /* trained through this step since step 0, the resumed steps included */
  double loss, lr, grad_norm;
  double step_time, tokens_per_s; /* rank 0's */
  double mfu;                     /* NAN when the peak is unknown */
  double val_loss;                /* NAN when not evaluated this step */
  tsl_phases mine;                /* this rank's */
  tsl_phases mean, max;           /* over ranks, after tsl_step_agree */
  int stop;                       /* after tsl_step_agree: 0, or why every rank stops (signals.h) */
  tessel_tier_stats tier[TESSEL_TIER_COUNT]; /* rank 0's use; peak: the largest over ranks */
  uint64_t activations[TESSEL_TIER_COUNT], scratch[TESSEL_TIER_COUNT]; /* rank 0's, in use */
} tsl_step_report;

/* What the end-of-run summary needs of each step (rank 0). */
typedef struct tsl_step_record {
  double step_time, tokens_per_s, mfu;
  tsl_phases mean, max;
} tsl_step_record;

typedef struct tsl_reporter {
  FILE *metrics;        /* rank 0 only */
  int metrics_device;   /* log.metrics is a character device (/dev/null): summary.json goes to log.dir */
  tsl_tfevents tb;      /* rank 0 only, when log.tensorboard is set */
  int progress;         /* draw a progress bar */
  int bar_drawn;
  double started;       /* when this invocation's first step began */
  int64_t first_step;   /* the step it resumed from (0: a fresh run) */
  uint64_t tokens_per_step;
  tsl_step_record *steps; /* this invocation's steps, in order */
  int64_t n_steps, cap_steps;
} tsl_reporter;

/* Open the metrics file and the TensorBoard file (rank 0). A resumed run
** keeps the metrics lines of steps up to and including `resume_step` and
** drops the rest, so the file always describes one trajectory. */
tsl_status tsl_reporter_open(tsl_reporter *r, const tsl_runtime *rt, int64_t resume_step);
void tsl_reporter_close(tsl_reporter *r);

/* Collective, once per step on every rank: memory peaks, the time split
** (mean and largest over ranks) and the stop decision — `stop_mine` is this
** rank's reason to stop (0: none); every rank gets the same s->stop. Two
** small reductions on the core's communicator. */
tsl_status tsl_step_agree(const tsl_runtime *rt, tsl_step_report *s, int stop_mine);
/* Write the JSONL line and TensorBoard scalars (rank 0), every log.every
** steps or at the end the human line with the median tokens/s and step
** time over the last log.every steps; update the progress bar. */
tsl_status tsl_report_step(tsl_reporter *r, const tsl_runtime *rt, const tsl_step_report *s);
/* Write `json` (a cJSON object) to `path` whole or not at all. */
tsl_status tsl_write_json_file(const char *path, const void *json);
/* A line of text for people, clearing the progress bar first (rank 0). */
void tsl_report_line(tsl_reporter *r, const char *fmt, ...) TSL_PRINTF(2, 3);

#endif
