/*
** tests/tokenizer/test_tokenizer_json.c — tokenizer.json files that
** Hugging Face `tokenizers` reads in a way of its own, against what it does
** with them.
**
** fixtures/json_cases.json and fixtures/pretok_cases.json were made by
** `make_fixtures.py json` with the real `tokenizers` (its version is in the
** files): variants of the committed fixtures, each with a few fields set,
** with the ids tokenizers gives their added tokens and their texts, and for
** some, what it decodes ids to (with skip_special_tokens and without).
** tessel must either read a variant and
** encode its texts to those ids, token for token, and decode as it does,
** or refuse it with the reason named; which one is said below for every
** variant, and a variant the table does not know fails the test.
** pretok_cases.json holds the pre-tokenizers of StarCoder, Falcon and
** DeepSeek, and Splits of every behavior, on unsplit_1000.json, a BPE whose
** merges cross digits, punctuation and spaces, so that a piece cut
** otherwise than tokenizers cuts it changes ids. fixtures/char_classes.json
** (`make_fixtures.py classes`) lists the characters tokenizers' Digits and
** Punctuation cut at. Where a variant's pre-tokenizer lets a text be cut
** for parallel encoding, every text encodes as its cut halves do.
*/
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "harness.h"
#include "tokenizer/internal.h" /* tsl_onig_to_pcre2, tsl_tok_numeric, tsl_tok_punctuation */
#include "tokenizer/tokenizer.h"

#define FIXTURES "tests/tokenizer/fixtures/"

/* RENUMBERED: refused because tokenizers gives an added token another id
** than the file; the message must name the token and both ids. */
#define RENUMBERED "renumbered"

static const struct {
  const char *name;
  tsl_status st;
  const char *needle;
} expected[] = {
    {"added_numbered", TESSEL_OK, NULL},
    {"added_in_vocab", TESSEL_OK, NULL},
    {"added_repeated", TESSEL_OK, NULL},
    {"added_in_vocab_other_id", TESSEL_E_UNSUPPORTED, RENUMBERED},
    {"added_out_of_order", TESSEL_E_UNSUPPORTED, RENUMBERED},
    {"added_repeated_other_id", TESSEL_E_UNSUPPORTED, RENUMBERED},
    {"added_past_a_gap", TESSEL_E_UNSUPPORTED, RENUMBERED},
    /* Split regexes PCRE2 would read otherwise: rewritten (onig.c) ... */
    {"regex_hex", TESSEL_OK, NULL},
    {"regex_hex_in_class", TESSEL_OK, NULL},
    {"regex_m_dot_all", TESSEL_OK, NULL},
    {"regex_m_group", TESSEL_OK, NULL},
    {"regex_anchors", TESSEL_OK, NULL},
    {"regex_vertical_tab", TESSEL_OK, NULL},
    {"regex_at_most", TESSEL_OK, NULL},
    {"regex_isolated_option", TESSEL_OK, NULL},
    {"regex_comment", TESSEL_OK, NULL},
    /* ... or refused, the construct named */
    {"regex_quote", TESSEL_E_UNSUPPORTED, "has \\Q at offset 0, which Oniguruma reads otherwise"},
    {"regex_nested_class", TESSEL_E_UNSUPPORTED, "has [ at offset 2, which starts a class inside a class"},
    {"regex_intersection", TESSEL_E_UNSUPPORTED, "has && at offset 4, which intersects classes"},
    {"regex_interval_plus", TESSEL_E_UNSUPPORTED, "has {1,2}+ at offset 1, which repeats the interval"},
    {"regex_exact_optional", TESSEL_E_UNSUPPORTED, "has {2}? at offset 2, which is optional in Oniguruma"},
    {"regex_extended", TESSEL_E_UNSUPPORTED, "has (?x) at offset 0, which sets an option other than i and m"},
    /* forms that encode as ones tessel reads: dropout 0 or null, Sequence [] and [NFC] */
    {"dropout_zero", TESSEL_OK, NULL},
    {"dropout_null", TESSEL_OK, NULL},
    {"sequence_empty", TESSEL_OK, NULL},
    {"sequence_nfc", TESSEL_OK, NULL},
    {"sequence_nfc_nfkc", TESSEL_E_UNSUPPORTED, "normalizer Sequence is not supported"},
    {"dropout_tenth", TESSEL_E_UNSUPPORTED, "model.dropout is set"},
    /* added tokens of every flag combination: encoded and decoded as tokenizers does */
    {"added_flags_nfc", TESSEL_OK, NULL},
    {"added_flags_gpt2", TESSEL_OK, NULL},
    {"added_flags_prefix_space", TESSEL_OK, NULL},
    {"added_flags_sp", TESSEL_OK, NULL},
    {"added_flags_sp_always", TESSEL_OK, NULL},
    {"added_flags_sp_legacy", TESSEL_OK, NULL},
    {"added_flags_lowercase", TESSEL_E_UNSUPPORTED, "normalizer Lowercase is not supported"},
    /* pretok_cases.json: the pre-tokenizers of StarCoder, Falcon and DeepSeek, and steps of every kind */
    {"pretok_starcoder", TESSEL_OK, NULL},
    {"pretok_starcoder_prefix_space", TESSEL_OK, NULL},
    {"pretok_falcon", TESSEL_OK, NULL},
    {"pretok_deepseek_llm", TESSEL_OK, NULL},
    {"pretok_deepseek_coder", TESSEL_OK, NULL},
    {"pretok_deepseek_v3", TESSEL_OK, NULL},
    {"pretok_split_then_byte_level_regex", TESSEL_OK, NULL},
    {"pretok_byte_level_then_split", TESSEL_OK, NULL},
    {"pretok_byte_level_then_classes", TESSEL_OK, NULL},
    {"pretok_digits_runs", TESSEL_OK, NULL},
    {"pretok_nested_sequence", TESSEL_OK, NULL},
    {"pretok_split_removed", TESSEL_OK, NULL},
    {"pretok_split_removed_inverted", TESSEL_OK, NULL},
    {"pretok_split_isolated_inverted", TESSEL_OK, NULL},
    {"pretok_split_mergedwithprevious", TESSEL_OK, NULL},
    {"pretok_split_mergedwithprevious_inverted", TESSEL_OK, NULL},
    {"pretok_split_mergedwithnext", TESSEL_OK, NULL},
    {"pretok_split_mergedwithnext_inverted", TESSEL_OK, NULL},
    {"pretok_split_contiguous", TESSEL_OK, NULL},
    {"pretok_split_contiguous_inverted", TESSEL_OK, NULL},
    {"pretok_empty_isolated", TESSEL_OK, NULL},
    {"pretok_empty_mergedwithprevious", TESSEL_OK, NULL},
    {"pretok_empty_mergedwithnext", TESSEL_OK, NULL},
    {"pretok_empty_contiguous", TESSEL_OK, NULL},
    {"pretok_lookahead_merged_with_next", TESSEL_OK, NULL},
    {"pretok_string_merged_with_previous", TESSEL_OK, NULL},
    {"pretok_string_empty_contiguous", TESSEL_OK, NULL},
    {"pretok_punctuation_removed", TESSEL_OK, NULL},
    {"pretok_punctuation_isolated", TESSEL_OK, NULL},
    {"pretok_punctuation_mergedwithprevious", TESSEL_OK, NULL},
    {"pretok_punctuation_mergedwithnext", TESSEL_OK, NULL},
    {"pretok_punctuation_contiguous", TESSEL_OK, NULL},
    {"pretok_whitespace_step", TESSEL_E_UNSUPPORTED, "pre_tokenizer step 1 is WhitespaceSplit"},
    {"pretok_two_byte_levels", TESSEL_E_UNSUPPORTED, "pre_tokenizer step 1 is a second ByteLevel"},
    {"pretok_no_byte_level", TESSEL_E_UNSUPPORTED, "pre_tokenizer has no ByteLevel step"},
};

/* Set root's field at a dotted path (list indices as numbers) to a copy of value. */
static void set_path(cJSON *root, const char *path, const cJSON *value) {
  char key[256];
  cJSON *parent = root;
  REQUIRE(snprintf(key, sizeof key, "%s", path) < (int)sizeof key);
  for (char *dot; (dot = strchr(key, '.')) != NULL; memmove(key, dot + 1, strlen(dot + 1) + 1)) {
    *dot = '\0';
    parent = cJSON_IsArray(parent) ? cJSON_GetArrayItem(parent, atoi(key)) : cJSON_GetObjectItem(parent, key);
    REQUIRE(parent != NULL);
  }
  cJSON *v = cJSON_Duplicate(value, 1);
  if (cJSON_IsArray(parent)) cJSON_ReplaceItemInArray(parent, atoi(key), v);
  else if (cJSON_GetObjectItem(parent, key)) cJSON_ReplaceItemInObject(parent, key, v);
  else cJSON_AddItemToObject(parent, key, v);
}

/* The variant's base fixture with its fields set, parsed. */
static tsl_status load_variant(const cJSON *variant, tsl_tokenizer **t) {
  char path[256], *json;
  snprintf(path, sizeof path, FIXTURES "%s.json", cJSON_GetObjectItem(variant, "base")->valuestring);
  REQUIRE(tsl_read_file(path, &json, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(json), *field;
  REQUIRE(root != NULL);
  cJSON_ArrayForEach(field, cJSON_GetObjectItem(variant, "set")) set_path(root, field->string, field);
  char *text = cJSON_PrintUnformatted(root);
  tsl_status st = tsl_tokenizer_parse(text, strlen(text), cJSON_GetObjectItem(variant, "name")->valuestring, t);
  free(text);
  cJSON_Delete(root);
  free(json);
  return st;
}

/* What the refusal of a renumbered file must say: the first added token
** whose id in the file is not the one tokenizers gave it, and both ids. */
static void renumbered_needle(const cJSON *variant, char *needle, size_t cap) {
  const cJSON *set = cJSON_GetObjectItem(variant, "set"), *ids = cJSON_GetObjectItem(variant, "added_ids");
  const cJSON *list = cJSON_GetObjectItem(set, "added_tokens"), *a;
  int i = 0;
  needle[0] = '\0';
  cJSON_ArrayForEach(a, list) {
    int file_id = cJSON_GetObjectItem(a, "id")->valueint, want = cJSON_GetArrayItem(ids, i++)->valueint;
    if (file_id == want) continue;
    snprintf(needle, cap, "added token '%s' has id %d in the file, but tokenizers and transformers give it %d",
             cJSON_GetObjectItem(a, "content")->valuestring, file_id, want);
    return;
  }
  REQUIRE(!"a renumbered variant whose ids tokenizers keeps");
}

/* The text of ids (a JSON list) as the streaming decoder gives it, piece
** by piece, in *out (heap); flags as tsl_tokenizer_decode_begin's. */
static char *decode_ids(tsl_tokenizer *t, const cJSON *ids, int flags) {
  tsl_tokenizer_decoder d;
  tsl_token_vec text = {0}; /* bytes, one per int32: the sink grows it */
  const cJSON *id;
  const char *s;
  size_t n;
  tsl_tokenizer_decode_begin(&d, t, flags);
  cJSON_ArrayForEach(id, ids) {
    REQUIRE(tsl_tokenizer_decode_next(&d, id->valueint, &s, &n) == TESSEL_OK);
    for (size_t i = 0; i < n; i++) REQUIRE(tsl_token_vec_sink(&text, &(int32_t){(unsigned char)s[i]}, 1) == TESSEL_OK);
  }
  REQUIRE(tsl_tokenizer_decode_end(&d, &s, &n) == TESSEL_OK);
  for (size_t i = 0; i < n; i++) REQUIRE(tsl_token_vec_sink(&text, &(int32_t){(unsigned char)s[i]}, 1) == TESSEL_OK);
  tsl_tokenizer_decode_free(&d);
  char *out = malloc(text.n + 1);
  REQUIRE(out != NULL);
  for (size_t i = 0; i < text.n; i++) out[i] = (char)text.ids[i];
  out[text.n] = '\0';
  tsl_token_vec_free(&text);
  return out;
}

/* ids decode to tokenizers' text, byte for byte (what the fixture has when
** it has it). */
static void decodes_as_tokenizers(tsl_tokenizer *t, const cJSON *ids, int flags, const cJSON *want, const char *what) {
  if (!want) return;
  char *got = decode_ids(t, ids, flags);
  int same = strcmp(got, want->valuestring) == 0;
  if (!same) fprintf(stderr, "%s: %s decodes to '%s', tokenizers to '%s'\n", tsl_tokenizer_name(t), what, got,
                     want->valuestring);
  CHECK(same);
  free(got);
}

/* Every text encodes to tokenizers' ids, and ids decode to its text. */
static void encodes_as_tokenizers(tsl_tokenizer *t, const cJSON *variant) {
  const cJSON *c;
  tsl_token_vec v = {0};
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(variant, "texts")) {
    const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
    const cJSON *want = cJSON_GetObjectItem(c, "ids");
    v.n = 0;
    REQUIRE(tsl_tokenizer_encode(t, text, strlen(text), TSL_TOK_ADDED, tsl_token_vec_sink, &v) == TESSEL_OK);
    int same = (int)v.n == cJSON_GetArraySize(want);
    for (int i = 0; same && i < (int)v.n; i++) same = v.ids[i] == cJSON_GetArrayItem(want, i)->valueint;
    if (!same) fprintf(stderr, "%s: '%s' encodes otherwise than tokenizers\n", tsl_tokenizer_name(t), text);
    CHECK(same);
    decodes_as_tokenizers(t, want, 0, cJSON_GetObjectItem(c, "decoded"), text);
  }
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(variant, "decodes")) {
    const cJSON *ids = cJSON_GetObjectItem(c, "ids");
    decodes_as_tokenizers(t, ids, 0, cJSON_GetObjectItem(c, "text"), "random ids");
    decodes_as_tokenizers(t, ids, TSL_DECODE_SKIP_SPECIAL, cJSON_GetObjectItem(c, "text_skip_special"),
                          "random ids, special ones left out");
  }
  tsl_token_vec_free(&v);
}

/* Bytes that are not UTF-8 (which no fixture can hold: tokenizers takes
** only text) reach the BPE too, and decode back: every byte a step sees
** is in a piece, whether or not it starts a character — for a byte-level
** BPE that neither normalizes, nor puts spaces in, nor removes what a
** Split matches. */
static void invalid_utf8_round_trips(tsl_tokenizer *t) {
  static const char *const texts[] = {"\xff\xfe a\xc3 12\xe2\x82 \xc3\xb2\xb2 \xc2\xab\xab\xbb!\x80",
                                      "\xed\xa0\x80 7\xf4\x90\x80\x80 \xc0\xaf.\n\n\xe3\x80\x80x",
                                      "x\xc3", "\xb2\xb3\xb9 123 \xb9", "\xe2\x80"};
  if (t->metaspace || t->nfc || t->add_prefix_space || t->drops_text) return;
  for (size_t i = 0; i < TSL_ARRAY_LEN(texts); i++) {
    tsl_token_vec v = {0};
    char out[256];
    size_t n = 0, k;
    REQUIRE(tsl_tokenizer_encode(t, texts[i], strlen(texts[i]), 0, tsl_token_vec_sink, &v) == TESSEL_OK);
    for (size_t j = 0; j < v.n; j++) {
      const char *s = tsl_tokenizer_token(t, v.ids[j], &k);
      REQUIRE(s != NULL && n + k < sizeof out);
      memcpy(out + n, s, k);
      n += k;
    }
    int same = n == strlen(texts[i]) && memcmp(out, texts[i], n) == 0;
    if (!same) fprintf(stderr, "%s: text %zu (not UTF-8) does not decode to itself\n", tsl_tokenizer_name(t), i);
    CHECK(same);
    tsl_token_vec_free(&v);
  }
}

/* Cut where tsl_tokenizer_cut offers, every text encodes as its two halves
** do (the second TSL_TOK_CONTINUED), as `data prepare` encodes a large
** file's segments side by side; returns how many cuts were offered. */
static int cuts_keep_ids(tsl_tokenizer *t, const cJSON *variant) {
  const cJSON *c;
  tsl_token_vec whole = {0}, halves = {0};
  int cuts = 0;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(variant, "texts")) {
    const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
    size_t len = strlen(text), at;
    whole.n = 0;
    REQUIRE(tsl_tokenizer_encode(t, text, len, 0, tsl_token_vec_sink, &whole) == TESSEL_OK);
    for (size_t from = 1; (at = tsl_tokenizer_cut(t, text, len, from, len)) != 0; from = at + 1, cuts++) {
      halves.n = 0;
      REQUIRE(tsl_tokenizer_encode(t, text, at, 0, tsl_token_vec_sink, &halves) == TESSEL_OK);
      REQUIRE(tsl_tokenizer_encode(t, text + at, len - at, TSL_TOK_CONTINUED, tsl_token_vec_sink, &halves) == TESSEL_OK);
      int same = halves.n == whole.n && memcmp(halves.ids, whole.ids, whole.n * sizeof *whole.ids) == 0;
      if (!same) fprintf(stderr, "%s: '%s' cut at %zu encodes otherwise than whole\n", tsl_tokenizer_name(t), text, at);
      CHECK(same);
    }
  }
  tsl_token_vec_free(&whole);
  tsl_token_vec_free(&halves);
  return cuts;
}

/* The pre-tokenizer variants a text may be cut for: those whose first step
** that is not a character class, a literal without letters and spaces or
** one of DeepSeek's regexes that match neither is GPT-2's regex (ByteLevel's
** or a Split's), Llama 3's or one of DeepSeek's that end a piece there. */
static int cuttable(const char *name) {
  static const char *const names[] = {"pretok_starcoder", "pretok_starcoder_prefix_space", "pretok_falcon",
                                      "pretok_deepseek_llm", "pretok_deepseek_coder", "pretok_deepseek_v3",
                                      "pretok_split_then_byte_level_regex", "pretok_byte_level_then_split",
                                      "pretok_nested_sequence"};
  for (size_t i = 0; i < TSL_ARRAY_LEN(names); i++)
    if (strcmp(name, names[i]) == 0) return 1;
  return 0;
}

/* Each variant of one fixture file as the table says; returns how many. */
static int check_variants(const char *file) {
  char *json, needle[512];
  REQUIRE(tsl_read_file(file, &json, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(json), *variant;
  REQUIRE(root != NULL);
  int seen = 0;
  cJSON_ArrayForEach(variant, cJSON_GetObjectItem(root, "variants")) {
    const char *name = cJSON_GetObjectItem(variant, "name")->valuestring;
    size_t k = 0;
    while (k < TSL_ARRAY_LEN(expected) && strcmp(expected[k].name, name) != 0) k++;
    if (k == TSL_ARRAY_LEN(expected)) fprintf(stderr, "%s: a variant this test does not know\n", name);
    REQUIRE(k < TSL_ARRAY_LEN(expected));
    tsl_tokenizer *t = NULL;
    tsl_status st = load_variant(variant, &t);
    if (st != expected[k].st) fprintf(stderr, "%s: status %d: %s\n", name, st, st < 0 ? tsl_error_message() : "");
    CHECK_EQ_INT(st, expected[k].st);
    if (st == TESSEL_OK) encodes_as_tokenizers(t, variant);
    if (st == TESSEL_OK) invalid_utf8_round_trips(t);
    int cuts = st == TESSEL_OK ? cuts_keep_ids(t, variant) : 0;
    if (strncmp(name, "pretok_", 7) == 0 && (cuts > 0) != cuttable(name))
      fprintf(stderr, "%s: %d cut(s) offered\n", name, cuts);
    if (strncmp(name, "pretok_", 7) == 0) CHECK_EQ_INT(cuts > 0, cuttable(name));
    if (expected[k].needle && strcmp(expected[k].needle, RENUMBERED) == 0) renumbered_needle(variant, needle, sizeof needle);
    else snprintf(needle, sizeof needle, "%s", expected[k].needle ? expected[k].needle : "");
    if (st < 0) CHECK_STR_CONTAINS(tsl_error_message(), needle);
    tsl_tokenizer_free(t);
    seen++;
  }
  cJSON_Delete(root);
  free(json);
  return seen;
}

static void test_variants(void) {
  int seen = check_variants(FIXTURES "json_cases.json") + check_variants(FIXTURES "pretok_cases.json");
  CHECK_EQ_INT(seen, (int)TSL_ARRAY_LEN(expected));
}

/* Every code point is a digit and punctuation to tessel exactly when it is
** to tokenizers' Digits and Punctuation, as char_classes.json lists them. */
static void test_char_classes(void) {
  static const struct {
    const char *name;
    int (*in)(uint32_t cp);
  } classes[] = {{"numeric", tsl_tok_numeric}, {"punctuation", tsl_tok_punctuation}};
  char *json;
  REQUIRE(tsl_read_file(FIXTURES "char_classes.json", &json, NULL) == TESSEL_OK);
  cJSON *root = cJSON_Parse(json);
  REQUIRE(root != NULL);
  for (size_t k = 0; k < TSL_ARRAY_LEN(classes); k++) {
    const cJSON *r = cJSON_GetObjectItem(root, classes[k].name)->child;
    int wrong = 0, members = 0;
    for (uint32_t cp = 0; cp <= 0x10ffff; cp++) {
      while (r && cp > (uint32_t)cJSON_GetArrayItem(r, 1)->valueint) r = r->next;
      int want = r && cp >= (uint32_t)cJSON_GetArrayItem(r, 0)->valueint;
      members += want;
      if ((cp < 0xd800 || cp > 0xdfff) && classes[k].in(cp) != want && wrong++ < 5)
        fprintf(stderr, "U+%04X: %s %d for tessel, %d for tokenizers\n", cp, classes[k].name, !want, want);
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK(members > 500); /* the fixture is read: both classes have hundreds of members */
  }
  cJSON_Delete(root);
  free(json);
}

/* gpt2_1024.json as written, with insert[0, n) put after the first `after`. */
static tsl_status parse_inserted(const char *after, const char *insert, size_t n, tsl_tokenizer **t) {
  char *json;
  size_t len;
  REQUIRE(tsl_read_file(FIXTURES "gpt2_1024.json", &json, &len) == TESSEL_OK);
  const char *at = strstr(json, after);
  REQUIRE(at != NULL);
  size_t head = (size_t)(at - json) + strlen(after);
  char *text = malloc(len + n);
  REQUIRE(text != NULL);
  memcpy(text, json, head);
  memcpy(text + head, insert, n);
  memcpy(text + head + n, json + head, len - head);
  tsl_status st = tsl_tokenizer_parse(text, len + n, "nul.json", t);
  free(text);
  free(json);
  return st;
}
#define INSERTED(after, literal, t) parse_inserted(after, literal, sizeof literal - 1, t)

/* A JSON string with \u0000 in it is refused with the string named: cJSON
** ends strings there, so an added "zq\u0000r" was read as "zq" (and cut
** out of every "zq"), and a vocabulary token "\u0000" as the empty string.
** tokenizers reads both whole (its ids for "zq zqr" under the added token:
** 90 81 221 90 81 82, where tessel gave 1024 221 1024 82). A backslash
** written before "u0000" is no NUL; a raw NUL byte is not JSON. */
static void test_nul_refused(void) {
  tsl_tokenizer *t = NULL;
  CHECK_EQ_INT(INSERTED("\"added_tokens\": [", "{\"id\": 1024, \"content\": \"zq\\u0000r\", \"special\": true}, ", &t),
               TESSEL_E_UNSUPPORTED);
  CHECK_STR_CONTAINS(tsl_error_message(), "the JSON string \"zq\\u0000r\" holds \\u0000 (NUL)");
  CHECK_EQ_INT(INSERTED("\"vocab\": {", "\"a\\\\\\u0000\": 1024, ", &t), TESSEL_E_UNSUPPORTED);
  CHECK_STR_CONTAINS(tsl_error_message(), "the JSON string \"a\\\\\\u0000\" holds");
  CHECK_EQ_INT(INSERTED("\"vocab\": {", "\"\\u0000\": 1024, \"\\\\u0000\": 1025, ", &t), TESSEL_E_UNSUPPORTED);
  CHECK(t == NULL);
  CHECK_EQ_INT(INSERTED("\"vocab\": {", "\"x\0\": 1024, ", &t), TESSEL_E_IO);
  CHECK_STR_CONTAINS(tsl_error_message(), "is NUL: not JSON text");
  /* the six characters \u0000 as a token: read, and encoded as themselves */
  tsl_status st = INSERTED("\"added_tokens\": [", "{\"id\": 1024, \"content\": \"zq\\\\u0000r\", \"special\": true}, ", &t);
  if (st < 0) fprintf(stderr, "%s\n", tsl_error_message());
  REQUIRE(st == TESSEL_OK);
  tsl_token_vec v = {0};
  REQUIRE(tsl_tokenizer_encode(t, "zq\\u0000r", 9, TSL_TOK_ADDED, tsl_token_vec_sink, &v) == TESSEL_OK);
  CHECK(v.n == 1 && v.ids[0] == 1024);
  tsl_token_vec_free(&v);
  tsl_tokenizer_free(t);
}

/* GPT-2's, Llama 3's and Qwen2's patterns mean the same to PCRE2 as
** written: the rewrite leaves them as they are, so they encode (and hash)
** as before. */
static void test_named_patterns_unchanged(void) {
  static const char *const names[] = {"gpt2", "llama3", "qwen2"};
  for (size_t i = 0; i < TSL_ARRAY_LEN(names); i++) {
    char *pcre2 = NULL;
    REQUIRE(tsl_onig_to_pcre2(tsl_tokenizer_pattern_named(names[i]), names[i], &pcre2) == TESSEL_OK);
    CHECK(strcmp(pcre2, tsl_tokenizer_pattern_named(names[i])) == 0);
    free(pcre2);
  }
}

int main(void) {
  RUN(test_variants);
  RUN(test_char_classes);
  RUN(test_named_patterns_unchanged);
  RUN(test_nul_refused);
  return HARNESS_EXIT();
}
