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

#include "backend.h"
#include "comm/comm.h"
#include "config/config.h"
#include "mem/ledger.h"
#include "plugin/loader.h"
#include "runtime/mpi.h"
#include "runtime/settings.h"

typedef struct tsl_model tsl_model;
typedef struct tsl_tokenizer tsl_tokenizer;

struct tessel_host {
  struct tsl_runtime *rt;
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
  tessel_geometry geo;

  /* devices, memory, communication (NULL/zero until `run` builds them) */
  tsl_backend be;
  int be_ready;
  int threads; /* CPU threads per rank: device.threads, or the cores shared among this machine's ranks */
  tsl_ledger ledger;
  tsl_comm *comm;
  tsl_stream *compute, *comm_stream;
  void *scratch;         /* device scratch for reductions, grown on demand */
  uint64_t scratch_bytes;

  tsl_model *model;
  /* the run's tokenizer: data.tokenizer, or the one its shards were made
  ** with (NULL: byte-level data); stored in checkpoints, used to sample */
  tsl_tokenizer *tokenizer;
} tsl_runtime;

#endif
