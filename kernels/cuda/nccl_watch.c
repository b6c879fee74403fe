/* kernels/cuda/nccl_watch.c — polling NCCL's asynchronous errors and
** aborting a failed rank's communicators (see nccl_watch.h). */
#include "nccl_watch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/plugin.h"

void tsl_nccl_watch_init(tsl_nccl_watch *w, const tsl_nccl_ops *ops) {
  memset(w, 0, sizeof *w);
  w->ops = *ops;
}

int tsl_nccl_watch_add(tsl_nccl_watch *w, void *comm, int rank, int size) {
  if (w->n == w->cap) {
    int cap = w->cap ? 2 * w->cap : 8;
    tsl_nccl_watched *live = realloc(w->live, (size_t)cap * sizeof *live);
    if (!live) return TESSEL_E_NOMEM;
    w->live = live;
    w->cap = cap;
  }
  w->live[w->n++] = (tsl_nccl_watched){comm, rank, size};
  return TESSEL_OK;
}

int tsl_nccl_watch_remove(tsl_nccl_watch *w, void *comm) {
  for (int i = 0; i < w->n; i++) {
    if (w->live[i].comm != comm) continue;
    w->live[i] = w->live[--w->n];
    return w->aborted;
  }
  return 0;
}

void tsl_nccl_watch_free(tsl_nccl_watch *w) {
  free(w->live);
  w->live = NULL;
  w->n = w->cap = 0;
}

void tsl_nccl_watch_abort_all(tsl_nccl_watch *w, const char *why) {
  if (w->aborted) return;
  w->aborted = 1;
  if (why && !w->failure[0]) snprintf(w->failure, sizeof w->failure, "%s", why);
  for (int i = 0; i < w->n; i++) w->ops.abort(w->ops.ctx, w->live[i].comm);
}

/* Record the failure of communicator c and abort everything. */
static int fail(tsl_nccl_watch *w, const tsl_nccl_watched *c, const char *what, const char *why) {
  char msg[sizeof w->failure];
  snprintf(msg, sizeof msg,
           "%s: the NCCL communicator of a group of %d ranks (this rank is %d in it) failed: %s; every "
           "communicator of this rank is aborted, so its peers stop waiting for it",
           what, c->size, c->rank, why);
  w->failure[0] = '\0';
  tsl_nccl_watch_abort_all(w, msg);
  return TESSEL_E_COMM;
}

static int check(tsl_nccl_watch *w, const char *what) {
  if (w->aborted) return TESSEL_E_COMM; /* w->failure says why, from the first time */
  char why[512];
  for (int i = 0; i < w->n; i++) {
    why[0] = '\0';
    if (w->ops.state(w->ops.ctx, w->live[i].comm, why, sizeof why) == TSL_NCCL_FAILED)
      return fail(w, &w->live[i], what, why[0] ? why : "no reason given");
  }
  return TESSEL_OK;
}

int tsl_nccl_watch_check(tsl_nccl_watch *w) { return check(w, "polling NCCL"); }

/* Past the deadline (timeout_s > 0)? Then abort everything, saying so. */
static int expired(tsl_nccl_watch *w, double start, double timeout_s, const char *what) {
  double waited = w->ops.now(w->ops.ctx) - start;
  if (timeout_s <= 0 || waited <= timeout_s) return 0;
  char msg[sizeof w->failure];
  snprintf(msg, sizeof msg,
           "%s: no progress within %.0f s, so a peer is probably gone or stuck; every NCCL communicator of this "
           "rank is aborted", what, timeout_s);
  w->failure[0] = '\0';
  tsl_nccl_watch_abort_all(w, msg);
  return 1;
}

int tsl_nccl_watch_wait(tsl_nccl_watch *w, int (*done)(void *arg), void *arg, double timeout_s, const char *what) {
  double start = w->ops.now(w->ops.ctx);
  for (;;) {
    int d = done(arg);
    if (d < 0) return d;
    if (d > 0) return TESSEL_OK;
    int st = check(w, what);
    if (st < 0) return st;
    if (expired(w, start, timeout_s, what)) return TESSEL_E_COMM;
    w->ops.pause(w->ops.ctx);
  }
}

int tsl_nccl_watch_settle(tsl_nccl_watch *w, void *comm, int rank, int size, double timeout_s, const char *what) {
  double start = w->ops.now(w->ops.ctx);
  tsl_nccl_watched self = {comm, rank, size};
  char why[512];
  for (;;) {
    why[0] = '\0';
    tsl_nccl_state s = w->ops.state(w->ops.ctx, comm, why, sizeof why);
    if (s == TSL_NCCL_READY) return TESSEL_OK;
    if (s == TSL_NCCL_FAILED || w->ops.now(w->ops.ctx) - start > timeout_s) {
      int watched = 0;
      for (int i = 0; i < w->n; i++) watched |= w->live[i].comm == comm;
      if (s != TSL_NCCL_FAILED)
        snprintf(why, sizeof why, "still in progress after %.0f s (a peer is probably gone or stuck)", timeout_s);
      if (watched) return fail(w, &self, what, why[0] ? why : "no reason given");
      /* not watched yet (being created): only it goes */
      w->ops.abort(w->ops.ctx, comm);
      snprintf(w->failure, sizeof w->failure, "%s: the NCCL communicator of a group of %d ranks (this rank is %d in "
               "it) failed: %s; it is aborted", what, size, rank, why[0] ? why : "no reason given");
      return TESSEL_E_COMM;
    }
    w->ops.pause(w->ops.ctx);
  }
}
