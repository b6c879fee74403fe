/*
** core/train/report.h — what a run tells people and files about each step:
** one JSON object per step in the metrics file (JSONL), one human line per
** logged step, and on a terminal a progress bar with an ETA.
*/
#ifndef TSL_REPORT_H
#define TSL_REPORT_H

#include <stdio.h>
#include "runtime/runtime.h"

typedef struct tsl_step_report {
  int64_t step, steps;
  double loss, lr, grad_norm, step_time, tokens_per_s;
  double mfu;      /* NAN when the peak is unknown */
  double val_loss; /* NAN when not evaluated this step */
  tessel_tier_stats tier[TESSEL_TIER_COUNT]; /* peaks: the largest over ranks */
} tsl_step_report;

typedef struct tsl_reporter {
  FILE *metrics;   /* rank 0 only */
  int progress;    /* draw a progress bar */
  int bar_drawn;
  double started;  /* wall clock of the first step of this run */
  int64_t first_step;
} tsl_reporter;

/* Open the metrics file (rank 0). A resumed run keeps the lines of steps up
** to and including `resume_step` and drops the rest, so the file always
** describes one trajectory. */
tsl_status tsl_reporter_open(tsl_reporter *r, const tsl_runtime *rt, int64_t resume_step);
void tsl_reporter_close(tsl_reporter *r);

/* Fill the memory peaks (collective: the largest over ranks). */
tsl_status tsl_report_memory(const tsl_runtime *rt, tsl_step_report *s);
/* Write the JSONL line (rank 0) and, every log.every steps or at the end,
** the human line; update the progress bar. */
tsl_status tsl_report_step(tsl_reporter *r, const tsl_runtime *rt, const tsl_step_report *s);
/* A line of text for people, clearing the progress bar first (rank 0). */
void tsl_report_line(tsl_reporter *r, const char *fmt, ...) TSL_PRINTF(2, 3);

/* Peak FLOP/s of one rank for MFU: device.peak_tflops, else what `tessel
** bench peak` measured on this machine, per thread, times the cores the
** rank can use (`cores`: its threads, or its share of the machine's cores
** when more threads than cores are running), else 0 (unknown). */
double tsl_peak_flops(const tsl_settings *s, double cores);
/* Where `tessel bench peak` keeps its measurement. */
char *tsl_peak_cache_path(void);

#endif
