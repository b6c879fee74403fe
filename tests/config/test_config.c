/*
** tests/config/test_config.c — the configuration module: typed getters and
** their defaults and ranges, exact FILE:LINE:COL positions in every kind of
** error, `base:` chains, `--set` overrides, the resolved output and its hash.
** (Collected mistakes, limits and odd files: test_config_mistakes.c.)
*/
#include "config_fixture.h"

/* ---- getters ---- */

static void test_int(void) {
  char p[1024];
  put(p, "int.yaml",
      "n:\n"
      "  a: 6\n"
      "  neg: -3\n"
      "  big: 99999999999999999999\n"
      "  word: abc\n"
      "  str7: \"7\"\n"
      "  frac: 1.5\n"
      "  lst: [1]\n"
      "  none:\n"
      "  hi: 11\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *n = section(cfg, "n");
  int64_t v = -1;
  CHECK_EQ_INT(tsl_cfg_int(n, "a", 0, 1, 10, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 6);
  CHECK_EQ_INT(tsl_cfg_int(n, "absent", 42, 0, 100, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 42);
  /* a default is recorded but does not count as given */
  CHECK(!tsl_cfg_has(n, "absent"));
  /* a NULL section (an optional one that is missing) yields the default */
  CHECK_EQ_INT(tsl_cfg_int(NULL, "x", 5, 0, 9, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 5);

  CHECK_ERROR(tsl_cfg_int(n, "neg", 0, 1, INT64_MAX, &v), "%s:3:8: n.neg: must be at least 1, got -3", p);
  CHECK_ERROR(tsl_cfg_int(n, "neg", 0, INT64_MIN, -5, &v), "%s:3:8: n.neg: must be at most -5, got -3", p);
  CHECK_ERROR(tsl_cfg_int(n, "hi", 0, 1, 10, &v), "%s:10:7: n.hi: must be between 1 and 10, got 11", p);
  /* an integer past int64 is out of range, not "not an integer" */
  CHECK_ERROR(tsl_cfg_int(n, "big", 0, INT64_MIN, INT64_MAX, &v),
              "%s:4:8: n.big: 99999999999999999999 is out of range: a 64-bit integer holds -9223372036854775808 to "
              "9223372036854775807", p);
  /* and past a range open on that side: "must be at least 0" did not say why */
  CHECK_ERROR(tsl_cfg_int(n, "big", 0, 0, INT64_MAX, &v),
              "%s:4:8: n.big: 99999999999999999999 is out of range: a 64-bit integer holds", p);
  CHECK_ERROR(tsl_cfg_int(n, "big", 0, 0, 10, &v), "%s:4:8: n.big: must be between 0 and 10, got 99999999999999999999", p);
  /* past int64 on the bounded side: the bound is the answer */
  CHECK_ERROR(tsl_cfg_int(n, "big", 0, INT64_MIN, 10, &v), "%s:4:8: n.big: must be at most 10, got 99999999999999999999", p);
  CHECK_ERROR(tsl_cfg_int(n, "word", 0, 0, 10, &v), "%s:5:9: n.word: expected an integer, got 'abc'", p);
  CHECK_ERROR(tsl_cfg_int(n, "frac", 0, 0, 10, &v), "%s:7:9: n.frac: expected an integer, got '1.5'", p);
  CHECK_ERROR(tsl_cfg_int(n, "lst", 0, 0, 10, &v), "%s:8:8: n.lst: expected an integer, got a list", p);
  CHECK_ERROR(tsl_cfg_int(n, "none", 0, 0, 10, &v), "%s:9:8: n.none: expected an integer, got nothing", p);
  /* a quoted number is a string; the message must say why '7' is refused */
  CHECK_ERROR(tsl_cfg_int(n, "str7", 0, 0, 10, &v), "%s:6:9: n.str7: expected an integer, got the quoted string '7'", p);
  CHECK_EQ_INT(tsl_status_exit_code(TESSEL_E_CONFIG), 2);
  tsl_config_free(cfg);
}

static void test_float(void) {
  char p[1024];
  put(p, "float.yaml",
      "f:\n"
      "  lr: 2.0e-3\n"
      "  int: 3\n"
      "  neg: -0.5\n"
      "  nan: nan\n"
      "  inf: inf\n"
      "  word: fast\n"
      "  big: 1e999\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *f = section(cfg, "f");
  double x = -1;
  CHECK_EQ_INT(tsl_cfg_float(f, "lr", 0, 0, 10, &x), TESSEL_OK);
  CHECK(x == 2e-3);
  CHECK_EQ_INT(tsl_cfg_float(f, "int", 0, 0, 10, &x), TESSEL_OK);
  CHECK(x == 3.0);
  CHECK_EQ_INT(tsl_cfg_float(f, "absent", 0.1, 0, 1, &x), TESSEL_OK);
  CHECK(x == 0.1);
  CHECK_ERROR(tsl_cfg_float(f, "neg", 0, 0, 1, &x), "%s:4:8: f.neg: must be between 0 and 1, got -0.5", p);
  CHECK_ERROR(tsl_cfg_float(f, "neg", 0, 0, INFINITY, &x), "%s:4:8: f.neg: must be at least 0, got -0.5", p);
  CHECK_ERROR(tsl_cfg_float(f, "lr", 0, -INFINITY, 1e-3, &x), "%s:2:7: f.lr: must be at most 0.001, got 2.0e-3", p);
  /* non-finite numbers would poison training; they are refused */
  CHECK_ERROR(tsl_cfg_float(f, "nan", 0, -INFINITY, INFINITY, &x), "%s:5:8: f.nan: expected a number, got 'nan'", p);
  CHECK_ERROR(tsl_cfg_float(f, "inf", 0, -INFINITY, INFINITY, &x), "%s:6:8: f.inf: expected a number, got 'inf'", p);
  CHECK_ERROR(tsl_cfg_float(f, "big", 0, -INFINITY, INFINITY, &x),
              "%s:8:8: f.big: 1e999 is past the largest number (about 1.8e308)", p);
  /* open above only (grad_clip): it was "must be at least 0, got 1e999" */
  CHECK_ERROR(tsl_cfg_float(f, "big", 0, 0, INFINITY, &x),
              "%s:8:8: f.big: 1e999 is past the largest number (about 1.8e308)", p);
  CHECK_ERROR(tsl_cfg_float(f, "big", 0, 0, 10, &x), "%s:8:8: f.big: must be between 0 and 10, got 1e999", p);
  CHECK_ERROR(tsl_cfg_float(f, "word", 0, 0, 1, &x), "%s:7:9: f.word: expected a number, got 'fast'", p);
  tsl_config_free(cfg);
}

static void test_bool(void) {
  char p[1024];
  put(p, "bool.yaml",
      "b:\n"
      "  t1: true\n"
      "  t2: yes\n"
      "  t3: On\n"
      "  f1: false\n"
      "  f2: no\n"
      "  f3: off\n"
      "  bad: maybe\n"
      "  q: \"true\"\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *b = section(cfg, "b");
  static const char *const yes[] = {"t1", "t2", "t3"}, *const no[] = {"f1", "f2", "f3"};
  for (int i = 0; i < 3; i++) {
    int v = -1;
    CHECK_EQ_INT(tsl_cfg_bool(b, yes[i], 0, &v), TESSEL_OK);
    CHECK_EQ_INT(v, 1);
    CHECK_EQ_INT(tsl_cfg_bool(b, no[i], 1, &v), TESSEL_OK);
    CHECK_EQ_INT(v, 0);
  }
  int v = -1;
  CHECK_EQ_INT(tsl_cfg_bool(b, "absent", 1, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 1);
  CHECK_ERROR(tsl_cfg_bool(b, "bad", 0, &v), "%s:8:8: b.bad: expected true or false, got 'maybe'", p);
  CHECK_ERROR(tsl_cfg_bool(b, "q", 0, &v), "%s:9:6: b.q: expected true or false, got the quoted string 'true'", p);
  tsl_config_free(cfg);
}

static void test_size(void) {
  char p[1024];
  put(p, "size.yaml",
      "s:\n"
      "  plain: 4096\n"
      "  kib: 64KiB\n"
      "  mib: 25MiB\n"
      "  gb: 2GB\n"
      "  frac: 1.5GiB\n"
      "  spaced: 8 MiB\n"
      "  zero: 0\n"
      "  neg: -5MiB\n"
      "  unit: 12XB\n"
      "  word: big\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *s = section(cfg, "s");
  static const struct { const char *key; uint64_t bytes; } ok[] = {
      {"plain", 4096},         {"kib", 65536},          {"mib", 25ull << 20}, {"gb", 2000000000ull},
      {"frac", 3ull << 29},    {"spaced", 8ull << 20},  {"zero", 0},
  };
  for (size_t i = 0; i < TSL_ARRAY_LEN(ok); i++) {
    uint64_t v = 7;
    CHECK_EQ_INT(tsl_cfg_size(s, ok[i].key, 1, &v), TESSEL_OK);
    if (v != ok[i].bytes) {
      fprintf(stderr, "%s:%d: s.%s = %" PRIu64 ", expected %" PRIu64 "\n", __FILE__, __LINE__, ok[i].key, v,
              ok[i].bytes);
      harness_failures++;
    }
  }
  uint64_t v = 0;
  CHECK_EQ_INT(tsl_cfg_size(s, "absent", 1 << 20, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 1 << 20);
  CHECK_ERROR(tsl_cfg_size(s, "neg", 0, &v),
              "%s:9:8: s.neg: expected a size such as 4096, 64KiB, 25MiB or 2GB, got '-5MiB' (sizes cannot be negative)", p);
  CHECK_ERROR(tsl_cfg_size(s, "unit", 0, &v), "%s:10:9: s.unit: expected a size such as 4096", p);
  CHECK_NOT_CONTAINS(tsl_error_message(), "negative");
  CHECK_ERROR(tsl_cfg_size(s, "word", 0, &v), "%s:11:9: s.word: expected a size", p);
  tsl_config_free(cfg);
}

static void test_string(void) {
  char p[1024];
  put(p, "string.yaml",
      "t:\n"
      "  name: hello\n"
      "  quoted: \"a: b\"\n"
      "  num: 42\n"
      "  sect: {a: 1}\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *t = section(cfg, "t");
  const char *s = NULL;
  CHECK_EQ_INT(tsl_cfg_string(t, "name", NULL, &s), TESSEL_OK);
  CHECK(s && !strcmp(s, "hello"));
  CHECK_EQ_INT(tsl_cfg_string(t, "quoted", NULL, &s), TESSEL_OK);
  CHECK(s && !strcmp(s, "a: b"));
  CHECK_EQ_INT(tsl_cfg_string(t, "num", NULL, &s), TESSEL_OK);
  CHECK(s && !strcmp(s, "42"));
  CHECK_EQ_INT(tsl_cfg_string(t, "nodefault", NULL, &s), TESSEL_OK);
  CHECK(s == NULL);
  CHECK_EQ_INT(tsl_cfg_string(t, "withdefault", "dflt", &s), TESSEL_OK);
  CHECK(s && !strcmp(s, "dflt"));
  CHECK_ERROR(tsl_cfg_string(t, "sect", NULL, &s), "%s:5:9: t.sect: expected a string, got a section (map)", p);
  /* a NULL default records nothing; a real one shows in the resolved config */
  char *out = emit_text(cfg);
  CHECK_NOT_CONTAINS(out, "nodefault");
  CHECK_STR_CONTAINS(out, "withdefault: dflt");
  free(out);
  tsl_config_free(cfg);
}

static void test_enum(void) {
  static const char *const decays[] = {"cosine", "linear", "constant", NULL};
  char p[1024];
  put(p, "enum.yaml",
      "e:\n"
      "  decay: linear\n"
      "  typo: cosin\n"
      "  far: zigzag\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *e = section(cfg, "e");
  int v = -1;
  CHECK_EQ_INT(tsl_cfg_enum(e, "decay", decays, 0, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 1);
  CHECK_EQ_INT(tsl_cfg_enum(e, "absent", decays, 2, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 2);
  CHECK_ERROR(tsl_cfg_enum(e, "typo", decays, 0, &v),
              "%s:3:9: e.typo: 'cosin' is not one of cosine, linear, constant (did you mean 'cosine'?)", p);
  CHECK_ERROR(tsl_cfg_enum(e, "far", decays, 0, &v), "%s:4:8: e.far: 'zigzag' is not one of cosine, linear, constant", p);
  CHECK_NOT_CONTAINS(tsl_error_message(), "did you mean");
  char *out = emit_text(cfg);
  CHECK_STR_CONTAINS(out, "absent: constant");
  free(out);
  tsl_config_free(cfg);
}

static void test_int_list(void) {
  char p[1024];
  put(p, "ilist.yaml",
      "l:\n"
      "  mesh: [2, 4]\n"
      "  one: 8\n"
      "  long: [1, 2, 3]\n"
      "  bad: [1, x]\n"
      "  block:\n"
      "    - 3\n"
      "    - 5\n"
      "  map: {a: 1}\n"
      "  nested: [[1]]\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *l = section(cfg, "l");
  int64_t v[2] = {0, 0};
  int n = -1;
  CHECK_EQ_INT(tsl_cfg_int_list(l, "mesh", v, 2, &n), TESSEL_OK);
  CHECK(n == 2 && v[0] == 2 && v[1] == 4);
  /* a single scalar is a list of one */
  CHECK_EQ_INT(tsl_cfg_int_list(l, "one", v, 2, &n), TESSEL_OK);
  CHECK(n == 1 && v[0] == 8);
  CHECK_EQ_INT(tsl_cfg_int_list(l, "block", v, 2, &n), TESSEL_OK);
  CHECK(n == 2 && v[0] == 3 && v[1] == 5);
  CHECK_EQ_INT(tsl_cfg_int_list(l, "absent", v, 2, &n), TESSEL_OK);
  CHECK_EQ_INT(n, 0);
  CHECK_ERROR(tsl_cfg_int_list(l, "long", v, 2, &n), "%s:4:9: l.long: at most 2 values, got 3", p);
  CHECK_ERROR(tsl_cfg_int_list(l, "bad", v, 2, &n), "%s:5:12: l.bad[1]: expected an integer, got x", p);
  CHECK_ERROR(tsl_cfg_int_list(l, "map", v, 2, &n), "%s:9:8: l.map: expected a list of integers, got a section (map)", p);
  CHECK_ERROR(tsl_cfg_int_list(l, "nested", v, 2, &n), "%s:10:12: l.nested[0]: expected an integer, got a list", p);
  tsl_config_free(cfg);
}

static void test_string_list(void) {
  char p[1024];
  put(p, "slist.yaml",
      "sl:\n"
      "  files: [a.txt, \"b c.txt\"]\n"
      "  single: README.md\n"
      "  bad: [a, {b: 1}]\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *sl = section(cfg, "sl");
  const char **v = NULL;
  int n = -1;
  CHECK_EQ_INT(tsl_cfg_string_list(sl, "files", &v, &n), TESSEL_OK);
  CHECK(n == 2 && v && !strcmp(v[0], "a.txt") && !strcmp(v[1], "b c.txt"));
  CHECK_EQ_INT(tsl_cfg_string_list(sl, "single", &v, &n), TESSEL_OK);
  CHECK(n == 1 && v && !strcmp(v[0], "README.md"));
  CHECK_EQ_INT(tsl_cfg_string_list(sl, "absent", &v, &n), TESSEL_OK);
  CHECK(n == 0 && v == NULL);
  CHECK_ERROR(tsl_cfg_string_list(sl, "bad", &v, &n), "%s:4:12: sl.bad[1]: expected a string, got a section (map)", p);
  tsl_config_free(cfg);
}

/* ---- positions of structural errors ---- */

static void test_syntax_error(void) {
  char p[1024];
  /* the second ':' on line 3 is where YAML stops making sense */
  put(p, "syntax.yaml", "model:\n  layers: 2\n  heads: 4: 5\n");
  tsl_status st = load_fail(p);
  CHECK_ERROR(st, "%s:3:11: YAML syntax error: mapping values are not allowed", p);
  CHECK_EQ_INT(tsl_status_exit_code(st), 2);
  /* an unclosed '{' is reported where it opens, not where the text stops making sense */
  put(p, "flow.yaml", "model: {layers: 2, heads: 4\ntrain: {}\n");
  CHECK_ERROR(load_fail(p),
              "%s:1:8: YAML syntax error: the '{' here is never closed (did not find expected ',' or '}' at line 2, "
              "column 6)", p);
  put(p, "tab.yaml", "model:\n\tlayers: 2\n");
  CHECK_ERROR(load_fail(p), "%s:2:1: YAML syntax error", p);
  /* the unterminated quote runs to the end of the file; the quote is the mistake */
  put(p, "quote.yaml", "model:\n  name: \"abc\n");
  CHECK_ERROR(load_fail(p), "%s:2:9: YAML syntax error: the quote here is never closed", p);
}

static void test_duplicate_key(void) {
  char p[1024];
  put(p, "dup.yaml", "model:\n  layers: 2\n  heads: 4\n  layers: 3\n");
  CHECK_ERROR(load_fail(p), "%s:4:3: duplicate key 'layers' in model (first defined at 2:3)", p);
  put(p, "dup_top.yaml", "a: 1\nb: 2\na: 3\n");
  CHECK_ERROR(load_fail(p), "%s:3:1: duplicate key 'a' (first defined at 1:1)", p);
  put(p, "dup_deep.yaml", "x:\n  y:\n    z: 1\n\n    z: 2\n");
  CHECK_ERROR(load_fail(p), "%s:5:5: duplicate key 'z' in x.y (first defined at 3:5)", p);
  put(p, "dup_flow.yaml", "m: {a: 1, a: 2}\n");
  CHECK_ERROR(load_fail(p), "%s:1:11: duplicate key 'a' in m (first defined at 1:5)", p);
}

static void test_wrong_type(void) {
  char p[1024];
  put(p, "type.yaml", "model: 3\nlist: [1]\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *s = NULL;
  CHECK_ERROR(tsl_cfg_section(tsl_config_root(cfg), "model", 1, &s),
              "%s:1:8: model: expected a section (map), got the value '3'", p);
  CHECK_EQ_INT(tsl_cfg_section(tsl_config_root(cfg), "list", 0, &s), TESSEL_OK);
  int64_t v;
  /* reading keys of a list as if it were a map */
  CHECK_ERROR(tsl_cfg_int(s, "x", 0, 0, 1, &v), "%s:2:7: list: expected a section (map)", p);
  tsl_config_free(cfg);
}

/* Reads model.{layers,heads} the way a component does. */
static tsl_status read_model(tsl_cfg *root) {
  tsl_status st;
  tsl_cfg *m;
  int64_t v;
  TSL_TRY(st, tsl_cfg_section(root, "model", 1, &m));
  TSL_TRY(st, tsl_cfg_int(m, "layers", 1, 1, 100, &v));
  TSL_TRY(st, tsl_cfg_int(m, "heads", 1, 1, 100, &v));
  return TESSEL_OK;
fail:
  return st;
}

static void test_unknown_keys(void) {
  char p[1024];
  put(p, "unk.yaml", "model:\n  layers: 2\n  hedas: 4\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *root = tsl_config_root(cfg);
  CHECK_EQ_INT(read_model(root), TESSEL_OK);
  CHECK_ERROR(tsl_cfg_check_unknown(root), "%s:3:3: unknown key 'hedas' in model (did you mean 'heads'?)", p);
  tsl_config_free(cfg);

  put(p, "unk_far.yaml", "model:\n  layers: 2\n  zzz: 4\n");
  cfg = load_ok(p);
  root = tsl_config_root(cfg);
  CHECK_EQ_INT(read_model(root), TESSEL_OK);
  CHECK_ERROR(tsl_cfg_check_unknown(root), "%s:3:3: unknown key 'zzz' in model (known: layers, heads)", p);
  tsl_config_free(cfg);

  put(p, "unk_section.yaml", "model: {layers: 2}\n\nmodle: {heads: 1}\n");
  cfg = load_ok(p);
  root = tsl_config_root(cfg);
  CHECK_EQ_INT(read_model(root), TESSEL_OK);
  CHECK_ERROR(tsl_cfg_check_unknown(root), "%s:3:1: unknown section 'modle' (did you mean 'model'?)", p);
  tsl_config_free(cfg);

  /* a section that was only asked about (a plugin's, say) is checked by its
  ** reader; once read, its unknown keys are reported */
  put(p, "unk_plugin.yaml", "model: {layers: 2}\nplugin:\n  name: x\n  stages: 2\n");
  cfg = load_ok(p);
  root = tsl_config_root(cfg);
  CHECK_EQ_INT(read_model(root), TESSEL_OK);
  CHECK(tsl_cfg_has(root, "plugin"));
  CHECK_EQ_INT(tsl_cfg_check_unknown(root), TESSEL_OK);
  tsl_cfg *pl = NULL;
  const char *name = NULL;
  CHECK_EQ_INT(tsl_cfg_section(root, "plugin", 0, &pl), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_string(pl, "name", NULL, &name), TESSEL_OK);
  CHECK_ERROR(tsl_cfg_check_unknown(root), "%s:4:3: unknown key 'stages' in plugin (known: name)", p);
  tsl_config_free(cfg);
}

static void test_missing_required(void) {
  char p[1024];
  put(p, "req.yaml", "model:\n  layers: 2\ntrain:\n  steps: 1\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *root = tsl_config_root(cfg), *m = section(cfg, "model"), *t = section(cfg, "train"), *s;
  CHECK_EQ_INT(tsl_cfg_require(m, "layers"), TESSEL_OK);
  CHECK_ERROR(tsl_cfg_require(m, "channels"), "%s:2:3: model: missing required key 'channels'", p);
  CHECK_ERROR(tsl_cfg_section(root, "data", 1, &s), "%s:1:1: missing required section 'data:'", p);
  CHECK_ERROR(tsl_cfg_section(t, "sub", 1, &s), "%s:4:3: train: missing required section 'sub:'", p);
  /* an optional section that is absent is fine, and recorded */
  CHECK_EQ_INT(tsl_cfg_section(root, "device", 0, &s), TESSEL_OK);
  CHECK(s != NULL && !tsl_cfg_has(root, "device"));
  tsl_config_free(cfg);

  /* a missing required key next to an unread one that looks like it */
  put(p, "misspelt.yaml", "model:\n  layers: 2\n  heds: 4\n");
  cfg = load_ok(p);
  m = section(cfg, "model");
  CHECK_ERROR(tsl_cfg_require(m, "heads"), "%s:3:3: unknown key 'heds' in model (did you mean 'heads'?)", p);
  tsl_config_free(cfg);

  /* ...but not a key that holds the missing one as a word: kv_heads is a
  ** key of its own, one not yet read, and is not blamed */
  put(p, "compound.yaml", "model:\n  layers: 2\n  kv_heads: 2\n");
  cfg = load_ok(p);
  m = section(cfg, "model");
  CHECK_ERROR(tsl_cfg_require(m, "heads"), "%s:2:3: model: missing required key 'heads'", p);
  tsl_config_free(cfg);

  put(p, "misspelt_section.yaml", "modle:\n  layers: 1\n");
  cfg = load_ok(p);
  CHECK_ERROR(tsl_cfg_section(tsl_config_root(cfg), "model", 1, &s),
              "%s:1:1: unknown section 'modle' (did you mean 'model'?)", p);
  tsl_config_free(cfg);
}

static void test_cfg_error(void) {
  char p[1024];
  put(p, "err.yaml", "model:\n  layers: 2\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *m = section(cfg, "model");
  int64_t v;
  CHECK_ERROR(tsl_cfg_error(m, "layers", "custom %d", 5), "%s:2:11: model.layers: custom 5", p);
  CHECK_ERROR(tsl_cfg_error(m, "absent", "custom"), "%s:2:3: model.absent: custom", p);
  /* a defaulted key has no text of its own: the error points at its section */
  CHECK_EQ_INT(tsl_cfg_int(m, "dflt", 3, 0, 9, &v), TESSEL_OK);
  CHECK_ERROR(tsl_cfg_error(m, "dflt", "too big"), "%s:2:3: model.dflt: too big", p);
  CHECK_ERROR(tsl_cfg_error(NULL, "k", "no node"), "k: no node");
  CHECK(!strcmp(tsl_cfg_path(m), "model"));
  tsl_config_free(cfg);
}

/* The core's own schema (settings.c) on top of the getters. */
static void test_settings(void) {
  static const char valid_model_data[] =
      "model: {layers: 2, heads: 2, channels: 8, seq_len: 4}\n"
      "data: {train: \"x/*.bin\"}\n";
  static const char *const valid =
      "model: {layers: 2, heads: 2, channels: 8, seq_len: 4}\n"
      "data: {train: \"x/*.bin\"}\n"
      "train: {steps: 1}\n";
  char p[1024], text[1024];
  tsl_settings s;
  put(p, "settings.yaml", valid);
  tsl_config *cfg = load_ok(p);
  CHECK_EQ_INT(tsl_settings_read(cfg, &s), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_check_unknown(tsl_config_root(cfg)), TESSEL_OK);
  CHECK(s.model.layers == 2 && s.model.channels == 8 && s.model.vocab_size == 256);
  CHECK(s.train.steps == 1 && s.train.batch_size == 8);
  tsl_config_free(cfg);

  /* comm_timeout: 0 in a unit is as 0 (it was "not a duration"), a unit
  ** without a number is not */
  static const struct {
    const char *v;
    double seconds;
  } timeouts[] = {{"0", 0}, {"0s", 0}, {"0m", 0}, {"0.0h", 0}, {"90s", 90}, {"2h", 7200}, {"s", -1}, {"0x", -1}};
  for (size_t i = 0; i < sizeof timeouts / sizeof timeouts[0]; i++) {
    snprintf(text, sizeof text, "%strain: {steps: 1, comm_timeout: \"%s\"}\n", valid_model_data, timeouts[i].v);
    put(p, "timeout.yaml", text);
    cfg = load_ok(p);
    tsl_status got = tsl_settings_read(cfg, &s);
    if (timeouts[i].seconds < 0) CHECK(got == TESSEL_E_CONFIG);
    else CHECK(got == TESSEL_OK && s.train.comm_timeout == timeouts[i].seconds);
    tsl_config_free(cfg);
  }

  /* channels that do not split into heads point at channels */
  put(p, "heads.yaml", "model:\n  layers: 2\n  heads: 3\n  channels: 8\n  seq_len: 4\ndata: {train: x}\ntrain: {steps: 1}\n");
  cfg = load_ok(p);
  CHECK_ERROR(tsl_settings_read(cfg, &s), "%s:4:13: model.channels: 8 channels do not split into 3 heads", p);
  tsl_config_free(cfg);

  snprintf(text, sizeof text, "%sdevice:\n  memory_limit: -5MiB\n", valid);
  put(p, "negsize.yaml", text);
  cfg = load_ok(p);
  CHECK_ERROR(tsl_settings_read(cfg, &s), "%s:5:17: device.memory_limit: expected a size", p);
  CHECK_STR_CONTAINS(tsl_error_message(), "cannot be negative");
  tsl_config_free(cfg);

  put(p, "nomodel.yaml", "data: {train: x}\ntrain: {steps: 1}\n");
  cfg = load_ok(p);
  CHECK_ERROR(tsl_settings_read(cfg, &s), "%s:1:1: missing required section 'model:'", p);
  tsl_config_free(cfg);

  /* the misspelt key is reported beside the missing sections, in file order */
  put(p, "heds.yaml", "model:\n  layers: 2\n  heds: 2\n  channels: 8\n  seq_len: 4\n");
  cfg = load_ok(p);
  CHECK_ERROR(tsl_config_outcome(cfg, tsl_settings_read(cfg, &s)), "%s:1:1: missing required section 'data:'\n"
              "%s:1:1: missing required section 'train:'\n"
              "%s:3:3: unknown key 'heds' in model (did you mean 'heads'?)", p, p, p);
  tsl_config_free(cfg);

  snprintf(text, sizeof text, "%soptimizer: {decay: cosin}\n", valid);
  put(p, "decay.yaml", text);
  cfg = load_ok(p);
  CHECK_ERROR(tsl_settings_read(cfg, &s), "%s:4:20: optimizer.decay: 'cosin' is not one of cosine, linear, constant, wsd (did you mean 'cosine'?)", p);
  tsl_config_free(cfg);
}

/* A Llama's defaults are LlamaConfig's meanings with tessel's values: the
** SwiGLU width 8/3·C rounded up to a multiple of 64, rope_theta 10000,
** norm_eps 1e-5, an untied head, kv_heads = heads; GPT-2's ffn is 4·C and
** its norm_eps 1e-5 unless given. */
static void test_llama_defaults(void) {
  static const struct {
    int channels, ffn;
  } widths[] = {{128, 384}, {96, 256}, {160, 448}, {192, 512}, {4096, 10944}};
  char p[1024], text[1024];
  tsl_settings s;
  for (size_t i = 0; i < sizeof widths / sizeof widths[0]; i++) {
    snprintf(text, sizeof text,
             "model: {arch: llama, layers: 2, heads: 4, channels: %d, seq_len: 8}\n"
             "data: {train: \"x/*.bin\"}\ntrain: {steps: 1}\n", widths[i].channels);
    put(p, "llama.yaml", text);
    tsl_config *cfg = load_ok(p);
    CHECK_EQ_INT(tsl_settings_read(cfg, &s), TESSEL_OK);
    CHECK_EQ_INT(s.model.arch, TSL_ARCH_LLAMA);
    CHECK_EQ_INT(s.model.ffn, widths[i].ffn);
    CHECK_EQ_INT(s.model.kv_heads, 4);
    CHECK(s.model.rope_theta == 10000.0 && s.model.norm_eps == 1e-5 && !s.model.tie_embeddings);
    CHECK(s.model.init_from == NULL);
    tsl_config_free(cfg);
  }
  put(p, "gpt2.yaml", "model: {layers: 2, heads: 4, channels: 96, seq_len: 8}\ndata: {train: x}\ntrain: {steps: 1}\n");
  tsl_config *cfg = load_ok(p);
  CHECK_EQ_INT(tsl_settings_read(cfg, &s), TESSEL_OK);
  CHECK(s.model.arch == TSL_ARCH_GPT2 && s.model.ffn == 384 && s.model.tie_embeddings && s.model.kv_heads == 4);
  CHECK(s.model.norm_eps == 1e-5);
  tsl_config_free(cfg);
  /* GPT-2's layer norms take an epsilon as transformers' layer_norm_epsilon */
  put(p, "gpt2_eps.yaml",
      "model: {layers: 2, heads: 4, channels: 96, seq_len: 8, norm_eps: 1e-6}\ndata: {train: x}\ntrain: {steps: 1}\n");
  cfg = load_ok(p);
  CHECK_EQ_INT(tsl_settings_read(cfg, &s), TESSEL_OK);
  CHECK(s.model.arch == TSL_ARCH_GPT2 && s.model.norm_eps == 1e-6);
  tsl_config_free(cfg);
}

/* ---- base: ---- */

static void test_base_chain(void) {
  char grand[1024], base[1024], child[1024];
  put(grand, "chain/sub/grand.yaml",
      "model:\n"
      "  layers: 2\n"
      "  heads: 2\n"
      "  extra: {a: 1, b: 2}\n"
      "train:\n"
      "  steps: 5\n"
      "  mesh: [1, 2, 3]\n"
      "  seeed: 3\n");
  put(base, "chain/sub/base.yaml",
      "base: grand.yaml\n"
      "model:\n"
      "  heads: 4\n"
      "  extra: {b: 3}\n"
      "train:\n"
      "  mesh: [7]\n"
      "data: here\n");
  put(child, "chain/child.yaml",
      "base: sub/base.yaml\n"
      "model:\n"
      "  layers: 0\n"
      "data: {train: x}\n");
  tsl_config *cfg = load_ok(child);
  tsl_cfg *root = tsl_config_root(cfg), *m = section(cfg, "model"), *t = section(cfg, "train"), *x, *d;
  int64_t v, list[4];
  int n;
  /* each value keeps the position of the file it came from */
  CHECK_ERROR(tsl_cfg_int(m, "layers", 0, 1, INT64_MAX, &v), "%s:3:11: model.layers: must be at least 1, got 0", child);
  CHECK_ERROR(tsl_cfg_int(m, "heads", 0, INT64_MIN, 3, &v), "%s:3:10: model.heads: must be at most 3, got 4", base);
  CHECK_ERROR(tsl_cfg_int(t, "steps", 0, INT64_MIN, 4, &v), "%s:6:10: train.steps: must be at most 4, got 5", grand);
  /* maps merge key by key */
  CHECK_EQ_INT(tsl_cfg_section(m, "extra", 1, &x), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_int(x, "a", 0, 0, 9, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 1);
  CHECK_EQ_INT(tsl_cfg_int(x, "b", 0, 0, 9, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 3);
  /* lists replace, they do not append */
  CHECK_EQ_INT(tsl_cfg_int_list(t, "mesh", list, 4, &n), TESSEL_OK);
  CHECK(n == 1 && list[0] == 7);
  /* a map replaces a scalar */
  CHECK_EQ_INT(tsl_cfg_section(root, "data", 1, &d), TESSEL_OK);
  const char *s = NULL;
  CHECK_EQ_INT(tsl_cfg_string(d, "train", NULL, &s), TESSEL_OK);
  CHECK(s && !strcmp(s, "x"));
  /* `base` itself is consumed, not an unknown key; the unknown one in the
  ** grand-base is reported in that file */
  CHECK(!tsl_cfg_has(root, "base"));
  CHECK_EQ_INT(tsl_cfg_int(t, "seed", 0, 0, 9, &v), TESSEL_OK);
  CHECK_ERROR(tsl_cfg_check_unknown(root), "%s:8:3: unknown key 'seeed' in train (did you mean 'seed'?)", grand);
  char *out = emit_text(cfg);
  CHECK_NOT_CONTAINS(out, "base");
  free(out);
  tsl_config_free(cfg);

  /* a scalar replaces a map, and the error is where the scalar is */
  char p[1024];
  put(p, "chain/scalar.yaml", "base: sub/base.yaml\nmodel: 5\n");
  cfg = load_ok(p);
  tsl_cfg *ms;
  CHECK_ERROR(tsl_cfg_section(tsl_config_root(cfg), "model", 1, &ms), "%s:2:8: model: expected a section (map), got the value '5'", p);
  tsl_config_free(cfg);
}

static void test_base_errors(void) {
  char a[1024], b[1024], p[1024];
  put(a, "loop/a.yaml", "base: b.yaml\nx: 1\n");
  put(b, "loop/b.yaml", "base: a.yaml\ny: 1\n");
  /* the loop is reported at the base: line that closes it (in b.yaml) */
  tsl_status st = load_fail(a);
  CHECK_ERROR(st, "%s:1:7: in base 'a.yaml'", b);
  CHECK_STR_CONTAINS(tsl_error_message(), "loops back");
  put(p, "loop/self.yaml", "x: 1\nbase: self.yaml\n");
  CHECK_ERROR(load_fail(p), "%s:2:7: in base 'self.yaml'", p);
  CHECK_STR_CONTAINS(tsl_error_message(), "loops back");

  /* a base that does not exist is named, at the line that asks for it */
  put(p, "nobase.yaml", "x: 1\nbase: nothere.yaml\n");
  CHECK_ERROR(load_fail(p), "%s:2:7:", p);
  CHECK_STR_CONTAINS(tsl_error_message(), "nothere.yaml");
  CHECK_STR_CONTAINS(tsl_error_message(), "no such config file");

  put(p, "listbase.yaml", "base: [a.yaml]\n");
  CHECK_ERROR(load_fail(p), "%s:1:7: base: expected the path of another config file", p);

  /* errors inside the base file are reported where they are, in the base */
  put(b, "broken.yaml", "model:\n  layers: 2\n  heads: 4: 5\n");
  put(p, "inc_broken.yaml", "base: broken.yaml\n");
  CHECK_ERROR(load_fail(p), "%s:3:11: YAML syntax error", b);
  put(b, "dupbase.yaml", "a: 1\na: 2\n");
  put(p, "inc_dup.yaml", "base: dupbase.yaml\n");
  CHECK_ERROR(load_fail(p), "%s:2:1: duplicate key 'a'", b);

  /* inheritance is bounded: l0 -> l1 -> ... -> l16 is 17 files, one too many */
  for (int i = 0; i <= 16; i++) {
    char name[64], text[64];
    snprintf(name, sizeof name, "deep/l%d.yaml", i);
    if (i < 16) snprintf(text, sizeof text, "base: l%d.yaml\nk%d: 1\n", i + 1, i);
    else snprintf(text, sizeof text, "k%d: 1\n", i);
    put(p, name, text);
  }
  snprintf(p, sizeof p, "%s/deep/l0.yaml", scratch);
  st = load_fail(p);
  CHECK_EQ_INT(st, TESSEL_E_CONFIG);
  CHECK_STR_CONTAINS(tsl_error_message(), "a chain of more than 16 files");
  /* ... and 16 files (top -> l2 -> ... -> l16) are not */
  char top[1024];
  put(top, "deep/top.yaml", "base: l2.yaml\n");
  tsl_config *cfg = load_ok(top);
  CHECK(tsl_cfg_has(tsl_config_root(cfg), "k2") && tsl_cfg_has(tsl_config_root(cfg), "k16"));
  tsl_config_free(cfg);
}

/* ---- --set ---- */

static void test_set(void) {
  char p[1024];
  put(p, "set.yaml", "model:\n  layers: 2\n  heads: 2\nopt:\ntrain:\n  steps: 3\n");
  int64_t v, list[4];
  int n;

  const char *const twice[] = {"model.layers=6", "model.layers=7", "opt.lr=0.5", "model.mesh=[2, 2]"};
  tsl_config *cfg = load_ok_sets(p, twice, 4);
  tsl_cfg *m = section(cfg, "model"), *o = section(cfg, "opt");
  CHECK_EQ_INT(tsl_cfg_int(m, "layers", 0, 0, 99, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 7); /* the last --set wins */
  CHECK_EQ_INT(tsl_cfg_int(m, "heads", 0, 0, 99, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 2);
  double lr = 0;
  /* `opt:` was empty (null): --set made it a section */
  CHECK_EQ_INT(tsl_cfg_float(o, "lr", 0, 0, 1, &lr), TESSEL_OK);
  CHECK(lr == 0.5);
  CHECK_EQ_INT(tsl_cfg_int_list(m, "mesh", list, 4, &n), TESSEL_OK);
  CHECK(n == 2 && list[0] == 2 && list[1] == 2);
  tsl_config_free(cfg);

  /* a bad value is positioned in the --set argument: "--set=model.layers=" is 19 columns */
  const char *const bad[] = {"model.layers=abc"};
  cfg = load_ok_sets(p, bad, 1);
  CHECK_ERROR(tsl_cfg_int(section(cfg, "model"), "layers", 0, 0, 99, &v),
              "--set=model.layers=abc:1:20: model.layers: expected an integer, got 'abc'");
  tsl_config_free(cfg);

  const char *const empty[] = {"model.layers="};
  cfg = load_ok_sets(p, empty, 1);
  CHECK_ERROR(tsl_cfg_int(section(cfg, "model"), "layers", 0, 0, 99, &v),
              "--set=model.layers=:1:20: model.layers: expected an integer, got nothing");
  tsl_config_free(cfg);

  /* new keys are created, and are unknown keys when nobody reads them */
  char p2[1024];
  put(p2, "set2.yaml", "model:\n  layers: 2\n");
  const char *const newkey[] = {"model.layerz=3"};
  cfg = load_ok_sets(p2, newkey, 1);
  CHECK_EQ_INT(read_model(tsl_config_root(cfg)), TESSEL_OK);
  CHECK_ERROR(tsl_cfg_check_unknown(tsl_config_root(cfg)),
              "--set=model.layerz=3:1:7: unknown key 'layerz' in model (did you mean 'layers'?)");
  tsl_config_free(cfg);
  const char *const newsec[] = {"newsec.key=1"};
  cfg = load_ok_sets(p2, newsec, 1);
  CHECK_EQ_INT(read_model(tsl_config_root(cfg)), TESSEL_OK);
  CHECK_ERROR(tsl_cfg_check_unknown(tsl_config_root(cfg)), "--set=newsec.key=1:1:7: unknown section 'newsec'");
  tsl_config_free(cfg);

  const char *const inside[] = {"model.layers.x=1"};
  CHECK_ERROR(load_fail_sets(p, inside, 1),
              "--set=model.layers.x=1:1:7: 'model.layers' is a value, not a section, so 'x' cannot be set inside it");
  const char *const noeq[] = {"model.layers"};
  CHECK_ERROR(load_fail_sets(p, noeq, 1), "--set=model.layers:1:7: expected KEY.PATH=VALUE");
  const char *const nokey[] = {"=3"};
  CHECK_ERROR(load_fail_sets(p, nokey, 1), "--set==3:1:7: expected KEY.PATH=VALUE");
  const char *const badpath[] = {"model..layers=3"};
  CHECK_ERROR(load_fail_sets(p, badpath, 1), "--set=model..layers=3:1:7: malformed key path");
  /* a syntax error in the value stays on the argument's only line */
  const char *const badyaml[] = {"model.layers=[1"};
  CHECK_ERROR(load_fail_sets(p, badyaml, 1), "--set=model.layers=[1:1:20: YAML syntax error: the '[' here");
  const char *const alias[] = {"model.layers=*x"};
  CHECK_ERROR(load_fail_sets(p, alias, 1), "--set=model.layers=*x:1:20: YAML aliases (*name) are not supported");
}

/* ---- resolved output and hash ---- */

static void test_defaults_emitted(void) {
  char p[1024];
  put(p, "defaults.yaml", "model:\n  layers: 2\n");
  tsl_config *cfg = load_ok(p);
  tsl_cfg *root = tsl_config_root(cfg), *m = section(cfg, "model"), *o;
  int64_t v;
  double x;
  int b;
  CHECK_EQ_INT(tsl_cfg_int(m, "vocab_size", 256, 2, 1 << 24, &v), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_section(root, "optimizer", 0, &o), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_float(o, "lr", 1e-3, 0, 10, &x), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_bool(o, "fused", 0, &b), TESSEL_OK);
  char *out = emit_text(cfg);
  CHECK_STR_CONTAINS(out, "model:\n  layers: 2\n  vocab_size: 256\n");
  CHECK_STR_CONTAINS(out, "optimizer:\n  lr: 0.001\n  fused: false\n");
  free(out);
  tsl_config_free(cfg);
}

/* Emit cfg to scratch/name and load it back. */
static tsl_config *reload(const tsl_config *cfg, char *path, const char *name) {
  char *text = emit_text(cfg);
  put(path, name, text);
  free(text);
  return load_ok(path);
}

static void test_emit_roundtrip(void) {
  char base[1024], p[1024], again[1024];
  put(base, "rt/base.yaml",
      "model: {layers: 2, heads: 2}\n"
      "data:\n"
      "  train: \"x/*.bin\"\n"
      "  files: [a.txt, \"b c.txt\", \"yes\", '']\n");
  put(p, "rt/top.yaml",
      "base: base.yaml\n"
      "model:\n"
      "  str7: \"7\"\n"
      "  note: 'a: b # not a comment'\n"
      "  utf8: héllo\n"
      "  empty:\n");
  const char *const sets[] = {"model.layers=6", "train.mesh=[2, 2]"};
  tsl_config *cfg = load_ok_sets(p, sets, 2);
  tsl_cfg *m = section(cfg, "model"), *t = section(cfg, "train");
  const char *s;
  int64_t v;
  /* defaults of every kind, including strings YAML would read otherwise */
  CHECK_EQ_INT(tsl_cfg_string(m, "prompt", "\n", &s), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_string(m, "blank", "", &s), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_string(m, "word", "null", &s), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_string(m, "flag", "true", &s), TESSEL_OK);
  CHECK_EQ_INT(tsl_cfg_int(t, "steps", 10, 1, 99, &v), TESSEL_OK);
  uint64_t h = tsl_cfg_hash(tsl_config_root(cfg));

  tsl_config *cfg2 = reload(cfg, again, "rt/emitted.yaml");
  CHECK(tsl_cfg_hash(tsl_config_root(cfg2)) == h);
  /* quoting survives: "7" is still a string, not an integer */
  tsl_cfg *m2 = section(cfg2, "model");
  CHECK_EQ_INT(tsl_cfg_int(m2, "str7", 0, 0, 99, &v), TESSEL_E_CONFIG);
  CHECK_EQ_INT(tsl_cfg_string(m2, "blank", "x", &s), TESSEL_OK);
  CHECK(s && !strcmp(s, ""));
  CHECK_EQ_INT(tsl_cfg_string(m2, "word", "x", &s), TESSEL_OK);
  CHECK(s && !strcmp(s, "null"));
  CHECK_EQ_INT(tsl_cfg_string(m2, "prompt", "x", &s), TESSEL_OK);
  CHECK(s && !strcmp(s, "\n"));
  CHECK_EQ_INT(tsl_cfg_int(m2, "layers", 0, 0, 99, &v), TESSEL_OK);
  CHECK_EQ_INT(v, 6);
  /* and a second round trip changes nothing at all */
  char *first = emit_text(cfg2);
  tsl_config *cfg3 = reload(cfg2, again, "rt/emitted2.yaml");
  char *second = emit_text(cfg3);
  CHECK(!strcmp(first, second));
  CHECK(tsl_cfg_hash(tsl_config_root(cfg3)) == h);
  free(first);
  free(second);
  tsl_config_free(cfg3);
  tsl_config_free(cfg2);
  tsl_config_free(cfg);
}

static uint64_t hash_of(const char *name, const char *text) {
  char p[1024];
  tsl_config *cfg = load_ok(put(p, name, text));
  uint64_t h = tsl_cfg_hash(tsl_config_root(cfg));
  tsl_config_free(cfg);
  return h;
}

static void test_hash(void) {
  uint64_t h = hash_of("h1.yaml", "a: 1\nb: {x: 1, y: [1, 2]}\n");
  /* key order, layout, comments and quoting style do not matter */
  CHECK(hash_of("h2.yaml", "b:\n  y: [1, 2]\n  x: 1  # one\na: 1\n") == h);
  CHECK(hash_of("h3.yaml", "b: {y: [1, 2], x: 1}\na: 1\n") == h);
  /* values, list order and nesting do */
  CHECK(hash_of("h4.yaml", "a: 2\nb: {x: 1, y: [1, 2]}\n") != h);
  CHECK(hash_of("h5.yaml", "a: 1\nb: {x: 1, y: [2, 1]}\n") != h);
  CHECK(hash_of("h6.yaml", "a: 1\nb: {x: 1}\ny: [1, 2]\n") != h);
  CHECK(hash_of("h7.yaml", "a: 1\nb: {x: 1, y: [1, 2]}\nc: 0\n") != h);
  CHECK(hash_of("h9.yaml", "a: [[1], 2]\n") != hash_of("h10.yaml", "a: [[1, 2]]\n"));
  /* a key's name is part of it, not only its value */
  CHECK(hash_of("h8.yaml", "a: 1\nb: {z: 1, y: [1, 2]}\n") != h);
  /* a section's hash ignores what is outside it */
  char p[1024];
  tsl_config *c1 = load_ok(put(p, "hs1.yaml", "model: {layers: 2}\ntrain: {steps: 1}\n"));
  tsl_config *c2 = load_ok(put(p, "hs2.yaml", "train: {steps: 9}\nmodel: {layers: 2}\n"));
  CHECK(tsl_cfg_hash(section(c1, "model")) == tsl_cfg_hash(section(c2, "model")));
  CHECK(tsl_cfg_hash(tsl_config_root(c1)) != tsl_cfg_hash(tsl_config_root(c2)));
  tsl_config_free(c1);
  tsl_config_free(c2);
}

/* Two configurations as another rank would compare them: `a_text` and
** `b_text` (b with its --set arguments), each section read by the same
** getters so that both record the same defaults. Returns whether they
** differ, with the difference's fields copied into `out` ("path|v0@o0|v1@o1",
** "-" for a side without the path). */
static int records_differ(const char *a_text, const char *b_text, const char *const *sets, int n_sets,
                          const char *const *skip, char *out, size_t cap) {
  char pa[1024], pb[1024];
  tsl_config *cfg[2] = {load_ok(put(pa, "rec/a.yaml", a_text)), load_ok_sets(put(pb, "rec/b.yaml", b_text), sets,
                                                                            n_sets)};
  char *rec[2];
  size_t len[2];
  for (int k = 0; k < 2; k++) {
    tsl_cfg *root = tsl_config_root(cfg[k]), *m = NULL;
    int64_t v;
    const char **list;
    int n;
    tsl_cfg_section(root, "model", 0, &m);
    if (m) {
      tsl_cfg_int(m, "layers", 2, 1, 99, &v);
      tsl_cfg_int(m, "heads", 4, 1, 99, &v);
      tsl_cfg_string_list(m, "files", &list, &n);
    }
    tsl_cfg_section(root, "log", 0, &m);
    tsl_cfg_int(m, "every", 10, 1, 99, &v);
    /* a key read only when another is given, as a strategy's options are */
    tsl_cfg_section(root, "plugin", 0, &m);
    if (tsl_cfg_has(m, "name")) tsl_cfg_int(m, "bucket", 3, 1, 99, &v);
    rec[k] = tsl_config_records(cfg[k], skip, &len[k]);
    REQUIRE(rec[k] != NULL);
  }
  tsl_config_diff d;
  int differ = tsl_config_records_differ(rec[0], len[0], rec[1], len[1], &d);
  if (differ)
    snprintf(out, cap, "%s|%s@%s|%s@%s", d.path, d.value[0] ? d.value[0] : "-", d.origin[0] ? d.origin[0] : "-",
             d.value[1] ? d.value[1] : "-", d.origin[1] ? d.origin[1] : "-");
  for (int k = 0; k < 2; k++) {
    free(rec[k]);
    tsl_config_free(cfg[k]);
  }
  return differ;
}

static void test_records_differ(void) {
  char got[2048], want[2048];
  const char *base = "model: {layers: 2, heads: 6, files: [x, y]}\nlog: {every: 5}\n";
  /* key order, layout and where a value was written do not matter */
  const char *const same[] = {"log.every=5"};
  CHECK(!records_differ(base, "log: {every: 7}\nmodel:\n  files: [x, y]\n  heads: 6\n  layers: 2\n", same, 1, NULL,
                        got, sizeof got));
  /* a value: both sides, with where each was written */
  const char *const heads[] = {"model.heads=8"};
  CHECK(records_differ(base, base, heads, 1, NULL, got, sizeof got));
  snprintf(want, sizeof want, "model.heads|6@%s/rec/a.yaml:1:27|8@--set=model.heads=8:1:19", scratch);
  CHECK_STR_CONTAINS(got, want);
  /* the first path in order: log.every before model.layers */
  CHECK(records_differ(base, "model: {layers: 3, heads: 6, files: [x, y]}\nlog: {every: 6}\n", NULL, 0, NULL, got,
                       sizeof got));
  CHECK_STR_CONTAINS(got, "log.every|5@");
  /* a list's item, and a list of another length */
  CHECK(records_differ(base, "model: {layers: 2, heads: 6, files: [x, z]}\nlog: {every: 5}\n", NULL, 0, NULL, got,
                       sizeof got));
  CHECK_STR_CONTAINS(got, "model.files[1]|y@");
  CHECK(records_differ(base, "model: {layers: 2, heads: 6, files: [x]}\nlog: {every: 5}\n", NULL, 0, NULL, got,
                       sizeof got));
  CHECK_STR_CONTAINS(got, "model.files[1]|y@");
  CHECK_STR_CONTAINS(got, "|-@-");
  /* a default against a value written */
  CHECK(records_differ(base, "model: {layers: 2, files: [x, y]}\nlog: {every: 5}\n", NULL, 0, NULL, got, sizeof got));
  snprintf(want, sizeof want, "model.heads|6@%s/rec/a.yaml:1:27|4@", scratch);
  CHECK(strlen(got) == strlen(want)); /* no origin: b's default */
  CHECK_STR_CONTAINS(got, want);
  /* a default only one side has follows from what it wrote: that is the
  ** difference (plugin.bucket, read only with plugin.name, is passed by) */
  CHECK(records_differ("model: {}\nplugin: {name: x}\n", "model: {}\n", NULL, 0, NULL, got, sizeof got));
  snprintf(want, sizeof want, "plugin.name|x@%s/rec/a.yaml:2:16|-@-", scratch);
  CHECK_STR_CONTAINS(got, want);
  /* values that mean the same: numbers written two ways, a size with and
  ** without its unit (a default is recorded in bytes); 2 and 2.4 do differ */
  CHECK(!records_differ("a: {lr: 2e-3, size: 25MiB}\n", "a: {lr: 0.002, size: 26214400}\n", NULL, 0, NULL, got,
                        sizeof got));
  CHECK(records_differ("a: {lr: 2}\n", "a: {lr: 2.4}\n", NULL, 0, NULL, got, sizeof got));
  CHECK(records_differ("a: {size: 25MiB}\n", "a: {size: 25MB}\n", NULL, 0, NULL, got, sizeof got));
  /* a key left out of the comparison, with everything under it */
  const char *const skip[] = {"log.every", "model.files", NULL};
  CHECK(!records_differ(base, "model: {layers: 2, heads: 6, files: [q]}\nlog: {every: 9}\n", NULL, 0, skip, got,
                        sizeof got));
}

/* ---- odd files ---- */

static void test_empty_and_null(void) {
  char p[1024];
  static const char *const empties[] = {"", "# only a comment\n", "---\n", "\n\n"};
  for (size_t i = 0; i < TSL_ARRAY_LEN(empties); i++) {
    char name[32];
    snprintf(name, sizeof name, "empty%zu.yaml", i);
    tsl_config *cfg = load_ok(put(p, name, empties[i]));
    tsl_cfg *s;
    CHECK_ERROR(tsl_cfg_section(tsl_config_root(cfg), "model", 1, &s), "%s:1:1: missing required section 'model:'", p);
    CHECK_EQ_INT(tsl_cfg_check_unknown(tsl_config_root(cfg)), TESSEL_OK);
    tsl_config_free(cfg);
  }
  /* `model:` with nothing is an empty section */
  tsl_config *cfg = load_ok(put(p, "nullsec.yaml", "model:\ntrain:\n  steps:\n"));
  tsl_cfg *m = section(cfg, "model"), *t = section(cfg, "train");
  CHECK_ERROR(tsl_cfg_require(m, "layers"), "%s:1:7: model: missing required key 'layers'", p);
  int64_t v;
  const char *s;
  CHECK_ERROR(tsl_cfg_int(t, "steps", 0, 0, 9, &v), "%s:3:9: train.steps: expected an integer, got nothing", p);
  CHECK_ERROR(tsl_cfg_string(t, "steps", "d", &s), "%s:3:9: train.steps: expected a string, got nothing", p);
  tsl_config_free(cfg);

  put(p, "nofile.yaml", "x: 1\n");
  CHECK(unlink(p) == 0);
  CHECK_EQ_INT(load_fail(p), TESSEL_E_CONFIG); /* a wrong path given by the user: exit status 2 */
  CHECK_STR_CONTAINS(tsl_error_message(), p);
}

static void test_yaml_features(void) {
  char p[1024];
  put(p, "alias.yaml", "a: &x {b: 1}\nc: *x\n");
  CHECK_ERROR(load_fail(p), "%s:1:4: YAML anchors (&x) are not supported; use 'base:' to share settings\n"
              "%s:2:4: YAML aliases (*name) are not supported; use 'base:' to share settings", p, p);
  put(p, "merge.yaml", "a: &x {b: 1}\nc:\n  <<: *x\n");
  CHECK_ERROR(load_fail(p), "%s:1:4: YAML anchors (&x) are not supported; use 'base:' to share settings\n"
              "%s:3:7: YAML aliases (*name) are not supported", p, p);
  put(p, "multi.yaml", "a: 1\n---\nb: 2\n");
  CHECK_ERROR(load_fail(p), "%s:2:1: only one YAML document is allowed per file", p);
  put(p, "multi_end.yaml", "a: 1\n...\n---\nb: 2\n");
  CHECK_ERROR(load_fail(p), "%s:3:1: only one YAML document is allowed per file", p);
  /* a document end marker alone is one document */
  tsl_config *cfg = load_ok(put(p, "end.yaml", "---\na: 1\n...\n"));
  tsl_config_free(cfg);
  put(p, "complexkey.yaml", "ok: 1\n[a, b]: 1\n");
  CHECK_ERROR(load_fail(p), "%s:2:1: configuration: keys must be plain names", p);
  put(p, "nestedkey.yaml", "m:\n  {a: 1}: 2\n");
  CHECK_ERROR(load_fail(p), "%s:2:3: m: keys must be plain names", p);
  put(p, "list.yaml", "- model\n- train\n");
  CHECK_ERROR(load_fail(p), "%s:1:1: a config is a map of sections", p);
  put(p, "scalar.yaml", "\n  model\n");
  CHECK_ERROR(load_fail(p), "%s:2:3: a config is a map of sections", p);
  /* bytes that are not UTF-8 are a syntax error, not a crash */
  put(p, "binary.yaml", "a: \xff\xfe\x01\n");
  CHECK_ERROR(load_fail(p), "%s:", p);
  CHECK_STR_CONTAINS(tsl_error_message(), "YAML syntax error");
}

int main(void) {
  scratch_init("test_config");
  RUN(test_int);
  RUN(test_float);
  RUN(test_bool);
  RUN(test_size);
  RUN(test_string);
  RUN(test_enum);
  RUN(test_int_list);
  RUN(test_string_list);
  RUN(test_syntax_error);
  RUN(test_duplicate_key);
  RUN(test_wrong_type);
  RUN(test_unknown_keys);
  RUN(test_missing_required);
  RUN(test_cfg_error);
  RUN(test_settings);
  RUN(test_llama_defaults);
  RUN(test_base_chain);
  RUN(test_base_errors);
  RUN(test_set);
  RUN(test_defaults_emitted);
  RUN(test_emit_roundtrip);
  RUN(test_hash);
  RUN(test_records_differ);
  RUN(test_empty_and_null);
  RUN(test_yaml_features);
  int code = HARNESS_EXIT();
  if (code == 0) tsl_remove_tree(scratch);
  return code;
}
