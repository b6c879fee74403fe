/*
** core/mem/ledger.h — memory tiers and their ledger.
**
** Every byte the core or a plugin allocates goes through here, so each tier
** knows its capacity, what is in use (model data — parameters, gradients,
** optimizer state — versus non-model data — activations, scratch), its peak,
** and how many bytes were copied in and out. The device tier's capacity is
** device.memory_limit when set (on every backend, so memory strategies are
** testable on a CPU), else what the device has free. Exceeding a tier is an
** error that names the tensor, the tier, the request and what is in use.
**
** The NVMe tier is file-backed: each allocation is a file in nvme_dir that
** is unlinked as soon as it is created, so it disappears when the process
** ends, however it ends. Its "pointers" are handles that only tsl_mem_copy
** understands; reads and writes are pread/pwrite, and a short transfer is an
** error, never silent corruption.
*/
#ifndef TSL_LEDGER_H
#define TSL_LEDGER_H

#include <stdint.h>
#include "backend.h"
#include "common/status.h"

typedef struct tsl_tier_account {
  uint64_t capacity, in_use, peak, peak_run;
  uint64_t by_kind[5];       /* indexed by tessel_mem_kind */
  uint64_t peak_kind[5];     /* by_kind when `peak` was reached: what the peak is made of */
  uint64_t peak_run_kind[5]; /* the same for peak_run, the highest since the ledger began */
  uint64_t bytes_in, bytes_out;
} tsl_tier_account;

typedef struct tsl_alloc_rec tsl_alloc_rec;

typedef struct tsl_ledger {
  tsl_backend *be;
  tsl_tier_account tier[TESSEL_TIER_COUNT];
  tsl_alloc_rec *recs;
  int n_recs, cap_recs;
  char *nvme_dir;
  uint64_t next_nvme;
  void *bounce; /* host staging for NVMe <-> device */
  /* What the run already does with activations (train.recompute: full for
  ** every block, train.offload_activations), so that an out-of-memory
  ** message suggests only what is left to try. */
  int acts_recomputed, acts_offloaded;
} tsl_ledger;

/* device_capacity 0 means: what the backend reports free. nvme_dir may be
** NULL (the NVMe tier is then unavailable). */
tsl_status tsl_ledger_init(tsl_ledger *l, tsl_backend *be, uint64_t device_capacity, const char *nvme_dir);
/* Free what is left. */
void tsl_ledger_destroy(tsl_ledger *l);

/* Allocate zero-filled memory in a tier. `name` is kept for error messages. */
tsl_status tsl_mem_alloc(tsl_ledger *l, tessel_tier tier, tessel_mem_kind kind, uint64_t bytes,
                         const char *name, void **out);
void tsl_mem_free(tsl_ledger *l, tessel_tier tier, void *ptr);
/* Copy bytes between tiers, ordered on stream (NULL: synchronous). */
tsl_status tsl_mem_copy(tsl_ledger *l, tessel_tier dst_tier, void *dst, uint64_t dst_off,
                        tessel_tier src_tier, const void *src, uint64_t src_off, uint64_t bytes,
                        tsl_stream *s);
/* The allocation of `tier` that holds `ptr` (at its start or inside it; an
** NVMe handle exactly): 1 and *out, or 0 when none of the ledger's does
** (memory allocated elsewhere, e.g. a caller's own host buffer). out->name
** lives as long as the allocation. */
typedef struct tsl_mem_extent {
  const char *name;
  uint64_t bytes; /* the whole allocation */
  uint64_t into;  /* where ptr lies in it */
} tsl_mem_extent;
int tsl_mem_find(const tsl_ledger *l, tessel_tier tier, const void *ptr, tsl_mem_extent *out);
void tsl_mem_stats(const tsl_ledger *l, tessel_tier tier, tessel_tier_stats *out);
/* Enable the NVMe tier with its files in dir (created if needed). */
tsl_status tsl_ledger_set_nvme_dir(tsl_ledger *l, const char *dir);
/* Start a new peak window (per step) and clear the copy counters. */
void tsl_ledger_new_window(tsl_ledger *l);
const char *tsl_tier_name(tessel_tier tier);

#endif
