/* core/train/report.c */
#include "train/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/log.h"
#include "common/stats.h"
#include "common/util.h"

/* Keep the lines of steps <= keep_step from an existing metrics file, and
** say which steps up to keep_step have no line: the steps trained while the
** metrics could not be written (a full disk), which the run cannot log
** again. Read a line at a time: the file of a long run is hundreds of
** megabytes, which rank 0 would otherwise hold whole at every resume. */
static tsl_status truncate_metrics(const char *path, int64_t keep_step, FILE *out) {
  char *line = NULL;
  size_t cap = 0;
  double last = 0;
  if (!tsl_path_exists(path)) return TESSEL_OK;
  FILE *in = fopen(path, "r");
  if (!in) return tsl_error(TESSEL_E_IO, "log.metrics: %s: cannot open: %s", path, strerror(errno));
  for (ssize_t n; (n = getline(&line, &cap, in)) >= 0;) {
    if (n > 0 && line[n - 1] == '\n') line[n - 1] = '\0';
    cJSON *o = cJSON_Parse(line);
    cJSON *step = cJSON_GetObjectItemCaseSensitive(o, "step");
    if (cJSON_IsNumber(step) && step->valuedouble <= (double)keep_step) {
      fprintf(out, "%s\n", line);
      last = TSL_MAX(last, step->valuedouble);
    }
    cJSON_Delete(o);
  }
  int failed = ferror(in), err = errno;
  free(line);
  fclose(in);
  if (failed) return tsl_error(TESSEL_E_IO, "log.metrics: %s: cannot read: %s", path, strerror(err));
  if (last < (double)keep_step)
    tsl_log(TESSEL_LOG_WARN, "log.metrics: %s has no lines for steps %.0f to %lld, which the checkpoint holds (they "
            "were trained while the metrics could not be written); it goes on from step %lld", path, last + 1,
            (long long)keep_step, (long long)keep_step + 1);
  return TESSEL_OK;
}

/* Take the lock a run holds on the metrics file it appends to (fd: the
** file), or say that another run holds it. log.dir's lock does not cover
** a log.metrics named outside it, which two runs could otherwise share,
** the later one replacing the other's lines. A file system without flock
** leaves the file unlocked, as it would log.dir. */
static tsl_status lock_metrics(int fd, const char *path) {
  if (flock(fd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK) return TESSEL_OK;
  return tsl_error(TESSEL_E_IO, "log.metrics: %s is being written by another tessel run: give this run a "
                   "log.metrics of its own (or leave it out: log.dir/metrics.jsonl)", path);
}

/* Open log.metrics for appending, first cut back to the steps a resumed run
** keeps (written aside and renamed over it), and lock it (lock_metrics),
** after checking that no other run holds the file it replaces. A character
** device is appended to as it is (/dev/null throws the metrics away); the
** rename would have replaced it, and any other file that is not a regular
** one, with a file. */
static tsl_status open_metrics(tsl_reporter *r, const tsl_settings *s, int64_t resume_step) {
  struct stat sb;
  int exists = stat(s->log.metrics, &sb) == 0, device = r->metrics_device = exists && S_ISCHR(sb.st_mode);
  if (exists && !device && !S_ISREG(sb.st_mode))
    return tsl_error(TESSEL_E_IO, "log.metrics: %s is %s, not a file: name a file to write the metrics to",
                     s->log.metrics, tsl_file_kind(sb.st_mode));
  if (exists && !device) {
    int fd = open(s->log.metrics, O_RDONLY | O_CLOEXEC);
    tsl_status held = fd >= 0 ? lock_metrics(fd, s->log.metrics) : TESSEL_OK;
    if (fd >= 0) close(fd);
    if (held < 0) return held;
  }
  char *dir = tsl_dirname(s->log.metrics), *tmp = tsl_asprintf("%s.tmp", s->log.metrics);
  tsl_status st = dir && tmp ? tsl_mkdir_p(dir) : TESSEL_E_NOMEM;
  if (st >= 0 && !device) {
    FILE *f = fopen(tmp, "w");
    if (!f) {
      st = tsl_error(TESSEL_E_IO, "log.metrics: %s: cannot create: %s", tmp, strerror(errno));
    } else {
      if (resume_step > 0) st = truncate_metrics(s->log.metrics, resume_step, f);
      /* a short copy (a disk still full) must not replace the metrics */
      int failed = ferror(f);
      if (fclose(f) != 0 || failed) {
        int err = errno;
        if (st >= 0) st = tsl_error(TESSEL_E_IO, "log.metrics: %s: cannot write: %s", tmp, strerror(err));
      }
      if (st >= 0 && rename(tmp, s->log.metrics) != 0)
        st = tsl_error(TESSEL_E_IO, "log.metrics: %s: cannot replace: %s", s->log.metrics, strerror(errno));
      if (st < 0) unlink(tmp);
    }
  }
  if (st >= 0 && !(r->metrics = fopen(s->log.metrics, "a")))
    st = tsl_error(TESSEL_E_IO, "log.metrics: %s: cannot open for appending: %s", s->log.metrics, strerror(errno));
  if (st >= 0 && !device) st = lock_metrics(fileno(r->metrics), s->log.metrics);
  free(dir);
  free(tmp);
  return st;
}

tsl_status tsl_reporter_open(tsl_reporter *r, const tsl_runtime *rt, int64_t resume_step) {
  const tsl_settings *s = &rt->settings;
  memset(r, 0, sizeof *r);
  r->first_step = resume_step;
  r->tokens_per_step = (uint64_t)s->train.batch_size * (uint64_t)s->model.seq_len;
  r->progress = rt->world.rank == 0 &&
                (s->log.progress == TSL_PROGRESS_ALWAYS || (s->log.progress == TSL_PROGRESS_AUTO && isatty(2)));
  if (rt->world.rank != 0) return TESSEL_OK;
  tsl_status st = open_metrics(r, s, resume_step);
  if (st >= 0 && s->log.tensorboard) st = tsl_tfevents_open(&r->tb, s->log.tensorboard, resume_step);
  /* a fresh run that cannot start takes its (empty) metrics file away, which
  ** would keep the log.dir it made from going too (rundir.h) */
  if (st < 0 && resume_step == 0 && r->metrics && !r->metrics_device) {
    fclose(r->metrics);
    r->metrics = NULL;
    unlink(s->log.metrics);
  }
  return st;
}

void tsl_reporter_close(tsl_reporter *r) {
  if (r->bar_drawn) fputc('\n', stderr);
  if (r->metrics) fclose(r->metrics);
  tsl_tfevents_close(&r->tb);
  free(r->steps);
  r->steps = NULL;
  r->n_steps = r->cap_steps = 0;
  r->metrics = NULL;
  r->bar_drawn = 0;
}

tsl_status tsl_write_json_file(const char *path, const void *json) {
  char *text = cJSON_Print(json);
  tsl_atomic_file f;
  tsl_status st = text ? tsl_atomic_open(path, &f) : tsl_error(TESSEL_E_NOMEM, "out of host memory writing %s", path);
  if (st >= 0) {
    st = tsl_atomic_write(&f, text, strlen(text));
    if (st >= 0) st = tsl_atomic_commit(&f);
    else tsl_atomic_abort(&f);
  }
  free(text);
  return st;
}

static void clear_bar(tsl_reporter *r) {
  if (!r->bar_drawn) return;
  fputs("\r\033[K", stderr);
  r->bar_drawn = 0;
}

void tsl_report_line(tsl_reporter *r, const char *fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  clear_bar(r);
  tsl_info("%s", line);
}

static void format_duration(double s, char *buf, size_t cap) {
  long t = (long)(s + 0.5);
  if (t >= 3600) snprintf(buf, cap, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else if (t >= 60) snprintf(buf, cap, "%ldm%02lds", t / 60, t % 60);
  else snprintf(buf, cap, "%lds", t);
}

static void draw_bar(tsl_reporter *r, const tsl_step_report *s) {
  enum { WIDTH = 30 };
  char bar[WIDTH + 1], eta[32];
  int filled = (int)((double)WIDTH * (double)s->step / (double)s->steps);
  for (int i = 0; i < WIDTH; i++) bar[i] = i < filled ? '#' : '.';
  bar[WIDTH] = '\0';
  double elapsed = tsl_now() - r->started, done = (double)(s->step - r->first_step);
  format_duration(done > 0 ? elapsed / done * (double)(s->steps - s->step) : 0, eta, sizeof eta);
  fprintf(stderr, "\r\033[K[%s] %lld/%lld loss %.4f | %.0f tok/s | ETA %s", bar, (long long)s->step,
          (long long)s->steps, s->loss, s->tokens_per_s, eta);
  fflush(stderr);
  r->bar_drawn = 1;
}

/* A double as the 17 significant digits that read back as exactly it:
** cJSON prints 15 when they read back within a relative 2.2e-16, which
** would hide a one-ulp difference between two runs compared bit for bit. */
static void add_exact(cJSON *o, const char *key, double v) {
  char text[32];
  if (!isfinite(v)) {
    cJSON_AddNullToObject(o, key);
    return;
  }
  snprintf(text, sizeof text, "%.17g", v);
  cJSON_AddRawToObject(o, key, text);
}

static cJSON *tier_json(const tsl_step_report *s, int t) {
  const tessel_tier_stats *m = &s->tier[t];
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "peak", (double)m->peak);
  cJSON_AddNumberToObject(o, "in_use", (double)m->in_use);
  cJSON_AddNumberToObject(o, "model", (double)m->model);
  cJSON_AddNumberToObject(o, "params", (double)m->params);
  cJSON_AddNumberToObject(o, "grads", (double)m->grads);
  cJSON_AddNumberToObject(o, "optim", (double)m->optim);
  cJSON_AddNumberToObject(o, "activations", (double)s->activations[t]);
  cJSON_AddNumberToObject(o, "scratch", (double)s->scratch[t]);
  cJSON_AddNumberToObject(o, "bytes_in", (double)m->bytes_in);
  cJSON_AddNumberToObject(o, "bytes_out", (double)m->bytes_out);
  if (m->capacity != UINT64_MAX) cJSON_AddNumberToObject(o, "capacity", (double)m->capacity);
  return o;
}

static void add_phase(cJSON *split, const char *name, double mean, double max) {
  cJSON *e = cJSON_AddObjectToObject(split, name);
  cJSON_AddNumberToObject(e, "mean", mean);
  cJSON_AddNumberToObject(e, "max", max);
}

static double unix_time(void) {
  struct timeval tv;
  gettimeofday(&tv, NULL);
  return (double)tv.tv_sec + tv.tv_usec * 1e-6;
}

static cJSON *step_json(const tsl_reporter *r, const tsl_runtime *rt, const tsl_step_report *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "step", (double)s->step);
  cJSON_AddNumberToObject(o, "time", floor(unix_time() * 1e3) / 1e3);
  cJSON_AddNumberToObject(o, "tokens", (double)s->tokens);
  add_exact(o, "loss", s->loss);
  if (!isnan(s->val_loss)) add_exact(o, "val_loss", s->val_loss);
  add_exact(o, "lr", s->lr);
  add_exact(o, "grad_norm", s->grad_norm);
  cJSON_AddNumberToObject(o, "step_time_s", s->step_time);
  cJSON_AddNumberToObject(o, "tokens_per_s", s->tokens_per_s);
  if (isnan(s->mfu)) cJSON_AddNullToObject(o, "mfu");
  else cJSON_AddNumberToObject(o, "mfu", s->mfu);
  cJSON *split = cJSON_AddObjectToObject(o, "time_split_s");
  add_phase(split, "step", s->mean.step, s->max.step);
  add_phase(split, "compute", s->mean.compute, s->max.compute);
  add_phase(split, "comm_wait", s->mean.comm_wait, s->max.comm_wait);
  add_phase(split, "bubble", s->mean.bubble, s->max.bubble);
  cJSON *mem = cJSON_AddObjectToObject(o, "memory");
  for (int t = 0; t < TESSEL_TIER_COUNT; t++)
    if (s->tier[t].peak || t == TESSEL_TIER_DEVICE) cJSON_AddItemToObject(mem, tsl_tier_name((tessel_tier)t), tier_json(s, t));
  cJSON *comm = cJSON_AddObjectToObject(o, "comm");
  for (int i = 0; rt->comm && i < tsl_comm_group_count(rt->comm); i++) {
    tessel_group *g = tsl_comm_group_at(rt->comm, i);
    tsl_comm_counts c = tsl_group_step_counts(g);
    if (!c.calls) continue;
    cJSON *e = cJSON_AddObjectToObject(comm, tsl_group_name(g));
    cJSON_AddNumberToObject(e, "calls", (double)c.calls);
    cJSON_AddNumberToObject(e, "payload_bytes", (double)c.payload);
    cJSON_AddNumberToObject(e, "bus_bytes", (double)c.bus);
  }
  return o;
}

static tsl_status write_json(tsl_reporter *r, const tsl_runtime *rt, const tsl_step_report *s) {
  cJSON *o = step_json(r, rt, s);
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!text) return tsl_error(TESSEL_E_NOMEM, "out of host memory writing metrics");
  int bad = fprintf(r->metrics, "%s\n", text) < 0 || fflush(r->metrics) != 0;
  free(text);
  return bad ? tsl_error(TESSEL_E_IO, "log.metrics: %s: write failed: %s", rt->settings.log.metrics, strerror(errno))
             : TESSEL_OK;
}

static tsl_status write_tensorboard(tsl_reporter *r, const tsl_step_report *s) {
  static const char *const tags[] = {"train/loss",       "val/loss",       "train/lr",        "train/grad_norm",
                                     "perf/tokens_per_s", "perf/mfu",       "perf/step_time_s", "perf/compute_s",
                                     "perf/comm_wait_s",  "perf/bubble_s",  "memory/device_peak_bytes"};
  double v[] = {s->loss,       s->val_loss,       s->lr,          s->grad_norm, s->tokens_per_s,
                s->mfu,        s->step_time,      s->mean.compute, s->mean.comm_wait,
                s->mean.bubble, (double)s->tier[TESSEL_TIER_DEVICE].peak};
  return tsl_tfevents_scalars(&r->tb, s->step, tags, v, (int)TSL_ARRAY_LEN(tags));
}

/* Remember the step for the summary. */
static tsl_status record(tsl_reporter *r, const tsl_step_report *s) {
  if (r->n_steps == r->cap_steps) {
    int64_t cap = r->cap_steps ? 2 * r->cap_steps : 256;
    tsl_step_record *p = realloc(r->steps, sizeof *p * (size_t)cap);
    if (!p) return tsl_error(TESSEL_E_NOMEM, "out of host memory for step records");
    r->steps = p;
    r->cap_steps = cap;
  }
  r->steps[r->n_steps++] = (tsl_step_record){s->step_time, s->tokens_per_s, s->mfu, s->mean, s->max};
  return TESSEL_OK;
}

/* Median step time of the last `n` recorded steps. */
static double recent_step_time(const tsl_reporter *r, int64_t n) {
  n = TSL_MIN(n, r->n_steps);
  double *v = malloc(sizeof(double) * (size_t)TSL_MAX(n, 1));
  if (!v) return r->steps[r->n_steps - 1].step_time;
  for (int64_t i = 0; i < n; i++) v[i] = r->steps[r->n_steps - n + i].step_time;
  double m = tsl_median(v, n);
  free(v);
  return m;
}

tsl_status tsl_report_step(tsl_reporter *r, const tsl_runtime *rt, const tsl_step_report *s) {
  if (rt->world.rank != 0) return TESSEL_OK;
  if (!r->started) r->started = tsl_now() - s->step_time;
  tsl_status st = write_json(r, rt, s);
  if (st >= 0 && r->tb.f) st = write_tensorboard(r, s);
  if (st >= 0) st = record(r, s);
  if (st < 0) return st;
  const tsl_settings *cfg = &rt->settings;
  if (s->step % cfg->log.every == 0 || s->step == s->steps || s->step == r->first_step + 1 || s->stop) {
    char peak[32], mfu[32] = "-", val[48] = "";
    double t = recent_step_time(r, cfg->log.every);
    tsl_format_bytes(s->tier[TESSEL_TIER_DEVICE].peak, peak, sizeof peak);
    if (!isnan(s->mfu)) snprintf(mfu, sizeof mfu, "%.1f%%", 100.0 * s->mfu * s->step_time / t);
    if (!isnan(s->val_loss)) snprintf(val, sizeof val, " | val %.4f", s->val_loss);
    tsl_report_line(r, "step %*lld/%lld | loss %.4f%s | lr %.2e | norm %.3f | %.0f tok/s | %.1f ms | MFU %s | peak %s",
                    (int)snprintf(NULL, 0, "%lld", (long long)s->steps), (long long)s->step, (long long)s->steps,
                    s->loss, val, s->lr, s->grad_norm, (double)r->tokens_per_step / t, 1e3 * t, mfu, peak);
  }
  if (r->progress) draw_bar(r, s);
  return TESSEL_OK;
}
