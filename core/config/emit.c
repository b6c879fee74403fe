/* core/config/emit.c — the resolved configuration as YAML, and its hash. */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/util.h"
#include "node.h"

/* A plain scalar that YAML reads back as null ("", "~", "null"). A parsed
** file never holds one (those become null nodes), but a getter's default
** can; it must be quoted to read back as the same string. */
static int reads_as_null(const char *text) {
  static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
  for (size_t i = 0; i < TSL_ARRAY_LEN(nulls); i++)
    if (!strcmp(text, nulls[i])) return 1;
  return 0;
}

/* Every event is checked as it is made: libyaml refuses text that is not
** UTF-8 there, and emitting an event it did not make would read garbage. */
static int emit_scalar(yaml_emitter_t *em, const char *text, int quoted) {
  yaml_event_t ev;
  if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text), !quoted, 1,
                                    quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE))
    return 0;
  return yaml_emitter_emit(em, &ev);
}

static int emit_node(yaml_emitter_t *em, const tsl_cfg *n) {
  yaml_event_t ev;
  switch (n->kind) {
    case TSL_NODE_SCALAR: return emit_scalar(em, n->scalar, n->quoted || reads_as_null(n->scalar));
    case TSL_NODE_NULL: return emit_scalar(em, "null", 0);
    case TSL_NODE_LIST:
      if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_FLOW_SEQUENCE_STYLE) ||
          !yaml_emitter_emit(em, &ev))
        return 0;
      for (int i = 0; i < n->n_items; i++)
        if (!emit_node(em, n->items[i])) return 0;
      return yaml_sequence_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev);
    case TSL_NODE_MAP:
      if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                               n->n_entries ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE) ||
          !yaml_emitter_emit(em, &ev))
        return 0;
      for (int i = 0; i < n->n_entries; i++)
        if (!emit_scalar(em, n->entries[i].key, 0) || !emit_node(em, n->entries[i].value)) return 0;
      return yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(em, &ev);
  }
  return 0;
}

tsl_status tsl_config_emit(const tsl_config *cfg, FILE *out) {
  yaml_emitter_t em;
  yaml_event_t ev;
  if (!yaml_emitter_initialize(&em)) return tsl_error(TESSEL_E_NOMEM, "cannot start the YAML emitter");
  yaml_emitter_set_output_file(&em, out);
  yaml_emitter_set_unicode(&em, 1);
  yaml_emitter_set_width(&em, 100);
  int ok = 1;
  ok = ok && yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && yaml_emitter_emit(&em, &ev);
  ok = ok && yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) && yaml_emitter_emit(&em, &ev);
  ok = ok && emit_node(&em, cfg->root);
  ok = ok && yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em, &ev);
  ok = ok && yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev);
  const char *problem = em.problem;
  yaml_emitter_delete(&em);
  if (!ok) return tsl_error(TESSEL_E_IO, "writing the resolved configuration: %s", problem ? problem : "emitter error");
  return TESSEL_OK;
}

static int entry_cmp(const void *a, const void *b) {
  return strcmp((*(const tsl_entry *const *)a)->key, (*(const tsl_entry *const *)b)->key);
}

/* Keys are hashed in sorted order so that key order does not matter. The
** number of children goes in before them: without it, {b: {x: 1}, y: 2}
** and {b: {x: 1, y: 2}} would hash alike. */
static uint64_t hash_node(const tsl_cfg *n, uint64_t h) {
  h = tsl_mix64(h ^ (uint64_t)n->kind);
  if (n->kind == TSL_NODE_SCALAR) return tsl_hash_str(n->scalar, h);
  h = tsl_mix64(h ^ (uint64_t)(n->kind == TSL_NODE_LIST ? n->n_items : n->n_entries));
  if (n->kind == TSL_NODE_LIST) {
    for (int i = 0; i < n->n_items; i++) h = hash_node(n->items[i], h);
    return h;
  }
  if (n->kind != TSL_NODE_MAP || n->n_entries == 0) return h;
  const tsl_entry **sorted = malloc(sizeof(*sorted) * (size_t)n->n_entries);
  if (!sorted) return h;
  for (int i = 0; i < n->n_entries; i++) sorted[i] = &n->entries[i];
  qsort(sorted, (size_t)n->n_entries, sizeof(*sorted), entry_cmp);
  for (int i = 0; i < n->n_entries; i++) h = hash_node(sorted[i]->value, tsl_hash_str(sorted[i]->key, h));
  free(sorted);
  return h;
}

uint64_t tsl_cfg_hash(const tsl_cfg *node) { return node ? hash_node(node, 0x7e55e1) : 0; }
