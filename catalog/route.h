/*
 * route.h - a table's REST routes relative to the catalog URI, as floe
 * tells engines where to sign (s3.signer.endpoint) and where to refresh
 * credentials (client.refresh-credentials-endpoint); both PyIceberg and
 * Iceberg Java resolve them against the catalog URI.
 */
#ifndef FLOE_ROUTE_H
#define FLOE_ROUTE_H

#include "error.h"
#include "ident.h"

/* "v1/[prefix/]namespaces/<levels joined by %1F>/tables/<name>/<route>",
 * prefix (NULL or "": none), each level and name percent-encoded as a
 * path segment, route as it is. New string; NULL when out of memory. */
char *route_table(const char *prefix, const struct ns_ident *ns, const char *name,
		  const char *route) FLOE_WUR;

#endif
