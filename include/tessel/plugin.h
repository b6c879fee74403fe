/*
** tessel/plugin.h — the strategy plugin ABI, version 2.
**
** This header is the whole contract between the tessel core and a parallel
** strategy plugin: nothing a plugin may rely on is left to reading the
** core's source. A plugin includes it, fills in one `tessel_strategy` table
** and exports exactly one symbol, TESSEL_STRATEGY_ENTRY, that returns the
** table. It never links libtessel: every service it needs (logging, errors,
** config, memory tiers, streams, collectives, kernels, the model, its state)
** reaches it through the `tessel_host_api` table the core passes to
** `create`. The optional support library (tessel/sdk.h) is compiled into the
** plugin and uses only this header.
**
** The model is data. A strategy never sees "GPT-2": it sees units (the
** embedding, the blocks, the head), each a list of ops (linear, norm,
** rotary, attention, activation, residual, embedding, head) that name their
** weights by parameter index, parameters that declare a role (a linear into
** the heads or the MLP, a linear back to the hidden width, a norm, an
** embedding table …) and dimensions by role (hidden, heads, kv heads, head
** size, ffn, vocabulary). It splits by role and never parses a name.
**
** Versioning. TESSEL_ABI_VERSION packs major.minor. The major is part of the
** entry symbol's name (`tessel_strategy_v2`); a minor release only appends
** fields to the end of structs, hooks to the end of tables and values to
** enums. Every struct that crosses the boundary begins with `uint32_t size`
** = sizeof as compiled on the side that allocated it. The rules, tested by
** building plugins against an older (trimmed) and a newer (padded) copy of
** this header:
**  - structs the core fills for the plugin (dims, infos, views, stats …):
**    the plugin sets `size` = sizeof before the call; the core writes
**    min(size, its sizeof) bytes and leaves `size` as the plugin set it, so
**    fields the core does not know read as the zeros the plugin put there;
**  - structs and tables the plugin fills for the core (the strategy table,
**    layer ops, mesh, layout, geometry, placement): the core reads
**    min(size, its sizeof) into zeroed storage, so fields the plugin did not
**    know read as 0/NULL, and 0/NULL always means "absent / core default";
**  - out-structs the core passes to a hook (`tessel_mesh *out` …) arrive
**    zeroed with `size` = the core's sizeof: a plugin writes a field added
**    after 2.0 only when TESSEL_HAS(out, T, field).
**
** Threading. Hooks run on the rank's driver thread, one at a time, in the
** order documented for each family. Host calls are made from that thread,
** except `log` and `set_error`, which any thread may call. A plugin that
** starts threads joins them in `destroy`.
**
** Errors. Every hook and every host call returns tessel_status: 0 is
** success, negative values are error kinds (a hook returning any other
** value fails as "not a tessel_status"); results come back through
** out-parameters. Detail goes through `api->set_error(host, status, ...)`,
** which returns its status so `return api->set_error(...)` reads well; the
** message lives in the plugin instance's own buffer. The core prefixes the
** strategy's name, the hook and the rank when it reports the error, and
** `log` prefixes the strategy's name: a plugin's messages never name the
** plugin themselves. A failed host call leaves its own message, which the
** core reports when the hook passes the status on without set_error.
** Any negative status fails the run, TESSEL_E_UNSUPPORTED included (from
** setup, with the plugin's own set_error, it says the strategy declines
** the device); a hook that wants the
** core's default for one call leaves its out-struct as the core gave it
** (layout, geometry, place) or calls the core's kernels (layer ops).
*/
#ifndef TESSEL_PLUGIN_H
#define TESSEL_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TESSEL_ABI(major, minor) (((uint32_t)(major) << 16) | (uint32_t)(minor))
#define TESSEL_ABI_MAJOR(v) ((uint32_t)(v) >> 16)
#define TESSEL_ABI_MINOR(v) ((uint32_t)(v) & 0xffffu)
#define TESSEL_ABI_VERSION TESSEL_ABI(2, 4)

/* The entry symbol a plugin exports; the major version is in its name. */
#define TESSEL_STRATEGY_ENTRY tessel_strategy_v2
#define TESSEL_STRATEGY_ENTRY_NAME "tessel_strategy_v2"

/* True when struct *p of type T (allocated by the other side) has field f. */
#define TESSEL_HAS(p, T, f) ((p)->size >= offsetof(T, f) + sizeof(((T *)0)->f))

#if defined(__GNUC__)
#define TESSEL_EXPORT __attribute__((visibility("default")))
#define TESSEL_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TESSEL_EXPORT
#define TESSEL_PRINTF(fmt, args)
#endif

/* The contract in parts, in this order: each part uses the ones before. */
#include "plugin/types.h"
#include "plugin/model.h"
#include "plugin/state.h"
#include "plugin/host.h"
#include "plugin/plan.h"

/* ---------------------------------------------------- the plugin's table */

/* Capabilities, for `tessel plugins` and for the core's checks. */
#define TESSEL_CAP_DATA_PARALLEL (1ull << 0)
#define TESSEL_CAP_TENSOR_PARALLEL (1ull << 1)
#define TESSEL_CAP_PIPELINE (1ull << 2)
#define TESSEL_CAP_SHARDED_STATE (1ull << 3)   /* ZeRO: optimizer/grad/param shards  */
#define TESSEL_CAP_OFFLOAD (1ull << 4)         /* places state on host or NVMe       */
#define TESSEL_CAP_OWNS_OPTIMIZER (1ull << 5)  /* its optimizer_step replaces the core's */
#define TESSEL_CAP_FP32_ACTIVATIONS (1ull << 6) /* refused on a 16-bit backend        */
#define TESSEL_CAP_LOSSY (1ull << 7)           /* not step-by-step equivalent to one
                                                  process (compression, local steps):
                                                  judged by validation loss          */

/* Where a hint is given. */
typedef enum { TESSEL_PHASE_FORWARD = 0, TESSEL_PHASE_BACKWARD = 1, TESSEL_PHASE_OPTIMIZER = 2 } tessel_phase;

/*
** The strategy. Lifecycle, in order:
**   create → mesh → layout (per parameter) → geometry → place (per state
**   kind) → [core allocates, initialises, builds groups] → setup → per
**   step: set_grad_sync, train_step or the default schedule
**   (before/after_forward, before/after_backward and prefetch around each
**   unit), grads_finish, grad_norm, prefetch(OPTIMIZER), optimizer_step → …
**   → destroy; eval_step for validation. Checkpoints may be written or read
**   between steps (state_read/state_write). Planning runs create → mesh →
**   layout → geometry → place, then enumerate or estimate, then destroy:
**   no setup and no step.
*/
typedef struct tessel_strategy {
  uint32_t size;           /* sizeof(tessel_strategy) as compiled       */
  uint32_t abi_version;    /* TESSEL_ABI_VERSION as compiled            */
  const char *name;        /* must equal NAME in libtessel-NAME.so      */
  const char *version;     /* the plugin's own version                  */
  const char *description; /* one line                                  */
  uint64_t caps;           /* TESSEL_CAP_*                               */

  /* setup */
  tessel_status (*create)(const tessel_host_api *, tessel_host *, const tessel_cfg *section, void **inst);
  void (*destroy)(void *inst);
  /* Required. Arrange world_size ranks; a mismatch is TESSEL_E_CONFIG
  ** with a message that shows the arithmetic. */
  tessel_status (*mesh)(void *inst, int world_size, tessel_mesh *out);
  /* NULL: every parameter REPLICATED, STORE_CORE. */
  tessel_status (*layout)(void *inst, const tessel_param_info *, tessel_layout *out);
  /* NULL: the single-process geometry. */
  tessel_status (*geometry)(void *inst, tessel_geometry *out);
  /* Where one kind of core-owned state lives. NULL (or out left as given):
  ** the device, whole; activations as train.recompute and
  ** train.offload_activations say (everything kept on the device unless
  ** set). */
  tessel_status (*place)(void *inst, tessel_state_ref what, tessel_placement *out);
  /* After storage is allocated and initialised: build buckets, chunks. */
  tessel_status (*setup)(void *inst);

  /* sharding of compute; NULL: all core versions */
  const tessel_layer_ops *layer_ops;

  /* schedule; NULL: forward all units then backward all, per micro-batch */
  tessel_status (*train_step)(void *inst, int micro_steps);
  /* forward only, for validation; NULL: forward all units per micro-batch.
  ** A pipeline needs it: its stages pass activations to each other. */
  tessel_status (*eval_step)(void *inst, int micro_steps);

  /* communication */
  tessel_status (*before_forward)(void *inst, int unit, int micro);
  tessel_status (*after_forward)(void *inst, int unit, int micro);
  tessel_status (*before_backward)(void *inst, int unit, int micro);
  tessel_status (*after_backward)(void *inst, int unit, int micro);
  /* Gradient accumulation: sync is off on all but the last micro-batch. */
  tessel_status (*set_grad_sync)(void *inst, int on);
  /* All gradient communication of the step is complete when it returns. */
  tessel_status (*grads_finish)(void *inst);
  /* The squared global gradient norm. NULL: the core's, which counts every
  ** logical gradient element of core storage once (a part held by several
  ** ranks on the lowest of them; sharded gradients on their owners). A
  ** strategy that stores parameters itself provides it. */
  tessel_status (*grad_norm)(void *inst, double *sumsq);
  /* Requires TESSEL_CAP_OWNS_OPTIMIZER; NULL: the core's optimizer. */
  tessel_status (*optimizer_step)(void *inst, const tessel_optim_step *);

  /* memory placement: a hint to start moving state, called after each
  ** unit's compute with the unit that comes next in this direction
  ** (forward: unit + 1, backward: unit − 1), and before the optimizer step
  ** with next_unit −1 and TESSEL_PHASE_OPTIMIZER. */
  tessel_status (*prefetch)(void *inst, int next_unit, tessel_phase phase);

  /* checkpoint: move this rank's part (as its layout describes) of one
  ** parameter's MASTER or SLOT state that the plugin stores itself to or
  ** from a host buffer. Both run on every rank that holds a part, one
  ** parameter at a time in the same order on all ranks, so state_read may
  ** assemble its part with a collective over the ranks that share it. */
  tessel_status (*state_read)(void *inst, int param, tessel_state_ref, float *host_dst);
  tessel_status (*state_write)(void *inst, int param, tessel_state_ref, const float *host_src);

  /* planning (ABI 2.1; see tessel_plan_query): offer the option sets worth
  ** trying for q->world_size, and predict one rank's memory, traffic,
  ** FLOPs and schedule idle time for the options of this instance. */
  tessel_status (*enumerate)(void *inst, const tessel_plan_query *q);
  tessel_status (*estimate)(void *inst, const tessel_plan_query *q, tessel_estimate *out);
} tessel_strategy;

/* The entry point: return the table for a core speaking `core_abi`, or
** NULL when this plugin cannot serve that major version. */
typedef const tessel_strategy *(*tessel_strategy_entry_fn)(uint32_t core_abi);

/* What a plugin defines (and nothing else exported):
**   TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) { ... } */
TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi);

/* The usual entry point: serve `table` to any core of this major version.
** A plugin that supports several majors writes the function itself. */
#define TESSEL_STRATEGY_DEFINE(table)                                                  \
  TESSEL_EXPORT const tessel_strategy *TESSEL_STRATEGY_ENTRY(uint32_t core_abi) {      \
    return TESSEL_ABI_MAJOR(core_abi) == TESSEL_ABI_MAJOR(TESSEL_ABI_VERSION) ? &(table) : NULL; \
  }

#ifdef __cplusplus
}
#endif
#endif /* TESSEL_PLUGIN_H */
