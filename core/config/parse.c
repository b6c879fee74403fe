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
  const char *text; /* the input, for positions given as byte offsets */
  size_t len;
  int line_offset, col_offset;
  size_t end_line, end_col; /* 0-based position just past the last character */
  int depth;                /* maps and lists open around the current node */
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

/* What a syntax error left open, when that is where the mistake is: an
** unclosed '{', '[' or quote is found only where the text stops making
** sense, often lines later; the opening is what the user must fix. */
static const char *unclosed(const yaml_parser_t *y) {
  const char *ctx = y->context, *problem = y->problem;
  if (!ctx || !problem) return NULL;
  if (strstr(ctx, "flow mapping") && strstr(problem, "expected ',' or '}'")) return "'{'";
  if (strstr(ctx, "flow sequence") && strstr(problem, "expected ',' or ']'")) return "'['";
  if (strstr(ctx, "quoted scalar") && strstr(problem, "end of stream")) return "quote";
  return NULL;
}

/* The line and column of a byte offset into the input: libyaml's reader
** (bad UTF-8, control characters such as NUL) reports only an offset, and
** leaves problem_mark at the start of the file. Lines end as libyaml ends
** them: at "\r\n", "\n" or a lone "\r" (a file saved with classic Mac
** line ends). */
static yaml_mark_t mark_at_offset(const char *text, size_t len, size_t offset) {
  yaml_mark_t m = {.index = offset};
  for (size_t i = 0; i < offset && i < len; i++) {
    if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= len || text[i + 1] != '\n'))) {
      m.line++;
      m.column = 0;
    } else if (text[i] != '\r' && ((unsigned char)text[i] & 0xC0) != 0x80) { /* columns count characters */
      m.column++;
    }
  }
  return m;
}

/* Where a plain key that libyaml gave up on starts, when the item before
** the problem runs past YAML's 1024-character limit for an implicit key
** (libyaml then reports an unclosed '{' or a missing ':'), else -1. */
static long long overlong_key(const parser *p) {
  size_t end = p->yaml.problem_mark.index, start = end;
  if (p->yaml.error != YAML_SCANNER_ERROR && p->yaml.error != YAML_PARSER_ERROR) return -1;
  while (start > 0 && start <= p->len && !strchr(",{[\n", p->text[start - 1])) start--;
  while (start < end && start < p->len && (p->text[start] == ' ' || p->text[start] == '\t')) start++;
  return end - start > 1024 && end <= p->len ? (long long)start : -1;
}

static tsl_status syntax_error(parser *p) {
  tsl_mark k = mark_of(p, p->yaml.error == YAML_READER_ERROR ? mark_at_offset(p->text, p->len, p->yaml.problem_offset)
                                                              : p->yaml.problem_mark);
  const char *problem = p->yaml.problem ? p->yaml.problem : "malformed YAML", *open = unclosed(&p->yaml);
  long long key = overlong_key(p);
  if (key >= 0)
    return tsl_cfg_report(p->cfg, mark_of(p, mark_at_offset(p->text, p->len, (size_t)key)),
                          "YAML syntax error: a key of more than 1024 characters here; YAML reads an implicit key of "
                          "at most 1024 (libyaml: %s)", problem);
  if (open)
    return tsl_cfg_report(p->cfg, mark_of(p, p->yaml.context_mark),
                          "YAML syntax error: the %s here is never closed (%s at line %d, column %d)", open,
                          problem, k.line, k.col);
  if (p->yaml.context) return tsl_cfg_report(p->cfg, k, "YAML syntax error: %s %s", problem, p->yaml.context);
  return tsl_cfg_report(p->cfg, k, "YAML syntax error: %s", problem);
}

static tsl_status next_event(parser *p, yaml_event_t *ev) {
  if (!yaml_parser_parse(&p->yaml, ev)) return syntax_error(p);
  return TESSEL_OK;
}

static int is_null_text(const char *v) {
  return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* A scalar's text. An embedded NUL ("ddp\\0junk" would otherwise read as
** "ddp") is recorded as a mistake and parsing goes on. */
static tsl_status scalar_text(parser *p, const yaml_event_t *ev, const char *what, char **out) {
  const char *v = (const char *)ev->data.scalar.value;
  if (strlen(v) != ev->data.scalar.length)
    tsl_cfg_report(p->cfg, mark_of(p, ev->start_mark),
                   "%s contains a NUL character (\\0), which a config cannot hold", what);
  *out = tsl_strdup(v);
  return *out ? TESSEL_OK : TESSEL_E_NOMEM;
}

/* Parsing returns an error only when it cannot go on (a syntax error, the
** nesting limit, no memory); other mistakes are recorded in the config and
** the parse continues, so that one pass reports them all. */
static tsl_status parse_node(parser *p, yaml_event_t *ev, tsl_cfg *parent, const char *key, tsl_cfg **out);

/* The value after a key that cannot be used: parsed, to stay in step, and dropped. */
static tsl_status skip_value(parser *p) {
  yaml_event_t ev;
  tsl_cfg *value = NULL;
  tsl_status st = next_event(p, &ev);
  if (st >= 0) st = parse_node(p, &ev, NULL, NULL, &value);
  tsl_node_free(value);
  return st;
}

/* The anchor (&name) a node carries, NULL for none. */
static const char *anchor_of(const yaml_event_t *ev) {
  const yaml_char_t *a = ev->type == YAML_SCALAR_EVENT           ? ev->data.scalar.anchor
                         : ev->type == YAML_MAPPING_START_EVENT  ? ev->data.mapping_start.anchor
                         : ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.anchor
                                                                 : NULL;
  return (const char *)a;
}

/* Mistakes recorded, not returned: the parse goes on past them. An anchor
** alone changes nothing, but one is only written to be aliased, which is
** refused too. */
static void refuse_anchor(parser *p, tsl_mark m, const yaml_event_t *ev) {
  const char *anchor = anchor_of(ev);
  if (anchor)
    tsl_cfg_report(p->cfg, m, "YAML anchors (&%s) are not supported; use 'base:' to share settings", TSL_ECHO(anchor));
}

/* A tag that asks for a meaning the config has none of; `takes` says what
** the node may carry instead. */
static void unknown_tag(parser *p, tsl_mark m, const char *tag, const char *takes) {
  const char *yaml = "tag:yaml.org,2002:";
  int std = !strncmp(tag, yaml, strlen(yaml));
  tsl_cfg_report(p->cfg, m, "the tag %s%s has no meaning here: %s", std ? "!!" : "",
                 TSL_ECHO(std ? tag + strlen(yaml) : tag), takes);
}

static const char value_tags[] =
    "a config value takes no tag, or one of YAML's own for its kind (!!str, !!int, !!float, !!bool, !!null, "
    "!!map, !!seq)";

/* One key and its value into `map`; a duplicate key is recorded and its
** value dropped. */
static tsl_status parse_entry(parser *p, tsl_cfg *map, yaml_event_t *kev) {
  tsl_status st;
  yaml_event_t vev;
  tsl_mark km = mark_of(p, kev->start_mark);
  if (kev->type != YAML_SCALAR_EVENT) {
    const char *where = tsl_cfg_path(map);
    yaml_event_delete(kev);
    /* fatal: the events that follow are the insides of that key */
    return tsl_cfg_report(p->cfg, km, "%s: keys must be plain names", where[0] ? TSL_ECHO(where) : "configuration");
  }
  /* a key is a plain name: no anchor, and no tag but a string's */
  refuse_anchor(p, km, kev);
  const char *tag = (const char *)kev->data.scalar.tag;
  if (tag && strcmp(tag, YAML_STR_TAG) != 0 && strcmp(tag, "!") != 0)
    unknown_tag(p, km, tag, "a key is a plain name, and takes no tag but !!str");
  char *key = NULL;
  st = scalar_text(p, kev, "a key", &key);
  yaml_event_delete(kev);
  if (st < 0) return st;
  tsl_entry *dup = tsl_node_find(map, key);
  if (dup) {
    const char *where = tsl_cfg_path(map);
    tsl_cfg_report(p->cfg, km, "duplicate key '%s'%s%s (first defined at %d:%d)", TSL_ECHO(key),
                   where[0] ? " in " : "", TSL_ECHO(where), dup->key_mark.line, dup->key_mark.col);
    free(key);
    return skip_value(p);
  }
  tsl_cfg *value = NULL;
  st = next_event(p, &vev);
  if (st >= 0) st = parse_node(p, &vev, map, key, &value);
  if (st >= 0 && (st = tsl_node_map_put(map, key, km, value)) >= 0) value = NULL;
  tsl_node_free(value);
  free(key);
  return st;
}

/* A mapping whose MAPPING_START event has been consumed. */
static tsl_status parse_map(parser *p, tsl_cfg *map) {
  tsl_status st;
  for (;;) {
    yaml_event_t kev;
    TSL_TRY(st, next_event(p, &kev));
    if (kev.type == YAML_MAPPING_END_EVENT) {
      yaml_event_delete(&kev);
      return TESSEL_OK;
    }
    TSL_TRY(st, parse_entry(p, map, &kev));
  }
fail:
  return st;
}

/* A sequence whose SEQUENCE_START event has been consumed. */
static tsl_status parse_list(parser *p, tsl_cfg *list) {
  tsl_status st;
  for (;;) {
    yaml_event_t ev;
    TSL_TRY(st, next_event(p, &ev));
    if (ev.type == YAML_SEQUENCE_END_EVENT) {
      yaml_event_delete(&ev);
      return TESSEL_OK;
    }
    tsl_cfg *item = NULL;
    st = parse_node(p, &ev, list, NULL, &item);
    if (st >= 0) st = tsl_node_list_push(list, item);
    if (st < 0) {
      tsl_node_free(item);
      return st;
    }
  }
fail:
  return st;
}

/* A map or list, one level deeper than its parent. */
static tsl_status parse_collection(parser *p, tsl_cfg *n) {
  if (p->depth >= TSL_CFG_MAX_DEPTH)
    return tsl_cfg_report(p->cfg, n->mark, "nesting deeper than %d levels of maps and lists; a config needs a few",
                          TSL_CFG_MAX_DEPTH);
  p->depth++;
  tsl_status st = n->kind == TSL_NODE_MAP ? parse_map(p, n) : parse_list(p, n);
  p->depth--;
  return st;
}

/* The tags a value may carry: YAML's own for its kind (and "!", YAML's
** non-specific tag, for a string). Any other tag asks for a meaning a
** config has none of, so it is refused rather than dropped. */
static const struct {
  const char *name;
  tsl_tag tag;
} scalar_tags[] = {{YAML_STR_TAG, TSL_TAG_STR},     {"!", TSL_TAG_STR},           {YAML_INT_TAG, TSL_TAG_INT},
                   {YAML_FLOAT_TAG, TSL_TAG_FLOAT}, {YAML_BOOL_TAG, TSL_TAG_BOOL}, {YAML_NULL_TAG, TSL_TAG_NULL}};

/* A collection's tag, when it has one: refused unless it is `known`. */
static void check_collection_tag(parser *p, tsl_mark m, const char *tag, const char *known) {
  if (tag && strcmp(tag, known) != 0) unknown_tag(p, m, tag, value_tags);
}

/* A scalar's tag (TSL_TAG_NONE for none, or for one of no meaning, which
** is recorded). */
static tsl_tag scalar_tag(parser *p, tsl_mark m, const char *name) {
  for (size_t i = 0; name && i < TSL_ARRAY_LEN(scalar_tags); i++)
    if (!strcmp(name, scalar_tags[i].name)) return scalar_tags[i].tag;
  if (name) unknown_tag(p, m, name, value_tags);
  return TSL_TAG_NONE;
}

/* YAML's own spellings of infinity and not-a-number. */
static int yaml_special_float(const char *text) {
  static const char *const special[] = {".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN"};
  const char *t = text + (text[0] == '+' || text[0] == '-');
  for (size_t i = 0; i < TSL_ARRAY_LEN(special); i++)
    if (!strcmp(t, special[i])) return i < 3 || t == text; /* a sign only on infinity */
  return 0;
}

/* Does text fit its tag, as YAML's core schema reads it (`!!null 2`,
** `!!bool 8`, `!!int yes` are not YAML values at all)? A number past
** the type's range fits: the getter says it is out of range. YAML's
** .inf and .nan are floats; a getter refuses them. */
static int fits_tag(tsl_tag tag, const char *text) {
  int64_t i;
  double f;
  switch (tag) {
    case TSL_TAG_INT: return tsl_scalar_int(text, &i) >= 0;
    case TSL_TAG_FLOAT:
      return tsl_scalar_float(text, &f) >= 0 || yaml_special_float(text);
    case TSL_TAG_BOOL: return tsl_scalar_bool(text) >= 0;
    case TSL_TAG_NULL: return is_null_text(text);
    default: return 1;
  }
}

static void check_tag_fits(parser *p, tsl_mark m, tsl_tag tag, const char *text) {
  static const char *const name[] = {"", "str", "int", "float", "bool", "null"};
  static const char *const needs[] = {"", "", "an integer", "a number", "true or false", "null (~, null or nothing)"};
  if (!fits_tag(tag, text))
    tsl_cfg_report(p->cfg, m, "the tag !!%s needs %s, got '%s'", name[tag], needs[tag], TSL_ECHO(text));
}

/* A scalar node. `!!str 1` is the string "1", as if quoted: a number's
** getter refuses it; `!!int "2"` is the number 2, `!!null ""` is null. */
static tsl_status parse_scalar(parser *p, const yaml_event_t *ev, tsl_mark m, tsl_cfg **out) {
  const char *text = (const char *)ev->data.scalar.value;
  const int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
  tsl_tag tag = scalar_tag(p, m, (const char *)ev->data.scalar.tag);
  check_tag_fits(p, m, tag, text);
  const int null = tag == TSL_TAG_NULL || (tag == TSL_TAG_NONE && plain && is_null_text(text));
  tsl_cfg *n = *out = tsl_node_new(p->cfg, null ? TSL_NODE_NULL : TSL_NODE_SCALAR, m);
  if (!n) return TESSEL_E_NOMEM;
  n->tag = tag;
  n->quoted = tag == TSL_TAG_STR || (tag == TSL_TAG_NONE && !plain);
  return null ? TESSEL_OK : scalar_text(p, ev, "this value", &n->scalar);
}

/* Build the node that starts with event `ev` (consumed and deleted here).
** It is about to become `key` of map `parent` (or its next item when
** `parent` is a list): knowing where it goes gives messages about its
** insides their path before it is attached. */
static tsl_status parse_node(parser *p, yaml_event_t *ev, tsl_cfg *parent, const char *key, tsl_cfg **out) {
  tsl_status st = TESSEL_OK;
  tsl_mark m = mark_of(p, ev->start_mark);
  tsl_cfg *n = NULL;
  refuse_anchor(p, m, ev);
  switch (ev->type) {
    case YAML_SCALAR_EVENT:
      st = parse_scalar(p, ev, m, &n);
      break;
    case YAML_MAPPING_START_EVENT:
    case YAML_SEQUENCE_START_EVENT: {
      const int is_map = ev->type == YAML_MAPPING_START_EVENT;
      const char *tag = (const char *)(is_map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag);
      check_collection_tag(p, m, tag, is_map ? YAML_MAP_TAG : YAML_SEQ_TAG);
      n = tsl_node_new(p->cfg, is_map ? TSL_NODE_MAP : TSL_NODE_LIST, m);
      if (n) {
        n->parent = parent;
        n->key = key;
        n->index = parent ? parent->n_items : 0;
      }
      st = n ? parse_collection(p, n) : TESSEL_E_NOMEM;
      break;
    }
    case YAML_ALIAS_EVENT:
      /* recorded, and nothing in its place: the load refuses the file */
      tsl_cfg_report(p->cfg, m, "YAML aliases (*name) are not supported; use 'base:' to share settings");
      n = tsl_node_new(p->cfg, TSL_NODE_NULL, m);
      st = n ? TESSEL_OK : TESSEL_E_NOMEM;
      break;
    default:
      st = tsl_cfg_report(p->cfg, m, "unexpected YAML structure");
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
    TSL_TRY(st, parse_node(p, &ev, NULL, NULL, out));
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
    st = tsl_cfg_report(p->cfg, m, "only one YAML document is allowed per file");
    goto fail;
  }
  return TESSEL_OK;
fail:
  tsl_node_free(*out);
  *out = NULL;
  return st;
}

tsl_status tsl_parse_yaml(tsl_config *cfg, const char *text, size_t len, const char *file,
                          int line_offset, int col_offset, int depth, tsl_cfg **out) {
  parser p = {.cfg = cfg, .text = text, .len = len, .line_offset = line_offset, .col_offset = col_offset,
              .depth = depth};
  yaml_mark_t end = mark_at_offset(text, len, len);
  p.end_line = end.line;
  p.end_col = end.column;
  p.file = tsl_config_intern_file(cfg, file);
  if (!p.file) return TESSEL_E_NOMEM;
  if (!yaml_parser_initialize(&p.yaml))
    return tsl_error(TESSEL_E_NOMEM, "out of host memory starting the YAML parser");
  yaml_parser_set_input_string(&p.yaml, (const unsigned char *)text, len);
  tsl_status st = parse_document(&p, out);
  yaml_parser_delete(&p.yaml);
  return st;
}
