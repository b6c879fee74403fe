/*
** core/train/summary.h — the end-of-run summary: printed for people and
** written to LOG_DIR/summary.json for tools (`tessel compare` reads it).
**
** Medians leave out the first step of the invocation (warm-up: first
** touches of memory, thread start-up) when more than one step ran. Memory
** is each tier's highest use on any rank over the whole run, split into
** what it was made of at that moment on that rank; the time split is the
** mean over ranks (and the largest), the median over steps.
*/
#ifndef TSL_SUMMARY_H
#define TSL_SUMMARY_H

#include "train/report.h"

typedef struct tsl_run_end {
  double wall_s;      /* since the run command started */
  int stop;           /* 0: finished or stopped by train.steps; else why (signals.h) */
  double final_loss;  /* NAN when no step ran */
  double val_loss;    /* the last validation loss, NAN when none */
  double mfu_cores;   /* cores the MFU of a rank is measured against */
} tsl_run_end;

/* Collective: gather every rank's memory and cores; rank 0 prints the
** summary and writes summary.json next to the metrics file. */
tsl_status tsl_report_summary(tsl_reporter *r, const tsl_runtime *rt, const tsl_run_end *end);

#endif
