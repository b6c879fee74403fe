/* core/runtime/mpi.c */
#include "mpi.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "runtime/mpi_wait.h"
#include "runtime/mpi_where.h"

static tsl_status mpi_check(int rc, const char *what) {
  if (rc == MPI_SUCCESS) return TESSEL_OK;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  return tsl_error(TESSEL_E_COMM, "%s failed: %s", what, msg);
}

/* How many ranks of this machine (`local`) have cores in common with this
** one: they divide those cores between them. Collective over the world. */
static tsl_status count_sharing(MPI_Comm local, tsl_world *w) {
  tsl_cpus_self(&w->cpus);
  unsigned char *all = malloc((size_t)w->local_size * TSL_CPUS_MASK_BYTES);
  MPI_Request req;
  tsl_status st = tsl_world_all_allocated(w, all != NULL, "sharing out this machine's cores");
  if (st >= 0 && tsl_mpi_finish(MPI_Iallgather(w->cpus.mask, TSL_CPUS_MASK_BYTES, MPI_BYTE, all,
                                               TSL_CPUS_MASK_BYTES, MPI_BYTE, local, &req),
                                &req, "sharing out this machine's cores", "local") == MPI_SUCCESS) {
    w->cpus.share = 0;
    for (int r = 0; r < w->local_size; r++)
      w->cpus.share += tsl_cpus_overlap(w->cpus.mask, all + (size_t)r * TSL_CPUS_MASK_BYTES);
  }
  free(all);
  return st;
}

/* A process no launcher started (a plain `tessel run`) is an Open MPI
** singleton: MPI_Init starts a local daemon, and that daemon's default
** launcher (rsh) refuses to start without ssh or rsh on PATH, as in most
** containers ("Unable to start a daemon on the local node"). A singleton
** launches nothing, so it gets the launcher made for that, "isolated";
** an OMPI_MCA_plm the user set stays, and other MPIs ignore the variable. */
static void singleton_launcher(void) {
  static const char *const launched[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
  for (size_t i = 0; i < sizeof launched / sizeof launched[0]; i++)
    if (getenv(launched[i])) return;
  setenv("OMPI_MCA_plm", "isolated", 0);
}

tsl_status tsl_world_init(int *argc, char ***argv, tsl_world *w) {
  int provided, inited = 0, ended = 0;
  memset(w, 0, sizeof *w);
  MPI_Initialized(&inited);
  /* MPI cannot start again in a process that finalised it (the MPI
  ** standard), and any MPI call now would abort the whole program */
  if (inited) MPI_Finalized(&ended);
  if (ended)
    return tsl_error(TESSEL_E_COMM, "MPI has been finalised in this process (MPI_Finalize), and MPI cannot be "
                     "started again: open every run before the program's MPI_Finalize");
  if (!inited) {
    singleton_launcher();
    tsl_status st = mpi_check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init");
    if (st < 0) return st;
    w->owns_mpi = 1;
  }
  w->active = 1;
  tsl_mpi_watch_stops();
  tsl_where_open();
  /* errors come back as codes, so a failing collective is reported, not fatal */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &w->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w->size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w->rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &w->local_rank);
  MPI_Comm_size(local, &w->local_size);
  tsl_status shared = count_sharing(local, w);
  MPI_Comm_free(&local);
  if (shared < 0) return shared;
  int len = 0;
  char name[MPI_MAX_PROCESSOR_NAME];
  if (MPI_Get_processor_name(name, &len) == MPI_SUCCESS) snprintf(w->host, sizeof w->host, "%.*s", len, name);
  tsl_log_set_rank(w->rank, w->size);
  return TESSEL_OK;
}

/* Every rank has come to the end, within the communication timeout:
** MPI_Finalize itself waits for the other ranks with no deadline, so a rank
** stuck or stopped before its end would hang the others there for good.
** Each rank tells every other one it is here with an empty message, so a
** rank that waits too long can name the rank that never came. In round k
** a rank sends to rank + k and receives from rank − k, both posted before
** either is awaited: every send meets a receive posted in the same round,
** whether or not MPI completes empty sends at once, and nothing is
** allocated. */
static void meet_at_end(const tsl_world *w) {
  enum { TAG = 0x7e55 }; /* below the MPI_TAG_UB every MPI allows; only this exchange uses it */
  static const char none = 0;
  for (int k = 1; k < w->size; k++) {
    int to = (w->rank + k) % w->size, from = (w->rank - k + w->size) % w->size;
    MPI_Request send, recv;
    int recv_ok = MPI_Irecv(NULL, 0, MPI_BYTE, from, TAG, MPI_COMM_WORLD, &recv) == MPI_SUCCESS;
    if (MPI_Isend(&none, 0, MPI_BYTE, to, TAG, MPI_COMM_WORLD, &send) == MPI_SUCCESS)
      tsl_mpi_wait_for(&send, to, "the end of the run", "world");
    if (recv_ok) tsl_mpi_wait_for(&recv, from, "the end of the run", "world");
  }
}

void tsl_world_finalize(tsl_world *w) {
  if (w->owns_mpi && w->size > 1) meet_at_end(w);
  /* MPI the program started keeps the private communicator of
  ** mpi_where.c for the process's next run; its MPI_Finalize frees it */
  if (w->owns_mpi) {
    tsl_where_close();
    MPI_Finalize();
  }
  w->active = w->owns_mpi = 0;
}

void tsl_world_single(tsl_world *w, int size) {
  memset(w, 0, sizeof *w);
  w->size = size;
  w->local_size = 1;
  tsl_cpus_self(&w->cpus);
  if (gethostname(w->host, sizeof w->host) != 0) snprintf(w->host, sizeof w->host, "localhost");
  w->host[sizeof w->host - 1] = '\0';
}

void tsl_world_print_error(const tsl_world *w, tsl_status st) {
  if (!w->quiet_errors) tsl_print_error(w->rank, w->size, st);
}

/* MPI_Allgather of `bytes` from every rank over the world, within the
** communication timeout; MPI's code. */
static int world_allgather(const void *mine, void *all, int bytes, const char *what) {
  MPI_Request req;
  tsl_where_posted("world");
  int rc = MPI_Iallgather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, MPI_COMM_WORLD, &req);
  return tsl_mpi_finish(rc, &req, what, "world");
}

/* One rank's outcome as the others learn it. `own`: the failure is this
** rank's, not one repeated from another rank (repeat_failure). */
typedef struct outcome {
  int32_t status, own;
} outcome;

/* This rank stops because rank r failed with `status`: it says so (its
** tessel_last_error), marked as not its own failure. */
static tsl_status repeat_failure(int r, tsl_status status) {
  return tsl_error_for(status, TSL_REASON_OTHER_RANK, "rank %d failed (%s); see its message", r,
                       tsl_status_name(status));
}

/* Every rank's outcome, gathered; NULL (after aborting) is impossible. */
static outcome *gather_outcomes(const tsl_world *w, tsl_status mine) {
  outcome me = {.status = mine, .own = mine < 0 && tsl_error_reason() != TSL_REASON_OTHER_RANK};
  outcome *all = calloc((size_t)w->size, sizeof *all);
  if (!all || world_allgather(&me, all, sizeof me, "agreeing on every rank's status") != MPI_SUCCESS) {
    /* cannot agree: fail loudly rather than risk a hang */
    free(all);
    tsl_world_abort(w, mine < 0 ? mine : TESSEL_E_COMM);
  }
  return all;
}

tsl_status tsl_world_first_failure(const tsl_world *w, tsl_status mine) {
  if (!w->active || w->size == 1) return mine;
  outcome *all = gather_outcomes(w, mine);
  tsl_status first = mine;
  for (int r = 0; r < w->size && first >= 0; r++)
    if (all[r].status < 0) first = repeat_failure(r, all[r].status);
  free(all);
  return first;
}

tsl_status tsl_world_all_allocated(const tsl_world *w, int ok, const char *what) {
  return tsl_world_first_failure(w, ok ? TESSEL_OK : tsl_error(TESSEL_E_NOMEM, "out of host memory %s", what));
}

tsl_status tsl_world_agree(const tsl_world *w, tsl_status mine) {
  if (!w->active || w->size == 1) {
    if (mine < 0) tsl_world_print_error(w, mine);
    return mine;
  }
  outcome *all = gather_outcomes(w, mine);
  tsl_status first = TESSEL_OK;
  int who = -1;
  for (int r = 0; r < w->size && first == TESSEL_OK; r++)
    if (all[r].status < 0) first = all[r].status, who = r;
  /* rank 0 speaks for every rank that failed the same way, but a failure it
  ** only repeats from another rank speaks for nobody */
  if (mine < 0 && (w->rank == 0 || !all[0].own || all[0].status != mine)) tsl_world_print_error(w, mine);
  /* a rank that did not fail still says why it stops (tessel_last_error) */
  if (mine >= 0 && first < 0) repeat_failure(who, first);
  free(all);
  return first;
}

void tsl_world_abort(const tsl_world *w, tsl_status st) {
  tsl_print_error(w->rank, w->size, st); /* the process ends: nobody else can print it */
  int code = tsl_status_exit_code(st);
  if (w->active && w->size > 1) MPI_Abort(MPI_COMM_WORLD, code);
  exit(code);
}

tsl_status tsl_world_allgather(const tsl_world *w, const void *mine, void *all, int bytes, const char *what) {
  if (!w->active || w->size == 1) {
    memcpy(all, mine, (size_t)bytes);
    return TESSEL_OK;
  }
  tsl_status st = mpi_check(world_allgather(mine, all, bytes, what), "MPI_Allgather");
  return st < 0 ? tsl_error_wrap(st, "%s", what) : st;
}

tsl_status tsl_world_allgather_u64(const tsl_world *w, uint64_t mine, uint64_t *out) {
  return tsl_world_allgather(w, &mine, out, sizeof mine, "all-gather");
}

tsl_status tsl_world_allgather_str(const tsl_world *w, const char *mine, char *out, int cap) {
  /* this rank's own slot of `out` is what it sends (MPI_IN_PLACE): no
  ** buffer to allocate, so no allocation on one rank to fail before the
  ** collective the others are already in */
  char *slot = out + (size_t)w->rank * (size_t)cap;
  memset(slot, 0, (size_t)cap);
  snprintf(slot, (size_t)cap, "%s", mine);
  if (!w->active || w->size == 1) return TESSEL_OK;
  return tsl_world_allgather(w, MPI_IN_PLACE, out, cap, "all-gather");
}

tsl_status tsl_world_barrier(const tsl_world *w) {
  if (!w->active || w->size == 1) return TESSEL_OK;
  MPI_Request req;
  tsl_where_posted("world");
  return mpi_check(tsl_mpi_finish(MPI_Ibarrier(MPI_COMM_WORLD, &req), &req, "barrier", "world"), "MPI_Barrier");
}

tsl_status tsl_world_bcast(const tsl_world *w, void *buf, int bytes) {
  if (!w->active || w->size == 1) return TESSEL_OK;
  MPI_Request req;
  tsl_where_posted("world");
  int rc = MPI_Ibcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
  return mpi_check(tsl_mpi_finish(rc, &req, "broadcast", "world"), "MPI_Bcast");
}
