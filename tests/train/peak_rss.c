/*
** tests/train/peak_rss.c — run a command and print the most memory it held.
**
**   peak_rss CMD [ARG...]
**
** prints the child's peak resident set (ru_maxrss, in KiB) on stdout and
** exits with the child's exit status (128 + N when a signal N ended it), so
** a test can bound what a run holds without sampling /proc while it runs
** (which misses a peak between two samples).
*/
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: peak_rss CMD [ARG...]\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("peak_rss: fork");
    return 1;
  }
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    _exit(127);
  }
  int status;
  struct rusage ru;
  if (wait4(pid, &status, 0, &ru) != pid) {
    perror("peak_rss: wait4");
    return 1;
  }
  printf("%ld\n", ru.ru_maxrss);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
