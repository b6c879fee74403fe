/*
** core/ckpt/safetensors.h — reading and writing safetensors files.
**
** Format: 8-byte little-endian header length N, N bytes of JSON
** {"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
**  ..., "__metadata__": {"key": "value", ...}}, then the data. Offsets are
** relative to the end of the header. The JSON is built and parsed with cJSON.
**
** Writing streams: the writer is given every tensor's name, dtype and shape
** up front, writes the header, then takes each tensor's bytes in order, so
** a large model never needs to be in host memory at once. The file is
** written under a temporary name and renamed by tsl_st_writer_finish after
** fsync; tsl_st_writer_abort removes it. The JSON is padded with spaces to
** a multiple of 8 bytes so the data area starts aligned.
**
** Reading validates the whole file before any tensor is used: header length
** within the file, JSON well-formed, every dtype known, every offset range
** inside the data area with end - begin = numel · dtype size, ranges not
** overlapping and, as the safetensors spec requires, leaving no holes (they
** tile [0, end of the last range)), and the file size equal to 8 + N + the
** end of the last range. Any failure is a TESSEL_E_IO error that names the
** file and the problem ("truncated: 1234 bytes, header says 5678"). Limits:
** at most TSL_ST_MAX_DIMS dimensions, header at most 100 MB, integers up to
** 2^53 (cJSON reads numbers as doubles).
**
** Misusing the writer (bad descriptions, out-of-order or oversized puts,
** finishing early) is TESSEL_E_INTERNAL: a bug in the caller.
*/
#ifndef TSL_SAFETENSORS_H
#define TSL_SAFETENSORS_H

#include <stdint.h>
#include "common/status.h"

#define TSL_ST_MAX_DIMS 4

typedef struct tsl_st_desc {
  const char *name;
  tessel_dtype dtype; /* TESSEL_F32, TESSEL_BF16, TESSEL_F16, TESSEL_I32, TESSEL_F64, TESSEL_U8 */
  int ndim;
  int64_t shape[TSL_ST_MAX_DIMS];
} tsl_st_desc;

/* "[a, b, ...]" of ndim sizes into buf (cut to cap), for messages. */
char *tsl_st_shape_text(const int64_t *shape, int ndim, char *buf, size_t cap);

typedef struct tsl_st_writer tsl_st_writer;

/* Begin a file with n tensors; metadata is n_meta key/value string pairs
** (keys[i], values[i]); may be 0. Names must be unique. Tensors are laid out
** in the order given. On failure *out is NULL and no file is left. */
tsl_status tsl_st_writer_begin(const char *path, const tsl_st_desc *descs, int n,
                               const char *const *meta_keys, const char *const *meta_values,
                               int n_meta, tsl_st_writer **out);
/* Append the bytes of tensor `index`; tensors must come in order 0..n-1 and
** `bytes` must equal the tensor's size. May be called several times per
** tensor to stream it in pieces; a tensor of 0 bytes need not be put. After
** a failed put the writer only accepts abort (or finish, which fails). */
tsl_status tsl_st_writer_put(tsl_st_writer *w, int index, const void *data, uint64_t bytes);
/* Check every tensor was fully written, fsync, rename into place. Consumes
** the writer whether or not it succeeds; on failure the temporary file is
** removed and `path` is untouched. */
tsl_status tsl_st_writer_finish(tsl_st_writer *w);
void tsl_st_writer_abort(tsl_st_writer *w);

typedef struct tsl_st_file tsl_st_file;

tsl_status tsl_st_open(const char *path, tsl_st_file **out);
void tsl_st_close(tsl_st_file *f);
int tsl_st_count(const tsl_st_file *f);
/* The i-th tensor in file order (by data offset); NULL out of range. */
const tsl_st_desc *tsl_st_desc_at(const tsl_st_file *f, int i);
/* Index of the named tensor or -1. */
int tsl_st_find(const tsl_st_file *f, const char *name);
/* Pointer to tensor i's bytes (memory-mapped; valid until close); NULL for
** an index out of range. Files whose header was not padded to 8 bytes give
** unaligned pointers: copy out with memcpy. */
const void *tsl_st_data(const tsl_st_file *f, int i, uint64_t *bytes);
/* A __metadata__ value, or NULL. */
const char *tsl_st_meta(const tsl_st_file *f, const char *key);

/* Bytes per element of a dtype (0 if unknown), and its safetensors name
** ("F32"...; "?" if unknown). */
int tsl_dtype_size(tessel_dtype dtype);
const char *tsl_dtype_name(tessel_dtype dtype);

#endif
