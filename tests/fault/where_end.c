/*
** tests/fault/where_end.c — two ranks that leave their collectives on
** different paths at the end: rank 0 makes one more barrier on the world,
** which rank 1 never makes; rank 1 goes to the end of its run (the
** end-of-run meeting, tsl_world_finalize). Rank 1 waits 3 s, rank 0 a
** minute, so that rank 1 reports: rank 0 has not arrived because it waits
** in that barrier, not because it is stuck or stopped.
**
**   mpirun -n 2 where_end
*/
#include "runtime/mpi.h"
#include "runtime/mpi_wait.h"

int main(int argc, char **argv) {
  tsl_world w = {0};
  if (tsl_world_init(&argc, &argv, &w) < 0) return 1;
  tsl_mpi_set_timeout(w.rank == 0 ? 60 : 3);
  if (w.rank == 0) tsl_world_barrier(&w);
  tsl_world_finalize(&w);
  return 0;
}
