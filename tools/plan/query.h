/*
** tools/plan/query.h — the core's side of tessel_plan_query: where the
** strategy's answers go while the planner asks it, and the core's own
** storage and traffic for what a rank keeps.
*/
#ifndef TSL_PLAN_QUERY_H
#define TSL_PLAN_QUERY_H

#include "plan/plan.h"

/* What the planner is asking about (runtime->plan while it asks). */
typedef struct tsl_plan_ctx {
  tsl_plan *plan;
  const char *strategy;  /* enumerate: whose option sets these are */
  tsl_plan_cand *cand;   /* estimate: the candidate */
  int rank;              /*           and its rank */
} tsl_plan_ctx;

/* A query for one rank (-1: enumerate) with the core's callbacks. */
void tsl_plan_query_init(tessel_plan_query *q, int world, int rank, uint64_t device_capacity,
                         const tessel_model_dims *dims);

/* Add a line to a rank's traffic, merging it into one of the same
** communicator, kind and overlap. */
tsl_status tsl_plan_add_line(tsl_plan_rank *r, const tsl_plan_line *l);
/* The communicator over `axes` as metrics name it ("dp+pp", "self"), and
** its size. */
void tsl_plan_group(const tessel_mesh *m, uint32_t axes, char *name, size_t cap, int *ranks);
/* The core's scalars of each step on its own communicator, "core": the
** loss (sum and count), the memory peaks per tier and, unless the strategy
** computes it, the gradient norm. */
tsl_status tsl_plan_core_lines(const tsl_runtime *rt, tsl_plan_rank *r);

#endif
