/*
** kernels/base.h — the few macros every layer uses, at the bottom layer:
** the kernels depend on nothing above them, and the core includes this
** through common/util.h.
*/
#ifndef TSL_KERNELS_BASE_H
#define TSL_KERNELS_BASE_H

#define TSL_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define TSL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TSL_MAX(a, b) ((a) > (b) ? (a) : (b))
/* A macro's value as a string literal: TSL_STR(32) is "32". */
#define TSL_STR_(x) #x
#define TSL_STR(x) TSL_STR_(x)

#endif
