/*
** core/common/stats.h — summary statistics of timing samples.
*/
#ifndef TSL_STATS_H
#define TSL_STATS_H

#include <stdint.h>

/* Median of n values, NANs left out (NAN when none remain); `v` is left
** as it was. */
double tsl_median(const double *v, int64_t n);
/* Smallest and largest of n values, NANs left out (NAN when none). */
void tsl_min_max(const double *v, int64_t n, double *min, double *max);

#endif
