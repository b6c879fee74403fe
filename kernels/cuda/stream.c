/*
** kernels/cuda/stream.c — streams and events.
**
** Streams are created blocking (default flags): see tsl_cuda.h for why the
** allocator needs them to synchronise with the legacy stream. Events carry
** no timing (cheaper to record and wait on) and are recycled through a free
** list, since the core records one around every collective.
*/
#include <stdlib.h>

#include "tsl_cuda.h"

int tsl_cuda_stream_create(tsl_backend *be, tsl_stream **out) {
  (void)be;
  *out = NULL;
  struct tsl_stream *st = calloc(1, sizeof *st);
  if (!st) return TSL_CUDA_FAIL(TESSEL_E_NOMEM, "out of host memory for a stream");
  int rc = TSL_CU(cudaStreamCreate(&st->s));
  if (rc < 0) {
    free(st);
    return rc;
  }
  *out = st;
  return TESSEL_OK;
}

/* Work still queued on the stream completes before its resources go (the
** driver defers the release); the workspace and scratch go back to the
** allocator, whose zeroing orders their reuse after that work. */
void tsl_cuda_stream_destroy(tsl_backend *be, tsl_stream *s) {
  if (!s) return;
  tsl_cuda_device_free(be, s->workspace);
  tsl_cuda_device_free(be, s->scratch);
  (void)TSL_CU(cudaStreamDestroy(s->s));
  free(s);
}

/* Through the NCCL watch: a collective whose peer is gone must end the
** wait with an error, not hang it. */
int tsl_cuda_stream_sync(tsl_backend *be, tsl_stream *s) {
  return tsl_cuda_comms_wait(be, tsl_cuda_stream(be, s)->s);
}

int tsl_cuda_event_record(tsl_backend *be, tsl_stream *s, tsl_event **out) {
  tsl_cuda_ctx *ctx = tsl_cuda(be);
  struct tsl_event *ev = ctx->free_events;
  *out = NULL;
  if (ev) {
    ctx->free_events = ev->next;
  } else {
    ev = calloc(1, sizeof *ev);
    if (!ev) return TSL_CUDA_FAIL(TESSEL_E_NOMEM, "out of host memory for an event");
    int rc = TSL_CU(cudaEventCreateWithFlags(&ev->e, cudaEventDisableTiming));
    if (rc < 0) {
      free(ev);
      return rc;
    }
  }
  int rc = TSL_CU(cudaEventRecord(ev->e, tsl_cuda_stream(be, s)->s));
  if (rc < 0) {
    tsl_cuda_event_free(be, ev);
    return rc;
  }
  *out = ev;
  return TESSEL_OK;
}

/* The wait captures the event as last recorded, so the event may be freed
** (and recorded again) right after this call. */
int tsl_cuda_event_wait(tsl_backend *be, tsl_stream *waiter, tsl_event *e) {
  if (!e) return TESSEL_OK;
  return TSL_CU(cudaStreamWaitEvent(tsl_cuda_stream(be, waiter)->s, e->e, 0));
}

void tsl_cuda_event_free(tsl_backend *be, tsl_event *e) {
  if (!e) return;
  tsl_cuda_ctx *ctx = tsl_cuda(be);
  e->next = ctx->free_events;
  ctx->free_events = e;
}

int tsl_cuda_event_query(tsl_backend *be, tsl_event *e) {
  if (!e) return 1;
  cudaError_t r = cudaEventQuery(e->e);
  if (r == cudaErrorNotReady) {
    (void)cudaGetLastError(); /* "not ready" is an answer, not a failure */
    int st = tsl_cuda_comms_check(be); /* unless a collective it waits for cannot finish */
    return st < 0 ? st : 0;
  }
  int rc = tsl_cuda_check_rt(r, "cudaEventQuery", __FILE__, __LINE__);
  return rc < 0 ? rc : 1;
}

void tsl_cuda_events_release(tsl_backend *be) {
  tsl_cuda_ctx *ctx = tsl_cuda(be);
  while (ctx->free_events) {
    struct tsl_event *ev = ctx->free_events;
    ctx->free_events = ev->next;
    (void)TSL_CU(cudaEventDestroy(ev->e));
    free(ev);
  }
}
