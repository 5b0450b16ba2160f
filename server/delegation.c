/*
 * delegation.c - reads the X-Iceberg-Access-Delegation list.
 */
#include "delegation.h"

#include <string.h>
#include <strings.h>

bool delegation_asks(const char *header, const char *mechanism)
{
	size_t ml = strlen(mechanism);

	if (header == NULL)
		return false;
	for (const char *p = header; *p != '\0';) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		size_t n = strcspn(p, ",");
		size_t t = n;
		while (t > 0 && (p[t - 1] == ' ' || p[t - 1] == '\t'))
			t--;
		if (t == ml && strncasecmp(p, mechanism, ml) == 0)
			return true;
		p += n;
	}
	return false;
}
