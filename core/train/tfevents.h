/*
** core/train/tfevents.h — scalars for TensorBoard (`log.tensorboard: DIR`).
**
** An event file is a sequence of TFRecords — a little-endian uint64 length,
** the masked CRC-32C of those 8 bytes, the data, the masked CRC-32C of the
** data — each holding one serialized tensorflow.Event protobuf. The file
** starts with an Event carrying file_version "brain.Event:2"; each step is
** one Event with a Summary of simple_value scalars. A resumed run starts a
** new file with a SessionLog START at its first step, which tells
** TensorBoard to drop what an earlier file logged past that step, so the
** charts show one trajectory. The protobuf encoding is the few fields
** written here, by hand: the wire format of a handful of scalars does not
** justify a code generator and a runtime library.
*/
#ifndef TSL_TFEVENTS_H
#define TSL_TFEVENTS_H

#include <stdint.h>
#include <stdio.h>
#include "common/status.h"

typedef struct tsl_tfevents {
  FILE *f;
  char *path;
} tsl_tfevents;

/* Create DIR (and parents) and a new event file in it,
** events.out.tfevents.<seconds>.<host>.<pid>, with its version record;
** `resume_step` > 0 adds the SessionLog START at that step. */
tsl_status tsl_tfevents_open(tsl_tfevents *w, const char *dir, int64_t resume_step);
/* One Event at `step` with n scalars (tags[i] = values[i]); NAN values
** are left out. Flushed, so TensorBoard sees each step as it ends. */
tsl_status tsl_tfevents_scalars(tsl_tfevents *w, int64_t step, const char *const *tags, const double *values,
                                int n);
void tsl_tfevents_close(tsl_tfevents *w);

#endif
