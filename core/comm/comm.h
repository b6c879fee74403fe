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
** Two engines behind the same calls and the same counters: MPI for host
** buffers (every buffer of the CPU backend), and the backend's device engine
** (NCCL under CUDA) for device buffers when the backend has one. A device
** collective runs on the communication stream, ordered after the work
** already queued on the compute stream (an event recorded there); "waiting"
** for it, or a blocking call, makes the compute stream wait for an event
** recorded after it, so the host does not block and later kernels see the
** result. Non-blocking device sends and receives are batched into one
** launch that starts at the next other communication call or wait, so two
** ranks sending to each other before receiving cannot block each other.
*/
#ifndef TSL_COMM_H
#define TSL_COMM_H

#include <stdint.h>
#include "backend.h"
#include "common/status.h"
#include "runtime/mpi.h"

#define TSL_COMM_MAX_GROUPS 64

typedef struct tsl_comm tsl_comm;

typedef struct tsl_comm_counts {
  uint64_t calls, payload, bus;
} tsl_comm_counts;

/* Host seconds this rank spent blocked in communication since the step
** began: in blocking calls (whole), in waits on non-blocking ones, and in
** barriers. Sends and receives (pipeline stage boundaries) are kept apart
** from collectives: a rank blocked on its neighbour stage is idle in the
** pipeline's bubble. Device collectives do not block the host (the compute
** stream waits instead), so under a device engine their time is in the
** compute that follows. */
typedef struct tsl_comm_times {
  double coll_wait, p2p_wait;
} tsl_comm_times;

/* The device engine's context: the backend and the two streams. */
typedef struct tsl_comm_device {
  tsl_backend *be;
  tsl_stream *compute, *comm;
} tsl_comm_device;

/* Build the mesh's groups: one per axis, the data axes, all axes together
** (named after them, e.g. "dp" or "dp+pp+tp") and each extra set in
** mesh->groups; plus "core", the core's own copy of the world for its
** per-step scalars. With `dev` whose backend has a device engine, every
** group of two or more ranks also gets a device communicator (groups with
** the same ranks share one). Collective over the world. */
tsl_status tsl_comm_create(const tsl_world *w, const tessel_mesh *mesh, const tsl_comm_device *dev,
                           tsl_comm **out);
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

/* Collectives; `work` NULL = complete before returning (a device
** collective: complete before anything queued later on the compute
** stream). */
tsl_status tsl_all_reduce(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t count,
                          tessel_dtype dt, tessel_redop op, tessel_work **work);
tsl_status tsl_reduce_scatter(tsl_comm *c, tessel_group *g, const void *send, void *recv,
                              uint64_t recv_count, tessel_dtype dt, tessel_redop op, tessel_work **work);
tsl_status tsl_all_gather(tsl_comm *c, tessel_group *g, const void *send, void *recv,
                          uint64_t send_count, tessel_dtype dt, tessel_work **work);
/* Block j (count elements) of send to group rank j; block i of recv from rank i. */
tsl_status tsl_all_to_all(tsl_comm *c, tessel_group *g, const void *send, void *recv, uint64_t count,
                          tessel_dtype dt, tessel_work **work);
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

/* Non-blocking transfers started and not yet waited for (or tested done). */
int tsl_comm_outstanding(const tsl_comm *c);

/* Counters: per group for the current step, and the number of groups. */
int tsl_comm_group_count(const tsl_comm *c);
tessel_group *tsl_comm_group_at(tsl_comm *c, int i);
tsl_comm_counts tsl_group_step_counts(const tessel_group *g);
tsl_comm_counts tsl_group_total_counts(const tessel_group *g);
tsl_comm_times tsl_comm_step_times(const tsl_comm *c);
/* Start a step: clear the per-step counters and times. */
void tsl_comm_new_step(tsl_comm *c);

#endif
