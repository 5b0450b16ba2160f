/*
 * keyfile.h - the rule every file of key material floe reads obeys (the
 * signing keys, the hook secrets key): a regular file, owned by floe's
 * user, that no other user may read or write.
 */
#ifndef FLOE_KEYFILE_H
#define FLOE_KEYFILE_H

#include <sys/stat.h>

/* Why the open file fd must not be used as key material, as a static
 * phrase ("it is not a regular file"), or NULL when it may; *st receives
 * its status either way (zeroed when fstat fails). */
const char *keyfile_refusal(int fd, struct stat *st);

#endif
