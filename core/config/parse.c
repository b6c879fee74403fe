/* core/config/parse.c — YAML text to a configuration tree, with libyaml. */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/util.h"
#include "node.h"

typedef struct parser {
  yaml_parser_t yaml;
  tsl_config *cfg;
  const char *file; /* interned */
  int line_offset, col_offset;
  size_t end_line, end_col; /* 0-based position just past the last character */
} parser;

static tsl_mark mark_of(const parser *p, yaml_mark_t m) {
  /* libyaml puts the end of a text that lacks a final newline on a line of
  ** its own, after the text; point just past the last character instead, so
  ** that errors in a one-line --set value stay on that line. */
  if (m.line > p->end_line) {
    m.line = p->end_line;
    m.column = p->end_col;
  }
  tsl_mark k = {p->file, (int)m.line + 1 + p->line_offset, (int)m.column + 1};
  if (m.line == 0) k.col += p->col_offset;
  return k;
}

static tsl_status syntax_error(parser *p) {
  yaml_mark_t m = p->yaml.problem_mark;
  tsl_mark k = mark_of(p, m);
  const char *problem = p->yaml.problem ? p->yaml.problem : "malformed YAML";
  if (p->yaml.context)
    return tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: YAML syntax error: %s %s", k.file, k.line, k.col,
                     problem, p->yaml.context);
  return tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: YAML syntax error: %s", k.file, k.line, k.col, problem);
}

static tsl_status next_event(parser *p, yaml_event_t *ev) {
  if (!yaml_parser_parse(&p->yaml, ev)) return syntax_error(p);
  return TESSEL_OK;
}

static int is_null_scalar(const yaml_event_t *ev) {
  if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return 0;
  const char *v = (const char *)ev->data.scalar.value;
  return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

static tsl_status parse_node(parser *p, yaml_event_t *ev, const char *path, tsl_cfg **out);

/* A mapping whose MAPPING_START event has been consumed. */
static tsl_status parse_map(parser *p, tsl_cfg *map) {
  tsl_status st = TESSEL_OK;
  for (;;) {
    yaml_event_t kev, vev;
    TSL_TRY(st, next_event(p, &kev));
    if (kev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&kev);
      return TESSEL_OK;
    }
    tsl_mark km = mark_of(p, kev.start_mark);
    if (kev.type != YAML_SCALAR_EVENT) {
      yaml_event_delete(&kev);
      return tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: %s: keys must be plain names", km.file, km.line,
                       km.col, map->path[0] ? map->path : "configuration");
    }
    char *key = tsl_strdup((const char *)kev.data.scalar.value);
    yaml_event_delete(&kev);
    if (!key) return TESSEL_E_NOMEM;
    tsl_entry *dup = tsl_node_find(map, key);
    if (dup) {
      st = tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: duplicate key '%s'%s%s (first defined at line %d)",
                     km.file, km.line, km.col, key, map->path[0] ? " in " : "", map->path,
                     dup->key_mark.line);
      free(key);
      return st;
    }
    char *cpath = tsl_node_child_path(map->path, key);
    tsl_cfg *value = NULL;
    st = cpath ? next_event(p, &vev) : TESSEL_E_NOMEM;
    if (st >= 0) st = parse_node(p, &vev, cpath, &value);
    if (st >= 0) st = tsl_node_map_put(map, key, km, value);
    if (st < 0) tsl_node_free(value);
    free(cpath);
    free(key);
    if (st < 0) return st;
  }
fail:
  return st;
}

/* A sequence whose SEQUENCE_START event has been consumed. */
static tsl_status parse_list(parser *p, tsl_cfg *list) {
  tsl_status st;
  for (int i = 0;; i++) {
    yaml_event_t ev;
    TSL_TRY(st, next_event(p, &ev));
    if (ev.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&ev);
      return TESSEL_OK;
    }
    char *ipath = tsl_asprintf("%s[%d]", list->path, i);
    tsl_cfg *item = NULL;
    st = ipath ? parse_node(p, &ev, ipath, &item) : TESSEL_E_NOMEM;
    free(ipath);
    if (st >= 0) st = tsl_node_list_push(list, item);
    if (st < 0) {
      tsl_node_free(item);
      return st;
    }
  }
fail:
  return st;
}

/* Build the node that starts with event `ev` (consumed and deleted here). */
static tsl_status parse_node(parser *p, yaml_event_t *ev, const char *path, tsl_cfg **out) {
  tsl_status st = TESSEL_OK;
  tsl_mark m = mark_of(p, ev->start_mark);
  tsl_cfg *n = NULL;
  switch (ev->type) {
    case YAML_SCALAR_EVENT:
      if (is_null_scalar(ev)) {
        n = tsl_node_new(TSL_NODE_NULL, m, path);
        if (!n) st = TESSEL_E_NOMEM;
        break;
      }
      n = tsl_node_new(TSL_NODE_SCALAR, m, path);
      if (!n || !(n->scalar = tsl_strdup((const char *)ev->data.scalar.value))) {
        st = TESSEL_E_NOMEM;
        break;
      }
      n->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
      break;
    case YAML_MAPPING_START_EVENT:
      n = tsl_node_new(TSL_NODE_MAP, m, path);
      st = n ? parse_map(p, n) : TESSEL_E_NOMEM;
      break;
    case YAML_SEQUENCE_START_EVENT:
      n = tsl_node_new(TSL_NODE_LIST, m, path);
      st = n ? parse_list(p, n) : TESSEL_E_NOMEM;
      break;
    case YAML_ALIAS_EVENT:
      st = tsl_error(TESSEL_E_CONFIG,
                     "%s:%d:%d: YAML aliases (*name) are not supported; use 'base:' to share settings",
                     m.file, m.line, m.col);
      break;
    default:
      st = tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: unexpected YAML structure", m.file, m.line, m.col);
      break;
  }
  yaml_event_delete(ev);
  if (st < 0) {
    tsl_node_free(n);
    return st;
  }
  *out = n;
  return TESSEL_OK;
}

/* Skip to the first document's root event; NULL root for an empty stream. */
static tsl_status parse_document(parser *p, tsl_cfg **out) {
  tsl_status st;
  yaml_event_t ev;
  *out = NULL;
  do {
    TSL_TRY(st, next_event(p, &ev));
    yaml_event_type_t t = ev.type;
    if (t == YAML_STREAM_END_EVENT) {
      yaml_event_delete(&ev);
      return TESSEL_OK;
    }
    if (t == YAML_STREAM_START_EVENT || t == YAML_DOCUMENT_START_EVENT) {
      yaml_event_delete(&ev);
      continue;
    }
    TSL_TRY(st, parse_node(p, &ev, "", out));
    break;
  } while (1);
  /* exactly one document */
  TSL_TRY(st, next_event(p, &ev));
  yaml_event_type_t t = ev.type;
  tsl_mark m = mark_of(p, ev.start_mark);
  yaml_event_delete(&ev);
  if (t == YAML_DOCUMENT_END_EVENT) {
    TSL_TRY(st, next_event(p, &ev));
    t = ev.type;
    m = mark_of(p, ev.start_mark);
    yaml_event_delete(&ev);
  }
  if (t != YAML_STREAM_END_EVENT) {
    st = tsl_error(TESSEL_E_CONFIG, "%s:%d:%d: only one YAML document is allowed per file", m.file,
                   m.line, m.col);
    goto fail;
  }
  return TESSEL_OK;
fail:
  tsl_node_free(*out);
  *out = NULL;
  return st;
}

tsl_status tsl_parse_yaml(tsl_config *cfg, const char *text, size_t len, const char *file,
                          int line_offset, int col_offset, tsl_cfg **out) {
  parser p = {.cfg = cfg, .line_offset = line_offset, .col_offset = col_offset};
  for (size_t i = 0; i < len; i++) {
    if (text[i] == '\n') {
      p.end_line++;
      p.end_col = 0;
    } else if (((unsigned char)text[i] & 0xC0) != 0x80) { /* columns count characters, not bytes */
      p.end_col++;
    }
  }
  p.file = tsl_config_intern_file(cfg, file);
  if (!p.file) return TESSEL_E_NOMEM;
  if (!yaml_parser_initialize(&p.yaml))
    return tsl_error(TESSEL_E_NOMEM, "out of host memory starting the YAML parser");
  yaml_parser_set_input_string(&p.yaml, (const unsigned char *)text, len);
  tsl_status st = parse_document(&p, out);
  yaml_parser_delete(&p.yaml);
  return st;
}
