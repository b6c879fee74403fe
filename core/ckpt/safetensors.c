/*
** core/ckpt/safetensors.c — streaming safetensors writer and validating
** memory-mapped reader.
**
** Integers in the header (shapes, offsets) are emitted as raw JSON number
** text so they stay exact past 2^31 and never take exponent form; cJSON parses
** numbers to double, so the reader accepts integers up to 2^53 — far beyond
** any file this framework writes.
*/
#include "ckpt/safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/atomic_file.h"
#include "common/util.h"

#define ST_META_KEY "__metadata__"
/* The limit the reference implementation applies; a longer header is
** corruption, not a model. */
#define ST_MAX_HEADER_BYTES 100000000ull
#define ST_MAX_JSON_INT 9007199254740992.0 /* 2^53: exact in a double */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors data is little-endian; this host is not"
#endif

/* A tensor and its byte range [begin, end) in the data area. `desc` comes
** first so that a pointer to it is a pointer to the record. */
typedef struct st_tensor {
  tsl_st_desc desc; /* name owned */
  uint64_t begin, end;
  int order; /* position in the JSON, to break ties between empty tensors */
} st_tensor;

/* ------------------------------------------------------------------ dtypes */

static const struct {
  tessel_dtype dtype;
  const char *name;
  int size;
} st_dtypes[] = {{TESSEL_F32, "F32", 4}, {TESSEL_BF16, "BF16", 2}, {TESSEL_F16, "F16", 2},
                 {TESSEL_I32, "I32", 4}, {TESSEL_F64, "F64", 8},  {TESSEL_U8, "U8", 1}};

int tsl_dtype_size(tessel_dtype dtype) {
  for (size_t i = 0; i < TSL_ARRAY_LEN(st_dtypes); i++)
    if (st_dtypes[i].dtype == dtype) return st_dtypes[i].size;
  return 0;
}

const char *tsl_dtype_name(tessel_dtype dtype) {
  for (size_t i = 0; i < TSL_ARRAY_LEN(st_dtypes); i++)
    if (st_dtypes[i].dtype == dtype) return st_dtypes[i].name;
  return "?";
}

static int dtype_from_name(const char *name, tessel_dtype *out) {
  for (size_t i = 0; i < TSL_ARRAY_LEN(st_dtypes); i++) {
    if (strcmp(st_dtypes[i].name, name) == 0) {
      *out = st_dtypes[i].dtype;
      return 0;
    }
  }
  return -1;
}

/* ------------------------------------------------------------ shared parts */

/* Bytes a tensor occupies; -1 when a dimension is negative or the product
** overflows. */
static int desc_bytes(const tsl_st_desc *d, uint64_t *out) {
  uint64_t bytes = (uint64_t)tsl_dtype_size(d->dtype);
  for (int k = 0; k < d->ndim; k++) {
    if (d->shape[k] < 0 || __builtin_mul_overflow(bytes, (uint64_t)d->shape[k], &bytes)) return -1;
  }
  *out = bytes;
  return 0;
}

char *tsl_st_shape_text(const int64_t *shape, int ndim, char *buf, size_t cap) {
  size_t len = (size_t)snprintf(buf, cap, "[");
  for (int k = 0; k < ndim && len < cap; k++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%" PRId64, k ? ", " : "", shape[k]);
  if (len < cap) snprintf(buf + len, cap - len, "]");
  return buf;
}

static int cmp_desc_name(const void *a, const void *b) {
  return strcmp((*(const tsl_st_desc *const *)a)->name, (*(const tsl_st_desc *const *)b)->name);
}

/* Sort `index` by tensor name; the first name that appears twice, or NULL. */
static const char *sort_by_name(const tsl_st_desc **index, int n) {
  qsort(index, (size_t)n, sizeof *index, cmp_desc_name);
  for (int i = 1; i < n; i++)
    if (strcmp(index[i - 1]->name, index[i]->name) == 0) return index[i]->name;
  return NULL;
}

static void free_tensors(st_tensor *t, int n) {
  if (!t) return;
  for (int i = 0; i < n; i++) free((char *)t[i].desc.name);
  free(t);
}

/* ------------------------------------------------------------------ writer */

struct tsl_st_writer {
  char *path;
  tsl_atomic_file file;
  int n;
  st_tensor *tensors;
  int cur;           /* the tensor being written */
  uint64_t filled;   /* bytes of it written so far */
  tsl_status failed; /* set once a put failed: the file can no longer finish */
};

static cJSON *json_uint(uint64_t v) {
  char buf[24];
  snprintf(buf, sizeof buf, "%" PRIu64, v);
  return cJSON_CreateRaw(buf);
}

/* Add {"dtype", "shape", "data_offsets"} for one tensor; NULL on allocation
** failure. */
static cJSON *add_tensor_json(cJSON *root, const st_tensor *t) {
  cJSON *obj = cJSON_AddObjectToObject(root, t->desc.name);
  cJSON *shape = obj ? cJSON_AddArrayToObject(obj, "shape") : NULL;
  cJSON *offsets = shape ? cJSON_AddArrayToObject(obj, "data_offsets") : NULL;
  if (!offsets || !cJSON_AddStringToObject(obj, "dtype", tsl_dtype_name(t->desc.dtype)))
    return NULL;
  for (int k = 0; k < t->desc.ndim; k++)
    if (!cJSON_AddItemToArray(shape, json_uint((uint64_t)t->desc.shape[k]))) return NULL;
  if (!cJSON_AddItemToArray(offsets, json_uint(t->begin)) ||
      !cJSON_AddItemToArray(offsets, json_uint(t->end)))
    return NULL;
  return obj;
}

/* The header as a cJSON tree; NULL on allocation failure. */
static cJSON *header_json(const tsl_st_writer *w, const char *const *keys,
                          const char *const *values, int n_meta) {
  cJSON *root = cJSON_CreateObject();
  cJSON *meta = root && n_meta > 0 ? cJSON_AddObjectToObject(root, ST_META_KEY) : NULL;
  if (!root || (n_meta > 0 && !meta)) goto fail;
  for (int i = 0; i < n_meta; i++)
    if (!cJSON_AddStringToObject(meta, keys[i], values[i])) goto fail;
  for (int i = 0; i < w->n; i++)
    if (!add_tensor_json(root, &w->tensors[i])) goto fail;
  return root;
fail:
  cJSON_Delete(root);
  return NULL;
}

/* The complete header: length prefix, JSON, spaces up to a multiple of 8 so
** the data area starts aligned. */
static tsl_status build_header(const tsl_st_writer *w, const char *const *keys,
                               const char *const *values, int n_meta, char **out, size_t *len) {
  cJSON *root = header_json(w, keys, values, n_meta);
  char *json = root ? cJSON_PrintUnformatted(root) : NULL;
  cJSON_Delete(root);
  size_t jlen = json ? strlen(json) : 0, padded = (jlen + 7) & ~(size_t)7;
  char *buf = json ? malloc(8 + padded) : NULL;
  if (!buf) {
    cJSON_free(json);
    return tsl_error(TESSEL_E_NOMEM, "%s: out of host memory building the header", w->path);
  }
  for (int b = 0; b < 8; b++) buf[b] = (char)((uint64_t)padded >> (8 * b));
  memcpy(buf + 8, json, jlen);
  memset(buf + 8 + jlen, ' ', padded - jlen);
  cJSON_free(json);
  *out = buf;
  *len = 8 + padded;
  return TESSEL_OK;
}

/* Check the caller's descriptions and metadata before anything is created. */
static tsl_status check_begin_args(const char *path, const tsl_st_desc *descs, int n,
                                   const char *const *keys, const char *const *values,
                                   int n_meta) {
  if (n < 0 || n_meta < 0)
    return tsl_error(TESSEL_E_INTERNAL, "%s: negative tensor or metadata count", path);
  for (int i = 0; i < n; i++) {
    const tsl_st_desc *d = &descs[i];
    uint64_t bytes;
    if (!d->name || strcmp(d->name, ST_META_KEY) == 0)
      return tsl_error(TESSEL_E_INTERNAL, "%s: tensor %d has no usable name", path, i);
    if (tsl_dtype_size(d->dtype) == 0)
      return tsl_error(TESSEL_E_INTERNAL, "%s: tensor '%s': unknown dtype %d", path, d->name,
                       (int)d->dtype);
    if (d->ndim < 0 || d->ndim > TSL_ST_MAX_DIMS)
      return tsl_error(TESSEL_E_INTERNAL, "%s: tensor '%s': %d dimensions, at most %d", path,
                       d->name, d->ndim, TSL_ST_MAX_DIMS);
    if (desc_bytes(d, &bytes) < 0)
      return tsl_error(TESSEL_E_INTERNAL, "%s: tensor '%s': negative or overflowing shape", path,
                       d->name);
  }
  for (int i = 0; i < n_meta; i++) {
    if (!keys[i] || !values[i])
      return tsl_error(TESSEL_E_INTERNAL, "%s: metadata entry %d is NULL", path, i);
    for (int j = 0; j < i; j++)
      if (strcmp(keys[i], keys[j]) == 0)
        return tsl_error(TESSEL_E_INTERNAL, "%s: metadata key '%s' given twice", path, keys[i]);
  }
  return TESSEL_OK;
}

/* Free the writer; its temporary file, if still open, is removed. */
static void writer_free(tsl_st_writer *w) {
  tsl_atomic_abort(&w->file);
  free_tensors(w->tensors, w->n);
  free(w->path);
  free(w);
}

tsl_status tsl_st_writer_begin(const char *path, const tsl_st_desc *descs, int n,
                               const char *const *meta_keys, const char *const *meta_values,
                               int n_meta, tsl_st_writer **out) {
  tsl_status st = TESSEL_OK;
  tsl_st_writer *w = NULL;
  const tsl_st_desc **index = NULL;
  char *header = NULL;
  size_t header_len = 0;

  *out = NULL;
  TSL_TRY(st, check_begin_args(path, descs, n, meta_keys, meta_values, n_meta));
  w = calloc(1, sizeof *w);
  if (!w) return tsl_error(TESSEL_E_NOMEM, "%s: out of host memory", path);
  w->path = tsl_strdup(path);
  w->tensors = calloc((size_t)n + 1, sizeof *w->tensors);
  index = calloc((size_t)n + 1, sizeof *index);
  if (!w->path || !w->tensors || !index) {
    st = tsl_error(TESSEL_E_NOMEM, "%s: out of host memory", path);
    goto fail;
  }
  uint64_t offset = 0;
  for (int i = 0; i < n; i++) {
    st_tensor *t = &w->tensors[i];
    uint64_t bytes = 0;
    t->desc = descs[i];
    t->desc.name = tsl_strdup(descs[i].name);
    if (!t->desc.name) {
      st = TESSEL_E_NOMEM;
      goto fail;
    }
    w->n = i + 1;
    desc_bytes(&t->desc, &bytes);
    t->begin = offset;
    if (__builtin_add_overflow(offset, bytes, &t->end)) {
      st = tsl_error(TESSEL_E_INTERNAL, "%s: tensors total more than 2^64 bytes", path);
      goto fail;
    }
    offset = t->end;
    index[i] = &t->desc;
  }
  const char *dup = sort_by_name(index, n);
  if (dup) {
    st = tsl_error(TESSEL_E_INTERNAL, "%s: tensor name '%s' given twice", path, dup);
    goto fail;
  }
  TSL_TRY(st, build_header(w, meta_keys, meta_values, n_meta, &header, &header_len));

  TSL_TRY(st, tsl_atomic_open(path, &w->file));
  TSL_TRY(st, tsl_atomic_write(&w->file, header, header_len));
  free(header);
  free(index);
  *out = w;
  return TESSEL_OK;

fail:
  free(header);
  free(index);
  if (w) writer_free(w);
  return st;
}

/* Move past finished tensors up to `to`; each one passed must be complete. */
static tsl_status advance(tsl_st_writer *w, int to) {
  for (; w->cur < to; w->cur++, w->filled = 0) {
    const st_tensor *t = &w->tensors[w->cur];
    if (w->filled != t->end - t->begin)
      return tsl_error(TESSEL_E_INTERNAL, "%s: tensor '%s' is incomplete: %" PRIu64 " of %" PRIu64
                       " bytes written before moving on", w->path, t->desc.name, w->filled,
                       t->end - t->begin);
  }
  return TESSEL_OK;
}

tsl_status tsl_st_writer_put(tsl_st_writer *w, int index, const void *data, uint64_t bytes) {
  tsl_status st = TESSEL_OK;
  if (w->failed) return tsl_error(w->failed, "%s: the writer already failed", w->path);
  if (index < 0 || index >= w->n) {
    st = tsl_error(TESSEL_E_INTERNAL, "%s: tensor index %d outside [0, %d)", w->path, index, w->n);
    goto fail;
  }
  if (index < w->cur) {
    st = tsl_error(TESSEL_E_INTERNAL, "%s: tensor '%s' put after '%s': tensors must come in order",
                   w->path, w->tensors[index].desc.name, w->tensors[w->cur].desc.name);
    goto fail;
  }
  TSL_TRY(st, advance(w, index));
  const st_tensor *t = &w->tensors[index];
  if (bytes > t->end - t->begin - w->filled) {
    st = tsl_error(TESSEL_E_INTERNAL, "%s: tensor '%s': %" PRIu64 " more bytes after %" PRIu64
                   " overrun its %" PRIu64 " bytes", w->path, t->desc.name, bytes, w->filled,
                   t->end - t->begin);
    goto fail;
  }
  TSL_TRY(st, tsl_atomic_write(&w->file, data, (size_t)bytes));
  w->filled += bytes;
  return TESSEL_OK;
fail:
  w->failed = st;
  return st;
}

tsl_status tsl_st_writer_finish(tsl_st_writer *w) {
  tsl_status st = TESSEL_OK;
  if (w->failed) {
    st = tsl_error(w->failed, "%s: the writer failed earlier; nothing was written", w->path);
    goto fail;
  }
  /* advancing past the last tensor checks it like every other */
  TSL_TRY(st, advance(w, w->n));
  st = tsl_atomic_commit(&w->file);
fail:
  writer_free(w);
  return st;
}

void tsl_st_writer_abort(tsl_st_writer *w) {
  if (w) writer_free(w);
}

/* ------------------------------------------------------------------ reader */

struct tsl_st_file {
  char *path;
  const char *map;
  uint64_t map_bytes;
  const unsigned char *data; /* the data area: map + 8 + header length */
  int n;
  st_tensor *tensors;          /* by begin offset */
  const tsl_st_desc **by_name; /* for tsl_st_find */
  int n_meta;
  char **meta_keys, **meta_values;
};

/* A JSON number that is a non-negative integer a double holds exactly. */
static int json_uint_value(const cJSON *item, uint64_t *out) {
  if (!cJSON_IsNumber(item)) return -1;
  double v = item->valuedouble;
  if (!(v >= 0 && v <= ST_MAX_JSON_INT) || v != floor(v)) return -1;
  *out = (uint64_t)v;
  return 0;
}

static tsl_status parse_metadata(tsl_st_file *f, const cJSON *meta) {
  if (!cJSON_IsObject(meta))
    return tsl_error(TESSEL_E_IO, "%s: \"%s\" is not an object", f->path, ST_META_KEY);
  int n = cJSON_GetArraySize(meta);
  f->meta_keys = calloc((size_t)n + 1, sizeof *f->meta_keys);
  f->meta_values = calloc((size_t)n + 1, sizeof *f->meta_values);
  if (!f->meta_keys || !f->meta_values)
    return tsl_error(TESSEL_E_NOMEM, "%s: out of host memory", f->path);
  const cJSON *item;
  cJSON_ArrayForEach(item, meta) {
    if (!cJSON_IsString(item))
      return tsl_error(TESSEL_E_IO, "%s: metadata value of '%s' is not a string", f->path,
                       item->string);
    f->meta_keys[f->n_meta] = tsl_strdup(item->string);
    f->meta_values[f->n_meta] = tsl_strdup(item->valuestring);
    f->n_meta++;
    if (!f->meta_keys[f->n_meta - 1] || !f->meta_values[f->n_meta - 1]) return TESSEL_E_NOMEM;
  }
  return TESSEL_OK;
}

/* Fill t from one tensor entry, checking that its range matches its shape. */
static tsl_status parse_tensor(const tsl_st_file *f, const cJSON *entry, st_tensor *t) {
  const char *name = entry->string;
  char shape_text[128];
  uint64_t want = 0;
  if (!cJSON_IsObject(entry))
    return tsl_error(TESSEL_E_IO, "%s: tensor '%s': entry is not an object", f->path, name);
  const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(entry, "dtype");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(entry, "shape");
  const cJSON *offsets = cJSON_GetObjectItemCaseSensitive(entry, "data_offsets");
  if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offsets))
    return tsl_error(TESSEL_E_IO, "%s: tensor '%s': needs a \"dtype\" string and \"shape\" and "
                     "\"data_offsets\" arrays", f->path, name);
  if (dtype_from_name(dtype->valuestring, &t->desc.dtype) < 0)
    return tsl_error(TESSEL_E_IO, "%s: tensor '%s': unknown dtype '%s' (tessel reads F32, BF16, "
                     "F16, I32, F64, U8)", f->path, name, dtype->valuestring);
  int ndim = cJSON_GetArraySize(shape);
  if (ndim > TSL_ST_MAX_DIMS)
    return tsl_error(TESSEL_E_IO, "%s: tensor '%s': %d dimensions, tessel reads at most %d",
                     f->path, name, ndim, TSL_ST_MAX_DIMS);
  t->desc.ndim = ndim;
  for (int k = 0; k < ndim; k++) {
    uint64_t dim;
    if (json_uint_value(cJSON_GetArrayItem(shape, k), &dim) < 0)
      return tsl_error(TESSEL_E_IO, "%s: tensor '%s': shape entry %d is not a non-negative "
                       "integer", f->path, name, k);
    t->desc.shape[k] = (int64_t)dim;
  }
  if (cJSON_GetArraySize(offsets) != 2 ||
      json_uint_value(cJSON_GetArrayItem(offsets, 0), &t->begin) < 0 ||
      json_uint_value(cJSON_GetArrayItem(offsets, 1), &t->end) < 0)
    return tsl_error(TESSEL_E_IO, "%s: tensor '%s': data_offsets must be two non-negative "
                     "integers", f->path, name);
  if (t->end < t->begin)
    return tsl_error(TESSEL_E_IO, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                     "] end before they begin", f->path, name, t->begin, t->end);
  if (desc_bytes(&t->desc, &want) < 0)
    return tsl_error(TESSEL_E_IO, "%s: tensor '%s': shape %s of %s is too large: its size in bytes does not fit "
                     "in 64 bits", f->path, name, tsl_st_shape_text(t->desc.shape, t->desc.ndim, shape_text, sizeof shape_text),
                     tsl_dtype_name(t->desc.dtype));
  if (want != t->end - t->begin)
    return tsl_error(TESSEL_E_IO, "%s: tensor '%s': data_offsets [%" PRIu64 ", %" PRIu64
                     "] hold %" PRIu64 " bytes, but shape %s of %s needs %" PRIu64, f->path, name,
                     t->begin, t->end, t->end - t->begin,
                     tsl_st_shape_text(t->desc.shape, t->desc.ndim, shape_text, sizeof shape_text),
                     tsl_dtype_name(t->desc.dtype), want);
  t->desc.name = tsl_strdup(name);
  return t->desc.name ? TESSEL_OK : TESSEL_E_NOMEM;
}

static int cmp_tensor_offset(const void *a, const void *b) {
  const st_tensor *x = a, *y = b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return (x->order > y->order) - (x->order < y->order);
}

/* The ranges, in file order, must tile [0, data_len) exactly; returns the end
** of the last one. */
static tsl_status check_tiling(const tsl_st_file *f, uint64_t *data_len) {
  uint64_t at = 0;
  for (int i = 0; i < f->n; i++) {
    const st_tensor *t = &f->tensors[i];
    if (t->begin < at)
      return tsl_error(TESSEL_E_IO, "%s: tensor '%s' at [%" PRIu64 ", %" PRIu64 "] overlaps "
                       "tensor '%s' at [%" PRIu64 ", %" PRIu64 "]", f->path, t->desc.name,
                       t->begin, t->end, f->tensors[i - 1].desc.name, f->tensors[i - 1].begin,
                       f->tensors[i - 1].end);
    if (t->begin > at)
      return tsl_error(TESSEL_E_IO, "%s: bytes [%" PRIu64 ", %" PRIu64 ") of the data belong to "
                       "no tensor (a hole before '%s')", f->path, at, t->begin, t->desc.name);
    at = t->end;
  }
  *data_len = at;
  return TESSEL_OK;
}

/* Whether JSON text holds the escape \u0000: cJSON reads it as a NUL byte,
** which cuts the string it is in short (a tensor "wte\u0000x" was taken for
** "wte"). Backslashes stand only in strings, each before one escaped
** character. */
static int has_nul_escape(const char *json, uint64_t len) {
  for (uint64_t i = 0; i + 1 < len; i++) {
    if (json[i] != '\\') continue;
    if (json[i + 1] == 'u' && i + 5 < len && memcmp(json + i + 2, "0000", 4) == 0) return 1;
    i++;
  }
  return 0;
}

/* Validate and index the header JSON of `len` bytes at `json`. */
static tsl_status parse_header(tsl_st_file *f, const char *json, uint64_t len) {
  tsl_status st = TESSEL_OK;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(json, (size_t)len, &end, 0);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    long long pos = at && at >= json && at <= json + len ? (long long)(at - json) : -1;
    return tsl_error(TESSEL_E_IO, "%s: malformed header JSON (near byte %lld of %llu)", f->path,
                     pos, (unsigned long long)len);
  }
  for (; end < json + len; end++) {
    if (!strchr(" \t\r\n", *end) || *end == '\0') {
      st = tsl_error(TESSEL_E_IO, "%s: malformed header JSON: bytes after the object at byte %lld",
                     f->path, (long long)(end - json));
      goto fail;
    }
  }
  if (!cJSON_IsObject(root)) {
    st = tsl_error(TESSEL_E_IO, "%s: malformed header: the JSON is not an object", f->path);
    goto fail;
  }
  if (has_nul_escape(json, len)) {
    st = tsl_error(TESSEL_E_IO, "%s: the header holds a NUL character (\\u0000) in a string: no tensor name or "
                   "metadata may", f->path);
    goto fail;
  }
  int entries = cJSON_GetArraySize(root);
  f->tensors = calloc((size_t)entries + 1, sizeof *f->tensors);
  f->by_name = calloc((size_t)entries + 1, sizeof *f->by_name);
  if (!f->tensors || !f->by_name) {
    st = tsl_error(TESSEL_E_NOMEM, "%s: out of host memory", f->path);
    goto fail;
  }
  const cJSON *item;
  cJSON_ArrayForEach(item, root) {
    if (strcmp(item->string, ST_META_KEY) == 0) {
      if (f->meta_keys) {
        st = tsl_error(TESSEL_E_IO, "%s: \"%s\" appears twice", f->path, ST_META_KEY);
        goto fail;
      }
      TSL_TRY(st, parse_metadata(f, item));
      continue;
    }
    st_tensor *t = &f->tensors[f->n];
    TSL_TRY(st, parse_tensor(f, item, t));
    t->order = f->n++;
  }
  qsort(f->tensors, (size_t)f->n, sizeof *f->tensors, cmp_tensor_offset);
  for (int i = 0; i < f->n; i++) f->by_name[i] = &f->tensors[i].desc;
  const char *dup = sort_by_name(f->by_name, f->n);
  if (dup) {
    st = tsl_error(TESSEL_E_IO, "%s: tensor '%s' appears twice", f->path, dup);
    goto fail;
  }
fail:
  cJSON_Delete(root);
  return st;
}

tsl_status tsl_st_open(const char *path, tsl_st_file **out) {
  tsl_status st = TESSEL_OK;
  tsl_st_file *f = NULL;

  *out = NULL;
  f = calloc(1, sizeof *f);
  if (!f || !(f->path = tsl_strdup(path))) {
    st = tsl_error(TESSEL_E_NOMEM, "%s: out of host memory", path);
    goto fail;
  }
  /* a regular file only: a FIFO or device in its place is refused, never waited on */
  size_t size;
  TSL_TRY(st, tsl_map_file(path, &f->map, &size));
  f->map_bytes = size;
  if (size < 8) {
    st = tsl_error(TESSEL_E_IO, "%s: truncated: %llu bytes, too short for the 8-byte header "
                   "length", path, (unsigned long long)size);
    goto fail;
  }

  const unsigned char *p = (const unsigned char *)f->map;
  uint64_t hlen = 0;
  for (int b = 0; b < 8; b++) hlen |= (uint64_t)p[b] << (8 * b);
  if (hlen > size - 8) {
    st = tsl_error(TESSEL_E_IO, "%s: truncated: header length %llu runs past the end of the file "
                   "(%llu bytes)", path, (unsigned long long)hlen, (unsigned long long)size);
    goto fail;
  }
  if (hlen > ST_MAX_HEADER_BYTES) {
    st = tsl_error(TESSEL_E_IO, "%s: header length %llu exceeds the %llu-byte limit", path,
                   (unsigned long long)hlen, ST_MAX_HEADER_BYTES);
    goto fail;
  }
  TSL_TRY(st, parse_header(f, (const char *)p + 8, hlen));
  uint64_t data_len = 0;
  TSL_TRY(st, check_tiling(f, &data_len));
  uint64_t want = 8 + hlen + data_len;
  if (size != want) {
    st = tsl_error(TESSEL_E_IO, "%s: %s: %llu bytes, header says %llu", path,
                   size < want ? "truncated" : "trailing bytes", (unsigned long long)size,
                   (unsigned long long)want);
    goto fail;
  }
  f->data = p + 8 + hlen;
  *out = f;
  return TESSEL_OK;

fail:
  tsl_st_close(f);
  return st;
}

void tsl_st_close(tsl_st_file *f) {
  if (!f) return;
  tsl_unmap_file(f->map, (size_t)f->map_bytes);
  free_tensors(f->tensors, f->n);
  free(f->by_name);
  for (int i = 0; i < f->n_meta; i++) {
    free(f->meta_keys[i]);
    free(f->meta_values[i]);
  }
  free(f->meta_keys);
  free(f->meta_values);
  free(f->path);
  free(f);
}

int tsl_st_count(const tsl_st_file *f) { return f->n; }

const tsl_st_desc *tsl_st_desc_at(const tsl_st_file *f, int i) {
  return i >= 0 && i < f->n ? &f->tensors[i].desc : NULL;
}

int tsl_st_find(const tsl_st_file *f, const char *name) {
  tsl_st_desc key = {.name = name};
  const tsl_st_desc *kp = &key;
  const tsl_st_desc **hit = bsearch(&kp, f->by_name, (size_t)f->n, sizeof *f->by_name,
                                    cmp_desc_name);
  return hit ? (int)((const st_tensor *)*hit - f->tensors) : -1;
}

const void *tsl_st_data(const tsl_st_file *f, int i, uint64_t *bytes) {
  if (i < 0 || i >= f->n) return NULL;
  if (bytes) *bytes = f->tensors[i].end - f->tensors[i].begin;
  return f->data + f->tensors[i].begin;
}

const char *tsl_st_meta(const tsl_st_file *f, const char *key) {
  for (int i = 0; i < f->n_meta; i++)
    if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
  return NULL;
}
