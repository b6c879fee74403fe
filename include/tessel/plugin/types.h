/*
** tessel/plugin/types.h — part of the plugin ABI: status codes, opaque handles, data types, the mesh.
**
** Included by <tessel/plugin.h>, which states the versioning, threading and
** error rules these declarations follow; include that header, not this one.
*/
#ifndef TESSEL_PLUGIN_TYPES_H
#define TESSEL_PLUGIN_TYPES_H
#ifndef TESSEL_PLUGIN_H
#error "include <tessel/plugin.h>, not its parts"
#endif

/* ---------------------------------------------------------------- status */

typedef int32_t tessel_status;
enum {
  TESSEL_OK = 0,
  TESSEL_E_CONFIG = -1,      /* invalid configuration or option: a user error */
  TESSEL_E_NOMEM = -2,       /* a memory tier cannot hold the request          */
  TESSEL_E_UNSUPPORTED = -3, /* not possible here: a failure like the others,
                                except from setup with the plugin's own
                                set_error (the strategy declines the
                                device); for the core's default, leave the
                                hook NULL or its out-struct as given          */
  TESSEL_E_VERSION = -4,     /* ABI, plugin build or file format mismatch      */
  TESSEL_E_COMM = -5,        /* a collective or point-to-point transfer failed */
  TESSEL_E_DEVICE = -6,      /* the device backend failed                      */
  TESSEL_E_IO = -7,          /* a file could not be read or written            */
  TESSEL_E_INTERNAL = -8,    /* a broken invariant: a bug, in core or plugin   */
  TESSEL_E_NUMERIC = -9      /* NaN or infinity where a number was needed      */
};

enum { TESSEL_LOG_ERROR = 0, TESSEL_LOG_WARN, TESSEL_LOG_INFO, TESSEL_LOG_DEBUG };

/* --------------------------------------------------------- opaque handles */

typedef struct tessel_host tessel_host;     /* one per plugin instance       */
typedef struct tessel_cfg tessel_cfg;       /* a read-only YAML node         */
typedef struct tessel_group tessel_group;   /* a communicator over mesh axes */
typedef struct tessel_work tessel_work;     /* an asynchronous transfer      */
typedef struct tessel_stream tessel_stream; /* an ordered device queue       */
typedef struct tessel_event tessel_event;   /* a point in a stream           */

/* ------------------------------------------------------------- data types */

typedef enum {
  TESSEL_F32 = 0, /* master weights, gradients, optimizer state   */
  TESSEL_BF16 = 1,
  TESSEL_F16 = 2,
  TESSEL_I32 = 3, /* token ids                                    */
  TESSEL_F64 = 4, /* reductions of scalars (loss sums, norms)      */
  TESSEL_U8 = 5   /* raw bytes                                     */
} tessel_dtype;
#define TESSEL_DTYPE_COUNT 6

/* Bytes per element of a dtype (0 for an unknown value). */
static inline size_t tessel_dtype_size(tessel_dtype dt) {
  switch (dt) {
    case TESSEL_F32: case TESSEL_I32: return 4;
    case TESSEL_BF16: case TESSEL_F16: return 2;
    case TESSEL_F64: return 8;
    case TESSEL_U8: return 1;
  }
  return 0;
}

typedef enum { TESSEL_SUM = 0, TESSEL_MAX = 1, TESSEL_MIN = 2 } tessel_redop;

/* Memory tiers. Every allocation lands in one tier and is counted in that
** tier's ledger. DEVICE is the accelerator's memory (on the CPU backend an
** ordinary heap region with the capacity from `device.memory_limit`), HOST
** is CPU memory (pinned under CUDA), NVME is file-backed: its "addresses" are
** opaque handles that only `mem->copy` understands. */
typedef enum { TESSEL_TIER_DEVICE = 0, TESSEL_TIER_HOST = 1, TESSEL_TIER_NVME = 2 } tessel_tier;
#define TESSEL_TIER_COUNT 3

/* What an allocation holds, for the ledger's split of each tier. */
typedef enum {
  TESSEL_MEM_PARAM = 0,   /* parameters (master or working copies)  */
  TESSEL_MEM_GRAD = 1,    /* gradients                               */
  TESSEL_MEM_OPTIM = 2,   /* optimizer state                         */
  TESSEL_MEM_ACT = 3,     /* activations and their gradients         */
  TESSEL_MEM_SCRATCH = 4  /* communication and kernel scratch        */
} tessel_mem_kind;
#define TESSEL_MEM_KIND_COUNT 5

typedef struct tessel_tier_stats {
  uint32_t size;
  uint64_t capacity;   /* bytes; UINT64_MAX when unbounded                */
  uint64_t in_use;     /* bytes currently allocated                       */
  uint64_t peak;       /* highest in_use since the last reset             */
  uint64_t model;      /* in_use that is PARAM, GRAD or OPTIM             */
  uint64_t non_model;  /* in_use that is ACT or SCRATCH                   */
  uint64_t bytes_in;   /* copied into this tier since the last reset      */
  uint64_t bytes_out;  /* copied out of this tier since then              */
  uint64_t params, grads, optim, acts, scratch; /* in_use by kind           */
} tessel_tier_stats;

/* ------------------------------------------------------------------ mesh */

/* A plugin arranges the world's ranks on a mesh of named axes; the last axis
** varies fastest (rank = Σ coord[i] · stride[i]). The core checks that the
** product of the sizes equals the world size and builds one communicator per
** axis set. `data_axes` is a bit mask of the axes over which ranks read
** different samples; the data-parallel degree is the product of their sizes
** and each such rank takes its slice of the global batch.
** Communicators are created collectively, on every rank at once, before
** `setup`: one per single axis, one for `data_axes`, one for the whole
** world, and one per extra axis set listed in `groups` (e.g. the x·z plane
** of 2.5D). Asking for any other set later is an error, never a hang. */
#define TESSEL_MESH_MAX_AXES 8
#define TESSEL_MESH_MAX_GROUPS 16
typedef struct tessel_mesh {
  uint32_t size;
  int32_t naxes;
  const char *names[TESSEL_MESH_MAX_AXES];
  int32_t sizes[TESSEL_MESH_MAX_AXES];
  uint32_t data_axes;
  int32_t n_groups;
  uint32_t groups[TESSEL_MESH_MAX_GROUPS];
} tessel_mesh;

#endif /* TESSEL_PLUGIN_TYPES_H */
