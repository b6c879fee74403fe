/*
** tools/plan/validate.h — `tessel plan --validate`: run the best candidates
** through `tessel compare` and set what was predicted beside what was
** measured.
*/
#ifndef TSL_PLAN_VALIDATE_H
#define TSL_PLAN_VALIDATE_H

#include <stdio.h>

#include "plan/plan.h"

/* Compare the written configurations paths[0..n) (the first n fitting
** candidates in ranked order), `repeat` trials of `steps` steps each, into
** DIR/compare next to them, and print per candidate: predicted and measured
** step time with its error and split, device and host peaks, bytes per
** communicator, and whether the first-ranked is the measured fastest or
** within the measured noise of it. */
tsl_status tsl_plan_validate(const tsl_plan *p, char **paths, int n, int steps, int repeat, FILE *out);

#endif
