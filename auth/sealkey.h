/*
 * sealkey.h - the key file that seal.h's secrets are sealed under: exactly
 * SEAL_KEY_LEN raw bytes, outside the database, made once when floe owns
 * where it lives. Which file, and what is sealed with it, is the caller's
 * business.
 */
#ifndef FLOE_SEALKEY_H
#define FLOE_SEALKEY_H

#include <stdbool.h>

#include "error.h"
#include "seal.h"

/*
 * Reads the key at path into k: a regular file (a symbolic link is
 * refused), owned by the effective user, without any group or world
 * permission, of exactly SEAL_KEY_LEN bytes. With create, a path that
 * does not exist is made first: SEAL_KEY_LEN random bytes written to a
 * temporary file of mode 0600 beside it, fsynced, and linked to path,
 * which fails when another process made it meanwhile, so every floe
 * starting at once reads the one key that won; then the directory is
 * fsynced. *created says whether this call made it. False with
 * FE_INTERNAL and a message naming the file and the reason.
 */
bool sealkey_load(const char *path, bool create, struct seal_key *k, bool *created,
		  struct floe_error *err) FLOE_WUR;

#endif
