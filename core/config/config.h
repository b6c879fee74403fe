/*
** core/config/config.h — YAML configuration with exact error positions.
**
** A config file is parsed with libyaml into a tree of nodes; every node
** remembers the file, line and column it came from, so every error reads
** "FILE:LINE:COL: path.to.key: message" (exit status 2).
**
** Composition:
**   base: other.yaml   at the top of a file inherits other.yaml (relative to
**                      the including file); maps merge key by key, anything
**                      else is replaced. Values keep the position of the file
**                      they came from, so errors point into the right file.
**   --set a.b=VALUE    overrides any key from the command line; VALUE is
**                      YAML ("6", "[2, 2]", "true"). Its position reads
**                      "--set=a.b=VALUE:1:COL".
**
** The getters are the schema. Reading a key declares it (present or not);
** a key that is absent yields the default, which is recorded in the tree so
** that the resolved configuration prints in full. After a component has read
** its section, tsl_cfg_check_unknown reports every key it never read, with
** the closest declared key as a suggestion. Plugins read their own section
** through the same getters (see tessel_cfg_api), so their option errors get
** exact positions too.
**
** Mistakes are collected, not only returned. Every positioned error — from
** the parser, a getter, tsl_cfg_error or the unknown-key check — is also
** recorded in its tsl_config, and a getter that refuses a value still
** stores its default in *out, so a reader can go on to the next key. When
** reading is done, tsl_config_outcome turns what was recorded into one
** error listing up to 20 mistakes in file order. Loading works in the same
** way within itself: it reports every duplicate key and every bad --set of
** one load together; a YAML syntax error or the nesting limit (64 levels)
** stops it.
*/
#ifndef TSL_CONFIG_H
#define TSL_CONFIG_H

#include <stdint.h>
#include <stdio.h>
#include "common/status.h"

typedef struct tessel_cfg tsl_cfg;
typedef struct tsl_config tsl_config;

/* Load `path`, resolve `base:` chains, apply the n_sets "--set" overrides
** ("a.b.c=value"). Errors are TESSEL_E_CONFIG (syntax, nesting, duplicate
** keys, a bad base: or --set; every one of them, in file order) or
** TESSEL_E_IO (a config file that cannot be read); *out is NULL then. */
tsl_status tsl_config_load(const char *path, const char *const *sets, int n_sets, tsl_config **out);
void tsl_config_free(tsl_config *cfg);
/* Whether `path` is one of the files the config was read from (the file
** given, or a base: it includes), compared as real paths. */
int tsl_config_reads(const tsl_config *cfg, const char *path);
/* The root map. */
tsl_cfg *tsl_config_root(const tsl_config *cfg);
/* The file it was loaded from. */
const char *tsl_config_path(const tsl_config *cfg);
/* The verdict on a configuration that has been read: when mistakes were
** recorded, TESSEL_E_CONFIG with a message of up to 20 of them, one per
** line in file order ("... and N more" after), followed by `st`'s own
** message when that has no position (it was not recorded); otherwise `st`
** unchanged. */
tsl_status tsl_config_outcome(tsl_config *cfg, tsl_status st);

/* ---- getters; `node` may be NULL (a missing section): defaults apply.
** On a mistake a getter records it, stores the default in *out and returns
** TESSEL_E_CONFIG. ---- */
/* A map (or list) under key: *out = NULL when absent; a scalar there is an
** error. With `required`, absence is an error at the parent. */
tsl_status tsl_cfg_section(tsl_cfg *node, const char *key, int required, tsl_cfg **out);
int tsl_cfg_has(tsl_cfg *node, const char *key);
/* A section with no keys (written `key:`, `key: null` or `key: {}`). */
int tsl_cfg_is_empty(const tsl_cfg *node);
tsl_status tsl_cfg_int(tsl_cfg *node, const char *key, int64_t dflt, int64_t min, int64_t max,
                       int64_t *out);
tsl_status tsl_cfg_float(tsl_cfg *node, const char *key, double dflt, double min, double max,
                         double *out);
tsl_status tsl_cfg_bool(tsl_cfg *node, const char *key, int dflt, int *out);
tsl_status tsl_cfg_size(tsl_cfg *node, const char *key, uint64_t dflt, uint64_t *out);
/* Record another default for a key a getter found absent (a default that
** depends on a file read later); a value the config gives is kept. */
tsl_status tsl_cfg_redefault_int(tsl_cfg *map, const char *key, int64_t value);
/* dflt may be NULL: then absence, or a null value, leaves *out NULL and
** records nothing. */
tsl_status tsl_cfg_string(tsl_cfg *node, const char *key, const char *dflt, const char **out);
/* A string naming a file or directory: as tsl_cfg_string, and "" is an
** error at the key (it would fail only when the run first used it). */
tsl_status tsl_cfg_file(tsl_cfg *node, const char *key, const char *dflt, const char **out);
tsl_status tsl_cfg_enum(tsl_cfg *node, const char *key, const char *const *choices, int dflt,
                        int *out);
tsl_status tsl_cfg_int_list(tsl_cfg *node, const char *key, int64_t *out, int cap, int *n);
/* Finite numbers, as tsl_cfg_float reads one (without a range). */
tsl_status tsl_cfg_float_list(tsl_cfg *node, const char *key, double *out, int cap, int *n);
/* A list of strings; *out points into the tree (NULL-free array of n). */
tsl_status tsl_cfg_string_list(tsl_cfg *node, const char *key, const char ***out, int *n);
/* Remember the first failure of a reader that goes on to its next key
** (*st keeps the first negative `got`). */
void tsl_cfg_keep(tsl_status *st, tsl_status got);
/* Require a key to be present (before reading it with a getter). */
tsl_status tsl_cfg_require(tsl_cfg *node, const char *key);
/* When `key` is absent and a key not asked for looks like it misspelt, that
** mistake, at the misspelling ("unknown key 'nam' in plugin (did you mean
** 'name'?)"); else TESSEL_OK. For a key that is needed only in some cases,
** whose own message says which. */
tsl_status tsl_cfg_misspelt(tsl_cfg *node, const char *key);

/* Report every key under `node` (recursively, through maps that were
** read) that no getter asked for. */
tsl_status tsl_cfg_check_unknown(tsl_cfg *node);
/* Leave a section out of tsl_cfg_check_unknown: its reader never ran (a
** strategy that was not started), so its keys are neither known nor not. */
void tsl_cfg_skip_unknown(tsl_cfg *node);

/* A TESSEL_E_CONFIG error at `key` of `node` (or at node when the key is
** NULL or absent): "FILE:LINE:COL: path.key: <message>". */
tsl_status tsl_cfg_error(tsl_cfg *node, const char *key, const char *fmt, ...) TSL_PRINTF(3, 4);
tsl_status tsl_cfg_verror(tsl_cfg *node, const char *key, const char *fmt, va_list ap);
/* The same at item `item` of the list at `key` (at the key when it holds
** no such item). */
tsl_status tsl_cfg_item_error(tsl_cfg *node, const char *key, int item, const char *fmt, ...) TSL_PRINTF(4, 5);

/* The dotted path of a node ("model", "plugin.stage_layers"), built on
** first request and kept with the node. */
const char *tsl_cfg_path(const tsl_cfg *node);

/* Write the resolved configuration (with defaults) as YAML. */
tsl_status tsl_config_emit(const tsl_config *cfg, FILE *out);
/* The configuration as given — base files merged and --set applied, but
** without the defaults getters recorded (so values derived from others,
** such as log.metrics from log.dir, follow them when it is loaded again) —
** as a heap string; NULL with the error set when it fails. */
char *tsl_config_emit_given(const tsl_config *cfg);
/* Hash of a section's resolved values, independent of key order and of
** where they came from. NULL section = the whole configuration. */
uint64_t tsl_cfg_hash(const tsl_cfg *node);

/* The resolved configuration as records for comparing it with another
** process's: "PATH\0VALUE\0ORIGIN\0" for every value (a scalar, a null, an
** empty map or list; a list's items as PATH[i]), sorted by PATH. ORIGIN is
** where the value was written (FILE:LINE:COL), or "" for a getter's
** default. A key whose dotted path is in `skip` (NULL-terminated) is left
** out with everything under it. A heap buffer of *len bytes; NULL with the
** error set when out of memory. */
char *tsl_config_records(const tsl_config *cfg, const char *const *skip, size_t *len);

/* Where two configurations differ: a path and each side's value and origin
** (as in the records; value NULL where that side lacks the path). */
typedef struct tsl_config_diff {
  const char *path;
  const char *value[2], *origin[2];
} tsl_config_diff;

/* Compare two tsl_config_records buffers: 1 with *d at the first path (in
** their order) whose value differs, else 0. A path only one side has is a
** difference only where that side wrote it: a default only one side has
** follows from a value written elsewhere, which is reported. *d points into
** a and b. */
int tsl_config_records_differ(const char *a, size_t alen, const char *b, size_t blen, tsl_config_diff *d);

#endif
