/* core/runtime/build.c */
#include "runtime/build.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/import.h"
#include "common/log.h"
#include "common/util.h"
#include "model/model.h"
#include "plugin/dso.h"
#include "plugin/host.h"
#include "runtime/mpi_wait.h"
#include "tokenizer/tokenizer.h"

/* tsl_runtime_configure, the strategy started only when `world_size` > 0. */
static tsl_status configure(tsl_runtime *rt, const char *path, const char *const *sets, int n_sets, int world_size) {
  tsl_status st = tsl_config_load(path, sets, n_sets, &rt->config);
  if (st < 0) return st;
  /* each stage goes on after a mistake where it can, so that every mistake
  ** is recorded and tsl_config_outcome reports them together */
  st = tsl_settings_read(rt->config, &rt->settings);
  tsl_log_set_level(rt->settings.log.level);
  if (st >= 0) tsl_mpi_set_timeout(rt->settings.train.comm_timeout);
  /* on a cluster the usual cause is a path only some machines have */
  char who[512] = "";
  if (rt->world.size > 1)
    snprintf(who, sizeof who, " on rank %d, host %s (every machine needs these files at this path: a shared "
             "filesystem, or the same files on each; see docs/cluster.md)", rt->world.rank, rt->world.host);
  tsl_status files = tsl_settings_check_files(rt->config, &rt->settings, who[0] ? who : NULL);
  /* pretrained weights are compared with a model section that read cleanly */
  tsl_status weights = st >= 0 ? tsl_init_from_check(&rt->settings) : TESSEL_OK;
  /* a strategy reads the model's settings: start it only on valid ones */
  if (st >= 0 && world_size > 0) st = tsl_strategy_start(rt, world_size);
  if (st < 0 || !rt->plugin) tsl_cfg_skip_unknown(rt->settings.plugin.section);
  tsl_status unknown = tsl_cfg_check_unknown(tsl_config_root(rt->config));
  if (st >= 0) st = files < 0 ? files : weights < 0 ? weights : unknown;
  return tsl_config_outcome(rt->config, st);
}

tsl_status tsl_runtime_configure(tsl_runtime *rt, const char *path, const char *const *sets, int n_sets,
                                  int world_size) {
  return configure(rt, path, sets, n_sets, world_size);
}

tsl_status tsl_runtime_configure_core(tsl_runtime *rt, const char *path, const char *const *sets, int n_sets) {
  return configure(rt, path, sets, n_sets, 0);
}

/* Keys that may differ between ranks, left out of the comparison: each says
** how one process uses its own machine or what it prints, never what the
** ranks compute together or which shared files they use.
**   device.threads          this machine's cores (as OMP_NUM_THREADS, which
**                           may differ between machines too)
**   log.level, log.progress what this rank prints
**   plugin.path             where this machine keeps the strategy's library:
**                           the builds loaded are compared by their bytes
**                           (tsl_strategy_check_agreement)
** Everything else, paths included, must be the same on every rank, as the
** same command line gives (docs/cluster.md: the same path on every machine). */
static const char *const per_rank_keys[] = {"device.threads", "log.level", "log.progress", "plugin.path", NULL};

/* One rank's side of a difference: "128 on rank 1 (FILE:LINE:COL)". */
static void describe_side(char *buf, size_t cap, const tsl_config_diff *d, int side, int rank) {
  if (!d->value[side])
    snprintf(buf, cap, "not given on rank %d (its default applies)", rank);
  else
    snprintf(buf, cap, "%s on rank %d (%s)", d->value[side], rank, d->origin[side][0] ? d->origin[side] : "default");
}

/* This rank's line of the report: empty when its config is rank 0's. */
static void compare_with_rank0(const tsl_world *w, const char *first, size_t first_len, const char *mine,
                               size_t len, char *line, size_t cap) {
  tsl_config_diff d;
  char here[512], there[512];
  line[0] = '\0';
  if (w->rank == 0 || !tsl_config_records_differ(first, first_len, mine, len, &d)) return;
  describe_side(here, sizeof here, &d, 1, w->rank);
  describe_side(there, sizeof there, &d, 0, 0);
  snprintf(line, cap, "rank %d's config differs from rank 0's at %s: %s, %s", w->rank, d.path, here, there);
}

/* The report of every rank whose line is not empty (the first few of them). */
static tsl_status config_report(const tsl_world *w, const char *lines, int cap, const uint64_t *differs) {
  enum { SHOWN = 8 };
  char report[8192] = "";
  int n = 0;
  for (int r = 1; r < w->size; r++) {
    if (!differs[r] || n++ >= SHOWN) continue;
    strncat(report, "\n  ", sizeof report - strlen(report) - 1);
    strncat(report, lines + (size_t)r * (size_t)cap, sizeof report - strlen(report) - 1);
  }
  if (n > SHOWN) {
    char more[64];
    snprintf(more, sizeof more, "\n  ... and %d more rank(s)", n - SHOWN);
    strncat(report, more, sizeof report - strlen(report) - 1);
  }
  char keys[256] = "";
  for (int i = 0; per_rank_keys[i]; i++) {
    strncat(keys, i ? ", " : "", sizeof keys - strlen(keys) - 1);
    strncat(keys, per_rank_keys[i], sizeof keys - strlen(keys) - 1);
  }
  return tsl_error(TESSEL_E_CONFIG,
                   "the ranks do not run the same configuration:%s\n"
                   "Every rank must run the same config: start them all with the same file and the same KEY=VALUE "
                   "overrides (a difference comes from a file edited while the job started, an override given to "
                   "some ranks only, or a stale copy on one machine). Only %s may differ between ranks.",
                   report, keys);
}

tsl_status tsl_runtime_check_config_agreement(tsl_runtime *rt) {
  enum { CAP = 1280 };
  static const char what[] = "comparing the ranks' configurations";
  const tsl_world *w = &rt->world;
  if (w->size == 1) return TESSEL_OK;
  size_t len = 0;
  char *mine = tsl_config_records(rt->config, per_rank_keys, &len), *first = NULL, *lines = NULL;
  uint64_t *differs = calloc((size_t)w->size, sizeof *differs), bytes = len;
  char line[CAP];
  tsl_status st;
  TSL_TRY(st, tsl_world_all_allocated(w, mine && differs && len <= INT_MAX, what));
  TSL_TRY(st, tsl_world_bcast(w, &bytes, sizeof bytes));
  first = w->rank == 0 ? mine : malloc(bytes ? bytes : 1);
  TSL_TRY(st, tsl_world_all_allocated(w, first != NULL, what));
  TSL_TRY(st, tsl_world_bcast(w, first, (int)bytes));
  compare_with_rank0(w, first, bytes, mine, len, line, sizeof line);
  TSL_TRY(st, tsl_world_allgather_u64(w, line[0] != '\0', differs));
  int any = 0;
  for (int r = 1; r < w->size; r++) any |= differs[r] != 0;
  if (!any) goto done;
  lines = malloc((size_t)w->size * CAP);
  TSL_TRY(st, tsl_world_all_allocated(w, lines != NULL, what));
  TSL_TRY(st, tsl_world_allgather_str(w, line, lines, CAP));
  st = config_report(w, lines, CAP, differs);
fail:
done:
  if (first != mine) free(first);
  free(mine);
  free(differs);
  free(lines);
  return st;
}

/* Find libtessel-cuda.so: in tessel's library directory, then, for a
** tessel in its build tree, where the build put it. *path (heap) is the
** first that exists; without one, an error at device.kind that says where
** it looked. */
static tsl_status find_cuda_backend(tsl_runtime *rt, char **path) {
  char *dir = tsl_dso_library_dir();
  char *candidates[2] = {dir ? tsl_asprintf("%s/libtessel-cuda.so", dir) : NULL,
                         tsl_dso_in_build_tree() ? tsl_strdup(TESSEL_BUILD_CUDA_DIR "/libtessel-cuda.so") : NULL};
  char tried[2048] = "";
  free(dir);
  *path = NULL;
  for (int i = 0; i < 2 && !*path; i++) {
    if (!candidates[i]) continue;
    strncat(tried, "\n  ", sizeof tried - strlen(tried) - 1);
    strncat(tried, candidates[i], sizeof tried - strlen(tried) - 1);
    if (tsl_path_exists(candidates[i])) *path = candidates[i];
  }
  for (int i = 0; i < 2; i++)
    if (candidates[i] != *path) free(candidates[i]);
  if (*path) return TESSEL_OK;
  tsl_cfg *device = NULL;
  tsl_cfg_section(tsl_config_root(rt->config), "device", 0, &device);
  return tsl_cfg_error(device, "kind",
                       "cuda needs the CUDA backend libtessel-cuda.so, which this build does not have. Looked for:%s\n"
                       "Build tessel where nvcc is available (TESSEL_CUDA=AUTO or ON), or use `kind: cpu`.",
                       tried);
}

tsl_status tsl_runtime_check_backend(tsl_runtime *rt) {
  if (rt->settings.device.kind != TSL_DEVICE_CUDA) return TESSEL_OK;
  char *path;
  tsl_status st = find_cuda_backend(rt, &path);
  free(path);
  return st;
}

/* Load libtessel-cuda.so where find_cuda_backend finds it. */
static tsl_status load_cuda_backend(tsl_runtime *rt) {
  char *path;
  void *h;
  tsl_status st = find_cuda_backend(rt, &path);
  if (st >= 0 && tsl_dso_open(path, "CUDA backend", "device.kind is cuda: is the NVIDIA driver installed, and are "
                              "the CUDA libraries it was built with on the library path?", &h) < 0)
    st = TESSEL_E_DEVICE;
  if (st >= 0) {
    tsl_backend_entry_fn entry = (tsl_backend_entry_fn)tsl_dso_symbol(h, TSL_BACKEND_ENTRY_NAME);
    const tsl_backend *be = entry ? entry(TSL_BACKEND_VERSION) : NULL;
    if (be && be->version == TSL_BACKEND_VERSION)
      memcpy(&rt->be, be, TSL_MIN((size_t)be->size, sizeof rt->be));
    else
      st = tsl_error(TESSEL_E_VERSION, "%s is not a backend for this tessel (backend interface %d expected)", path,
                     TSL_BACKEND_VERSION);
  }
  free(path);
  return st;
}

/* Say when the configured threads exceed this rank's cores, and (once per
** machine) when ranks oversubscribe the cores they share. */
static void warn_cpus(const tsl_runtime *rt) {
  const tsl_cpus *c = &rt->world.cpus;
  if (rt->settings.device.threads > c->cores)
    tsl_warn("device.threads is %d, but this rank may use %d core(s) (CPUs %s); running %d thread(s)",
             rt->settings.device.threads, c->cores, c->list, rt->threads);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  if (rt->world.rank == 0 && (long)c->cores * rt->world.local_size < online)
    tsl_info("cpu: the %d rank(s) on %s may use %d of its %ld CPUs each (their affinity: taskset, a cgroup, Slurm, or "
             "mpirun's binding, which is to one core for 1 or 2 ranks unless --bind-to none)",
             rt->world.local_size, rt->world.host, c->cores, online);
  if (rt->world.local_rank == 0 && tsl_cpus_oversubscribed(c, rt->threads))
    tsl_warn("%d rank(s) on %s share %d core(s) (CPUs %s) with %d thread(s) each: the cores are oversubscribed, so "
             "throughput measures the sharing, not the strategy",
             c->share, rt->world.host, c->cores, c->list, rt->threads);
}

int tsl_threads_asked(const tsl_settings *s) {
  const char *omp = getenv("OMP_NUM_THREADS");
  char *end = NULL;
  if (s->device.threads > 0) return s->device.threads;
  /* as OpenMP programs (PyTorch among them) take it; a list ("4,2", nested
  ** levels) or anything else not a count is left to the CPU count */
  long env = omp ? strtol(omp, &end, 10) : 0;
  return end && end != omp && !*end && env > 0 && env <= TSL_MAX_THREADS ? (int)env : 0;
}

tsl_status tsl_runtime_devices(tsl_runtime *rt) {
  tsl_status st;
  const tsl_settings *s = &rt->settings;
  if (s->device.kind == TSL_DEVICE_CUDA) {
    TSL_TRY(st, load_cuda_backend(rt));
  } else {
    rt->be = *tsl_cpu_backend();
  }
  rt->threads = tsl_cpus_threads(&rt->world.cpus, tsl_threads_asked(s));
  warn_cpus(rt);
  tsl_backend_opts opts = {.size = sizeof opts, .threads = rt->threads, .device_index = rt->world.local_rank,
                           .log = tsl_log, .rank = rt->world.rank, .comm_timeout = tsl_mpi_timeout()};
  tsl_error_clear();
  st = rt->be.init(&rt->be, &opts);
  if (st < 0 && rt->be.last_error) /* a loaded backend says why itself */
    return tsl_error(st, "starting the %s backend on rank %d: %s", rt->be.name, rt->world.rank,
                     rt->be.last_error(&rt->be));
  if (st < 0) return tsl_error_wrap(st, "starting the %s backend on rank %d", rt->be.name, rt->world.rank);
  rt->be_ready = 1;
  TSL_TRY(st, tsl_ledger_init(&rt->ledger, &rt->be, s->device.memory_limit, s->device.nvme_dir));
  rt->ledger.acts_recomputed = s->train.recompute == TESSEL_RECOMPUTE_FULL &&
                               (!s->train.recompute_layers || s->train.recompute_layers >= s->model.layers);
  rt->ledger.acts_offloaded = s->train.offload_activations;
  if ((st = rt->be.stream_create(&rt->be, &rt->compute)) < 0 || (st = rt->be.stream_create(&rt->be, &rt->comm_stream)) < 0)
    return tsl_error_wrap(st, "creating streams");
  return TESSEL_OK;
fail:
  return st;
}

/* Collectives on device buffers run on the communication stream, after the
** compute stream's work (comm.h). */
tsl_status tsl_runtime_comm(tsl_runtime *rt) {
  tsl_comm_device dev = {.be = &rt->be, .compute = rt->compute, .comm = rt->comm_stream};
  return tsl_comm_create(&rt->world, &rt->mesh, rt->be_ready ? &dev : NULL, &rt->comm);
}

tsl_status tsl_runtime_local(tsl_runtime *rt, const tsl_settings *s, int threads) {
  memset(rt, 0, sizeof *rt);
  rt->settings = *s;
  tsl_world_single(&rt->world, 1);
  rt->be = *tsl_cpu_backend();
  rt->threads = threads;
  tsl_backend_opts opts = {.size = sizeof opts, .threads = threads, .log = tsl_log};
  tsl_status st = rt->be.init(&rt->be, &opts);
  if (st < 0) return tsl_error(st, "starting the cpu backend: %s", rt->be.last_error(&rt->be));
  rt->be_ready = 1;
  return tsl_ledger_init(&rt->ledger, &rt->be, 0, NULL);
}

void tsl_runtime_destroy(tsl_runtime *rt) {
  tsl_model_destroy(rt->model);
  tsl_strategy_stop(rt);
  tsl_comm_destroy(rt->comm);
  rt->comm = NULL;
  if (rt->be_ready) {
    if (rt->scratch) tsl_mem_free(&rt->ledger, TESSEL_TIER_DEVICE, rt->scratch);
    rt->be.stream_destroy(&rt->be, rt->compute);
    rt->be.stream_destroy(&rt->be, rt->comm_stream);
    tsl_ledger_destroy(&rt->ledger);
    rt->be.shutdown(&rt->be);
    rt->be_ready = 0;
  }
  tsl_tokenizer_free(rt->tokenizer);
  rt->tokenizer = NULL;
  tsl_config_free(rt->config);
  rt->config = NULL;
}
