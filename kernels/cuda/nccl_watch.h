/*
** kernels/cuda/nccl_watch.h — keeping NCCL from hanging a rank.
**
** NCCL reports what goes wrong inside a communicator (a peer that died, a
** broken connection, a timeout in its proxy) only through
** ncclCommGetAsyncError; the kernels of a collective whose peer is gone
** spin on the GPU forever, and so does a host that waits for them in a
** stream synchronisation or in ncclCommDestroy. The watch keeps the rank's
** live communicators and:
**   - polls their asynchronous state while the host waits for the device
**     (stream sync, blocking copies) and whenever an event is not ready yet;
**   - on the first failure (or, through tsl_cuda_diag_on_failure, any
**     failed call of the backend) aborts every communicator of the rank
**     (ncclCommAbort: the spinning kernels see the abort flag and end, the
**     peers' connections close, so they fail too instead of waiting) and
**     reports which communicator failed and why;
**   - waits for a non-blocking call (creation, a collective that connects
**     lazily, finalisation) to settle, within a time limit.
**
** All of NCCL and the clock are reached through tsl_nccl_ops, so that the
** logic runs against a fake engine in tests/cuda/test_nccl_watch.c, on
** machines without a GPU; kernels/cuda/nccl.c fills in the real one. This
** file includes no CUDA or NCCL header for the same reason.
*/
#ifndef TSL_CUDA_NCCL_WATCH_H
#define TSL_CUDA_NCCL_WATCH_H

#include <stddef.h>

typedef enum {
  TSL_NCCL_READY = 0,   /* ncclSuccess: nothing outstanding, nothing wrong       */
  TSL_NCCL_PENDING = 1, /* ncclInProgress: a non-blocking call is still running */
  TSL_NCCL_FAILED = 2   /* any other result: the communicator is broken          */
} tsl_nccl_state;

typedef struct tsl_nccl_ops {
  /* The communicator's asynchronous state; on TSL_NCCL_FAILED, why (NCCL's
  ** words) goes into `why`. */
  tsl_nccl_state (*state)(void *ctx, void *comm, char *why, size_t cap);
  /* Free the communicator without waiting for its peers. */
  void (*abort)(void *ctx, void *comm);
  /* Seconds on a monotonic clock, and a short pause between two polls. */
  double (*now)(void *ctx);
  void (*pause)(void *ctx);
  void *ctx;
} tsl_nccl_ops;

/* One watched communicator and what the messages call it. */
typedef struct tsl_nccl_watched {
  void *comm;
  int rank, size;
} tsl_nccl_watched;

typedef struct tsl_nccl_watch {
  tsl_nccl_ops ops;
  tsl_nccl_watched *live;
  int n, cap;
  int aborted;        /* every communicator was aborted after a failure */
  char failure[1024]; /* what failed, for the caller's message          */
} tsl_nccl_watch;

/* Ready to watch, with no communicator. */
void tsl_nccl_watch_init(tsl_nccl_watch *w, const tsl_nccl_ops *ops);
/* Watch comm (this rank is `rank` of a group of `size`). TESSEL_E_NOMEM or 0. */
int tsl_nccl_watch_add(tsl_nccl_watch *w, void *comm, int rank, int size);
/* Stop watching comm; 1 when the watch had aborted it already (then the
** caller must not destroy it: it is gone), else 0. */
int tsl_nccl_watch_remove(tsl_nccl_watch *w, void *comm);
/* Free the watch's own memory (the communicators are the caller's). */
void tsl_nccl_watch_free(tsl_nccl_watch *w);

/* Poll every watched communicator once. 0 when none has failed; else
** every one is aborted (once) and TESSEL_E_COMM returned, with the reason
** in w->failure. */
int tsl_nccl_watch_check(tsl_nccl_watch *w);
/* Abort every watched communicator now (a failed rank's last act, so its
** peers stop waiting for it), with `why` as the failure. */
void tsl_nccl_watch_abort_all(tsl_nccl_watch *w, const char *why);

/* Wait until done(arg) returns 1 (0: not yet; negative: a failure, which
** is returned as it is), checking the communicators between polls.
** timeout_s <= 0 waits as long as the device works; otherwise running past
** it aborts every communicator and returns TESSEL_E_COMM. `what` names the
** wait in messages. */
int tsl_nccl_watch_wait(tsl_nccl_watch *w, int (*done)(void *arg), void *arg, double timeout_s, const char *what);
/* Wait for a non-blocking call on comm (watched or not yet) to settle:
** 0 when it is ready; TESSEL_E_COMM when it failed or ran past timeout_s,
** after aborting comm (and, if it was watched, every other). */
int tsl_nccl_watch_settle(tsl_nccl_watch *w, void *comm, int rank, int size, double timeout_s, const char *what);

#endif
