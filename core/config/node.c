/* core/config/node.c — building and freeing the configuration tree. */
#include "node.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

tsl_cfg *tsl_node_new(tsl_node_kind kind, tsl_mark mark, const char *path) {
  tsl_cfg *n = calloc(1, sizeof *n);
  if (!n) {
    tsl_error(TESSEL_E_NOMEM, "out of host memory building the configuration");
    return NULL;
  }
  n->kind = kind;
  n->mark = mark;
  n->path = tsl_strdup(path ? path : "");
  if (!n->path) {
    free(n);
    return NULL;
  }
  return n;
}

void tsl_node_free(tsl_cfg *n) {
  if (!n) return;
  for (int i = 0; i < n->n_entries; i++) {
    free(n->entries[i].key);
    tsl_node_free(n->entries[i].value);
  }
  for (int i = 0; i < n->n_asked; i++) free(n->asked[i]);
  for (int i = 0; i < n->n_items; i++) tsl_node_free(n->items[i]);
  free(n->entries);
  free(n->asked);
  free(n->items);
  free(n->strings);
  free(n->scalar);
  free(n->path);
  free(n);
}

/* Grow a dynamic array of `elem` bytes to hold one more element. */
static int grow(void **arr, int *cap, int n, size_t elem) {
  if (n < *cap) return 0;
  int ncap = *cap ? *cap * 2 : 8;
  void *p = realloc(*arr, (size_t)ncap * elem);
  if (!p) return -1;
  *arr = p;
  *cap = ncap;
  return 0;
}

tsl_status tsl_node_map_put(tsl_cfg *map, const char *key, tsl_mark key_mark, tsl_cfg *value) {
  if (grow((void **)&map->entries, &map->cap_entries, map->n_entries, sizeof(tsl_entry)) != 0)
    return tsl_error(TESSEL_E_NOMEM, "out of host memory building the configuration");
  tsl_entry *e = &map->entries[map->n_entries];
  memset(e, 0, sizeof *e);
  e->key = tsl_strdup(key);
  if (!e->key) return TESSEL_E_NOMEM;
  e->key_mark = key_mark;
  e->value = value;
  map->n_entries++;
  return TESSEL_OK;
}

tsl_status tsl_node_list_push(tsl_cfg *list, tsl_cfg *item) {
  if (grow((void **)&list->items, &list->cap_items, list->n_items, sizeof(tsl_cfg *)) != 0)
    return tsl_error(TESSEL_E_NOMEM, "out of host memory building the configuration");
  list->items[list->n_items++] = item;
  return TESSEL_OK;
}

tsl_entry *tsl_node_find(const tsl_cfg *map, const char *key) {
  if (!map || map->kind != TSL_NODE_MAP) return NULL;
  for (int i = 0; i < map->n_entries; i++)
    if (strcmp(map->entries[i].key, key) == 0) return &map->entries[i];
  return NULL;
}

const char *tsl_config_intern_file(tsl_config *cfg, const char *file) {
  for (int i = 0; i < cfg->n_files; i++)
    if (strcmp(cfg->files[i], file) == 0) return cfg->files[i];
  if (grow((void **)&cfg->files, &cfg->cap_files, cfg->n_files, sizeof(char *)) != 0) return NULL;
  char *copy = tsl_strdup(file);
  if (!copy) return NULL;
  cfg->files[cfg->n_files++] = copy;
  return copy;
}

char *tsl_node_child_path(const char *parent, const char *key) {
  if (!parent || !*parent) return tsl_strdup(key);
  return tsl_asprintf("%s.%s", parent, key);
}

tsl_status tsl_node_repath(tsl_cfg *n, const char *path) {
  char *p = tsl_strdup(path);
  if (!p) return TESSEL_E_NOMEM;
  free(n->path);
  n->path = p;
  for (int i = 0; i < n->n_entries; i++) {
    char *cp = tsl_node_child_path(path, n->entries[i].key);
    if (!cp) return TESSEL_E_NOMEM;
    tsl_status st = tsl_node_repath(n->entries[i].value, cp);
    free(cp);
    if (st < 0) return st;
  }
  for (int i = 0; i < n->n_items; i++) {
    char *cp = tsl_asprintf("%s[%d]", path, i);
    if (!cp) return TESSEL_E_NOMEM;
    tsl_status st = tsl_node_repath(n->items[i], cp);
    free(cp);
    if (st < 0) return st;
  }
  return TESSEL_OK;
}
