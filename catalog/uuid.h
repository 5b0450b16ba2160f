/*
 * uuid.h - random (version 4) UUIDs for table uuids, metadata file names
 * and delivery ids.
 */
#ifndef FLOE_UUID_H
#define FLOE_UUID_H

#include <stdbool.h>

#define UUID_STR_LEN 37 /* 36 characters and the NUL */

/* Writes a new random UUID in canonical lower-case form. Returns false
 * only when the kernel's random source fails. */
bool uuid_v4(char out[UUID_STR_LEN]);

#endif
