/*
** tools/plan/plan.h — `tessel plan`: every strategy × its option sets, each
** predicted before anything runs, and ranked.
**
** For each candidate (a strategy and one set of its options) the core
** builds the planning half of a run for a world of N ranks — config,
** strategy, mesh, parameters, layouts, geometry, placements; no devices,
** memory or communicators — and asks the strategy's `estimate` hook about
** every rank (plugin.h, tessel_plan_query). The strategy answers with its
** memory per tier and kind, its traffic per communicator, its FLOPs and its
** pipeline idle time; the core accounts its own storage and traffic through
** the query's callbacks. A machine profile (profile.h) turns FLOPs and bytes
** into seconds (time.c), and candidates are ranked by predicted step time
** among those that fit in memory.
*/
#ifndef TSL_PLAN_H
#define TSL_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "plan/profile.h"
#include "runtime/runtime.h"

/* One line of a rank's traffic per step (a strategy's tessel_traffic, or
** the core's own), with its communicator named as metrics name it. */
typedef struct tsl_plan_line {
  uint32_t axes;          /* mesh axes; TSL_PLAN_CORE_AXES for the core's scalars */
  char group[64];         /* "dp", "k+i", "core" */
  int ranks;              /* the communicator's size */
  int nodes;              /* machines its ranks span (time.c, from the profile) */
  tessel_collective kind;
  tessel_overlap overlap;
  uint64_t calls, payload;
} tsl_plan_line;
#define TSL_PLAN_CORE_AXES 0xffffffffu

/* One rank's prediction. */
typedef struct tsl_plan_rank {
  uint64_t memory[TESSEL_TIER_COUNT][TESSEL_MEM_KIND_COUNT];
  double flops, bubble;
  tsl_plan_line *lines;
  int n_lines, cap_lines;
  int core_described; /* the strategy called core_state */
} tsl_plan_rank;

/* Its time, from the profile (time.c); seconds per step. */
typedef struct tsl_plan_time {
  double compute, comm, exposed, bubble, optimizer, step;
} tsl_plan_time;

typedef enum { TSL_CAND_OK = 0, TSL_CAND_REFUSED = 1, TSL_CAND_NO_ESTIMATE = 2 } tsl_cand_state;

/* A strategy with one set of options. */
typedef struct tsl_plan_cand {
  char strategy[64];
  char options[512];   /* the inside of the plugin section's flow map */
  int as_configured;   /* the configuration's own plugin section */
  tsl_cand_state state;
  char error[2048];    /* refused: why */
  tessel_mesh mesh;
  char mesh_text[256]; /* "dp 2 × pp 2 × tp 2" */
  tessel_model_dims dims;
  int world;
  uint64_t device_capacity; /* per rank, as the estimate was told (candidates.c) */
  tsl_plan_rank *ranks; /* [world] */
  char *yaml;           /* the resolved configuration */
  /* over ranks */
  uint64_t peak[TESSEL_TIER_COUNT]; /* the largest rank's */
  int peak_rank[TESSEL_TIER_COUNT];
  tsl_plan_time time;   /* the slowest rank's step */
  int slowest;
  double tokens_per_s;
  int fits, timed;
} tsl_plan_cand;

typedef struct tsl_plan {
  const char *config;
  const char *const *sets;
  int n_sets;
  int world;
  const char *const *only; /* --strategy names (n_only 0: every installed one) */
  int n_only;
  uint64_t memory_limit;   /* per rank, device tier; 0: the profile's, or unbounded */
  int cuda;                /* the configuration's device.kind */
  tsl_profile profile;
  int have_profile;
  char no_profile[1024];   /* why there is none, when there is none */
  tsl_plan_cand *c;
  int n, cap;
  int *order;              /* ranked candidates (indices into c), best first */
} tsl_plan;

/* Add a candidate unless it is there already; an option set too long to
** keep is an error. */
tsl_status tsl_plan_add(tsl_plan *p, const char *strategy, const char *options, int as_configured);
/* The candidates: every strategy's option sets (its `enumerate`, or its
** defaults), and the configuration's own plugin section. */
tsl_status tsl_plan_enumerate(tsl_plan *p);
/* Plan and estimate every candidate over every rank. A candidate the model
** refuses keeps its error; only a failure of the planner itself returns < 0. */
tsl_status tsl_plan_estimate_all(tsl_plan *p);
/* Predict times (when a profile is given), decide which fit, and rank. */
void tsl_plan_rank_all(tsl_plan *p);
/* The i-th (from 0) estimated candidate that fits, in ranked order: what
** --write writes and --validate runs; NULL past the last. */
const tsl_plan_cand *tsl_plan_fitting(const tsl_plan *p, int i);
/* Tokens the whole world trains on per step under candidate c. */
double tsl_plan_tokens_per_step(const tsl_plan_cand *c);
/* What a candidate holds (its ranks' lines, its configuration). */
void tsl_plan_cand_free(tsl_plan_cand *c);
void tsl_plan_free(tsl_plan *p);

/* One candidate's planning (estimate.c). */
tsl_status tsl_plan_candidate(tsl_plan *p, tsl_plan_cand *c);
/* Ask the strategy of `rt`, planned (tsl_model_plan) for c->world ranks
** and c->mesh, about each rank for a device of c->device_capacity bytes,
** into c->ranks (c->world of them, zeroed); the core adds its own scalars.
** `p` may be NULL (no option sets to offer). A strategy's refusal is its
** hook's error, "strategy 'NAME' failed in estimate for rank R: ...". */
tsl_status tsl_plan_estimate_ranks(tsl_plan *p, tsl_plan_cand *c, tsl_runtime *rt);

/* Time of one rank on the profile (time.c). */
void tsl_plan_time_rank(const tsl_plan *p, const tsl_plan_cand *c, int rank, tsl_plan_time *out);
/* A line's time on the profile in a world of `world` ranks: calls · α +
** bus bytes / bus bandwidth. */
double tsl_plan_line_seconds(const tsl_profile *pr, const tsl_plan_line *l, int world);

/* Output (report.c): the ranked table, then the first candidate's memory
** split and traffic; `top` rows at most. */
void tsl_plan_report(const tsl_plan *p, int top, FILE *out);
/* Every candidate in ranked order as JSON (json.c): its memory per tier
** at the largest rank by kind, rank 0's traffic lines (the rank metrics
** report), its FLOPs and its time. */
tsl_status tsl_plan_json(const tsl_plan *p, const char *path);
/* Write the first `top` fitting candidates' configurations into dir as
** NN-STRATEGY.yaml; their paths are printed. */
tsl_status tsl_plan_write(const tsl_plan *p, int top, const char *dir, char ***paths, int *n);

/* Bus bytes per payload byte of `kind` over `ranks` (nccl-tests' factors:
** 2(n−1)/n for an all-reduce, (n−1)/n for a reduce-scatter, all-gather or
** all-to-all, 0 for a receive, 1 otherwise). */
double tsl_plan_bus_factor(tessel_collective kind, int ranks);
/* Bytes of a traffic line on the wire of one rank (nccl-tests' bus bytes). */
double tsl_plan_bus_bytes(const tsl_plan_line *l);
const char *tsl_collective_name(tessel_collective k);

#endif
