/*
** core/common/stats.h — summary statistics of timing samples.
*/
#ifndef TSL_STATS_H
#define TSL_STATS_H

#include <stdint.h>

/* Median of n values, NANs left out (NAN when none remain); `v` is left
** as it was. */
double tsl_median(const double *v, int64_t n);
/* A per-step rate (tokens/s or MFU: a fixed amount over the step's time) at
** the median step time, from any one step's rate and time: reported beside
** that median step time, the median of the rates themselves would not match
** it (of an even count it averages two other steps: 85,832 tok/s once sat
** beside 387 ms/step). */
double tsl_rate_at(double rate, double time, double median_time);
/* The middle half of n samples ordered by key[] (NANs left out): their
** indices into *idx (heap, caller frees), *count of them. For n below 4
** every sample is kept. Averaging parts of a step over the middle half
** gives a typical step's split that adds up exactly, where medians of the
** parts taken one by one need not. */
int tsl_middle_half(const double *key, int64_t n, int64_t **idx, int64_t *count);
/* Smallest and largest of n values, NANs left out (NAN when none). */
void tsl_min_max(const double *v, int64_t n, double *min, double *max);

#endif
