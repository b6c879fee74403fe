/* core/common/stats.c */
#include "common/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double tsl_median(const double *v, int64_t n) {
  double *s = n > 0 ? malloc(sizeof(double) * (size_t)n) : NULL;
  if (!s) return NAN;
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++)
    if (!isnan(v[i])) s[k++] = v[i];
  double m = NAN;
  if (k > 0) {
    qsort(s, (size_t)k, sizeof *s, by_value);
    m = k % 2 ? s[k / 2] : 0.5 * (s[k / 2 - 1] + s[k / 2]);
  }
  free(s);
  return m;
}

static const double *sort_key;

static int by_key(const void *a, const void *b) {
  double x = sort_key[*(const int64_t *)a], y = sort_key[*(const int64_t *)b];
  return (x > y) - (x < y);
}

int tsl_middle_half(const double *key, int64_t n, int64_t **idx, int64_t *count) {
  int64_t *all = malloc(sizeof(int64_t) * (size_t)(n > 0 ? n : 1)), k = 0;
  *idx = NULL;
  *count = 0;
  if (!all) return -1;
  for (int64_t i = 0; i < n; i++)
    if (!isnan(key[i])) all[k++] = i;
  sort_key = key; /* qsort has no context argument; callers are single-threaded */
  qsort(all, (size_t)k, sizeof *all, by_key);
  int64_t lo = k >= 4 ? k / 4 : 0, hi = k >= 4 ? k - k / 4 : k;
  memmove(all, all + lo, sizeof(int64_t) * (size_t)(hi - lo));
  *idx = all;
  *count = hi - lo;
  return 0;
}

void tsl_min_max(const double *v, int64_t n, double *min, double *max) {
  *min = *max = NAN;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(v[i])) continue;
    if (isnan(*min) || v[i] < *min) *min = v[i];
    if (isnan(*max) || v[i] > *max) *max = v[i];
  }
}

double tsl_rate_at(double rate, double time, double median_time) {
  return median_time > 0 ? rate * time / median_time : NAN;
}
