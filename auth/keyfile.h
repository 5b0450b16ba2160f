/*
 * keyfile.h - the rule every file of key material floe reads obeys (the
 * signing keys, the hook secrets key): a regular file, owned by floe's
 * user, that no other user may read or write; and reading one whole.
 */
#ifndef FLOE_KEYFILE_H
#define FLOE_KEYFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/* Why the open file fd must not be used as key material, as a static
 * phrase ("it is not a regular file"), or NULL when it may; *st receives
 * its status either way (zeroed when fstat fails). */
const char *keyfile_refusal(int fd, struct stat *st);

/* Reads fd to its end or cap bytes, whichever comes first, into buf;
 * *len is how many. False when a read fails. */
bool keyfile_read(int fd, void *buf, size_t cap, size_t *len);

#endif
