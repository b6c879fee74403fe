/* core/config/compare.c — the resolved configuration as records, for
** comparing the configurations of two processes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "node.h"

/* The leaves of a configuration, collected for sorting. */
typedef struct leaves {
  const tsl_cfg **at;
  int n, cap;
} leaves;

static int in_list(const char *path, const char *const *skip) {
  for (; skip && *skip; skip++)
    if (!strcmp(path, *skip)) return 1;
  return 0;
}

/* Collect the values under `n` (an empty map or list is a value too). */
static tsl_status collect(const tsl_cfg *n, const char *const *skip, leaves *out) {
  tsl_status st;
  if (n->parent && in_list(tsl_cfg_path(n), skip)) return TESSEL_OK;
  int children = n->kind == TSL_NODE_MAP ? n->n_entries : n->kind == TSL_NODE_LIST ? n->n_items : 0;
  for (int i = 0; i < children; i++)
    TSL_TRY(st, collect(n->kind == TSL_NODE_MAP ? n->entries[i].value : n->items[i], skip, out));
  if (children || !n->parent) return TESSEL_OK;
  if (out->n == out->cap) {
    int cap = out->cap ? 2 * out->cap : 64;
    const tsl_cfg **p = realloc(out->at, sizeof *p * (size_t)cap);
    if (!p) return tsl_error(TESSEL_E_NOMEM, "out of host memory comparing configurations");
    out->at = p;
    out->cap = cap;
  }
  out->at[out->n++] = n;
  return TESSEL_OK;
fail:
  return st;
}

static int by_path(const void *a, const void *b) {
  return strcmp(tsl_cfg_path(*(const tsl_cfg *const *)a), tsl_cfg_path(*(const tsl_cfg *const *)b));
}

/* A getter's default, or inside one (a default list's items). */
static int is_default(const tsl_cfg *n) {
  for (; n; n = n->parent)
    if (n->is_default) return 1;
  return 0;
}

static const char *leaf_text(const tsl_cfg *n) {
  switch (n->kind) {
    case TSL_NODE_SCALAR: return n->scalar;
    case TSL_NODE_MAP: return "{}";
    case TSL_NODE_LIST: return "[]";
    case TSL_NODE_NULL: break;
  }
  return "null";
}

char *tsl_config_records(const tsl_config *cfg, const char *const *skip, size_t *len) {
  leaves all = {0};
  char *text = NULL;
  FILE *f = NULL;
  *len = 0;
  if (collect(cfg->root, skip, &all) < 0) goto done;
  qsort(all.at, (size_t)all.n, sizeof *all.at, by_path);
  if (!(f = open_memstream(&text, len))) {
    tsl_error(TESSEL_E_NOMEM, "out of host memory comparing configurations");
    goto done;
  }
  for (int i = 0; i < all.n; i++) {
    const tsl_cfg *n = all.at[i];
    fprintf(f, "%s%c%s%c", tsl_cfg_path(n), 0, leaf_text(n), 0);
    if (!is_default(n)) fprintf(f, "%s:%d:%d", n->mark.file ? n->mark.file : "?", n->mark.line, n->mark.col);
    fputc(0, f);
  }
  if (fclose(f) != 0) {
    free(text);
    text = NULL;
    tsl_error(TESSEL_E_NOMEM, "out of host memory comparing configurations");
  }
done:
  free(all.at);
  return text;
}

/* Read the record at *p (before `end`) into its three fields and move past
** it; 0 at the end, or where a record is cut short. */
static int next_record(const char **p, const char *end, const char *field[3]) {
  for (int k = 0; k < 3; k++) {
    const char *nul = *p < end ? memchr(*p, 0, (size_t)(end - *p)) : NULL;
    if (!nul) return 0;
    field[k] = *p;
    *p = nul + 1;
  }
  return 1;
}

/* Do two values as written mean the same? The same text, or the same
** number (2e-3 and 0.002), or the same size (25MiB and the default's
** 26214400 bytes): each rank reads its own values the same way. */
static int same_value(const char *a, const char *b) {
  if (!strcmp(a, b)) return 1;
  char *ea, *eb;
  double da = strtod(a, &ea), db = strtod(b, &eb);
  if (ea != a && !*ea && eb != b && !*eb) return da == db; /* two plain numbers */
  uint64_t sa, sb; /* a size with its unit, against one without or with another */
  return tsl_parse_size(a, &sa) == 0 && tsl_parse_size(b, &sb) == 0 && sa == sb;
}

int tsl_config_records_differ(const char *a, size_t alen, const char *b, size_t blen, tsl_config_diff *d) {
  const char *pa = a, *pb = b, *ra[3], *rb[3];
  int has_a = next_record(&pa, a + alen, ra), has_b = next_record(&pb, b + blen, rb);
  memset(d, 0, sizeof *d);
  while (has_a || has_b) {
    int c = !has_a ? 1 : !has_b ? -1 : strcmp(ra[0], rb[0]);
    /* a default only one side has was read because of something that side
    ** wrote (another strategy's options, another architecture's keys):
    ** that written value is the difference worth naming */
    if ((c < 0 && ra[2][0]) || (c > 0 && rb[2][0]) || (c == 0 && !same_value(ra[1], rb[1]))) {
      d->path = c <= 0 ? ra[0] : rb[0];
      if (c <= 0) d->value[0] = ra[1], d->origin[0] = ra[2];
      if (c >= 0) d->value[1] = rb[1], d->origin[1] = rb[2];
      return 1;
    }
    if (c <= 0) has_a = next_record(&pa, a + alen, ra);
    if (c >= 0) has_b = next_record(&pb, b + blen, rb);
  }
  return 0;
}
