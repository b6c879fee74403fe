/*
** tools/plan/profile.h — a machine profile: what `tessel plan` turns FLOPs
** and bytes into seconds with.
**
** A profile says how fast a rank computes (a GPU's peak, or a CPU core's
** GEMM rate and the cores a machine has), which fraction of that peak a
** training step reaches, how fast a rank streams memory (the optimizer),
** how much of the communication that can overlap compute really does, the
** memory of a device and of a host, and an α–β model of every collective:
** a call costs α plus its bus bytes over the bus bandwidth, per collective
** kind and group size, within a machine ("node") and between machines
** ("cluster").
**
** Profiles are JSON. `tessel bench peak` and `tessel bench comm` measure one
** for the machine at hand into the cache (peak.json, comm.json); a profile
** for a cluster not at hand is written by hand (docs/plan.md has examples):
**
**   {"name": "...", "ranks_per_node": 8, "overlap": 0.9,
**    "compute": {"device": "gpu", "peak_tflops": 989, "efficiency": 0.45,
**                "memory_gbps": 3350},            (cpu: "gflops_per_core", "cores")
**    "memory": {"device": "80GiB", "host": "2TiB"},
**    "links": [{"within": "node", "collective": "any", "ranks": 8,
**               "alpha_us": 10, "busbw_gbps": 360}, ...]}
** ("world" in a link: the ranks that ran when it was measured;
** "streams": [{"world": N, "gbps": X}], measured memory bandwidths.)
*/
#ifndef TSL_PROFILE_H
#define TSL_PROFILE_H

#include <stdint.h>

#include "common/status.h"
#include "tessel/plugin.h"

typedef enum { TSL_WITHIN_NODE = 0, TSL_WITHIN_CLUSTER = 1 } tsl_within;

/* α–β of one collective kind (or any, kind −1) at one group size (or any,
** ranks 0), measured while `world` ranks ran (0: any; on a machine with
** fewer cores than ranks the number running changes everything). */
typedef struct tsl_link {
  tsl_within within;
  int kind;
  int ranks;
  int world;
  double alpha; /* seconds per call */
  double busbw; /* bus bytes per second */
} tsl_link;

typedef struct tsl_profile {
  char name[256];
  char source[1024];
  int gpu;             /* peak is per device; otherwise per CPU core */
  double peak;         /* FLOP/s: a device's, or one core's */
  double cores;        /* CPU: cores of one machine */
  int ranks_per_node;  /* 0: every rank on one machine */
  double efficiency;   /* the fraction of peak a training step's FLOPs reach */
  double memory_bw;    /* bytes per second one rank streams */
  double stream_bw[8]; /* measured: stream_bw[i] with stream_world[i] ranks running */
  int stream_world[8], n_streams;
  double overlap;      /* the fraction of overlappable communication hidden */
  uint64_t device_memory, host_memory; /* 0: unknown */
  tsl_link *links;
  int n_links;
} tsl_profile;

/* Read a profile file. Errors name the file and the key. */
tsl_status tsl_profile_load(const char *path, tsl_profile *out);
/* The profile of this machine from the cached measurements of `tessel bench
** peak` and `tessel bench comm` for the backend ("cpu" or "cuda"); an error
** saying which command to run when one is missing. */
tsl_status tsl_profile_local(const char *backend, tsl_profile *out);
void tsl_profile_free(tsl_profile *p);

/* The α–β for a collective on a group of `ranks` spanning `nodes` machines
** in a world of `world` ranks: the entry of the right scope whose kind
** matches (exactly, else "any"), then measured at the nearest world, then
** at the nearest group size (an entry for any world or size counts as a
** factor 1.65 off). NULL when the profile has none for that scope. */
const tsl_link *tsl_profile_link(const tsl_profile *p, tessel_collective kind, int ranks, int nodes, int world);

/* Bytes per second one rank streams in a world of `world` ranks: the
** measurement at the nearest world, else memory_bw. */
double tsl_profile_stream(const tsl_profile *p, int world);

/* The cache file of `tessel bench comm` for a backend (heap string). */
char *tsl_comm_profile_path(const char *backend);
/* A collective's name in profiles and tables ("all_reduce"), and back (−1:
** unknown; "any" is −2). */
const char *tsl_collective_key(tessel_collective k);
int tsl_collective_parse(const char *s);

#endif
