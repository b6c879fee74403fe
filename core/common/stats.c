/* core/common/stats.c */
#include "common/stats.h"

#include <math.h>
#include <stdlib.h>

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

void tsl_min_max(const double *v, int64_t n, double *min, double *max) {
  *min = *max = NAN;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(v[i])) continue;
    if (isnan(*min) || v[i] < *min) *min = v[i];
    if (isnan(*max) || v[i] > *max) *max = v[i];
  }
}
