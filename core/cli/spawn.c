/* core/cli/spawn.c */
#include "cli/spawn.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/util.h"

char **tsl_run_argv(int ranks, int launcher, char *const *run_args, int n_args) {
  char self[4096], count[32];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return NULL;
  self[len] = '\0';
  snprintf(count, sizeof count, "%d", ranks);
  char **argv = calloc((size_t)n_args + 16, sizeof(char *));
  if (!argv) return NULL;
  int k = 0;
  if (ranks > 1 || launcher) {
    argv[k++] = tsl_strdup("mpirun");
    argv[k++] = tsl_strdup("-n");
    argv[k++] = tsl_strdup(count);
    if (ranks > sysconf(_SC_NPROCESSORS_ONLN)) argv[k++] = tsl_strdup("--oversubscribe");
    if (geteuid() == 0) argv[k++] = tsl_strdup("--allow-run-as-root");
    /* ranks set their own thread counts; let the OS place them */
    argv[k++] = tsl_strdup("--bind-to");
    argv[k++] = tsl_strdup("none");
  }
  argv[k++] = tsl_strdup(self);
  argv[k++] = tsl_strdup("run");
  for (int i = 0; i < n_args; i++) argv[k++] = tsl_strdup(run_args[i]);
  return argv;
}

void tsl_spawn_argv_free(char **argv) {
  for (int i = 0; argv && argv[i]; i++) free(argv[i]);
  free(argv);
}

int tsl_spawn_wait(char **argv, const char *log_path) {
  int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    execvp(argv[0], argv);
    _exit(127);
  }
  close(fd);
  int status;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
