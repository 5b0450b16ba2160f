/*
 * keyfile.c - the checks on an open file of key material.
 */
#include "keyfile.h"

#include <string.h>
#include <unistd.h>

const char *keyfile_refusal(int fd, struct stat *st)
{
	if (fstat(fd, st) != 0) {
		memset(st, 0, sizeof(*st));
		return "it is not a regular file";
	}
	if (!S_ISREG(st->st_mode))
		return "it is not a regular file";
	if (st->st_uid != geteuid())
		return "it is not owned by floe's user";
	if ((st->st_mode & 077) != 0)
		return "it is group- or world-accessible (chmod 0600)";
	return NULL;
}
