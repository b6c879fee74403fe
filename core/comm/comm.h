/*
** core/comm/comm.h — the communication front end.
**
** Groups are built from the strategy's mesh, all at once and collectively,
** with MPI_Comm_split. Every collective goes through here and is counted per
** group and per step in two ways (the nccl-tests conventions):
**   payload bytes: the buffer the caller handed over — the whole vector of
**                  an all-reduce, the full (gathered / unscattered) vector
**                  of an all-gather or reduce-scatter, the message of a
**                  broadcast, reduce, send or recv;
**   bus bytes:     what each rank actually moves on the wire for a ring
**                  algorithm: payload × 2(n−1)/n for all-reduce, × (n−1)/n
**                  for all-gather and reduce-scatter, × 1 for the others.
** The engine today is MPI on host-addressable buffers (the CPU backend);
** the CUDA backend adds NCCL on device buffers behind the same calls.
*/
#ifndef TSL_COMM_H
#define TSL_COMM_H

#include <stdint.h>
#include "common/status.h"
#include "runtime/mpi.h"

#define TSL_COMM_MAX_GROUPS 64

typedef struct tsl_comm tsl_comm;

typedef struct tsl_comm_counts {
  uint64_t calls, payload, bus;
} tsl_comm_counts;

/* Build the mesh's groups: one per axis, the data axes, all axes together
** (named after them, e.g. "dp" or "dp+pp+tp") and each extra set in
** mesh->groups; plus "core", the core's own copy of the world for its
** per-step scalars. Collective over the world. */
tsl_status tsl_comm_create(const tsl_world *w, const tessel_mesh *mesh, tsl_comm **out);
void tsl_comm_destroy(tsl_comm *c);

/* The group over `axes`, or an error naming the missing axis set. */
tsl_status tsl_comm_group(tsl_comm *c, uint32_t axes, tessel_group **out);
int tsl_group_rank(const tessel_group *g);
int tsl_group_size(const tessel_group *g);
const char *tsl_group_name(const tessel_group *g);
int tsl_comm_coord(const tsl_comm *c, int axis);
/* This rank's index among the data-parallel ranks, and their number. */
int tsl_comm_data_rank(const tsl_comm *c);
int tsl_comm_data_size(const tsl_comm *c);

/* Collectives; `work` NULL = wait before returning. */
tsl_status tsl_all_reduce(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t count,
                          tessel_dtype dt, tessel_redop op, tessel_work **work);
tsl_status tsl_reduce_scatter(tsl_comm *c, tessel_group *g, const void *send, void *recv,
                              uint64_t recv_count, tessel_dtype dt, tessel_redop op, tessel_work **work);
tsl_status tsl_all_gather(tsl_comm *c, tessel_group *g, const void *send, void *recv,
                          uint64_t send_count, tessel_dtype dt, tessel_work **work);
tsl_status tsl_broadcast(tsl_comm *c, tessel_group *g, void *buf, uint64_t count, tessel_dtype dt,
                         int root, tessel_work **work);
tsl_status tsl_reduce(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t count,
                      tessel_dtype dt, tessel_redop op, int root, tessel_work **work);
tsl_status tsl_send(tsl_comm *c, tessel_group *g, const void *buf, uint64_t count, tessel_dtype dt,
                    int peer, tessel_work **work);
tsl_status tsl_recv(tsl_comm *c, tessel_group *g, void *buf, uint64_t count, tessel_dtype dt,
                    int peer, tessel_work **work);
tsl_status tsl_barrier(tsl_comm *c, tessel_group *g);
/* Reduce n doubles in host memory over the whole world, counted under the
** "core" group: the core's per-step scalars (loss sums, memory peaks). */
tsl_status tsl_comm_world_reduce(tsl_comm *c, double *values, int n, tessel_redop op);
tsl_status tsl_work_wait(tsl_comm *c, tessel_work *w);
tsl_status tsl_work_test(tsl_comm *c, tessel_work *w, int *done);
/* Let outstanding non-blocking transfers progress (MPI progresses only
** inside MPI calls); the core calls it between units of compute. */
void tsl_comm_progress(tsl_comm *c);

/* Counters: per group for the current step, and the number of groups. */
int tsl_comm_group_count(const tsl_comm *c);
tessel_group *tsl_comm_group_at(tsl_comm *c, int i);
tsl_comm_counts tsl_group_step_counts(const tessel_group *g);
tsl_comm_counts tsl_group_total_counts(const tessel_group *g);
void tsl_comm_new_step(tsl_comm *c);

#endif
