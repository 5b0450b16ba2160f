/*
 * delegation.h - the X-Iceberg-Access-Delegation header: which ways of
 * reaching a table's storage a client asks the catalog for
 * ("vended-credentials", "remote-signing").
 */
#ifndef FLOE_DELEGATION_H
#define FLOE_DELEGATION_H

#include <stdbool.h>

/* Whether header (a comma-separated list; NULL: absent) names mechanism,
 * compared without case and surrounding blanks. Other values are
 * ignored. */
bool delegation_asks(const char *header, const char *mechanism);

#endif
