/* core/config/load.c — loading a config: files, `base:` chains, `--set`. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
      tsl_node_map_replace(dst, de, se->value);
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

/* The file a `base:` names, resolved next to `path`; a mistake in the
** naming file (nothing there, a directory, a FIFO) is recorded at the
** base: value. *out NULL then. */
static tsl_status resolve_base(tsl_config *cfg, const char *path, const tsl_cfg *base_node, char **out) {
  *out = NULL;
  if (base_node->kind != TSL_NODE_SCALAR || !base_node->scalar[0])
    return tsl_cfg_report(cfg, base_node->mark, "base: expected the path of another config file%s",
                          base_node->kind == TSL_NODE_SCALAR ? ", got an empty string" : "");
  const char *name = base_node->scalar;
  char *dir = tsl_dirname(path);
  /* beside a config in the working directory, as written (not "./name") */
  char *full = !dir ? NULL : name[0] == '/' || !strcmp(dir, ".") ? tsl_strdup(name) : tsl_asprintf("%s/%s", dir, name);
  free(dir);
  if (!full) return TESSEL_E_NOMEM;
  struct stat sb;
  tsl_status st = TESSEL_OK;
  if (stat(full, &sb) != 0)
    st = tsl_cfg_report(cfg, base_node->mark, "base: no such config file '%s' (looked for %s)", TSL_ECHO(name),
                        TSL_ECHO(full));
  else if (!S_ISREG(sb.st_mode))
    st = tsl_cfg_report(cfg, base_node->mark, "base: '%s' is %s, not a config file", TSL_ECHO(name),
                        tsl_file_kind(sb.st_mode));
  if (st < 0) free(full);
  else *out = full;
  return st;
}

static tsl_status load_file(tsl_config *cfg, const char *path, int depth, char **chain, tsl_cfg **out);

/* Load the base `base_node` names and merge `*root` over it. */
static tsl_status apply_base(tsl_config *cfg, const char *path, int depth, char **chain, tsl_cfg *base_node,
                             tsl_mark bmark, tsl_cfg **root) {
  tsl_status st;
  char *base_path = NULL;
  tsl_cfg *base_root = NULL;
  if (depth + 1 >= TSL_MAX_BASE_DEPTH)
    return tsl_cfg_report(cfg, bmark, "base: a chain of more than %d files (the one run or checked counted); "
                          "inherit from fewer", TSL_MAX_BASE_DEPTH);
  TSL_TRY(st, resolve_base(cfg, path, base_node, &base_path));
  st = load_file(cfg, base_path, depth + 1, chain, &base_root);
  if (st < 0) {
    /* an error inside the base already points into it (and so stays as it
    ** is); others get the base: line */
    if (!tsl_has_position(tsl_error_message()))
      st = tsl_cfg_report(cfg, base_node->mark, "in base '%s': %s", TSL_ECHO(base_node->scalar),
                          tsl_error_message());
    goto fail;
  }
  TSL_TRY(st, merge_into(base_root, *root));
  /* what the merged config lacks is the including file's to add: a missing
  ** section is reported there, not in the shared base */
  base_root->mark = (*root)->mark;
  tsl_node_free(*root);
  *root = base_root;
  base_root = NULL;
fail:
  tsl_node_free(base_root);
  free(base_path);
  return st;
}

static tsl_status load_file(tsl_config *cfg, const char *path, int depth, char **chain, tsl_cfg **out) {
  tsl_status st = TESSEL_OK;
  char *text = NULL;
  tsl_cfg *root = NULL, *base_node = NULL;
  size_t len = 0;

  struct stat sb;
  /* a directory or a FIFO named as the config is the command line's
  ** mistake, as a missing file is (exit 2), not a failure of the run */
  if (!path[0]) return tsl_error(TESSEL_E_CONFIG, "the config file's name is empty");
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return tsl_error(TESSEL_E_CONFIG, "%s: is %s, not a config file", path, tsl_file_kind(sb.st_mode));
  char *real = realpath(path, NULL);
  if (!real && (errno == ENOENT || errno == ENOTDIR)) /* ENOTDIR: "run.yaml/", or a file above it */
    return tsl_error(TESSEL_E_CONFIG, "%s: no such config file%s", path,
                     errno == ENOTDIR ? " (a part of the path before the last is a file, not a directory)" : "");
  if (!real && !(real = tsl_strdup(path))) return TESSEL_E_NOMEM;
  for (int i = 0; i < depth; i++) {
    if (strcmp(chain[i], real) == 0) {
      free(real);
      return tsl_error(TESSEL_E_CONFIG, "%s: 'base:' chain loops back to this file", path);
    }
  }
  chain[depth] = real;

  TSL_TRY(st, tsl_read_file(path, &text, &len));
  TSL_TRY(st, tsl_parse_yaml(cfg, text, len, path, 0, 0, 0, &root));
  if (!root || root->kind == TSL_NODE_NULL) {
    tsl_node_free(root);
    root = tsl_node_new(cfg, TSL_NODE_MAP, (tsl_mark){tsl_config_intern_file(cfg, path), 1, 1});
    if (!root) {
      st = TESSEL_E_NOMEM;
      goto fail;
    }
  }
  if (root->kind != TSL_NODE_MAP) {
    st = tsl_cfg_report(cfg, root->mark, "a config is a map of sections (model:, train:, ...)");
    goto fail;
  }
  tsl_mark bmark;
  base_node = tsl_node_map_take(root, "base", &bmark);
  if (base_node) TSL_TRY(st, apply_base(cfg, path, depth, chain, base_node, bmark, &root));
  *out = root;
  root = NULL;
fail:
  tsl_node_free(root);
  tsl_node_free(base_node);
  free(text);
  free(real);
  chain[depth] = NULL;
  return st;
}

/* The section `part` of `map` for a --set path, made when absent or null. */
static tsl_status set_section(tsl_config *cfg, tsl_cfg *map, const char *part, tsl_mark km, tsl_cfg **out) {
  tsl_entry *e = tsl_node_find(map, part);
  *out = NULL;
  if (e && e->value->kind != TSL_NODE_MAP && e->value->kind != TSL_NODE_NULL)
    return TESSEL_E_CONFIG; /* the caller words it */
  if (e && e->value->kind == TSL_NODE_MAP) {
    *out = e->value;
    return TESSEL_OK;
  }
  tsl_cfg *sub = tsl_node_new(cfg, TSL_NODE_MAP, km);
  if (!sub) return TESSEL_E_NOMEM;
  if (e) {
    tsl_node_map_replace(map, e, sub);
  } else {
    tsl_status st = tsl_node_map_put(map, part, km, sub);
    if (st < 0) {
      tsl_node_free(sub);
      return st;
    }
  }
  *out = sub;
  return TESSEL_OK;
}

/* Is `s` well-formed UTF-8 (no overlong forms, surrogates or code points
** past U+10FFFF)? YAML text is, so the resolved config can be written back;
** a --set key path does not pass through the YAML reader. */
static int valid_utf8(const unsigned char *s) {
  while (*s) {
    unsigned c = *s, n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 9;
    if (n == 9) return 0;
    uint32_t cp = n == 0 ? c : c & (0x3Fu >> n);
    for (unsigned k = 1; k <= n; k++) {
      if ((s[k] & 0xC0) != 0x80) return 0;
      cp = cp << 6 | (s[k] & 0x3Fu);
    }
    static const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    s += n + 1;
  }
  return 1;
}

/* Apply one "a.b.c=value" override. Mistakes in it are recorded (at its
** "--set=..." label) and the others still apply. */
static tsl_status apply_set(tsl_config *cfg, const char *arg) {
  tsl_status st = TESSEL_OK;
  const char *eq = strchr(arg, '=');
  /* the label names the argument; a long one only by its start, so that a
  ** mistake's message keeps its key and hint */
  char *keypath = NULL, *label = tsl_asprintf("--set=%s", TSL_ECHO(arg));
  tsl_cfg *value = NULL;
  if (!label) return TESSEL_E_NOMEM; /* TSL_ECHO writes a line break as \n: it stays beside its position */
  /* column 7 is the key path, just after "--set=" */
  tsl_mark km = {tsl_config_intern_file(cfg, label), 1, 7};
  if (!km.file) {
    free(label);
    return TESSEL_E_NOMEM;
  }
  if (!eq || eq == arg) {
    st = tsl_cfg_report(cfg, km, "expected KEY.PATH=VALUE, e.g. model.layers=6");
    goto fail;
  }
  keypath = strndup(arg, (size_t)(eq - arg));
  if (!keypath) {
    st = TESSEL_E_NOMEM;
    goto fail;
  }
  if (!valid_utf8((const unsigned char *)keypath)) {
    st = tsl_cfg_report(cfg, km, "the key path is not valid UTF-8");
    goto fail;
  }
  int np = 1;
  for (const char *c = keypath; *c; c++) np += *c == '.';
  if (np >= TSL_CFG_MAX_DEPTH) {
    st = tsl_cfg_report(cfg, km, "a key path of %d parts nests deeper than %d levels", np, TSL_CFG_MAX_DEPTH);
    goto fail;
  }
  /* the value sits np levels down; its column is after "--set=KEY=" */
  TSL_TRY(st, tsl_parse_yaml(cfg, eq + 1, strlen(eq + 1), label, 0, (int)(eq - arg) + 7, np, &value));
  if (!value) { /* "KEY=" with nothing: a null, positioned where the value would be */
    value = tsl_node_new(cfg, TSL_NODE_NULL, (tsl_mark){km.file, 1, (int)(eq - arg) + 8});
    if (!value) {
      st = TESSEL_E_NOMEM;
      goto fail;
    }
  }
  tsl_cfg *map = cfg->root;
  for (char *s = keypath, *dot;; s = dot + 1) {
    dot = strchr(s, '.');
    if (dot) *dot = '\0';
    if (!*s) {
      st = tsl_cfg_report(cfg, km, "malformed key path (expected e.g. model.layers)");
      goto fail;
    }
    if (!dot && map == cfg->root && !strcmp(s, "base")) {
      st = tsl_cfg_report(cfg, km, "'base' is followed as the files are read, before any KEY=VALUE override: set "
                          "the keys you want from that file instead");
      goto fail;
    }
    if (!dot) { /* the last part: replace or insert the value */
      tsl_entry *e = tsl_node_find(map, s);
      if (e) {
        tsl_node_map_replace(map, e, value);
        e->key_mark = km;
      } else {
        TSL_TRY(st, tsl_node_map_put(map, s, km, value));
      }
      value = NULL;
      break;
    }
    tsl_cfg *sub;
    st = set_section(cfg, map, s, km, &sub);
    if (st == TESSEL_E_CONFIG) {
      char *where = tsl_node_child_path(map, s);
      tsl_entry *e = tsl_node_find(map, s);
      if (e && e->value->kind == TSL_NODE_LIST)
        st = tsl_cfg_report(cfg, km, "'%s' is a list: give it whole ('%s=[a, b]'), not '%s' inside it",
                            TSL_ECHO(where ? where : s), TSL_ECHO(where ? where : s), TSL_ECHO(dot + 1));
      else
        st = tsl_cfg_report(cfg, km, "'%s' is a value, not a section, so '%s' cannot be set inside it",
                            TSL_ECHO(where ? where : s), TSL_ECHO(dot + 1));
      free(where);
    }
    if (st < 0) goto fail;
    map = sub;
  }
fail:
  tsl_node_free(value);
  free(keypath);
  free(label);
  return st;
}

/* Every recorded mistake as one failure, and the configuration freed. */
static tsl_status refuse(tsl_config *cfg, tsl_status st) {
  st = tsl_config_outcome(cfg, st);
  tsl_config_free(cfg);
  return st;
}

tsl_status tsl_config_load(const char *path, const char *const *sets, int n_sets, tsl_config **out) {
  tsl_status st;
  char *chain[TSL_MAX_BASE_DEPTH] = {0};
  *out = NULL;
  tsl_config *cfg = calloc(1, sizeof *cfg);
  if (!cfg) return tsl_error(TESSEL_E_NOMEM, "out of host memory loading %s", path);
  cfg->path = tsl_strdup(path);
  if (!cfg->path) return refuse(cfg, TESSEL_E_NOMEM);
  st = load_file(cfg, path, 0, chain, &cfg->root);
  if (st < 0) return refuse(cfg, st);
  /* every --set is tried, so that all their mistakes are reported together */
  for (int i = 0; i < n_sets; i++) {
    tsl_status one = apply_set(cfg, sets[i]);
    if (one == TESSEL_E_NOMEM) return refuse(cfg, one);
    if (one < 0) st = one;
  }
  if (cfg->n_mistakes > 0) return refuse(cfg, st < 0 ? st : TESSEL_E_CONFIG);
  *out = cfg;
  return TESSEL_OK;
}

int tsl_config_reads(const tsl_config *cfg, const char *path) {
  char *want = realpath(path, NULL);
  int found = 0;
  for (int i = 0; want && i < cfg->n_files && !found; i++) { /* --set labels are no files: realpath fails */
    char *have = realpath(cfg->files[i], NULL);
    found = have && strcmp(have, want) == 0;
    free(have);
  }
  free(want);
  return found;
}

void tsl_config_free(tsl_config *cfg) {
  if (!cfg) return;
  tsl_node_free(cfg->root);
  for (int i = 0; i < cfg->n_files; i++) free(cfg->files[i]);
  for (int i = 0; i < cfg->n_diags; i++) free(cfg->diags[i].text);
  free(cfg->files);
  free(cfg->path);
  free(cfg);
}

tsl_cfg *tsl_config_root(const tsl_config *cfg) { return cfg->root; }

const char *tsl_config_path(const tsl_config *cfg) { return cfg->path; }
