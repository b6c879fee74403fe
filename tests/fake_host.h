/*
** tests/fake_host.h — for unit tests that drive plugin or SDK code with a
** host table of their own: a set_error that prints the message, so a
** failing call says why beside the CHECK that caught it.
*/
#ifndef TSL_TEST_FAKE_HOST_H
#define TSL_TEST_FAKE_HOST_H

#include <stdarg.h>
#include <stdio.h>

#include "tessel/plugin.h"

static tessel_status fake_host_set_error(tessel_host *h, tessel_status st, const char *fmt, ...) {
  (void)h;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  return st;
}

#endif
