/* core/train/session.c — struct tessel_run and the public C API. */
#include "train/session.h"

#include <mpi.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "plugin/host.h"
#include "runtime/build.h"
#include "train/signals.h"
#include "train/rundir.h"

struct tessel_run {
  tsl_runtime rt;
  tsl_run_dir dir;
  tsl_trainer *trainer;
  int counted; /* opened by tessel_run_open: one of open_runs */
};

tsl_status tsl_session_open(const tsl_world *w, const char *config, const char *const *sets, int n_sets,
                            const tsl_train_opts *opts, tessel_run **out) {
  tessel_run *run = calloc(1, sizeof *run);
  *out = NULL;
  if (!run) return tsl_error(TESSEL_E_NOMEM, "out of host memory starting a run");
  tsl_runtime *rt = &run->rt;
  tsl_train_opts o = *opts;
  if (!o.started) o.started = tsl_now();
  rt->world = *w;
  tsl_status st = tsl_world_agree(&rt->world, tsl_runtime_configure(rt, config, sets, n_sets, rt->world.size));
  if (st >= 0) st = tsl_world_agree(&rt->world, tsl_runtime_check_config_agreement(rt));
  if (st >= 0) st = tsl_world_agree(&rt->world, tsl_strategy_check_agreement(rt));
  if (st >= 0) st = tsl_world_agree(&rt->world, tsl_run_dir_open(rt, &run->dir));
  if (st >= 0) st = tsl_world_agree(&rt->world, tsl_runtime_devices(rt));
  if (st >= 0) st = tsl_world_agree(&rt->world, tsl_runtime_comm(rt));
  if (st >= 0) st = tsl_trainer_open(rt, &o, &run->trainer);
  if (st < 0) {
    tsl_run_dir_abandon(&run->dir);
    tessel_run_close(run);
    return st;
  }
  *out = run;
  return TESSEL_OK;
}

tsl_trainer *tsl_session_trainer(tessel_run *run) { return run->trainer; }
tsl_runtime *tsl_session_runtime(tessel_run *run) { return &run->rt; }

/* ---- the public API ---- */

const char *tessel_version(void) { return TESSEL_VERSION_STRING; }

/* The MPI world every run of this process uses, when MPI is running: 0
** when it was never started or is already finalised. */
static int running_world(tsl_world *w) {
  int started = 0, ended = 0;
  MPI_Initialized(&started);
  if (started) MPI_Finalized(&ended);
  if (!started || ended) return 0;
  memset(w, 0, sizeof *w);
  w->active = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w->size);
  return 1;
}

/* MPI started for the API is finalised when the program exits: a second
** run in the same process needs it still running. The ranks meet first
** within the communication timeout (tsl_world_finalize), so a rank stuck
** before its exit is named and the job ended instead of hanging the others
** in MPI_Finalize. */
static void finalize_mpi(void) {
  tsl_world w;
  if (!running_world(&w)) return;
  w.owns_mpi = 1;
  tsl_world_finalize(&w);
}

/* Runs of tessel_run_open not yet closed, and the MPI_COMM_WORLD error
** handler MPI had before the first of them: a program that started MPI
** itself gets it back when its last run closes. tessel's calls need
** MPI_ERRORS_RETURN on the world (tsl_world_init sets it); the program's
** own MPI calls may rely on MPI's default, MPI_ERRORS_ARE_FATAL. */
static int open_runs;
static MPI_Errhandler program_errhandler = MPI_ERRHANDLER_NULL;

static void keep_program_errhandler(void) {
  tsl_world w;
  if (open_runs == 0 && program_errhandler == MPI_ERRHANDLER_NULL && running_world(&w))
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &program_errhandler);
}

static void give_back_program_errhandler(void) {
  tsl_world w;
  if (program_errhandler == MPI_ERRHANDLER_NULL) return;
  if (running_world(&w)) { /* else the program finalised MPI, and the handler with it */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, program_errhandler);
    MPI_Errhandler_free(&program_errhandler);
  }
  program_errhandler = MPI_ERRHANDLER_NULL;
}

/* The arguments of tessel_run_open, checked on this rank alone. */
static tsl_status check_open_args(const char *config, const char *const *sets, int n_sets, tessel_run **out) {
  if (!out) return tsl_error(TESSEL_E_CONFIG, "tessel_run_open: out is NULL (where would the run go?)");
  if (!config || n_sets < 0 || (n_sets > 0 && !sets))
    return tsl_error(TESSEL_E_CONFIG, "tessel_run_open: a config path and n_sets ≥ 0 KEY=VALUE strings are required");
  for (int i = 0; i < n_sets; i++)
    if (!sets[i]) return tsl_error(TESSEL_E_CONFIG, "tessel_run_open: sets[%d] is NULL (n_sets is %d)", i, n_sets);
  return TESSEL_OK;
}

/* MPI starts before the arguments are checked: a rank that returned at a
** bad argument of its own would leave the others waiting in MPI_Init, or
** in the open's first agreement, for ever. */
tessel_status tessel_run_open(const char *config, const char *const *sets, int n_sets, tessel_run **out) {
  tsl_world w;
  tsl_error_clear();
  if (out) *out = NULL;
  keep_program_errhandler();
  tsl_status st = tsl_world_init(NULL, NULL, &w);
  if (st >= 0 && w.owns_mpi) atexit(finalize_mpi);
  w.owns_mpi = 0;
  w.quiet_errors = 1;
  if (st >= 0) st = tsl_world_first_failure(&w, check_open_args(config, sets, n_sets, out));
  /* a failure inside a step on some ranks only leaves the others in a
  ** collective: ending the job is the alternative to a hang */
  tsl_train_opts opts = {.world_abort = w.size > 1};
  if (st >= 0) st = tsl_session_open(&w, config, sets, n_sets, &opts, out);
  if (st >= 0) {
    (*out)->counted = 1;
    open_runs++;
  } else if (open_runs == 0) {
    give_back_program_errhandler();
  }
  return st;
}

/* A run handle the calls can use: NULL is a caller's mistake, reported. */
static tsl_status check_run(const tessel_run *run, const char *call) {
  if (run) return TESSEL_OK;
  return tsl_error(TESSEL_E_CONFIG, "%s: the run is NULL (tessel_run_open failed, or was not called)", call);
}

/* Collective: the outcome of a call's argument checks, the same on every
** rank. A mistake on one rank only (`rank == 0 ? &v : NULL`) would
** otherwise send the others into the call's collectives alone. A rank
** whose run is NULL still takes part, over the MPI world every run uses. */
static tsl_status agree_args(const tessel_run *run, tsl_status mine) {
  tsl_world w;
  if (run) w = run->rt.world;
  else if (!running_world(&w)) return mine;
  return tsl_world_first_failure(&w, mine);
}

/* OpenMP's thread count is a thread's own: the CPU backend set the opening
** thread's to the run's, and a program that steps from another thread ran
** the kernels with that thread's count instead (its losses then differed
** from `tessel run`'s in their last bits). Each call that computes runs
** with the run's count, and gives the calling thread its own back. */
static int enter_run_threads(const tessel_run *run) {
  int was = omp_get_max_threads();
  if (run->rt.settings.device.kind == TSL_DEVICE_CPU && run->rt.threads > 0)
    omp_set_num_threads(run->rt.threads);
  return was;
}

tessel_status tessel_run_step(tessel_run *run, tessel_step_info *out) {
  tsl_step_report r;
  tsl_error_clear();
  tsl_status st = check_run(run, "tessel_run_step");
  /* a bad .size is refused before the step, not after it was taken */
  if (st >= 0 && out && out->size < sizeof(uint32_t))
    st = tsl_error(TESSEL_E_VERSION, "tessel_run_step: out->size is %u: set .size = sizeof(tessel_step_info)",
                   out->size);
  if ((st = agree_args(run, st)) < 0) return st;
  int64_t before = tsl_trainer_last_step(run->trainer);
  int threads = enter_run_threads(run);
  st = tsl_trainer_step(run->trainer, &r);
  omp_set_num_threads(threads);
  /* a step that failed after it was taken (its checkpoint) still counts */
  if (st < 0 && tsl_trainer_last_step(run->trainer) == before) return st;
  tessel_step_info info = {.size = sizeof info, .step = r.step, .steps = r.steps, .loss = r.loss, .lr = r.lr,
                           .grad_norm = r.grad_norm, .val_loss = r.val_loss, .step_time_s = r.step_time,
                           .tokens_per_s = r.tokens_per_s,
                           .stopped_by = st >= 0 && r.stop ? tsl_stop_reason_name(r.stop) : NULL};
  tsl_status copied = out ? tsl_copy_out(out, &info, sizeof info) : TESSEL_OK;
  return st < 0 ? st : copied;
}

tessel_status tessel_run_evaluate(tessel_run *run, double *val_loss) {
  tsl_error_clear();
  tsl_status st = check_run(run, "tessel_run_evaluate");
  if (st >= 0 && !val_loss) st = tsl_error(TESSEL_E_CONFIG, "tessel_run_evaluate: val_loss is NULL");
  if ((st = agree_args(run, st)) < 0) return st;
  int threads = enter_run_threads(run);
  st = tsl_trainer_evaluate(run->trainer, val_loss);
  omp_set_num_threads(threads);
  return st;
}

tessel_status tessel_run_save(tessel_run *run, char *dir, size_t cap) {
  const char *path = NULL;
  tsl_error_clear();
  tsl_status st = agree_args(run, check_run(run, "tessel_run_save"));
  if (st < 0) return st;
  int threads = enter_run_threads(run);
  st = tsl_trainer_save(run->trainer, &path);
  omp_set_num_threads(threads);
  if (st >= 0 && dir && cap && (size_t)snprintf(dir, cap, "%s", path) >= cap)
    st = tsl_error(TESSEL_E_CONFIG, "tessel_run_save: checkpoint %s is saved, but its path does not fit in dir "
                   "(cap %zu bytes; it needs %zu)", path, cap, strlen(path) + 1);
  return st;
}

int64_t tessel_run_last_step(const tessel_run *run) { return run ? tsl_trainer_last_step(run->trainer) : -1; }

void tessel_run_close(tessel_run *run) {
  if (!run) return;
  tsl_trainer_close(run->trainer);
  tsl_run_dir_close(&run->dir);
  tsl_runtime_destroy(&run->rt);
  if (run->counted && --open_runs == 0) give_back_program_errhandler();
  free(run);
}

const char *tessel_last_error(void) { return tsl_error_message(); }
