/*
** core/config/node.h — the configuration tree, shared by the parser, the
** getters and the emitter. Not used outside core/config.
*/
#ifndef TSL_CONFIG_NODE_H
#define TSL_CONFIG_NODE_H

#include "config.h"

typedef enum { TSL_NODE_MAP, TSL_NODE_LIST, TSL_NODE_SCALAR, TSL_NODE_NULL } tsl_node_kind;

typedef struct tsl_mark {
  const char *file; /* owned by the tsl_config's file list */
  int line, col;    /* 1-based */
} tsl_mark;

typedef struct tsl_entry {
  char *key;
  tsl_mark key_mark;
  struct tessel_cfg *value;
  int asked; /* some getter read this key */
} tsl_entry;

struct tessel_cfg {
  tsl_node_kind kind;
  tsl_mark mark;
  char *path;      /* dotted path, for messages */
  char *scalar;    /* SCALAR: the text */
  int quoted;      /* SCALAR: written quoted (emit it quoted again) */
  int is_default;  /* synthesised from a getter's default */
  int visited;     /* a getter looked inside this map */
  tsl_entry *entries; /* MAP */
  int n_entries, cap_entries;
  char **asked;       /* MAP: every key a getter asked for, present or not */
  int n_asked, cap_asked;
  struct tessel_cfg **items; /* LIST */
  int n_items, cap_items;
  const char **strings;      /* LIST: cached string view for tsl_cfg_string_list */
};

struct tsl_config {
  tsl_cfg *root;
  char *path;
  char **files; /* every file name a mark may point to */
  int n_files, cap_files;
};

/* Node construction (node.c). Each returns NULL on allocation failure with
** the error set. */
tsl_cfg *tsl_node_new(tsl_node_kind kind, tsl_mark mark, const char *path);
void tsl_node_free(tsl_cfg *n);
tsl_status tsl_node_map_put(tsl_cfg *map, const char *key, tsl_mark key_mark, tsl_cfg *value);
tsl_status tsl_node_list_push(tsl_cfg *list, tsl_cfg *item);
tsl_entry *tsl_node_find(const tsl_cfg *map, const char *key);
/* Copy a file name into the config's list and return the stable copy. */
const char *tsl_config_intern_file(tsl_config *cfg, const char *file);
/* Rewrite the dotted paths of a subtree under a new parent path. */
tsl_status tsl_node_repath(tsl_cfg *n, const char *path);
char *tsl_node_child_path(const char *parent, const char *key);

/* Parsing (parse.c): one YAML text into a tree. `file` names it in marks. */
tsl_status tsl_parse_yaml(tsl_config *cfg, const char *text, size_t len, const char *file,
                          int line_offset, int col_offset, tsl_cfg **out);

#endif
