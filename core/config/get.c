/* core/config/get.c — typed getters, defaults, unknown keys, errors. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "node.h"

static const char *kind_name(tsl_node_kind k) {
  switch (k) {
    case TSL_NODE_MAP: return "a section (map)";
    case TSL_NODE_LIST: return "a list";
    case TSL_NODE_NULL: return "nothing";
    default: return "a value";
  }
}

/* The error at `key` of `node`, or at item `item` of the list there when
** item >= 0 (a path in data.text, say). */
static tsl_status report_at(tsl_cfg *node, const char *key, int item, const char *fmt, va_list ap) {
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) return tsl_error(TESSEL_E_NOMEM, "out of host memory reporting a mistake");
  tsl_status st;
  if (!node) {
    st = tsl_error(TESSEL_E_CONFIG, "%s%s%s", key ? key : "", key ? ": " : "", msg);
  } else {
    tsl_entry *e = key ? tsl_node_find(node, key) : NULL;
    const tsl_cfg *at = e && !e->value->is_default ? e->value : node;
    if (e && item >= 0 && at->kind == TSL_NODE_LIST && item < at->n_items) at = at->items[item];
    char *path = e ? tsl_strdup(tsl_cfg_path(e->value)) : key ? tsl_node_child_path(node, key)
                                                                : tsl_strdup(tsl_cfg_path(node));
    st = tsl_cfg_report(node->owner, at->mark, "%s%s%s", path && *path ? TSL_ECHO(path) : "", path && *path ? ": " : "",
                        msg);
    free(path);
  }
  free(msg);
  return st;
}

tsl_status tsl_cfg_verror(tsl_cfg *node, const char *key, const char *fmt, va_list ap) {
  return report_at(node, key, -1, fmt, ap);
}

tsl_status tsl_cfg_error(tsl_cfg *node, const char *key, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tsl_status st = report_at(node, key, -1, fmt, ap);
  va_end(ap);
  return st;
}

tsl_status tsl_cfg_item_error(tsl_cfg *node, const char *key, int item, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tsl_status st = report_at(node, key, item, fmt, ap);
  va_end(ap);
  return st;
}

/* Record that a getter asked for `key` in `map`. */
static tsl_status declare(tsl_cfg *map, const char *key) {
  map->visited = 1;
  tsl_entry *e = tsl_node_find(map, key);
  if (e) e->asked = 1;
  for (int i = 0; i < map->n_asked; i++)
    if (strcmp(map->asked[i], key) == 0) return TESSEL_OK;
  if (map->n_asked == map->cap_asked) {
    int cap = map->cap_asked ? map->cap_asked * 2 : 16;
    char **p = realloc(map->asked, sizeof(char *) * (size_t)cap);
    if (!p) return tsl_error(TESSEL_E_NOMEM, "out of host memory reading the configuration");
    map->asked = p;
    map->cap_asked = cap;
  }
  if (!(map->asked[map->n_asked] = tsl_strdup(key))) return TESSEL_E_NOMEM;
  map->n_asked++;
  return TESSEL_OK;
}

/* Add a synthesised value for a defaulted key, so the resolved config shows it. */
static tsl_status record_default(tsl_cfg *map, const char *key, tsl_node_kind kind, const char *text) {
  tsl_cfg *v = tsl_node_new(map->owner, kind, map->mark);
  if (!v) return TESSEL_E_NOMEM;
  v->is_default = 1;
  if (text && !(v->scalar = tsl_strdup(text))) {
    tsl_node_free(v);
    return TESSEL_E_NOMEM;
  }
  tsl_status st = tsl_node_map_put(map, key, map->mark, v);
  if (st < 0) {
    tsl_node_free(v);
    return st;
  }
  map->entries[map->n_entries - 1].asked = 1;
  return TESSEL_OK;
}

/* Look up a scalar: *v = NULL when absent; wrong kinds are errors. */
static tsl_status scalar_of(tsl_cfg *map, const char *key, const char *what, tsl_cfg **v) {
  tsl_status st;
  *v = NULL;
  if (!map) return TESSEL_OK;
  if (map->kind != TSL_NODE_MAP) return tsl_cfg_error(map, NULL, "expected a section (map)");
  TSL_TRY(st, declare(map, key));
  tsl_entry *e = tsl_node_find(map, key);
  if (!e) return TESSEL_OK;
  if (e->value->kind != TSL_NODE_SCALAR)
    return tsl_cfg_error(map, key, "expected %s, got %s", what, kind_name(e->value->kind));
  *v = e->value;
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_cfg_redefault_int(tsl_cfg *map, const char *key, int64_t value) {
  tsl_entry *e = map ? tsl_node_find(map, key) : NULL;
  if (!e || !e->value->is_default) return TESSEL_OK;
  char *text = tsl_asprintf("%" PRId64, value);
  if (!text) return tsl_error(TESSEL_E_NOMEM, "out of host memory reading the configuration");
  free(e->value->scalar);
  e->value->scalar = text;
  return TESSEL_OK;
}

/* Quotes make a value a string, so "7" is not a number, and `!!float 7`
** is no integer; a message that showed only '7' would not say why it was
** refused. */
static const char *quoted_note(const tsl_cfg *v) {
  if (v->kind == TSL_NODE_SCALAR && v->quoted) return "the quoted string ";
  return v->kind == TSL_NODE_SCALAR && v->tag == TSL_TAG_FLOAT ? "!!float " : "";
}

/* An integer as YAML types it: untagged or !!int, not a string, and not
** !!float, which makes 16 the number 16.0 (refused as 16.0 is). */
static int int_text(const tsl_cfg *v, int64_t *out) {
  return v->quoted || v->tag == TSL_TAG_FLOAT ? -1 : tsl_scalar_int(v->scalar, out);
}

int tsl_scalar_int(const char *s, int64_t *out) {
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end) return -1;
  *out = v;
  return errno == ERANGE ? 1 : errno ? -1 : 0;
}

/* A value below the smallest normal double reads as the nearest one. */
int tsl_scalar_float(const char *s, double *out) {
  char *end;
  if (strpbrk(s, "xX")) return -1;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || isnan(v)) return -1;
  *out = v;
  if (isinf(v)) return strpbrk(s, "iI") ? -1 : 1;
  return 0;
}

static tsl_status range_error_int(tsl_cfg *map, const char *key, const char *text, int64_t min, int64_t max,
                                  int beyond, int64_t x) {
  const char *v = TSL_ECHO(text); /* digits by the thousand are cut short like any echoed text */
  /* past int64 itself on a side the range leaves open ("at least 0, got
  ** 9223372036854775808" would not say why); x is then int64's limit */
  if (beyond && ((x == INT64_MAX && max == INT64_MAX) || (x == INT64_MIN && min == INT64_MIN)))
    return tsl_cfg_error(map, key, "%s is out of range: a 64-bit integer holds %" PRId64 " to %" PRId64, v, INT64_MIN,
                         INT64_MAX);
  if (min == INT64_MIN) return tsl_cfg_error(map, key, "must be at most %" PRId64 ", got %s", max, v);
  if (max == INT64_MAX) return tsl_cfg_error(map, key, "must be at least %" PRId64 ", got %s", min, v);
  return tsl_cfg_error(map, key, "must be between %" PRId64 " and %" PRId64 ", got %s", min, max, v);
}

tsl_status tsl_cfg_int(tsl_cfg *map, const char *key, int64_t dflt, int64_t min, int64_t max,
                       int64_t *out) {
  tsl_cfg *v;
  tsl_status st = scalar_of(map, key, "an integer", &v);
  *out = dflt;
  if (st < 0) return st;
  if (!v) {
    *out = dflt;
    if (!map) return TESSEL_OK;
    char text[32];
    snprintf(text, sizeof text, "%" PRId64, dflt);
    return record_default(map, key, TSL_NODE_SCALAR, text);
  }
  int64_t x;
  *out = dflt; /* what a reader that goes on after the mistake sees */
  int parsed = int_text(v, &x);
  if (parsed < 0) return tsl_cfg_error(map, key, "expected an integer, got %s'%s'", quoted_note(v),
                                         TSL_ECHO(v->scalar));
  if (parsed > 0 || x < min || x > max) return range_error_int(map, key, v->scalar, min, max, parsed > 0, x);
  *out = x;
  return TESSEL_OK;
}

tsl_status tsl_cfg_float(tsl_cfg *map, const char *key, double dflt, double min, double max,
                         double *out) {
  tsl_cfg *v;
  tsl_status st = scalar_of(map, key, "a number", &v);
  *out = dflt;
  if (st < 0) return st;
  if (!v) {
    *out = dflt;
    if (!map) return TESSEL_OK;
    char text[40];
    tsl_format_exact(dflt, text, sizeof text);
    return record_default(map, key, TSL_NODE_SCALAR, text);
  }
  double x;
  int parsed = v->quoted ? -1 : tsl_scalar_float(v->scalar, &x);
  if (parsed < 0) return tsl_cfg_error(map, key, "expected a number, got %s'%s'", quoted_note(v),
                                         TSL_ECHO(v->scalar));
  /* past double's range on a side the range leaves open: "must be at
  ** least 0, got 1e400" would not say why */
  if (parsed > 0 && ((x > 0 && isinf(max)) || (x < 0 && isinf(min))))
    return tsl_cfg_error(map, key, "%s is past the largest number (about 1.8e308)", TSL_ECHO(v->scalar));
  if (parsed > 0 || x < min || x > max) {
    char lo[40], hi[40];
    tsl_format_exact(min, lo, sizeof lo);
    tsl_format_exact(max, hi, sizeof hi);
    if (isinf(max)) return tsl_cfg_error(map, key, "must be at least %s, got %s", lo, TSL_ECHO(v->scalar));
    if (isinf(min)) return tsl_cfg_error(map, key, "must be at most %s, got %s", hi, TSL_ECHO(v->scalar));
    return tsl_cfg_error(map, key, "must be between %s and %s, got %s", lo, hi, TSL_ECHO(v->scalar));
  }
  *out = x;
  return TESSEL_OK;
}

int tsl_scalar_bool(const char *s) {
  static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"};
  static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"};
  for (size_t i = 0; i < TSL_ARRAY_LEN(yes); i++)
    if (!strcmp(s, yes[i]) || !strcmp(s, no[i])) return !strcmp(s, yes[i]);
  return -1;
}

tsl_status tsl_cfg_bool(tsl_cfg *map, const char *key, int dflt, int *out) {
  tsl_cfg *v;
  tsl_status st = scalar_of(map, key, "true or false", &v);
  *out = dflt;
  if (st < 0) return st;
  if (!v) {
    *out = dflt;
    return map ? record_default(map, key, TSL_NODE_SCALAR, dflt ? "true" : "false") : TESSEL_OK;
  }
  int b = v->quoted ? -1 : tsl_scalar_bool(v->scalar);
  if (b >= 0) {
    *out = b;
    return TESSEL_OK;
  }
  return tsl_cfg_error(map, key, "expected true or false, got %s'%s'", quoted_note(v), TSL_ECHO(v->scalar));
}

tsl_status tsl_cfg_size(tsl_cfg *map, const char *key, uint64_t dflt, uint64_t *out) {
  tsl_cfg *v;
  tsl_status st = scalar_of(map, key, "a size", &v);
  *out = dflt;
  if (st < 0) return st;
  if (!v) {
    *out = dflt;
    if (!map) return TESSEL_OK;
    char text[32];
    snprintf(text, sizeof text, "%" PRIu64, dflt);
    return record_default(map, key, TSL_NODE_SCALAR, text);
  }
  int parsed = tsl_parse_size(v->scalar, out);
  if (parsed == 0) return TESSEL_OK;
  *out = dflt;
  if (parsed == -2)
    return tsl_cfg_error(map, key, "'%s' is not a whole number of bytes (a size is counted in bytes)",
                         TSL_ECHO(v->scalar));
  return tsl_cfg_error(map, key, "expected a size such as 4096, 64KiB, 25MiB or 2GB, got '%s'%s",
                       TSL_ECHO(v->scalar), v->scalar[0] == '-' ? " (sizes cannot be negative)" : "");
}

tsl_status tsl_cfg_string(tsl_cfg *map, const char *key, const char *dflt, const char **out) {
  tsl_cfg *v;
  tsl_entry *e = map && map->kind == TSL_NODE_MAP ? tsl_node_find(map, key) : NULL;
  /* `key: null` (or ~) of a string that is optional means none, as YAML's
  ** null says: `init_from: null` was "expected a string, got nothing" */
  if (!dflt && e && e->value->kind == TSL_NODE_NULL) {
    *out = NULL;
    return declare(map, key);
  }
  tsl_status st = scalar_of(map, key, "a string", &v);
  *out = dflt;
  if (st < 0) return st;
  if (!v) {
    *out = dflt;
    if (!map || !dflt) return TESSEL_OK;
    TSL_TRY(st, record_default(map, key, TSL_NODE_SCALAR, dflt));
    *out = tsl_node_find(map, key)->value->scalar;
    return TESSEL_OK;
  }
  *out = v->scalar;
  return TESSEL_OK;
fail:
  return st;
}

tsl_status tsl_cfg_file(tsl_cfg *map, const char *key, const char *dflt, const char **out) {
  tsl_status st = tsl_cfg_string(map, key, dflt, out);
  if (st >= 0 && *out && !**out) return tsl_cfg_error(map, key, "an empty path names no file or directory");
  return st;
}

tsl_status tsl_cfg_enum(tsl_cfg *map, const char *key, const char *const *choices, int dflt, int *out) {
  const char *s;
  int count = 0;
  *out = dflt;
  while (choices && choices[count]) count++;
  /* a plugin's call may name a default past the list's end */
  if (dflt < 0 || dflt >= count)
    return tsl_error(TESSEL_E_INTERNAL, "reading '%s': the default choice %d is not an index into its %d choices",
                     key, dflt, count);
  tsl_status st = tsl_cfg_string(map, key, choices[dflt], &s);
  if (st < 0) return st;
  int n = 0;
  for (; choices[n]; n++) {
    if (!strcmp(s, choices[n])) {
      *out = n;
      return TESSEL_OK;
    }
  }
  char list[512] = "";
  for (int i = 0; i < n; i++) {
    strncat(list, i ? ", " : "", sizeof list - strlen(list) - 1);
    strncat(list, choices[i], sizeof list - strlen(list) - 1);
  }
  const char *near = tsl_closest(s, choices, n);
  if (near) return tsl_cfg_error(map, key, "'%s' is not one of %s (did you mean '%s'?)", TSL_ECHO(s), list, near);
  return tsl_cfg_error(map, key, "'%s' is not one of %s", TSL_ECHO(s), list);
}

/* Look up a list; a single scalar counts as a list of one. */
static tsl_status list_of(tsl_cfg *map, const char *key, const char *what, tsl_cfg **v) {
  tsl_status st;
  *v = NULL;
  if (!map) return TESSEL_OK;
  TSL_TRY(st, declare(map, key));
  tsl_entry *e = tsl_node_find(map, key);
  if (!e) return TESSEL_OK;
  if (e->value->kind != TSL_NODE_LIST && e->value->kind != TSL_NODE_SCALAR)
    return tsl_cfg_error(map, key, "expected %s, got %s", what, kind_name(e->value->kind));
  *v = e->value;
  return TESSEL_OK;
fail:
  return st;
}

/* Item i of a list of numbers, a scalar, parsed into out[i]: 0, or not 0
** when it is not such a number (or past the type's range). */
typedef int (*item_parser)(const tsl_cfg *item, void *out, int i);
static int int_item(const tsl_cfg *item, void *out, int i) { return int_text(item, (int64_t *)out + i); }
static int float_item(const tsl_cfg *item, void *out, int i) {
  return item->quoted ? -1 : tsl_scalar_float(item->scalar, (double *)out + i);
}

/* The list (or the one scalar) at key, each item read by `parse`; `what`
** names one item ("an integer"). */
static tsl_status number_list(tsl_cfg *map, const char *key, const char *list, const char *what, item_parser parse,
                              void *out, int cap, int *n) {
  tsl_cfg *v;
  tsl_status st = list_of(map, key, list, &v);
  *n = 0;
  if (st < 0 || !v) return st;
  int count = v->kind == TSL_NODE_LIST ? v->n_items : 1;
  if (count > cap) return tsl_cfg_error(map, key, "at most %d values, got %d", cap, count);
  for (int i = 0; i < count; i++) {
    tsl_cfg *item = v->kind == TSL_NODE_LIST ? v->items[i] : v;
    if (item->kind != TSL_NODE_SCALAR || parse(item, out, i) != 0)
      return tsl_cfg_report(item->owner, item->mark, "%s: expected %s, got %s%s", TSL_ECHO(tsl_cfg_path(item)), what,
                            quoted_note(item),
                            item->kind == TSL_NODE_SCALAR ? TSL_ECHO(item->scalar) : kind_name(item->kind));
  }
  *n = count;
  return TESSEL_OK;
}

tsl_status tsl_cfg_int_list(tsl_cfg *map, const char *key, int64_t *out, int cap, int *n) {
  return number_list(map, key, "a list of integers", "an integer", int_item, out, cap, n);
}

tsl_status tsl_cfg_float_list(tsl_cfg *map, const char *key, double *out, int cap, int *n) {
  return number_list(map, key, "a list of numbers", "a number", float_item, out, cap, n);
}

tsl_status tsl_cfg_string_list(tsl_cfg *map, const char *key, const char ***out, int *n) {
  tsl_cfg *v;
  tsl_status st = list_of(map, key, "a list of strings", &v);
  *out = NULL;
  *n = 0;
  if (st < 0 || !v) return st;
  if (v->kind == TSL_NODE_SCALAR) {
    *out = (const char **)&v->scalar;
    *n = 1;
    return TESSEL_OK;
  }
  if (!v->strings) {
    v->strings = calloc((size_t)v->n_items + 1, sizeof(char *));
    if (!v->strings) return tsl_error(TESSEL_E_NOMEM, "out of host memory reading %s", tsl_cfg_path(v));
  }
  for (int i = 0; i < v->n_items; i++) {
    tsl_cfg *item = v->items[i];
    if (item->kind != TSL_NODE_SCALAR)
      return tsl_cfg_report(item->owner, item->mark, "%s: expected a string, got %s", TSL_ECHO(tsl_cfg_path(item)),
                            kind_name(item->kind));
    v->strings[i] = item->scalar;
  }
  *out = v->strings;
  *n = v->n_items;
  return TESSEL_OK;
}

int tsl_cfg_has(tsl_cfg *map, const char *key) {
  if (!map || map->kind != TSL_NODE_MAP) return 0;
  if (declare(map, key) < 0) return 0;
  tsl_entry *e = tsl_node_find(map, key);
  return e && !e->value->is_default;
}

/* Whether `name` has `word` as one of its '_'-separated words
** ("kv_heads" has "heads"). */
static int has_word(const char *name, const char *word) {
  const size_t n = strlen(word);
  for (const char *p = strstr(name, word); p; p = strstr(p + 1, word))
    if ((p == name || p[-1] == '_') && (p[n] == '\0' || p[n] == '_')) return 1;
  return 0;
}

/* A present key that no getter asked for and that looks like `key`: when
** `key` is missing, that is most likely it, misspelt. Not a key that holds
** `key` as a whole word: that is another key of the section, one a getter
** has yet to ask for (kv_heads when heads is missing), and a misspelling
** never adds a word. */
static tsl_entry *misspelling_of(tsl_cfg *map, const char *key) {
  const char *cand[1] = {key};
  for (int i = 0; map && i < map->n_entries; i++) {
    const tsl_entry *e = &map->entries[i];
    if (!e->asked && !has_word(e->key, key) && tsl_closest(e->key, cand, 1)) return &map->entries[i];
  }
  return NULL;
}

static tsl_status misspelt(tsl_cfg *map, const tsl_entry *e, const char *key) {
  const char *where = tsl_cfg_path(map);
  return tsl_cfg_report(map->owner, e->key_mark, "unknown %s '%s'%s%s (did you mean '%s'?)",
                        where[0] ? "key" : "section", TSL_ECHO(e->key), where[0] ? " in " : "", TSL_ECHO(where), key);
}

tsl_status tsl_cfg_misspelt(tsl_cfg *map, const char *key) {
  tsl_entry *e = map && map->kind == TSL_NODE_MAP && !tsl_cfg_has(map, key) ? misspelling_of(map, key) : NULL;
  return e ? misspelt(map, e, key) : TESSEL_OK;
}

int tsl_cfg_is_empty(const tsl_cfg *node) {
  if (!node || node->kind == TSL_NODE_NULL) return 1;
  for (int i = 0; i < node->n_entries; i++)
    if (!node->entries[i].value->is_default) return 0;
  return node->n_items == 0;
}

tsl_status tsl_cfg_require(tsl_cfg *map, const char *key) {
  /* a list has no keys: saying one is missing would blame the wrong thing */
  if (map && map->kind != TSL_NODE_MAP) return tsl_cfg_error(map, NULL, "expected a section (map)");
  if (tsl_cfg_has(map, key)) return TESSEL_OK;
  tsl_status st = tsl_cfg_misspelt(map, key);
  return st < 0 ? st : tsl_cfg_error(map, NULL, "missing required key '%s'", key);
}

tsl_status tsl_cfg_section(tsl_cfg *map, const char *key, int required, tsl_cfg **out) {
  tsl_status st;
  *out = NULL;
  if (!map) return TESSEL_OK;
  if (required && !tsl_cfg_has(map, key)) {
    TSL_TRY(st, tsl_cfg_misspelt(map, key));
    if (!tsl_cfg_path(map)[0])
      return tsl_cfg_report(map->owner, map->mark, "missing required section '%s:'", key);
    return tsl_cfg_error(map, NULL, "missing required section '%s:'", key);
  }
  TSL_TRY(st, declare(map, key));
  tsl_entry *e = tsl_node_find(map, key);
  if (e && e->value->kind == TSL_NODE_NULL) { /* "key:" with nothing: an empty section */
    tsl_cfg *empty = tsl_node_new(map->owner, TSL_NODE_MAP, e->value->mark);
    if (!empty) return TESSEL_E_NOMEM;
    tsl_node_map_replace(map, e, empty);
  }
  if (!e) {
    TSL_TRY(st, record_default(map, key, TSL_NODE_MAP, NULL));
    e = tsl_node_find(map, key);
  }
  if (e->value->kind == TSL_NODE_SCALAR)
    return tsl_cfg_error(map, key, "expected a section (map), got the value '%s'",
                         TSL_ECHO(e->value->scalar));
  e->value->visited = 1;
  *out = e->value;
  return TESSEL_OK;
fail:
  return st;
}

/* The top-level section, other than `node`, that a getter asked for `key`
** in: where a key written in the wrong place belongs. NULL for none. */
static const char *home_of(const tsl_cfg *node, const char *key) {
  const tsl_cfg *root = node;
  while (root->parent) root = root->parent;
  for (int i = 0; i < root->n_entries; i++) {
    const tsl_cfg *sec = root->entries[i].value;
    if (sec == node || sec->kind != TSL_NODE_MAP) continue;
    for (int k = 0; k < sec->n_asked; k++)
      if (strcmp(sec->asked[k], key) == 0) return root->entries[i].key;
  }
  return NULL;
}

/* One key nobody asked for: where it belongs when it is another section's
** key, else the closest declared key or the list of them. */
static tsl_status unknown_key(tsl_cfg *node, const tsl_entry *e) {
  const char *where = tsl_cfg_path(node), *what = where[0] ? "key" : "section";
  const char *home = home_of(node, e->key);
  if (home)
    return tsl_cfg_report(node->owner, e->key_mark, "unknown %s '%s'%s%s: it is a key of %s:, write it there", what,
                          TSL_ECHO(e->key), where[0] ? " in " : "", TSL_ECHO(where), TSL_ECHO(home));
  const char *near = tsl_closest(e->key, (const char *const *)node->asked, node->n_asked);
  if (near)
    return tsl_cfg_report(node->owner, e->key_mark, "unknown %s '%s'%s%s (did you mean '%s'?)", what,
                          TSL_ECHO(e->key), where[0] ? " in " : "", TSL_ECHO(where), near);
  char known[1024] = "";
  for (int k = 0; k < node->n_asked; k++) {
    strncat(known, k ? ", " : "", sizeof known - strlen(known) - 1);
    strncat(known, node->asked[k], sizeof known - strlen(known) - 1);
  }
  return tsl_cfg_report(node->owner, e->key_mark, "unknown %s '%s'%s%s (known: %s)", what, TSL_ECHO(e->key),
                        where[0] ? " in " : "", TSL_ECHO(where), known);
}

tsl_status tsl_cfg_check_unknown(tsl_cfg *node) {
  tsl_status worst = TESSEL_OK;
  if (!node || node->kind != TSL_NODE_MAP) return TESSEL_OK;
  for (int i = 0; i < node->n_entries; i++) {
    tsl_entry *e = &node->entries[i];
    tsl_status st = TESSEL_OK;
    if (!e->asked) st = unknown_key(node, e);
    else if (e->value->kind == TSL_NODE_MAP && e->value->visited) st = tsl_cfg_check_unknown(e->value);
    if (st < 0 && worst >= 0) worst = st;
  }
  return worst;
}

void tsl_cfg_skip_unknown(tsl_cfg *node) {
  if (node) node->visited = 0;
}

void tsl_cfg_keep(tsl_status *st, tsl_status got) {
  if (got < 0 && *st >= 0) *st = got;
}
