/*
 * uuid.c - version 4 UUIDs from the kernel's random source.
 */
#include "uuid.h"

#include <ctype.h>
#include <stdio.h>
#include <sys/random.h>

bool uuid_v4(char out[UUID_STR_LEN])
{
	unsigned char b[16];

	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return false;
	b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
	b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
	(void)snprintf(out, UUID_STR_LEN,
		       "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		       "%02x%02x%02x%02x%02x%02x",
		       b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		       b[12], b[13], b[14], b[15]);
	return true;
}

bool uuid_is_canonical(const char *s)
{
	size_t i;

	if (s == NULL)
		return false;
	for (i = 0; i < UUID_STR_LEN - 1; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (s[i] == '\0')
			return false;
		if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
			return false;
	}
	return s[i] == '\0';
}
