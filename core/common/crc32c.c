/* core/common/crc32c.c */
#include "common/crc32c.h"

#include <pthread.h>

static uint32_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void build_table(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1; /* 0x1EDC6F41 reflected */
    table[i] = c;
  }
}

uint32_t tsl_crc32c(uint32_t crc, const void *data, size_t n) {
  const unsigned char *p = data;
  pthread_once(&table_once, build_table);
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

uint32_t tsl_crc32c_masked(const void *data, size_t n) {
  uint32_t crc = tsl_crc32c(0, data, n);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
