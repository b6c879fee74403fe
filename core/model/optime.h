/* core/model/optime.h — where a training step's compute time goes, op by op
** (TESSEL_OP_TIMES=1; docs/config.md, "Environment"). */
#ifndef TSL_MODEL_OPTIME_H
#define TSL_MODEL_OPTIME_H

#include "model/internal.h"

/* The phases an op runs in. */
enum { TSL_OPTIME_FORWARD, TSL_OPTIME_RECOMPUTE, TSL_OPTIME_BACKWARD, TSL_OPTIME_PHASES };

/* Allocate m->optime when TESSEL_OP_TIMES is 1 (else leave it NULL: every
** other call below then returns at once). */
tsl_status tsl_optime_open(tsl_model *m);
void tsl_optime_free(tsl_model *m);

/* Around op k of unit `unit` (`fused`: ops k and k + 1 as one kernel):
** wait for the compute stream, then read the clock. Only training steps
** are counted. */
tsl_status tsl_optime_start(tsl_model *m);
tsl_status tsl_optime_stop(tsl_model *m, int unit, int k, int fused, int phase);

#endif
