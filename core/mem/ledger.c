/* core/mem/ledger.c */
#include "ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define TSL_BOUNCE_BYTES (4u << 20)

struct tsl_alloc_rec {
  void *ptr; /* NVMe: a handle, (void *)id */
  uint64_t bytes;
  tessel_tier tier;
  tessel_mem_kind kind;
  int fd; /* NVMe only */
  char name[96];
};

const char *tsl_tier_name(tessel_tier tier) {
  switch (tier) {
    case TESSEL_TIER_DEVICE: return "device";
    case TESSEL_TIER_HOST: return "host";
    case TESSEL_TIER_NVME: return "nvme";
  }
  return "unknown";
}

tsl_status tsl_ledger_init(tsl_ledger *l, tsl_backend *be, uint64_t device_capacity, const char *nvme_dir) {
  memset(l, 0, sizeof *l);
  l->be = be;
  uint64_t free_bytes = be->device_free_bytes(be);
  l->tier[TESSEL_TIER_DEVICE].capacity = device_capacity ? TSL_MIN(device_capacity, free_bytes) : free_bytes;
  l->tier[TESSEL_TIER_HOST].capacity = UINT64_MAX;
  l->tier[TESSEL_TIER_NVME].capacity = nvme_dir ? UINT64_MAX : 0;
  if (nvme_dir && !(l->nvme_dir = tsl_strdup(nvme_dir))) return TESSEL_E_NOMEM;
  return TESSEL_OK;
}

tsl_status tsl_ledger_set_nvme_dir(tsl_ledger *l, const char *dir) {
  const int existed = tsl_path_exists(dir);
  tsl_status st = tsl_mkdir_p(dir);
  if (st < 0) return tsl_error_wrap(st, "nvme tier");
  /* a drive not mounted, or a typing mistake, would put the tier on
  ** whatever disk holds the parent, without a word */
  if (!existed)
    tsl_warn("nvme tier: %s did not exist and was created; if a drive should be mounted there, it is not, and the "
             "tier's files go to the disk that holds its parent", dir);
  char *copy = tsl_strdup(dir);
  if (!copy) return TESSEL_E_NOMEM;
  free(l->nvme_dir);
  l->nvme_dir = copy;
  l->tier[TESSEL_TIER_NVME].capacity = UINT64_MAX;
  return TESSEL_OK;
}

static tsl_alloc_rec *find_rec(const tsl_ledger *l, tessel_tier tier, const void *ptr, int *index) {
  for (int i = l->n_recs - 1; i >= 0; i--) {
    if (l->recs[i].ptr == ptr && l->recs[i].tier == tier) {
      if (index) *index = i;
      return &l->recs[i];
    }
  }
  return NULL;
}

int tsl_mem_find(const tsl_ledger *l, tessel_tier tier, const void *ptr, tsl_mem_extent *out) {
  for (int i = l->n_recs - 1; i >= 0; i--) {
    const tsl_alloc_rec *r = &l->recs[i];
    if (r->tier != tier) continue;
    /* NVMe pointers are handles, not addresses: only the handle itself */
    uintptr_t at = (uintptr_t)ptr, base = (uintptr_t)r->ptr;
    int inside = tier == TESSEL_TIER_NVME ? at == base : at >= base && at - base < r->bytes;
    if (!inside) continue;
    *out = (tsl_mem_extent){.name = r->name, .bytes = r->bytes, .into = at - base};
    return 1;
  }
  return 0;
}

static tsl_status full_error(const tsl_ledger *l, tessel_tier tier, uint64_t bytes, const char *name) {
  const tsl_tier_account *a = &l->tier[tier];
  char req[32], use[32], cap[32], model[32], act[32];
  uint64_t model_bytes = a->by_kind[TESSEL_MEM_PARAM] + a->by_kind[TESSEL_MEM_GRAD] + a->by_kind[TESSEL_MEM_OPTIM];
  if (tier == TESSEL_TIER_NVME && !l->nvme_dir)
    return tsl_error(TESSEL_E_NOMEM, "cannot place '%s' (%s) on the nvme tier: no nvme directory is configured",
                     name, tsl_format_bytes(bytes, req, sizeof req));
  if (a->capacity == UINT64_MAX) /* no limit of ours: the machine itself refused */
    return tsl_error(TESSEL_E_NOMEM,
                     "the %s tier cannot hold '%s': allocating %s more failed (the machine is out of memory) "
                     "with %s in use (model data %s, activations and scratch %s). Lower train.micro_batch_size "
                     "or the model size, run on more ranks, or pick a strategy that shards or offloads state "
                     "(gemini).",
                     tsl_tier_name(tier), name, tsl_format_bytes(bytes, req, sizeof req),
                     tsl_format_bytes(a->in_use, use, sizeof use), tsl_format_bytes(model_bytes, model, sizeof model),
                     tsl_format_bytes(a->in_use - model_bytes, act, sizeof act));
  static const char *acts_advice[2][2] = {
      {" recompute or offload activations (train.recompute, train.offload_activations),",
       " recompute activations (train.recompute),"},
      {" offload activations (train.offload_activations),", ""}};
  return tsl_error(TESSEL_E_NOMEM,
                   "the %s tier cannot hold '%s': it needs %s more, and %s of %s is in use (model "
                   "data %s, activations and scratch %s). Lower train.micro_batch_size, raise "
                   "device.memory_limit,%s or shard or offload the model state (gemini).",
                   tsl_tier_name(tier), name, tsl_format_bytes(bytes, req, sizeof req),
                   tsl_format_bytes(a->in_use, use, sizeof use), tsl_format_bytes(a->capacity, cap, sizeof cap),
                   tsl_format_bytes(model_bytes, model, sizeof model),
                   tsl_format_bytes(a->in_use - model_bytes, act, sizeof act),
                   acts_advice[l->acts_recomputed != 0][l->acts_offloaded != 0]);
}

/* Room for `bytes` in the NVMe directory, taken now: a sparse file would
** only fail for want of space at its first write, a step or more into the
** run (the files are unlinked, so the user cannot even see them there). A
** file system without fallocate gets the sparse file. */
static tsl_status nvme_reserve(const tsl_ledger *l, int fd, const char *path, uint64_t bytes, const char *name) {
  if (bytes == 0 || fallocate(fd, 0, 0, (off_t)bytes) == 0) return TESSEL_OK;
  if ((errno == EOPNOTSUPP || errno == ENOSYS) && ftruncate(fd, (off_t)bytes) == 0) return TESSEL_OK;
  if (errno != ENOSPC && errno != EDQUOT && errno != EFBIG)
    return tsl_error(TESSEL_E_IO, "nvme tier: cannot size %s to %llu bytes for '%s': %s", path,
                     (unsigned long long)bytes, name, strerror(errno));
  int err = errno;
  char need[32], have[32] = "an unknown amount";
  uint64_t free_bytes;
  if (tsl_free_bytes(l->nvme_dir, &free_bytes) >= 0) tsl_format_bytes(free_bytes, have, sizeof have);
  return tsl_error(TESSEL_E_IO,
                   "nvme tier: cannot reserve %s for '%s' in %s: %s (%s free there). Free some space, point the "
                   "NVMe directory (gemini's plugin.nvme_dir, or device.nvme_dir) at a larger disk, or place less "
                   "on NVMe (gemini's nvme_optim_frac)",
                   tsl_format_bytes(bytes, need, sizeof need), name, l->nvme_dir, strerror(err), have);
}

/* Open a new NVMe backing file. Every allocation keeps its file open, so a
** small chunk_size can need more files than Linux's usual soft limit of
** 1024: past it the soft limit is raised towards the hard one, as the data
** loader does for its shards, and the open tried again. */
static int nvme_open(const char *path) {
  int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0 || errno != EMFILE) return fd;
  uint64_t was = tsl_raise_file_limit(0, NULL);
  if (tsl_raise_file_limit(UINT64_MAX, NULL) <= was) {
    errno = EMFILE;
    return -1;
  }
  return open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
}

/* The error of an NVMe backing file that could not be opened for want of
** file descriptors: how many the tier holds, the limits, and what to do. */
static tsl_status nvme_files_error(const tsl_ledger *l, const char *path, const char *name, int err) {
  uint64_t hard, soft = tsl_raise_file_limit(0, &hard);
  int held = 0;
  for (int i = 0; i < l->n_recs; i++) held += l->recs[i].tier == TESSEL_TIER_NVME;
  if (err == ENFILE)
    return tsl_error_for(TESSEL_E_IO, TSL_REASON_FILE_TABLE,
                         "nvme tier: cannot create %s for '%s': %s, with %d NVMe file(s) open here: %s", path, name,
                         strerror(err), held, tsl_open_files_advice(err));
  return tsl_error_for(TESSEL_E_IO, TSL_REASON_FILE_LIMIT,
                       "nvme tier: cannot create %s for '%s': %s. The NVMe tier keeps one file open per allocation "
                       "(gemini: two per chunk whose moments are on NVMe, as its placement line counts), so this run "
                       "needs more open files than this process's limit allows: %llu (hard limit %llu), %d of them "
                       "NVMe files so far. Raise `ulimit -n` (the hard limit too, where it is the one reached), or "
                       "make fewer NVMe allocations: a larger plugin.chunk_size, or a lower plugin.nvme_optim_frac",
                       path, name, strerror(err), (unsigned long long)soft, (unsigned long long)hard, held);
}

/* Create the unlinked backing file of an NVMe allocation, its space taken. */
static tsl_status nvme_create(tsl_ledger *l, uint64_t bytes, const char *name, int *fd_out) {
  char *path = tsl_asprintf("%s/tessel-%d-%llu.swap", l->nvme_dir, (int)getpid(),
                            (unsigned long long)l->next_nvme);
  if (!path) return TESSEL_E_NOMEM;
  int fd = nvme_open(path);
  tsl_status st = TESSEL_OK;
  if (fd < 0 && tsl_open_files_advice(errno)) {
    st = nvme_files_error(l, path, name, errno);
  } else if (fd < 0) {
    st = tsl_error_sys(TESSEL_E_IO, errno, "nvme tier: cannot create %s for '%s'", path, name);
  } else if (unlink(path) != 0) {
    st = tsl_error(TESSEL_E_IO, "nvme tier: cannot unlink %s for '%s': %s", path, name, strerror(errno));
  } else {
    st = nvme_reserve(l, fd, path, bytes, name);
  }
  if (st < 0 && fd >= 0) close(fd);
  if (st >= 0) *fd_out = fd;
  free(path);
  return st;
}

tsl_status tsl_mem_alloc(tsl_ledger *l, tessel_tier tier, tessel_mem_kind kind, uint64_t bytes,
                         const char *name, void **out) {
  tsl_tier_account *a = &l->tier[tier];
  tsl_alloc_rec rec = {.bytes = bytes, .tier = tier, .kind = kind, .fd = -1};
  snprintf(rec.name, sizeof rec.name, "%s", name ? name : "(unnamed)");
  if (bytes > a->capacity - TSL_MIN(a->in_use, a->capacity) || (tier == TESSEL_TIER_NVME && !l->nvme_dir))
    return full_error(l, tier, bytes, rec.name);
  if (l->n_recs == l->cap_recs) {
    int cap = l->cap_recs ? l->cap_recs * 2 : 64;
    tsl_alloc_rec *p = realloc(l->recs, sizeof *p * (size_t)cap);
    if (!p) return tsl_error(TESSEL_E_NOMEM, "out of host memory for the memory ledger");
    l->recs = p;
    l->cap_recs = cap;
  }
  tsl_status st = TESSEL_OK;
  uint64_t request = bytes ? bytes : 1;
  switch (tier) {
    case TESSEL_TIER_DEVICE: st = l->be->device_alloc(l->be, request, &rec.ptr); break;
    case TESSEL_TIER_HOST: st = l->be->host_alloc(l->be, request, &rec.ptr); break;
    case TESSEL_TIER_NVME:
      st = nvme_create(l, bytes, rec.name, &rec.fd);
      rec.ptr = (void *)(uintptr_t)(++l->next_nvme);
      break;
  }
  if (st < 0) {
    if (tier == TESSEL_TIER_NVME) return st;
    return full_error(l, tier, bytes, rec.name);
  }
  l->recs[l->n_recs++] = rec;
  a->in_use += bytes;
  a->by_kind[kind] += bytes;
  if (a->in_use > a->peak) {
    a->peak = a->in_use;
    memcpy(a->peak_kind, a->by_kind, sizeof a->peak_kind);
  }
  if (a->in_use > a->peak_run) {
    a->peak_run = a->in_use;
    memcpy(a->peak_run_kind, a->by_kind, sizeof a->peak_run_kind);
  }
  *out = rec.ptr;
  return TESSEL_OK;
}

void tsl_mem_free(tsl_ledger *l, tessel_tier tier, void *ptr) {
  int i;
  if (!ptr) return;
  tsl_alloc_rec *r = find_rec(l, tier, ptr, &i);
  if (!r) {
    tsl_warn("memory ledger: freeing %p on the %s tier, which it never allocated", ptr, tsl_tier_name(tier));
    return;
  }
  if (tier == TESSEL_TIER_DEVICE) l->be->device_free(l->be, ptr);
  else if (tier == TESSEL_TIER_HOST) l->be->host_free(l->be, ptr);
  else close(r->fd);
  l->tier[tier].in_use -= r->bytes;
  l->tier[tier].by_kind[r->kind] -= r->bytes;
  l->recs[i] = l->recs[--l->n_recs];
}

/* pread/pwrite the whole range or fail with the file's story. */
static tsl_status nvme_io(const tsl_alloc_rec *r, int write, void *buf, uint64_t off, uint64_t n) {
  if (off + n > r->bytes)
    return tsl_error(TESSEL_E_INTERNAL, "nvme tier: %s of %llu bytes at %llu is outside '%s' (%llu bytes)",
                     write ? "write" : "read", (unsigned long long)n, (unsigned long long)off, r->name,
                     (unsigned long long)r->bytes);
  char *p = buf;
  while (n > 0) {
    ssize_t k = write ? pwrite(r->fd, p, n, (off_t)off) : pread(r->fd, p, n, (off_t)off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0)
      return tsl_error(TESSEL_E_IO, "nvme tier: short %s of '%s' at offset %llu (%llu bytes left): %s",
                       write ? "write" : "read", r->name, (unsigned long long)off, (unsigned long long)n,
                       k < 0 ? strerror(errno) : "end of file");
    p += k;
    off += (uint64_t)k;
    n -= (uint64_t)k;
  }
  return TESSEL_OK;
}

static tsl_copy_kind copy_kind(tessel_tier dst, tessel_tier src) {
  if (src == TESSEL_TIER_DEVICE) return dst == TESSEL_TIER_DEVICE ? TSL_COPY_D2D : TSL_COPY_D2H;
  return dst == TESSEL_TIER_DEVICE ? TSL_COPY_H2D : TSL_COPY_H2H;
}

/* NVMe <-> device or host, through the host bounce buffer when the other
** side is device memory. */
static tsl_status nvme_copy(tsl_ledger *l, const tsl_alloc_rec *r, int to_nvme, tessel_tier other,
                            char *mem, uint64_t nvme_off, uint64_t bytes, tsl_stream *s) {
  tsl_status st;
  if (other == TESSEL_TIER_HOST) return nvme_io(r, to_nvme, mem, nvme_off, bytes);
  if (!l->bounce && (st = l->be->host_alloc(l->be, TSL_BOUNCE_BYTES, &l->bounce)) < 0)
    return tsl_error(TESSEL_E_NOMEM, "nvme tier: cannot allocate the staging buffer");
  for (uint64_t done = 0; done < bytes;) {
    uint64_t n = TSL_MIN((uint64_t)TSL_BOUNCE_BYTES, bytes - done);
    if (to_nvme) {
      TSL_TRY(st, l->be->copy(l->be, l->bounce, mem + done, n, TSL_COPY_D2H, s));
      TSL_TRY(st, l->be->stream_sync(l->be, s));
      TSL_TRY(st, nvme_io(r, 1, l->bounce, nvme_off + done, n));
    } else {
      TSL_TRY(st, nvme_io(r, 0, l->bounce, nvme_off + done, n));
      TSL_TRY(st, l->be->copy(l->be, mem + done, l->bounce, n, TSL_COPY_H2D, s));
      TSL_TRY(st, l->be->stream_sync(l->be, s));
    }
    done += n;
  }
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_mem_copy(tsl_ledger *l, tessel_tier dst_tier, void *dst, uint64_t dst_off,
                        tessel_tier src_tier, const void *src, uint64_t src_off, uint64_t bytes,
                        tsl_stream *s) {
  tsl_status st;
  if (bytes == 0) return TESSEL_OK;
  if (dst_tier == TESSEL_TIER_NVME || src_tier == TESSEL_TIER_NVME) {
    if (dst_tier == TESSEL_TIER_NVME && src_tier == TESSEL_TIER_NVME)
      return tsl_error(TESSEL_E_UNSUPPORTED, "nvme tier: copies between two nvme allocations are not supported");
    int to_nvme = dst_tier == TESSEL_TIER_NVME;
    const tsl_alloc_rec *r = find_rec(l, TESSEL_TIER_NVME, to_nvme ? dst : src, NULL);
    if (!r) return tsl_error(TESSEL_E_INTERNAL, "nvme tier: copy with an unknown handle");
    char *mem = to_nvme ? (char *)src + src_off : (char *)dst + dst_off;
    st = nvme_copy(l, r, to_nvme, to_nvme ? src_tier : dst_tier, mem, to_nvme ? dst_off : src_off, bytes, s);
  } else {
    st = l->be->copy(l->be, (char *)dst + dst_off, (const char *)src + src_off, bytes,
                     copy_kind(dst_tier, src_tier), s);
  }
  if (st < 0) return st;
  if (dst_tier != src_tier) {
    l->tier[dst_tier].bytes_in += bytes;
    l->tier[src_tier].bytes_out += bytes;
  }
  return TESSEL_OK;
}

void tsl_mem_stats(const tsl_ledger *l, tessel_tier tier, tessel_tier_stats *out) {
  const tsl_tier_account *a = &l->tier[tier];
  memset(out, 0, sizeof *out);
  out->size = sizeof *out;
  out->capacity = a->capacity;
  out->in_use = a->in_use;
  out->peak = a->peak;
  out->params = a->by_kind[TESSEL_MEM_PARAM];
  out->grads = a->by_kind[TESSEL_MEM_GRAD];
  out->optim = a->by_kind[TESSEL_MEM_OPTIM];
  out->model = out->params + out->grads + out->optim;
  out->non_model = a->in_use - out->model;
  out->bytes_in = a->bytes_in;
  out->bytes_out = a->bytes_out;
}

void tsl_ledger_new_window(tsl_ledger *l) {
  for (int t = 0; t < TESSEL_TIER_COUNT; t++) {
    l->tier[t].peak = l->tier[t].in_use;
    memcpy(l->tier[t].peak_kind, l->tier[t].by_kind, sizeof l->tier[t].peak_kind);
    l->tier[t].bytes_in = l->tier[t].bytes_out = 0;
  }
}

void tsl_ledger_destroy(tsl_ledger *l) {
  while (l->n_recs > 0) {
    tsl_alloc_rec *r = &l->recs[l->n_recs - 1];
    tsl_debug("memory ledger: releasing '%s' (%llu bytes, %s) at exit", r->name, (unsigned long long)r->bytes,
              tsl_tier_name(r->tier));
    tsl_mem_free(l, r->tier, r->ptr);
  }
  if (l->bounce) l->be->host_free(l->be, l->bounce);
  free(l->recs);
  free(l->nvme_dir);
  memset(l, 0, sizeof *l);
}
