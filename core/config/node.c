/* core/config/node.c — building, indexing and freeing the configuration tree. */
#include "node.h"

#include <stdlib.h>
#include <string.h>

#include "common/util.h"

static tsl_status nomem(void) { return tsl_error(TESSEL_E_NOMEM, "out of host memory building the configuration"); }

tsl_cfg *tsl_node_new(tsl_config *owner, tsl_node_kind kind, tsl_mark mark) {
  tsl_cfg *n = calloc(1, sizeof *n);
  if (!n) {
    nomem();
    return NULL;
  }
  n->kind = kind;
  n->mark = mark;
  n->owner = owner;
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
  free(n->slots);
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
  if (*cap > (1 << 29)) return -1;
  int ncap = *cap ? *cap * 2 : 8;
  void *p = realloc(*arr, (size_t)ncap * elem);
  if (!p) return -1;
  *arr = p;
  *cap = ncap;
  return 0;
}

/* A path cached by a node and its subtree is stale once it moves. */
static void forget_paths(tsl_cfg *n) {
  if (!n) return;
  free(n->path);
  n->path = NULL;
  for (int i = 0; i < n->n_entries; i++) forget_paths(n->entries[i].value);
  for (int i = 0; i < n->n_items; i++) forget_paths(n->items[i]);
}

static void attach(tsl_cfg *parent, tsl_cfg *child, const char *key, int index) {
  if (!child) return;
  forget_paths(child);
  child->parent = parent;
  child->key = key;
  child->index = index;
}

/* ---- the key index ---- */

static uint32_t key_hash(const char *key) { return (uint32_t)tsl_hash_str(key, 0x6b6579); }

/* The slot holding `key`, or the free slot where it would go. */
static int probe(const tsl_cfg *map, const char *key) {
  uint32_t mask = (uint32_t)map->n_slots - 1, i = key_hash(key) & mask;
  while (map->slots[i] >= 0 && strcmp(map->entries[map->slots[i]].key, key) != 0) i = (i + 1) & mask;
  return (int)i;
}

/* Index every entry afresh in the current slots. */
static void fill_index(tsl_cfg *map) {
  memset(map->slots, 0xff, sizeof *map->slots * (size_t)map->n_slots);
  for (int i = 0; i < map->n_entries; i++) map->slots[probe(map, map->entries[i].key)] = i;
}

/* Resize the index for at least `want` entries (half full at most). */
static tsl_status reindex(tsl_cfg *map, int want) {
  int n = 16;
  while (n < 2 * want) n *= 2;
  int *slots = malloc(sizeof *slots * (size_t)n);
  if (!slots) return nomem();
  free(map->slots);
  map->slots = slots;
  map->n_slots = n;
  fill_index(map);
  return TESSEL_OK;
}

tsl_entry *tsl_node_find(const tsl_cfg *map, const char *key) {
  if (!map || map->kind != TSL_NODE_MAP || map->n_entries == 0) return NULL;
  int s = map->slots[probe(map, key)];
  return s >= 0 ? &map->entries[s] : NULL;
}

tsl_status tsl_node_map_put(tsl_cfg *map, const char *key, tsl_mark key_mark, tsl_cfg *value) {
  if (grow((void **)&map->entries, &map->cap_entries, map->n_entries, sizeof(tsl_entry)) != 0) return nomem();
  char *copy = tsl_strdup(key);
  if (!copy) return TESSEL_E_NOMEM;
  if (2 * (map->n_entries + 1) > map->n_slots && reindex(map, map->n_entries + 1) < 0) {
    free(copy);
    return TESSEL_E_NOMEM;
  }
  tsl_entry *e = &map->entries[map->n_entries];
  *e = (tsl_entry){.key = copy, .key_mark = key_mark, .value = value};
  map->slots[probe(map, copy)] = map->n_entries++;
  attach(map, value, copy, 0);
  return TESSEL_OK;
}

void tsl_node_map_replace(tsl_cfg *map, tsl_entry *e, tsl_cfg *value) {
  tsl_node_free(e->value);
  e->value = value;
  attach(map, value, e->key, 0);
}

tsl_cfg *tsl_node_map_take(tsl_cfg *map, const char *key, tsl_mark *key_mark) {
  tsl_entry *e = tsl_node_find(map, key);
  if (!e) return NULL;
  int i = (int)(e - map->entries);
  tsl_cfg *v = e->value;
  *key_mark = e->key_mark;
  free(e->key);
  memmove(e, e + 1, sizeof(tsl_entry) * (size_t)(map->n_entries - i - 1));
  map->n_entries--;
  attach(NULL, v, NULL, 0);
  fill_index(map); /* the entries after i moved down by one (rare: only `base:`) */
  return v;
}

tsl_status tsl_node_list_push(tsl_cfg *list, tsl_cfg *item) {
  if (grow((void **)&list->items, &list->cap_items, list->n_items, sizeof(tsl_cfg *)) != 0) return nomem();
  attach(list, item, NULL, list->n_items);
  list->items[list->n_items++] = item;
  return TESSEL_OK;
}

/* ---- files and paths ---- */

const char *tsl_config_intern_file(tsl_config *cfg, const char *file) {
  for (int i = 0; i < cfg->n_files; i++)
    if (strcmp(cfg->files[i], file) == 0) return cfg->files[i];
  if (grow((void **)&cfg->files, &cfg->cap_files, cfg->n_files, sizeof(char *)) != 0) return NULL;
  char *copy = tsl_strdup(file);
  if (!copy) return NULL;
  cfg->files[cfg->n_files++] = copy;
  return copy;
}

/* Bytes of n's path: walk up once to size it, then fill it from the end. */
static size_t path_len(const tsl_cfg *n) {
  size_t len = 0;
  for (; n && n->parent; n = n->parent) {
    if (n->parent->kind == TSL_NODE_LIST) len += (size_t)snprintf(NULL, 0, "[%d]", n->index);
    else len += strlen(n->key) + (n->parent->parent ? 1 : 0);
  }
  return len;
}

const char *tsl_cfg_path(const tsl_cfg *node) {
  if (!node) return "";
  tsl_cfg *n = (tsl_cfg *)node; /* the cache is not part of the value */
  if (n->path) return n->path;
  size_t len = path_len(n);
  char *buf = malloc(len + 1);
  if (!buf) return "";
  buf[len] = '\0';
  for (const tsl_cfg *c = n; c && c->parent; c = c->parent) {
    char part[16];
    const char *text = part;
    size_t k;
    if (c->parent->kind == TSL_NODE_LIST) {
      k = (size_t)snprintf(part, sizeof part, "[%d]", c->index);
    } else {
      text = c->key;
      k = strlen(c->key);
    }
    len -= k;
    memcpy(buf + len, text, k);
    if (c->parent->kind == TSL_NODE_MAP && c->parent->parent) buf[--len] = '.';
  }
  n->path = buf;
  return buf;
}

char *tsl_node_child_path(const tsl_cfg *map, const char *key) {
  const char *parent = tsl_cfg_path(map);
  if (!*parent) return tsl_strdup(key);
  return tsl_asprintf("%s.%s", parent, key);
}
