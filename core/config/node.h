/*
** core/config/node.h — the configuration tree, shared by the parser, the
** getters and the emitter. Not used outside core/config.
**
** A node knows its parent and its key (or list index) there rather than a
** copy of its dotted path: a path is built only when a message needs it, so
** memory stays linear in the size of the file however deep or wide it is.
** Maps keep a hash index of their keys, so building a map of n keys,
** finding its duplicates and merging it into a base are O(n).
*/
#ifndef TSL_CONFIG_NODE_H
#define TSL_CONFIG_NODE_H

#include "config.h"

/* Maps and lists nest at most this deep (the root map is level 1): a
** tessel config needs four or five levels, and a bound keeps every
** recursive walk of the tree shallow. */
#define TSL_CFG_MAX_DEPTH 64
/* Mistakes reported per run; the rest are counted. */
#define TSL_CFG_MAX_REPORTED 20
/* The longest message of one mistake (the position aside), as the error
** slot holds TSL_CFG_MAX_REPORTED of them. */
#define TSL_CFG_MESSAGE_MAX 1400

typedef enum { TSL_NODE_MAP, TSL_NODE_LIST, TSL_NODE_SCALAR, TSL_NODE_NULL } tsl_node_kind;

/* The YAML tag a scalar was written with (`!!float 16`), which says what
** its text is: the parser refuses a text its tag does not fit, and a getter
** a kind it does not take (`!!float 16` is no integer, as 16.0 is not). */
typedef enum { TSL_TAG_NONE, TSL_TAG_STR, TSL_TAG_INT, TSL_TAG_FLOAT, TSL_TAG_BOOL, TSL_TAG_NULL } tsl_tag;

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
  tsl_config *owner;         /* where mistakes are recorded */
  struct tessel_cfg *parent; /* NULL for a root or a detached node */
  const char *key;           /* the key in a parent map (the entry's string) */
  int index;                 /* the position in a parent list */
  char *path;                /* dotted path, built on first request */
  char *scalar;    /* SCALAR: the text */
  int quoted;      /* SCALAR: written quoted or tagged !!str (emit it quoted again) */
  tsl_tag tag;     /* SCALAR, NULL: its YAML tag, TSL_TAG_NONE for none */
  int is_default;  /* synthesised from a getter's default */
  int visited;     /* a getter looked inside this map */
  tsl_entry *entries; /* MAP */
  int n_entries, cap_entries;
  int *slots;         /* MAP: open-addressed index of entries, -1 = free */
  int n_slots;        /* a power of two, at least twice n_entries */
  char **asked;       /* MAP: every key a getter asked for, present or not */
  int n_asked, cap_asked;
  struct tessel_cfg **items; /* LIST */
  int n_items, cap_items;
  const char **strings;      /* LIST: cached string view for tsl_cfg_string_list */
};

/* One recorded mistake: its position (for ordering) and its full text. */
typedef struct tsl_diag {
  tsl_mark mark;
  int file_rank; /* the file's position in tsl_config.files */
  char *text;
} tsl_diag;

struct tsl_config {
  tsl_cfg *root;
  char *path;
  char **files; /* every file name a mark may point to */
  int n_files, cap_files;
  tsl_diag diags[TSL_CFG_MAX_REPORTED]; /* the earliest mistakes in file order */
  int n_diags;
  int n_mistakes; /* all distinct mistakes recorded, shown or not */
};

/* Node construction (node.c). Each returns NULL on allocation failure with
** the error set. A new node is detached; putting it in a map or list
** attaches it. */
tsl_cfg *tsl_node_new(tsl_config *owner, tsl_node_kind kind, tsl_mark mark);
void tsl_node_free(tsl_cfg *n);
/* Add an entry; the key must not be there yet (see tsl_node_find). */
tsl_status tsl_node_map_put(tsl_cfg *map, const char *key, tsl_mark key_mark, tsl_cfg *value);
/* Replace the value of an existing entry, freeing the old one. */
void tsl_node_map_replace(tsl_cfg *map, tsl_entry *e, tsl_cfg *value);
/* Remove entry `key`, returning its value (detached, owned by the caller)
** and its key's position; NULL when absent. */
tsl_cfg *tsl_node_map_take(tsl_cfg *map, const char *key, tsl_mark *key_mark);
tsl_status tsl_node_list_push(tsl_cfg *list, tsl_cfg *item);
tsl_entry *tsl_node_find(const tsl_cfg *map, const char *key);
/* Copy a file name into the config's list and return the stable copy. */
const char *tsl_config_intern_file(tsl_config *cfg, const char *file);
/* The dotted path of a child `key` of a map, as a heap string. */
char *tsl_node_child_path(const tsl_cfg *map, const char *key);

/* Record a mistake at `m` ("FILE:LINE:COL: message"), set it as the
** current error and return TESSEL_E_CONFIG (diag.c). `cfg` may be NULL:
** then the error is only set. */
tsl_status tsl_cfg_report(tsl_config *cfg, tsl_mark m, const char *fmt, ...) TSL_PRINTF(3, 4);

/* A scalar's text read as YAML reads an integer, a number, a boolean
** (get.c). tsl_scalar_int and tsl_scalar_float: 0, -1 for text that is
** not one (decimal digits only: C's hexadecimal floats, inf and nan are not
** YAML numbers), or 1 for one past int64's or double's range (*out is then
** the limit, of the right sign). tsl_scalar_bool: 1 or 0, or -1 for text
** that is none of YAML 1.1's true/false, yes/no, on/off. */
int tsl_scalar_int(const char *s, int64_t *out);
int tsl_scalar_float(const char *s, double *out);
int tsl_scalar_bool(const char *s);

/* Parsing (parse.c): one YAML text into a tree. `file` names it in marks;
** the text sits `depth` levels deep in the tree (for the nesting limit).
** A syntax error or the nesting limit ends the parse with an error;
** duplicate keys, NUL characters, tags of no meaning or that do not fit
** their text, and aliases are recorded in cfg and parsing goes on, so one
** pass reports them all. */
tsl_status tsl_parse_yaml(tsl_config *cfg, const char *text, size_t len, const char *file,
                          int line_offset, int col_offset, int depth, tsl_cfg **out);

#endif
