/* core/train/report.c */
#include "train/report.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

char *tsl_peak_cache_path(void) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  if (xdg && *xdg) return tsl_asprintf("%s/tessel/peak.json", xdg);
  return tsl_asprintf("%s/.cache/tessel/peak.json", home && *home ? home : "/tmp");
}

double tsl_peak_flops(const tsl_settings *s, double cores) {
  if (s->device.peak_tflops > 0) return s->device.peak_tflops * 1e12;
  char *path = tsl_peak_cache_path(), *text = NULL;
  double peak = 0;
  if (path && tsl_read_file(path, &text, NULL) == TESSEL_OK) {
    cJSON *root = cJSON_Parse(text);
    cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "gflops"), *t = cJSON_GetObjectItemCaseSensitive(root, "threads");
    cJSON *be = cJSON_GetObjectItemCaseSensitive(root, "backend");
    /* measured with some number of threads; a rank gets the same rate per
    ** core it can use (GEMM scales close to linearly in cores) */
    if (cJSON_IsNumber(g) && cJSON_IsNumber(t) && t->valuedouble >= 1 && cJSON_IsString(be) &&
        strcmp(be->valuestring, s->device.kind == TSL_DEVICE_CUDA ? "cuda" : "cpu") == 0)
      peak = g->valuedouble * 1e9 * cores / t->valuedouble;
    cJSON_Delete(root);
  }
  tsl_error_clear();
  free(text);
  free(path);
  return peak;
}

/* Keep the lines of steps <= keep_step from an existing metrics file. */
static tsl_status truncate_metrics(const char *path, int64_t keep_step, FILE *out) {
  char *text = NULL;
  if (!tsl_path_exists(path)) return TESSEL_OK;
  tsl_status st = tsl_read_file(path, &text, NULL);
  if (st < 0) return st;
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    cJSON *o = cJSON_Parse(line);
    cJSON *step = cJSON_GetObjectItemCaseSensitive(o, "step");
    if (cJSON_IsNumber(step) && step->valuedouble <= (double)keep_step) fprintf(out, "%s\n", line);
    cJSON_Delete(o);
  }
  free(text);
  return TESSEL_OK;
}

tsl_status tsl_reporter_open(tsl_reporter *r, const tsl_runtime *rt, int64_t resume_step) {
  const tsl_settings *s = &rt->settings;
  memset(r, 0, sizeof *r);
  r->first_step = resume_step;
  r->progress = rt->world.rank == 0 &&
                (s->log.progress == TSL_PROGRESS_ALWAYS || (s->log.progress == TSL_PROGRESS_AUTO && isatty(2)));
  if (rt->world.rank != 0) return TESSEL_OK;
  char *dir = tsl_dirname(s->log.metrics), *tmp = tsl_asprintf("%s.tmp", s->log.metrics);
  tsl_status st = dir && tmp ? tsl_mkdir_p(dir) : TESSEL_E_NOMEM;
  if (st >= 0) {
    FILE *f = fopen(tmp, "w");
    if (!f) {
      st = tsl_error(TESSEL_E_IO, "%s: cannot create: %s", tmp, strerror(errno));
    } else {
      if (resume_step > 0) st = truncate_metrics(s->log.metrics, resume_step, f);
      fclose(f);
      if (st >= 0 && rename(tmp, s->log.metrics) != 0)
        st = tsl_error(TESSEL_E_IO, "%s: cannot replace: %s", s->log.metrics, strerror(errno));
    }
  }
  if (st >= 0 && !(r->metrics = fopen(s->log.metrics, "a")))
    st = tsl_error(TESSEL_E_IO, "%s: cannot open for appending: %s", s->log.metrics, strerror(errno));
  free(dir);
  free(tmp);
  return st;
}

void tsl_reporter_close(tsl_reporter *r) {
  if (r->bar_drawn) fputc('\n', stderr);
  if (r->metrics) fclose(r->metrics);
  r->metrics = NULL;
  r->bar_drawn = 0;
}

tsl_status tsl_report_memory(const tsl_runtime *rt, tsl_step_report *s) {
  double peaks[TESSEL_TIER_COUNT];
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) {
    tsl_mem_stats(&rt->ledger, (tessel_tier)t, &s->tier[t]);
    peaks[t] = (double)s->tier[t].peak;
  }
  tsl_status st = tsl_comm_world_reduce(rt->comm, peaks, TESSEL_TIER_COUNT, TESSEL_MAX);
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) s->tier[t].peak = (uint64_t)peaks[t];
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

static cJSON *tier_json(const tessel_tier_stats *t) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "peak", (double)t->peak);
  cJSON_AddNumberToObject(o, "in_use", (double)t->in_use);
  cJSON_AddNumberToObject(o, "model", (double)t->model);
  cJSON_AddNumberToObject(o, "params", (double)t->params);
  cJSON_AddNumberToObject(o, "grads", (double)t->grads);
  cJSON_AddNumberToObject(o, "optim", (double)t->optim);
  cJSON_AddNumberToObject(o, "bytes_in", (double)t->bytes_in);
  cJSON_AddNumberToObject(o, "bytes_out", (double)t->bytes_out);
  if (t->capacity != UINT64_MAX) cJSON_AddNumberToObject(o, "capacity", (double)t->capacity);
  return o;
}

static tsl_status write_json(tsl_reporter *r, const tsl_runtime *rt, const tsl_step_report *s) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "step", (double)s->step);
  cJSON_AddNumberToObject(o, "loss", s->loss);
  if (!isnan(s->val_loss)) cJSON_AddNumberToObject(o, "val_loss", s->val_loss);
  cJSON_AddNumberToObject(o, "lr", s->lr);
  cJSON_AddNumberToObject(o, "grad_norm", s->grad_norm);
  cJSON_AddNumberToObject(o, "step_time_s", s->step_time);
  cJSON_AddNumberToObject(o, "tokens_per_s", s->tokens_per_s);
  if (isnan(s->mfu)) cJSON_AddNullToObject(o, "mfu");
  else cJSON_AddNumberToObject(o, "mfu", s->mfu);
  cJSON *mem = cJSON_AddObjectToObject(o, "memory");
  for (int t = 0; t < TESSEL_TIER_COUNT; t++)
    if (s->tier[t].peak || t == TESSEL_TIER_DEVICE) cJSON_AddItemToObject(mem, tsl_tier_name((tessel_tier)t), tier_json(&s->tier[t]));
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
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  if (!text) return tsl_error(TESSEL_E_NOMEM, "out of host memory writing metrics");
  int bad = fprintf(r->metrics, "%s\n", text) < 0 || fflush(r->metrics) != 0;
  free(text);
  return bad ? tsl_error(TESSEL_E_IO, "%s: write failed: %s", rt->settings.log.metrics, strerror(errno)) : TESSEL_OK;
}

tsl_status tsl_report_step(tsl_reporter *r, const tsl_runtime *rt, const tsl_step_report *s) {
  if (rt->world.rank != 0) return TESSEL_OK;
  if (!r->started) r->started = tsl_now() - s->step_time;
  tsl_status st = write_json(r, rt, s);
  if (st < 0) return st;
  if (s->step % rt->settings.log.every == 0 || s->step == s->steps || s->step == r->first_step + 1) {
    char peak[32], mfu[32] = "-", val[48] = "";
    tsl_format_bytes(s->tier[TESSEL_TIER_DEVICE].peak, peak, sizeof peak);
    if (!isnan(s->mfu)) snprintf(mfu, sizeof mfu, "%.1f%%", 100.0 * s->mfu);
    if (!isnan(s->val_loss)) snprintf(val, sizeof val, " | val %.4f", s->val_loss);
    tsl_report_line(r, "step %*lld/%lld | loss %.4f%s | lr %.2e | norm %.3f | %.0f tok/s | %.1f ms | MFU %s | peak %s",
                    (int)snprintf(NULL, 0, "%lld", (long long)s->steps), (long long)s->step, (long long)s->steps,
                    s->loss, val, s->lr, s->grad_norm, s->tokens_per_s, 1e3 * s->step_time, mfu, peak);
  }
  if (r->progress) draw_bar(r, s);
  return TESSEL_OK;
}
