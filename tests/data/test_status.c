/* tests/data/test_status.c — the reason code carried with an error: code
** that acts on a cause (a full disk, the open-file limit, a dataset too
** short) reads it, never the message, which is for people. */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>

#include "common/status.h"
#include "data/dataset.h"
#include "data/shard.h"
#include "scratch.h"

static void test_reason_follows_the_error(void) {
  tsl_error_for(TESSEL_E_CONFIG, TSL_REASON_TOO_SHORT, "reworded: %d", 1);
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_TOO_SHORT);
  /* context added outside keeps the cause, also around a positioned message */
  CHECK_EQ_INT(tsl_error_wrap(TESSEL_E_CONFIG, "data.%s", "val"), TESSEL_E_CONFIG);
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_TOO_SHORT);
  CHECK_STR_CONTAINS(tsl_error_message(), "data.val: reworded: 1");
  tsl_error_for(TESSEL_E_CONFIG, TSL_REASON_FILE_LIMIT, "a.yaml:3:5: x");
  tsl_error_wrap(TESSEL_E_CONFIG, "outer");
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_FILE_LIMIT);
  /* a new error without one has none: no reason outlives its message */
  tsl_error(TESSEL_E_IO, "No space left on device");
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_NONE);
  tsl_error_for(TESSEL_E_IO, TSL_REASON_NO_SPACE, "x");
  tsl_error_clear();
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_NONE);
  CHECK(tsl_error_message()[0] == '\0');
}

static void test_errno_reasons(void) {
  CHECK_EQ_INT(tsl_reason_of_errno(ENOSPC), TSL_REASON_NO_SPACE);
  CHECK_EQ_INT(tsl_reason_of_errno(EDQUOT), TSL_REASON_NO_SPACE);
  CHECK_EQ_INT(tsl_reason_of_errno(EMFILE), TSL_REASON_FILE_LIMIT);
  CHECK_EQ_INT(tsl_reason_of_errno(ENFILE), TSL_REASON_FILE_TABLE);
  CHECK_EQ_INT(tsl_reason_of_errno(EROFS), TSL_REASON_NONE);
  CHECK_EQ_INT(tsl_reason_of_errno(0), TSL_REASON_NONE);
  CHECK_EQ_INT(tsl_error_sys(TESSEL_E_IO, EDQUOT, "%s: write failed", "f"), TESSEL_E_IO);
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_NO_SPACE);
  char want[256];
  snprintf(want, sizeof want, "f: write failed: %s", strerror(EDQUOT));
  CHECK(strcmp(tsl_error_message(), want) == 0);
  tsl_error_sys(TESSEL_E_IO, EROFS, "g");
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_NONE);
}

/* A full process limit and a full system file table call for different
** remedies: `ulimit -n` helps with the first only. */
static void test_open_files_advice(void) {
  const char *process = tsl_open_files_advice(EMFILE), *machine = tsl_open_files_advice(ENFILE);
  REQUIRE(process && machine);
  CHECK_STR_CONTAINS(process, "raise the limit (`ulimit -n`)");
  CHECK_STR_CONTAINS(machine, "table of open files is full");
  CHECK_STR_CONTAINS(machine, "fs.file-max");
  CHECK_STR_CONTAINS(machine, "`ulimit -n` does not help");
  CHECK(tsl_open_files_advice(ENOENT) == NULL);
  CHECK(tsl_open_files_advice(0) == NULL);
}

/* The errors the three callers act on carry their reason from where they
** arise. */
static void test_sources_set_reasons(void) {
  /* a write to a full device (/dev/full: every write fails with ENOSPC) */
  int fd = open("/dev/full", O_WRONLY);
  if (fd >= 0) {
    CHECK(tsl_write_all(fd, "x", 1, "/dev/full") < 0);
    CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_NO_SPACE);
    close(fd);
  }
  /* no shard holds a window of seq_len+1 tokens */
  char path[1024], pattern[1024];
  uint16_t tokens[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  tsl_dataset *ds = NULL;
  REQUIRE(tsl_mkdir_p(scratch_path(path, "short")) == TESSEL_OK);
  REQUIRE(tsl_shard_write(scratch_path(path, "short/a.bin"), tokens, 8) == TESSEL_OK);
  CHECK_EQ_INT(tsl_dataset_open(scratch_path(pattern, "short/*.bin"), 0, 16, &ds), TESSEL_E_CONFIG);
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_TOO_SHORT);
  /* a missing shard is not the open-file limit */
  tsl_shard shard;
  CHECK(tsl_shard_open(scratch_path(path, "short/none.bin"), 0, &shard) < 0);
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_NONE);
  /* every descriptor the limit allows in use: the shard's open hits it */
  struct rlimit old, low;
  REQUIRE(getrlimit(RLIMIT_NOFILE, &old) == 0);
  low = old;
  low.rlim_cur = 64;
  REQUIRE(setrlimit(RLIMIT_NOFILE, &low) == 0);
  int held[64], n = 0;
  while (n < 64 && (held[n] = open("/dev/null", O_RDONLY)) >= 0) n++;
  CHECK(tsl_shard_open(scratch_path(path, "short/a.bin"), 0, &shard) < 0);
  CHECK_EQ_INT(tsl_error_reason(), TSL_REASON_FILE_LIMIT);
  CHECK_STR_CONTAINS(tsl_error_message(), "a run keeps every shard open; this process has as many files open");
  while (n > 0) close(held[--n]);
  setrlimit(RLIMIT_NOFILE, &old);
}

int main(void) {
  scratch_init("test_status");
  RUN(test_reason_follows_the_error);
  RUN(test_errno_reasons);
  RUN(test_open_files_advice);
  RUN(test_sources_set_reasons);
  scratch_cleanup();
  return HARNESS_EXIT();
}
