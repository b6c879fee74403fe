/*
** tests/fuzz/fuzz_elf.c — the ELF reader: the check the loader makes before
** dlopen (header, class, byte order, machine, segments inside the file)
** and the export/needed scan of `tessel plugin-check`. Nothing is ever
** dlopen'ed: that would run the input's code.
*/
#include <stdint.h>

#include "common/status.h"
#include "fuzz.h"
#include "plugin/elf.h"

const char fuzz_target[] = "elf";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[4096];
  if (fuzz_write(fuzz_scratch(), "libtessel-fuzz.so", data, size, path) != 0) return 0;
  tsl_elf_check(path);
  tsl_elf_info info;
  if (tsl_elf_read(path, &info) >= 0) tsl_elf_free(&info);
  tsl_error_clear();
  return 0;
}
