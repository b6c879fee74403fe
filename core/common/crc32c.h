/*
** core/common/crc32c.h — CRC-32C (Castagnoli), as TensorBoard's event files
** use it. zlib has only the IEEE CRC-32 and Debian packages no C library
** for this polynomial, so it is here: the reflected table-driven form.
*/
#ifndef TSL_CRC32C_H
#define TSL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes, continuing from `crc` (0 to start). */
uint32_t tsl_crc32c(uint32_t crc, const void *data, size_t n);
/* TFRecord's masked form: rotate right by 15 and add 0xa282ead8. */
uint32_t tsl_crc32c_masked(const void *data, size_t n);

#endif
