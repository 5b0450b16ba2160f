/*
 * keyfile.c - the checks on an open file of key material.
 */
#include "keyfile.h"

#include <errno.h>
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

bool keyfile_read(int fd, void *buf, size_t cap, size_t *len)
{
	unsigned char *p = buf;

	*len = 0;
	while (*len < cap) {
		ssize_t n = read(fd, p + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		if (n == 0)
			break;
		*len += (size_t)n;
	}
	return true;
}
