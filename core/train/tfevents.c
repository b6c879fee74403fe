/* core/train/tfevents.c */
#include "train/tfevents.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/crc32c.h"
#include "common/util.h"

/* A growing byte buffer for one protobuf message. */
typedef struct pb {
  unsigned char *b;
  size_t n, cap;
  int failed;
} pb;

static void put(pb *p, const void *data, size_t n) {
  if (p->failed || n == 0) return;
  if (p->n + n > p->cap) {
    size_t cap = TSL_MAX(p->cap * 2, p->n + n + 64);
    unsigned char *b = realloc(p->b, cap);
    if (!b) {
      p->failed = 1;
      return;
    }
    p->b = b;
    p->cap = cap;
  }
  memcpy(p->b + p->n, data, n);
  p->n += n;
}

static void varint(pb *p, uint64_t v) {
  unsigned char buf[10];
  size_t n = 0;
  do {
    buf[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  put(p, buf, n);
}

/* Field keys: (number << 3) | wire type (0 varint, 1 fixed64, 2 bytes, 5 fixed32). */
static void key(pb *p, int field, int wire) { varint(p, (uint64_t)field << 3 | (uint64_t)wire); }

static void bytes_field(pb *p, int field, const void *data, size_t n) {
  key(p, field, 2);
  varint(p, n);
  put(p, data, n);
}

static void le(pb *p, uint64_t v, int n) {
  unsigned char buf[8];
  for (int i = 0; i < n; i++) buf[i] = (unsigned char)(v >> (8 * i));
  put(p, buf, (size_t)n);
}

static void double_field(pb *p, int field, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  key(p, field, 1);
  le(p, bits, 8);
}

static void float_field(pb *p, int field, float v) {
  uint32_t bits;
  memcpy(&bits, &v, sizeof bits);
  key(p, field, 5);
  le(p, bits, 4);
}

static double wall_time(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

/* Event: wall_time = 1 (double), step = 2 (int64); then the caller's field. */
static void event_head(pb *p, int64_t step) {
  double_field(p, 1, wall_time());
  key(p, 2, 0);
  varint(p, (uint64_t)step);
}

/* One TFRecord around an Event. */
static tsl_status write_record(tsl_tfevents *w, pb *event) {
  pb rec = {0};
  le(&rec, event->n, 8);
  uint32_t len_crc = tsl_crc32c_masked(rec.b, 8);
  le(&rec, len_crc, 4);
  put(&rec, event->b, event->n);
  le(&rec, tsl_crc32c_masked(event->b, event->n), 4);
  tsl_status st = TESSEL_OK;
  if (rec.failed || event->failed) st = tsl_error(TESSEL_E_NOMEM, "out of host memory writing %s", w->path);
  else if (fwrite(rec.b, 1, rec.n, w->f) != rec.n || fflush(w->f) != 0)
    st = tsl_error(TESSEL_E_IO, "%s: write failed: %s", w->path, strerror(errno));
  free(rec.b);
  free(event->b);
  return st;
}

tsl_status tsl_tfevents_open(tsl_tfevents *w, const char *dir, int64_t resume_step) {
  char host[64] = "localhost";
  memset(w, 0, sizeof *w);
  gethostname(host, sizeof host);
  host[sizeof host - 1] = '\0';
  /* what this call makes for the folder goes again if the event file
  ** cannot be made in it: a fresh run that fails leaves nothing behind */
  char **made = tsl_dirs_to_make(dir);
  if (!made) return tsl_error_sys(TESSEL_E_IO, errno, "log.tensorboard: %s: cannot examine where it would be made", dir);
  tsl_status st = tsl_mkdir_p(dir);
  if (st < 0) {
    tsl_error_wrap(st, "log.tensorboard");
    goto fail;
  }
  w->path = tsl_asprintf("%s/events.out.tfevents.%lld.%s.%d", dir, (long long)wall_time(), host, (int)getpid());
  if (!w->path) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  if (!(w->f = fopen(w->path, "wb"))) {
    st = tsl_error(TESSEL_E_IO, "log.tensorboard: cannot create %s: %s", w->path, strerror(errno));
    goto fail;
  }
  static const char version[] = "brain.Event:2";
  pb ev = {0};
  event_head(&ev, 0);
  bytes_field(&ev, 3, version, sizeof version - 1); /* file_version = 3 */
  st = write_record(w, &ev);
  if (st >= 0 && resume_step > 0) {
    pb log = {0}, start = {0};
    key(&log, 1, 0); /* SessionLog.status = 1: START */
    varint(&log, 1);
    event_head(&start, resume_step);
    bytes_field(&start, 6, log.b, log.n); /* session_log = 6 */
    start.failed |= log.failed;
    free(log.b);
    st = write_record(w, &start);
  }
  if (st < 0 && w->f) unlink(w->path); /* the folder holds nothing of ours then */
fail:
  if (st < 0) {
    tsl_tfevents_close(w);
    tsl_dirs_unmake(made);
  }
  tsl_dirs_free(made);
  return st;
}

tsl_status tsl_tfevents_scalars(tsl_tfevents *w, int64_t step, const char *const *tags, const double *values,
                                int n) {
  pb summary = {0}, ev = {0};
  for (int i = 0; i < n; i++) {
    if (isnan(values[i])) continue;
    pb value = {0};
    bytes_field(&value, 1, tags[i], strlen(tags[i])); /* Summary.Value.tag = 1 */
    float_field(&value, 2, (float)values[i]);         /* simple_value = 2 */
    bytes_field(&summary, 1, value.b, value.n);       /* Summary.value = 1 */
    summary.failed |= value.failed;
    free(value.b);
  }
  event_head(&ev, step);
  bytes_field(&ev, 5, summary.b, summary.n); /* summary = 5 */
  ev.failed |= summary.failed;
  free(summary.b);
  return write_record(w, &ev);
}

void tsl_tfevents_close(tsl_tfevents *w) {
  if (w->f) fclose(w->f);
  free(w->path);
  memset(w, 0, sizeof *w);
}
