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

/* True when s is a UUID in canonical form: 8-4-4-4-12 hex digits (either
 * case) and nothing else. */
bool uuid_is_canonical(const char *s);

#endif
