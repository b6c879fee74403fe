/* core/config/load.c — loading a config: files, `base:` chains, `--set`. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "node.h"

#define TSL_MAX_BASE_DEPTH 16

/* Move every entry of `src` into `dst`: maps merge, anything else replaces.
** `src` is left empty. */
static tsl_status merge_into(tsl_cfg *dst, tsl_cfg *src) {
  tsl_status st;
  for (int i = 0; i < src->n_entries; i++) {
    tsl_entry *se = &src->entries[i];
    tsl_entry *de = tsl_node_find(dst, se->key);
    if (de && de->value->kind == TSL_NODE_MAP && se->value->kind == TSL_NODE_MAP) {
      TSL_TRY(st, merge_into(de->value, se->value));
      continue;
    }
    if (de) {
      tsl_node_free(de->value);
      de->value = se->value;
      de->key_mark = se->key_mark;
    } else {
      TSL_TRY(st, tsl_node_map_put(dst, se->key, se->key_mark, se->value));
    }
    se->value = NULL;
  }
  return TESSEL_OK;
fail:
  return st;
}

/* Remove entry `key` from a map, returning its value (owned by the caller). */
static tsl_cfg *take_entry(tsl_cfg *map, const char *key, tsl_mark *key_mark) {
  for (int i = 0; i < map->n_entries; i++) {
    if (strcmp(map->entries[i].key, key) != 0) continue;
    tsl_cfg *v = map->entries[i].value;
    *key_mark = map->entries[i].key_mark;
    free(map->entries[i].key);
    memmove(&map->entries[i], &map->entries[i + 1], sizeof(tsl_entry) * (size_t)(map->n_entries - i - 1));
    map->n_entries--;
    return v;
  }
  return NULL;
}

static tsl_status load_file(tsl_config *cfg, const char *path, int depth, char **chain,
                            tsl_cfg **out) {
  tsl_status st = TESSEL_OK;
  char *text = NULL, *dir = NULL, *base_path = NULL, real[PATH_MAX];
  tsl_cfg *root = NULL, *base_root = NULL, *base_node = NULL;
  size_t len = 0;

  if (!realpath(path, real)) {
    if (!tsl_path_exists(path)) return tsl_error(TESSEL_E_CONFIG, "%s: no such config file", path);
    snprintf(real, sizeof real, "%s", path);
  }
  for (int i = 0; i < depth; i++)
    if (strcmp(chain[i], real) == 0)
      return tsl_error(TESSEL_E_CONFIG, "%s: 'base:' chain loops back to this file", path);
  chain[depth] = real;

  TSL_TRY(st, tsl_read_file(path, &text, &len));
  TSL_TRY(st, tsl_parse_yaml(cfg, text, len, path, 0, 0, &root));
  if (!root || root->kind == TSL_NODE_NULL) {
    tsl_node_free(root);
    root = tsl_node_new(TSL_NODE_MAP, (tsl_mark){tsl_config_intern_file(cfg, path), 1, 1}, "");
    if (!root) {
      st = TESSEL_E_NOMEM;
      goto fail;
    }
  }
  if (root->kind != TSL_NODE_MAP) {
    st = tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: a config is a map of sections (model:, train:, ...)",
                   root->mark.file, root->mark.line, root->mark.col);
    goto fail;
  }
  tsl_mark bmark;
  base_node = take_entry(root, "base", &bmark);
  if (base_node) {
    if (base_node->kind != TSL_NODE_SCALAR) {
      st = tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: base: expected the path of another config file",
                     base_node->mark.file, base_node->mark.line, base_node->mark.col);
      goto fail;
    }
    if (depth + 1 >= TSL_MAX_BASE_DEPTH) {
      st = tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: base: more than %d levels of inheritance",
                     bmark.file, bmark.line, bmark.col, TSL_MAX_BASE_DEPTH);
      goto fail;
    }
    dir = tsl_dirname(path);
    base_path = base_node->scalar[0] == '/' ? tsl_strdup(base_node->scalar)
                                            : tsl_asprintf("%s/%s", dir, base_node->scalar);
    if (!dir || !base_path) {
      st = TESSEL_E_NOMEM;
      goto fail;
    }
    /* a base that is not there is a mistake in this file, not an I/O failure */
    if (!tsl_path_exists(base_path)) {
      st = tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: base: no such config file '%s' (looked for %s)",
                     base_node->mark.file, base_node->mark.line, base_node->mark.col, base_node->scalar,
                     base_path);
      goto fail;
    }
    st = load_file(cfg, base_path, depth + 1, chain, &base_root);
    if (st < 0) {
      /* an error inside the base already points into it (and so stays as
      ** it is); others get the base: line */
      tsl_error_wrap(st, "%s:%d:%d: in base '%s'", base_node->mark.file, base_node->mark.line,
                     base_node->mark.col, base_node->scalar);
      goto fail;
    }
    TSL_TRY(st, merge_into(base_root, root));
    tsl_node_free(root);
    root = base_root;
    base_root = NULL;
  }
  *out = root;
  root = NULL;
fail:
  tsl_node_free(root);
  tsl_node_free(base_root);
  tsl_node_free(base_node);
  free(text);
  free(dir);
  free(base_path);
  return st;
}

/* Apply one "a.b.c=value" override. */
static tsl_status apply_set(tsl_config *cfg, const char *arg) {
  tsl_status st = TESSEL_OK;
  const char *eq = strchr(arg, '=');
  char *keypath = NULL, *label = tsl_asprintf("--set=%s", arg);
  tsl_cfg *value = NULL;
  if (!label) return TESSEL_E_NOMEM;
  /* column 7 is the key path, just after "--set=" */
  if (!eq || eq == arg) {
    st = tsl_error(TESSEL_E_CONFIG, "%s:1:7: expected KEY.PATH=VALUE, e.g. --set model.layers=6", label);
    goto fail;
  }
  keypath = strndup(arg, (size_t)(eq - arg));
  if (!keypath) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  /* the value's column inside the label "--set=KEY=VALUE" */
  TSL_TRY(st, tsl_parse_yaml(cfg, eq + 1, strlen(eq + 1), label, 0, (int)(eq - arg) + 7, &value));
  if (!value) { /* "KEY=" with nothing: a null, positioned where the value would be */
    tsl_mark vm = {tsl_config_intern_file(cfg, label), 1, (int)(eq - arg) + 8};
    value = tsl_node_new(TSL_NODE_NULL, vm, "");
    if (!value) {
      st = TESSEL_E_NOMEM;
      goto fail;
    }
  }
  char *parts[32];
  int np = 0;
  for (char *s = keypath, *dot;; s = dot + 1) {
    dot = strchr(s, '.');
    if (dot) *dot = '\0';
    if (!*s || np == (int)TSL_ARRAY_LEN(parts)) {
      st = tsl_error(TESSEL_E_CONFIG, "%s:1:7: malformed key path (expected e.g. model.layers)", label);
      goto fail;
    }
    parts[np++] = s;
    if (!dot) break;
  }
  tsl_mark km = {tsl_config_intern_file(cfg, label), 1, 7};
  tsl_cfg *map = cfg->root;
  for (int i = 0; i < np; i++) {
    tsl_entry *e = tsl_node_find(map, parts[i]);
    char *cpath = tsl_node_child_path(map->path, parts[i]);
    if (!cpath) {
      st = TESSEL_E_NOMEM;
      goto fail;
    }
    if (i == np - 1) { /* the last component: replace or insert the value */
      st = tsl_node_repath(value, cpath);
      free(cpath);
      if (st < 0) goto fail;
      if (e) {
        tsl_node_free(e->value);
        e->value = value;
        e->key_mark = km;
      } else {
        TSL_TRY(st, tsl_node_map_put(map, parts[i], km, value));
      }
      value = NULL;
      break;
    }
    if (e && e->value->kind != TSL_NODE_MAP && e->value->kind != TSL_NODE_NULL) {
      st = tsl_error(TESSEL_E_CONFIG, "%s:1:7: '%s' is a value, not a section, so '%s' cannot be set inside it",
                     label, cpath, parts[i + 1]);
      free(cpath);
      goto fail;
    }
    if (!e || e->value->kind == TSL_NODE_NULL) { /* create the section */
      tsl_cfg *sub = tsl_node_new(TSL_NODE_MAP, km, cpath);
      if (!sub) st = TESSEL_E_NOMEM;
      else if (e) {
        tsl_node_free(e->value);
        e->value = sub;
      } else if ((st = tsl_node_map_put(map, parts[i], km, sub)) < 0) {
        tsl_node_free(sub);
      }
      if (st < 0) {
        free(cpath);
        goto fail;
      }
      e = tsl_node_find(map, parts[i]);
    }
    free(cpath);
    map = e->value;
  }
fail:
  tsl_node_free(value);
  free(keypath);
  free(label);
  return st;
}

tsl_status tsl_config_load(const char *path, const char *const *sets, int n_sets, tsl_config **out) {
  tsl_status st;
  char *chain[TSL_MAX_BASE_DEPTH];
  tsl_config *cfg = calloc(1, sizeof *cfg);
  if (!cfg) return tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", path);
  cfg->path = tsl_strdup(path);
  if (!cfg->path) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  TSL_TRY(st, load_file(cfg, path, 0, chain, &cfg->root));
  for (int i = 0; i < n_sets; i++) TSL_TRY(st, apply_set(cfg, sets[i]));
  *out = cfg;
  return TESSEL_OK;
fail:
  tsl_config_free(cfg);
  return st;
}

void tsl_config_free(tsl_config *cfg) {
  if (!cfg) return;
  tsl_node_free(cfg->root);
  for (int i = 0; i < cfg->n_files; i++) free(cfg->files[i]);
  free(cfg->files);
  free(cfg->path);
  free(cfg);
}

tsl_cfg *tsl_config_root(const tsl_config *cfg) { return cfg->root; }

const char *tsl_config_path(const tsl_config *cfg) { return cfg->path; }
