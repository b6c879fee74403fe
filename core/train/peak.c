/* core/train/peak.c */
#include "train/peak.h"

#include <cblas.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "train/report.h"

char *tsl_peak_cache_path(void) {
  char host[64] = "localhost", name[80];
  gethostname(host, sizeof host);
  host[sizeof host - 1] = '\0';
  snprintf(name, sizeof name, "peak-%s.json", host);
  return tsl_cache_file(name);
}

/* Best GFLOP/s of C = A·B at n×n over `repeats` timed runs after a warm-up. */
static double gemm_rate(tsl_backend *be, int n, int repeats) {
  size_t bytes = sizeof(float) * (size_t)n * (size_t)n;
  float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
  double best = 0;
  if (a && b && c) {
    for (size_t i = 0; i < (size_t)n * (size_t)n; i++) a[i] = b[i] = (float)(i % 13) * 0.01f;
    be->gemm(be, NULL, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, TESSEL_F32);
    for (int r = 0; r < repeats; r++) {
      double t0 = tsl_now();
      be->gemm(be, NULL, 0, 0, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n, TESSEL_F32);
      double rate = 2.0 * n * (double)n * n / (tsl_now() - t0) / 1e9;
      if (rate > best) best = rate;
    }
  }
  free(a);
  free(b);
  free(c);
  return best;
}

/* OpenBLAS's kernel family now: a rate measured with other kernels (say,
** before OPENBLAS_CORETYPE was set) is not this process's ceiling. */
static const char *blas_kernels(void) {
  const char *core = openblas_get_corename();
  return core ? core : "?";
}

double tsl_peak_measure(tsl_backend *be, int max_n, FILE *out) {
  double peak = 0;
  for (int n = 512; n <= max_n; n *= 2) {
    double r = gemm_rate(be, n, n >= 2048 ? 3 : 12);
    if (out) fprintf(out, "sgemm %4d x %4d x %4d: %8.1f GFLOP/s\n", n, n, n, r);
    if (r > peak) peak = r;
  }
  return peak;
}

tsl_status tsl_peak_save(int threads, double gflops) {
  char *path = tsl_peak_cache_path(), *dir = path ? tsl_dirname(path) : NULL;
  tsl_status st = dir ? tsl_mkdir_p(dir) : TESSEL_E_NOMEM;
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "backend", "cpu");
  cJSON_AddNumberToObject(o, "threads", threads);
  cJSON_AddStringToObject(o, "blas", blas_kernels());
  cJSON_AddNumberToObject(o, "gflops", gflops);
  /* runs starting together may measure at once: each replaces the file whole */
  if (st >= 0) st = tsl_write_json_file(path, o);
  cJSON_Delete(o);
  free(path);
  free(dir);
  return st;
}

double tsl_peak_flops(const tsl_settings *s, double cores) {
  if (s->device.peak_tflops > 0) return s->device.peak_tflops * 1e12;
  if (s->device.kind != TSL_DEVICE_CPU) return 0;
  char *path = tsl_peak_cache_path(), *text = NULL;
  double peak = 0;
  if (path && tsl_read_file(path, &text, NULL) == TESSEL_OK) {
    cJSON *root = cJSON_Parse(text);
    cJSON *g = cJSON_GetObjectItemCaseSensitive(root, "gflops"), *t = cJSON_GetObjectItemCaseSensitive(root, "threads");
    cJSON *be = cJSON_GetObjectItemCaseSensitive(root, "backend"), *blas = cJSON_GetObjectItemCaseSensitive(root, "blas");
    /* measured with some number of threads; a rank gets the same rate per
    ** core it can use (GEMM scales close to linearly in cores) */
    if (cJSON_IsNumber(g) && cJSON_IsNumber(t) && t->valuedouble >= 1 && cJSON_IsString(be) &&
        strcmp(be->valuestring, "cpu") == 0 &&
        cJSON_IsString(blas) && strcmp(blas->valuestring, blas_kernels()) == 0)
      peak = g->valuedouble * 1e9 * cores / t->valuedouble;
    cJSON_Delete(root);
  }
  tsl_error_clear();
  free(text);
  free(path);
  return peak;
}

tsl_status tsl_peak_ensure(tsl_runtime *rt) {
  const tsl_settings *s = &rt->settings;
  if (s->device.peak_tflops > 0 || s->device.kind != TSL_DEVICE_CPU) return TESSEL_OK;
  if (rt->world.local_rank == 0 && tsl_peak_flops(s, 1) <= 0) {
    char *path = tsl_peak_cache_path();
    tsl_info("MFU: measuring this machine's sgemm peak once (kept in %s; `tessel bench peak` measures again)",
             path ? path : "the cache");
    free(path);
    double gflops = tsl_peak_measure(&rt->be, 1024, NULL);
    if (gflops <= 0 || tsl_peak_save(rt->threads, gflops) < 0)
      tsl_warn("could not record the measured peak (%s); MFU is shown as '-'", tsl_error_message());
    tsl_error_clear();
  }
  return tsl_world_barrier(&rt->world);
}
