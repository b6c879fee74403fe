/* core/plugin/elf.c */
#include "plugin/elf.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
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

static tsl_status push(char ***list, int *n, const char *s) {
  char **p = realloc(*list, sizeof(char *) * (size_t)(*n + 1));
  if (!p || !(p[*n] = tsl_strdup(s))) return tsl_error(TESSEL_E_NOMEM, "out of host memory reading an ELF file");
  *list = p;
  (*n)++;
  return TESSEL_OK;
}

/* The NUL-terminated string at offset `off` of string table `strtab`. */
static const char *string_at(const image *im, const Elf64_Shdr *strtab, uint64_t off) {
  if (off >= strtab->sh_size || !inside(im, strtab->sh_offset, strtab->sh_size)) return NULL;
  const char *s = (const char *)im->base + strtab->sh_offset + off;
  return memchr(s, '\0', strtab->sh_size - off) ? s : NULL;
}

static tsl_status scan(const image *im, const char *path, tsl_elf_info *out) {
  const Elf64_Ehdr *eh = (const Elf64_Ehdr *)im->base;
  if (im->size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
    return tsl_error(TESSEL_E_IO, "%s: not an ELF file", path);
  if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(Elf64_Shdr) ||
      !inside(im, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
    return tsl_error(TESSEL_E_IO, "%s: not a 64-bit ELF object with readable section headers", path);
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(im->base + eh->e_shoff);
  tsl_status st = TESSEL_OK;
  for (int i = 0; i < eh->e_shnum && st >= 0; i++) {
    if ((sh[i].sh_type != SHT_DYNSYM && sh[i].sh_type != SHT_DYNAMIC) || sh[i].sh_link >= eh->e_shnum ||
        !inside(im, sh[i].sh_offset, sh[i].sh_size))
      continue;
    const Elf64_Shdr *strtab = &sh[sh[i].sh_link];
    if (sh[i].sh_type == SHT_DYNSYM) {
      const Elf64_Sym *sym = (const Elf64_Sym *)(im->base + sh[i].sh_offset);
      for (uint64_t k = 0; k < sh[i].sh_size / sizeof *sym && st >= 0; k++) {
        int bind = ELF64_ST_BIND(sym[k].st_info), vis = ELF64_ST_VISIBILITY(sym[k].st_other);
        if (sym[k].st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) ||
            (vis != STV_DEFAULT && vis != STV_PROTECTED))
          continue;
        const char *name = string_at(im, strtab, sym[k].st_name);
        if (name && *name) st = push(&out->exports, &out->n_exports, name);
      }
    } else {
      const Elf64_Dyn *dyn = (const Elf64_Dyn *)(im->base + sh[i].sh_offset);
      for (uint64_t k = 0; k < sh[i].sh_size / sizeof *dyn && dyn[k].d_tag != DT_NULL && st >= 0; k++) {
        const char *name = dyn[k].d_tag == DT_NEEDED ? string_at(im, strtab, dyn[k].d_un.d_val) : NULL;
        if (name) st = push(&out->needed, &out->n_needed, name);
      }
    }
  }
  return st;
}

tsl_status tsl_elf_read(const char *path, tsl_elf_info *out) {
  struct stat sb;
  memset(out, 0, sizeof *out);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return tsl_error(TESSEL_E_IO, "%s: cannot open: %s", path, strerror(errno));
  if (fstat(fd, &sb) != 0 || sb.st_size <= 0) {
    close(fd);
    return tsl_error(TESSEL_E_IO, "%s: empty or unreadable", path);
  }
  void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) return tsl_error(TESSEL_E_IO, "%s: cannot map: %s", path, strerror(errno));
  image im = {map, (size_t)sb.st_size};
  tsl_status st = scan(&im, path, out);
  munmap(map, (size_t)sb.st_size);
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
