/*
** tests/api/api_contract.c — promises of tessel/tessel.h that a program
** only sees from outside the library, for tests/api/api_contract.sh.
**
**   api_contract SCENARIO CONFIG [KEY=VALUE...]
**
** open-args   the rank whose OMPI_COMM_WORLD_RANK is API_CONTRACT_BAD_RANK
**             opens with a NULL config, the others correctly: every rank
**             must be refused ("open refused: MESSAGE"), none may wait.
**
** Exit 0 when the scenario's promise holds, 1 (with why) when it does not.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessel/tessel.h"

static int broken(const char *what) {
  fprintf(stderr, "api_contract: %s\n", what);
  return 1;
}

static int open_args(const char *config, const char *const *sets, int n_sets) {
  const char *bad = getenv("API_CONTRACT_BAD_RANK"), *me = getenv("OMPI_COMM_WORLD_RANK");
  tessel_run *run = NULL;
  if (!bad || !me) return broken("open-args needs API_CONTRACT_BAD_RANK and mpirun");
  if (tessel_run_open(strcmp(bad, me) == 0 ? NULL : config, sets, n_sets, &run) >= 0 || run) {
    tessel_run_close(run);
    return broken("a run opened while another rank's arguments were wrong");
  }
  printf("open refused: %s\n", tessel_last_error());
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 3) return broken("usage: api_contract SCENARIO CONFIG [KEY=VALUE...]");
  const char *scenario = argv[1], *config = argv[2];
  const char *const *sets = (const char *const *)argv + 3;
  int n_sets = argc - 3;
  if (strcmp(scenario, "open-args") == 0) return open_args(config, sets, n_sets);
  return broken("unknown scenario");
}
