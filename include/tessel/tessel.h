/*
** tessel/tessel.h — the tessel runtime as a library: train from a config
** inside your own program (link libtessel; `pkg-config tessel`).
**
**   tessel_run *run;
**   if (tessel_run_open("configs/quickstart.yaml", NULL, 0, &run) < 0) {
**     fprintf(stderr, "%s\n", tessel_last_error());
**     return 1;
**   }
**   tessel_step_info info = {.size = sizeof info};
**   do {
**     if (tessel_run_step(run, &info) < 0) break;  // tessel_last_error() says why
**     printf("step %lld loss %.4f\n", (long long)info.step, info.loss);
**   } while (info.step < info.steps && !info.stopped_by);
**   tessel_run_close(run);
**
** A run is what `tessel run CONFIG` trains — the strategy, data, metrics
** and checkpoints of the config, resumed from its newest checkpoint when
** checkpoint.resume says so — but the program decides when to step,
** evaluate and save. `tessel run` itself is built on these calls.
**
** Processes: each process is one rank. Under mpirun or srun every rank runs
** the program and makes the same calls in the same order — every call but
** tessel_version, tessel_last_error and tessel_run_last_step is
** collective. tessel starts MPI when the program has not (then it
** finalises it at exit) and joins it when it has: while runs are open,
** MPI_COMM_WORLD's error handler is MPI_ERRORS_RETURN, and closing the last
** gives the program's back. Such a program opens and closes every run
** between its MPI_Init and its MPI_Finalize: MPI cannot start again, and a
** run closed after it frees communicators MPI no longer has (Open MPI
** then ends the process).
**
** Errors: a call returns TESSEL_OK (0) or a negative tessel_status
** (tessel/plugin.h); tessel_last_error() says what failed and where, as
** the command line prints it, but with advice a program can follow (where
** `tessel run` says --resume DIR, the program is told what to do with
** checkpoint.dir's files instead); the library itself prints no error (it
** logs on rank 0's stderr as `tessel run` does — the banner, step lines,
** checkpoints, warnings — as log.level says: `error` silences it). A config
** mistake reads FILE:LINE:COL. When one rank fails, every rank's call
** fails, and a rank that did not fail itself names the first one that did
** (a mistake in the arguments on one rank included) — except inside a
** step, an evaluation or a save on some ranks only: the others then wait
** in a collective the failed ones never join, so with several ranks the
** library prints the failing rank's message and ends the job (MPI_Abort),
** as `tessel run` does, rather than hang. A checkpoint that cannot be
** written (a full disk) fails on every rank alike, and comes back as a
** value.
** Calls of one thread at a time, from any thread. Opening a run sets the
** opening thread's OpenMP thread count (omp_set_num_threads) to the run's
** device.threads, and OpenBLAS's to 1, since tessel runs one BLAS call per
** OpenMP thread; a step, evaluation or save from any thread runs with the
** run's count and leaves that thread's as it was, so runs open at the same
** time may differ in device.threads: each computes as it would alone.
** Closing the last open run sets both back to what they were before the
** first was opened.
**
** Signals: the library catches no stop signal. SIGTERM, SIGINT, SIGHUP do
** to the program what it makes of them (by default they end it, and the
** steps since the last checkpoint are lost); `tessel run` catches them to
** stop after the step with a checkpoint. A program that wants the same
** stops stepping when its handler says so and calls tessel_run_save —
** every rank, so the ranks must agree first that they stop (MPI_Allreduce
** of the flag after each step). What stays after the last close, until
** the process ends: MPI, when tessel started it (its threads, files and
** Open MPI's handlers of SIGSEGV, SIGBUS, SIGFPE, SIGABRT; and
** OMPI_MCA_plm=isolated in the environment of a process no launcher
** started), tessel's handler of SIGCONT when the program had none (it
** tells a stopped rank from a stuck one), and, once a strategy plugin or
** the CUDA backend was loaded (neither is ever unloaded), tessel's
** handlers of SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT, which name the
** library a crash happened in and then call the handler they replaced.
**
** Versioning: tessel_step_info is a sized struct — set .size to sizeof
** before the call; tessel writes no more than that and keeps it, so a
** program built against an older header runs with a newer library, and
** leaves the fields it does not know (a newer header's) as they were.
*/
#ifndef TESSEL_H
#define TESSEL_H

#include <stddef.h>
#include <stdint.h>

#include "tessel/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tessel_run tessel_run;

/* One step's figures (rank 0's timing; the loss is the global batch's). */
typedef struct tessel_step_info {
  uint32_t size;
  int64_t step;        /* the step just taken; a resumed run counts on from its checkpoint */
  int64_t steps;       /* train.steps */
  double loss;         /* mean over every token of the global batch */
  double lr, grad_norm;
  double val_loss;     /* when the step validated (train.eval_every, the last step), else NaN */
  double step_time_s, tokens_per_s;
  /* NULL, or why the run stops after this step — "train.stop_after",
  ** "train.stop_after_time", "a failed write of the run's log" (never a
  ** signal: see Signals above) — as `tessel run` stops with exit status
  ** 75: the step's checkpoint is written, and later steps are refused;
  ** open the run again to resume from it. */
  const char *stopped_by;
} tessel_step_info;

/* The library's version, e.g. "0.1.0". */
const char *tessel_version(void);

/* Open a run of `config`, with `n_sets` overrides "KEY=VALUE" as --set
** takes them: the config checked, the strategy, devices and communicators
** started, the model initialised or resumed. *out is NULL when it fails.
** Its run directory (log.dir, checkpoint.dir) is locked until the close: a
** second run of it, in this process or another, is refused. */
tessel_status tessel_run_open(const char *config, const char *const *sets, int n_sets, tessel_run **out);

/* Take the next training step (validating and checkpointing when the
** config says it is due); *out (optional) gets its figures. The run ends
** at train.steps, where its schedule ends: a step past it is refused, as
** is a step after one that stopped (out->stopped_by). A step that fails
** after it was taken (its checkpoint could not be written, say) still
** counts: tessel_run_last_step tells, and *out has its figures. One that
** fails before (in the strategy, the device, the optimizer) may have
** changed part of the model, so later steps, evaluations and saves are
** refused: close the run and open it again, which resumes from its last
** checkpoint. A NaN or infinite loss is found before anything changes:
** the step tried again is computed again, and the run can still be
** evaluated and saved. */
tessel_status tessel_run_step(tessel_run *run, tessel_step_info *out);

/* The validation loss of the model as it stands (train.eval_batches
** batches of the validation data); a run without validation data
** (data.val, or data.text with data.val_fraction above 0) is refused. */
tessel_status tessel_run_evaluate(tessel_run *run, double *val_loss);

/* Checkpoint the newest step under checkpoint.dir (unless it is saved
** already); its directory is written to dir (up to cap bytes) when given:
** a path that does not fit is an error (the checkpoint is saved). */
tessel_status tessel_run_save(tessel_run *run, char *dir, size_t cap);

/* The newest step taken (or resumed from); -1 for a NULL run. */
int64_t tessel_run_last_step(const tessel_run *run);

/* Release the run: its memory, devices, communicators, run directory.
** NULL does nothing. Like free(), once per run: the handle is gone after. */
void tessel_run_close(tessel_run *run);

/* What the last failing call of this thread said, until the next
** tessel_run_open, _step, _evaluate or _save (each clears it first); ""
** when that call succeeded. */
const char *tessel_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
