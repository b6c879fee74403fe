/*
** core/runtime/runtime.h — everything one rank's run holds.
**
** The runtime is built in stages by the commands that need them: `check`
** fills config, settings and the plugin's mesh and geometry; `run` adds the
** backend, the memory ledger, communicators, the model and the trainer.
** Host services that need a stage not yet built answer TESSEL_E_UNSUPPORTED
** with a message saying so, so a plugin that calls them from the wrong hook
** learns why.
*/
#ifndef TSL_RUNTIME_H
#define TSL_RUNTIME_H

#include <pthread.h>

#include "backend.h"
#include "comm/comm.h"
#include "config/config.h"
#include "mem/ledger.h"
#include "plugin/loader.h"
#include "runtime/mpi.h"
#include "runtime/settings.h"

typedef struct tsl_model tsl_model;
typedef struct tsl_tokenizer tsl_tokenizer;

/* The handle a plugin instance holds. Its error buffer is its own, and
** log/set_error may be called from the plugin's threads. */
struct tessel_host {
  struct tsl_runtime *rt;
  pthread_mutex_t lock;
  tessel_status err_status;
  char err[4096];
};

typedef struct tsl_runtime {
  tsl_world world;
  tsl_config *config;
  tsl_settings settings;

  /* the strategy (NULL: none) */
  tsl_plugin *plugin;
  void *inst;
  tessel_host host;
  tessel_mesh mesh;
  int mesh_ready; /* `mesh` returned and its answer passed the checks: comm->coord may read it */
  tessel_geometry geo;

  /* devices, memory, communication (NULL/zero until `run` builds them) */
  tsl_backend be;
  int be_ready;
  int threads; /* CPU threads of this rank: device.threads, or its part of the cores it may use (cpus.h) */
  int inference; /* its model makes forward passes only (tessel sample): no gradients, no optimizer state */
  tsl_ledger ledger;
  tsl_comm *comm;
  tsl_stream *compute, *comm_stream;
  void *scratch;         /* device scratch for reductions, grown on demand */
  uint64_t scratch_bytes;

  tsl_model *model;
  int64_t vocab_valid;   /* the real vocabulary, for masking padded logits (0: none) */
  /* the run's tokenizer: data.tokenizer, or the one its shards were made
  ** with (NULL: byte-level data); stored in checkpoints, used to sample */
  tsl_tokenizer *tokenizer;
  /* the digests of the training and validation tokens (tsl_data_open; 0:
  ** none), which checkpoints record so a resume sees data changed in place */
  uint64_t data_digest[2];
  struct tsl_plan_ctx *plan; /* while `tessel plan` asks the strategy: where its answers go */
  /* set by `tessel plan` for strategies and options the user did not
  ** configure: they are only being asked, so their warnings (advice for a
  ** run of theirs) are logged at debug level, not read as the plan's */
  int hush_plugin_warnings;
} tsl_runtime;

#endif
