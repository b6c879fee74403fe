/*
** core/plugin/elf.c — reading and validating plugin files before dlopen.
**
** dlopen trusts its file: a truncated copy crashes inside it (SIGBUS when a
** segment is mapped past the end of the file), and a library for another
** machine is reported as "No such file or directory". So the loader checks
** the ELF header and program headers first and says what is wrong. Every
** structure is copied out of the mapping with memcpy: offsets in a file
** need not be aligned, and reading through a cast pointer would be
** undefined behaviour.
*/
#include "plugin/elf.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/util.h"

typedef struct image {
  const unsigned char *base;
  size_t size;
} image;

/* Is [off, off + n) inside the file? */
static int inside(const image *im, uint64_t off, uint64_t n) { return off <= im->size && n <= im->size - off; }

/* Copy n bytes at `off` into `dst`; 0 when they are not all in the file. */
static int read_at(const image *im, uint64_t off, void *dst, size_t n) {
  if (!inside(im, off, n)) return 0;
  memcpy(dst, im->base + off, n);
  return 1;
}

/* Map a whole regular file read-only (a FIFO or directory is refused, not
** waited on). */
static tsl_status map_file(const char *path, image *im) {
  struct stat sb;
  im->base = NULL;
  im->size = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return tsl_error(TESSEL_E_IO, "%s: cannot open: %s", path, strerror(errno));
  tsl_status st = TESSEL_OK;
  if (fstat(fd, &sb) != 0) st = tsl_error(TESSEL_E_IO, "%s: cannot stat: %s", path, strerror(errno));
  else if (!S_ISREG(sb.st_mode)) st = tsl_error(TESSEL_E_IO, "%s: is %s, not a shared object", path, tsl_file_kind(sb.st_mode));
  else if (sb.st_size < (off_t)sizeof(Elf64_Ehdr))
    st = tsl_error(TESSEL_E_IO, "%s: %lld bytes, too short for an ELF shared object (truncated?)", path,
                   (long long)sb.st_size);
  if (st >= 0) {
    void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) st = tsl_error(TESSEL_E_IO, "%s: cannot map: %s", path, strerror(errno));
    else *im = (image){map, (size_t)sb.st_size};
  }
  close(fd);
  return st;
}

static void unmap_file(image *im) {
  if (im->base) munmap((void *)im->base, im->size);
  im->base = NULL;
}

static const char *machine_name(unsigned m, char *buf, size_t cap) {
  static const struct { unsigned m; const char *name; } names[] = {
      {EM_X86_64, "x86-64"}, {EM_386, "x86 (32-bit)"}, {EM_AARCH64, "aarch64"}, {EM_ARM, "arm (32-bit)"},
      {EM_PPC64, "ppc64"},   {EM_RISCV, "riscv"},      {EM_S390, "s390x"},     {EM_MIPS, "mips"}};
  for (size_t i = 0; i < TSL_ARRAY_LEN(names); i++)
    if (names[i].m == m) return names[i].name;
  snprintf(buf, cap, "ELF machine %u", m);
  return buf;
}

/* The ELF header of the object this code runs in: what a loadable plugin
** must match (class, byte order, machine). */
static int own_header(Elf64_Ehdr *out) {
  Dl_info info;
  if (!dladdr((void *)own_header, &info) || !info.dli_fbase) return 0;
  memcpy(out, info.dli_fbase, sizeof *out);
  return memcmp(out->e_ident, ELFMAG, SELFMAG) == 0;
}

/* Header fields: an ELF shared object for this machine, in this class and
** byte order. */
static tsl_status check_header(const char *path, const Elf64_Ehdr *eh) {
  Elf64_Ehdr self;
  char a[32], b[32];
  if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0) return tsl_error(TESSEL_E_IO, "%s: not an ELF file", path);
  if (!own_header(&self)) return TESSEL_OK; /* nothing to compare with: dlopen will tell */
  if (eh->e_ident[EI_CLASS] != self.e_ident[EI_CLASS])
    return tsl_error(TESSEL_E_IO, "%s is a %s ELF object; this tessel loads %s ones: build the plugin for this machine",
                     path, eh->e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "64-bit",
                     self.e_ident[EI_CLASS] == ELFCLASS32 ? "32-bit" : "64-bit");
  if (eh->e_ident[EI_DATA] != self.e_ident[EI_DATA])
    return tsl_error(TESSEL_E_IO, "%s is an ELF object of the other byte order: build the plugin for this machine", path);
  /* e_machine sits at the same offset in 32- and 64-bit headers */
  if (eh->e_machine != self.e_machine)
    return tsl_error(TESSEL_E_IO, "%s is a shared object for %s, but this tessel runs on %s: build the plugin for "
                     "this machine", path, machine_name(eh->e_machine, a, sizeof a),
                     machine_name(self.e_machine, b, sizeof b));
  if (eh->e_type != ET_DYN)
    return tsl_error(TESSEL_E_IO, "%s is an ELF %s, not a shared object (build it as a MODULE or SHARED library)",
                     path, eh->e_type == ET_EXEC ? "executable" : eh->e_type == ET_REL ? "object file" : "file");
  return TESSEL_OK;
}

/* Every segment the dynamic loader maps must lie inside the file. */
static tsl_status check_segments(const image *im, const char *path, const Elf64_Ehdr *eh) {
  if (eh->e_phentsize != sizeof(Elf64_Phdr) || eh->e_phnum == 0 ||
      !inside(im, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
    return tsl_error(TESSEL_E_IO, "%s: its program headers are missing or lie outside its %zu bytes (truncated or "
                     "corrupt)", path, im->size);
  int loads = 0;
  for (int i = 0; i < eh->e_phnum; i++) {
    Elf64_Phdr ph;
    read_at(im, eh->e_phoff + (uint64_t)i * sizeof ph, &ph, sizeof ph);
    if (ph.p_type == PT_LOAD) loads++;
    if (ph.p_filesz == 0) continue;
    if (!inside(im, ph.p_offset, ph.p_filesz))
      return tsl_error(TESSEL_E_IO, "%s is truncated: its segment %d covers bytes %" PRIu64 "..%" PRIu64
                       " but the file has %zu (an interrupted copy or build? rebuild or reinstall the plugin)",
                       path, i, (uint64_t)ph.p_offset, (uint64_t)ph.p_offset + (uint64_t)ph.p_filesz, im->size);
    if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
      return tsl_error(TESSEL_E_IO, "%s is corrupt: segment %d holds more bytes in the file than in memory", path, i);
  }
  if (loads == 0) return tsl_error(TESSEL_E_IO, "%s: no loadable segment (corrupt shared object)", path);
  return TESSEL_OK;
}

static tsl_status check_image(const image *im, const char *path) {
  Elf64_Ehdr eh;
  read_at(im, 0, &eh, sizeof eh);
  tsl_status st = check_header(path, &eh);
  return st < 0 ? st : check_segments(im, path, &eh);
}

tsl_status tsl_elf_check(const char *path) {
  image im;
  tsl_status st = map_file(path, &im);
  if (st < 0) return st;
  st = check_image(&im, path);
  unmap_file(&im);
  return st;
}

static tsl_status push(char ***list, int *n, const char *s) {
  char **p = realloc(*list, sizeof(char *) * (size_t)(*n + 1));
  if (!p) return tsl_error(TESSEL_E_NOMEM, "out of host memory reading an ELF file");
  *list = p;
  if (!(p[*n] = tsl_strdup(s))) return TESSEL_E_NOMEM;
  (*n)++;
  return TESSEL_OK;
}

/* The NUL-terminated string at offset `off` of string table `strtab`. */
static const char *string_at(const image *im, const Elf64_Shdr *strtab, uint64_t off) {
  if (off >= strtab->sh_size || !inside(im, strtab->sh_offset, strtab->sh_size)) return NULL;
  const char *s = (const char *)im->base + strtab->sh_offset + off;
  return memchr(s, '\0', strtab->sh_size - off) ? s : NULL;
}

static tsl_status scan_symbols(const image *im, const Elf64_Shdr *sh, const Elf64_Shdr *strtab, tsl_elf_info *out) {
  tsl_status st = TESSEL_OK;
  for (uint64_t k = 0; k < sh->sh_size / sizeof(Elf64_Sym) && st >= 0; k++) {
    Elf64_Sym sym;
    read_at(im, sh->sh_offset + k * sizeof sym, &sym, sizeof sym);
    int bind = ELF64_ST_BIND(sym.st_info), vis = ELF64_ST_VISIBILITY(sym.st_other);
    if (sym.st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
        (vis != STV_DEFAULT && vis != STV_PROTECTED))
      continue;
    const char *name = string_at(im, strtab, sym.st_name);
    if (name && *name) st = push(&out->exports, &out->n_exports, name);
  }
  return st;
}

static tsl_status scan_needed(const image *im, const Elf64_Shdr *sh, const Elf64_Shdr *strtab, tsl_elf_info *out) {
  tsl_status st = TESSEL_OK;
  for (uint64_t k = 0; k < sh->sh_size / sizeof(Elf64_Dyn) && st >= 0; k++) {
    Elf64_Dyn dyn;
    read_at(im, sh->sh_offset + k * sizeof dyn, &dyn, sizeof dyn);
    if (dyn.d_tag == DT_NULL) break;
    const char *name = dyn.d_tag == DT_NEEDED ? string_at(im, strtab, dyn.d_un.d_val) : NULL;
    if (name) st = push(&out->needed, &out->n_needed, name);
  }
  return st;
}

static tsl_status scan(const image *im, const char *path, tsl_elf_info *out) {
  Elf64_Ehdr eh;
  read_at(im, 0, &eh, sizeof eh);
  tsl_status st = check_header(path, &eh);
  if (st < 0) return st;
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || !inside(im, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
    return tsl_error(TESSEL_E_IO, "%s: not a 64-bit ELF object with readable section headers", path);
  for (int i = 0; i < eh.e_shnum && st >= 0; i++) {
    Elf64_Shdr sh, strtab;
    read_at(im, eh.e_shoff + (uint64_t)i * sizeof sh, &sh, sizeof sh);
    if ((sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_DYNAMIC) || sh.sh_link >= eh.e_shnum ||
        !inside(im, sh.sh_offset, sh.sh_size))
      continue;
    read_at(im, eh.e_shoff + (uint64_t)sh.sh_link * sizeof strtab, &strtab, sizeof strtab);
    st = sh.sh_type == SHT_DYNSYM ? scan_symbols(im, &sh, &strtab, out) : scan_needed(im, &sh, &strtab, out);
  }
  return st;
}

tsl_status tsl_elf_read(const char *path, tsl_elf_info *out) {
  image im;
  memset(out, 0, sizeof *out);
  tsl_status st = map_file(path, &im);
  if (st < 0) return st;
  st = scan(&im, path, out);
  unmap_file(&im);
  if (st < 0) tsl_elf_free(out);
  return st;
}

void tsl_elf_free(tsl_elf_info *info) {
  for (int i = 0; i < info->n_exports; i++) free(info->exports[i]);
  for (int i = 0; i < info->n_needed; i++) free(info->needed[i]);
  free(info->exports);
  free(info->needed);
  memset(info, 0, sizeof *info);
}
