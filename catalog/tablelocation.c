/*
 * tablelocation.c - where tables and views lie (tablewrite.h, table.h):
 * the default location of a namespace and of a new object in it, and the
 * rules every location floe writes below must keep: inside the warehouse,
 * following no symbolic link, of a length it can write under, neither
 * holding nor held by another object's location.
 */
#include "table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "location.h"
#include "ports.h"
#include "tablewrite.h"
#include "uuid.h"
#include "wording.h"

/* Appends name to buf as one path segment: '/', '\', '%' and the whole
 * names "." and ".." are percent-escaped. */
static void append_segment(char *buf, size_t cap, size_t *n, const char *name)
{
	bool dots = strcmp(name, ".") == 0 || strcmp(name, "..") == 0;

	if (*n + 1 < cap)
		buf[(*n)++] = '/';
	for (const char *p = name; *p; p++) {
		if (*p == '/' || *p == '\\' || *p == '%' || (dots && *p == '.')) {
			if (*n + 3 < cap) {
				(void)snprintf(buf + *n, 4, "%%%02X", (unsigned char)*p);
				*n += 3;
			}
		} else if (*n + 1 < cap) {
			buf[(*n)++] = *p;
		}
	}
	buf[*n] = '\0';
}

/* <root>/<segs[0]>/.../<segs[n-1]>, each segment escaped (new string,
 * or NULL when out of memory). */
static char *location_below(const char *root, char *const *segs, size_t n)
{
	size_t cap = strlen(root) + 4;
	size_t len;
	char *buf;

	for (size_t i = 0; i < n; i++)
		cap += strlen(segs[i]) * 3 + 1;
	buf = malloc(cap);
	if (buf == NULL)
		return NULL;
	len = (size_t)snprintf(buf, cap, "%s", root);
	for (size_t i = 0; i < n; i++)
		append_segment(buf, cap, &len, segs[i]);
	return buf;
}

/* The suffix a namespace level gets when a table sits at its directory. */
#define NS_DIR_SUFFIX "-ns"

bool table_namespace_location(struct store *s, const char *warehouse, const struct ns_ident *ns,
			      char **out, struct floe_error *err)
{
	char *segs[IDENT_MAX_LEVELS] = { 0 };
	char *prefixes[IDENT_MAX_LEVELS] = { 0 };
	char *taken = NULL;
	size_t n = ns->nlevels;
	bool ok = false;

	*out = NULL;
	for (size_t i = 0; i < n; i++) {
		segs[i] = strdup(ns->levels[i]);
		if (segs[i] == NULL)
			goto oom;
	}
	/*
	 * A table's default location is its namespace's directory plus its
	 * name, so table a.b sits where namespace a.b's directory would be.
	 * A level whose directory is a table's location (or a dropped one's
	 * waiting for its purge) gets a suffix, so the namespace's tables
	 * never lie inside another table. Each round fixes the shortest such
	 * level; a renamed one may be taken too, hence the bound.
	 */
	for (size_t round = 0; n > 0 && round <= 2 * n; round++) {
		size_t k;
		for (k = 0; k < n; k++) {
			free(prefixes[k]);
			prefixes[k] = location_below(warehouse, segs, k + 1);
			if (prefixes[k] == NULL)
				goto oom;
		}
		free(taken);
		taken = NULL;
		if (!store_location_taken(s, (const char *const *)prefixes, n, &taken, err))
			goto done;
		for (k = 0; taken != NULL && k < n && strcmp(prefixes[k], taken) != 0; k++)
			;
		if (taken == NULL || k == n)
			break;
		size_t l = strlen(segs[k]);
		char *longer = malloc(l + sizeof(NS_DIR_SUFFIX));
		if (longer == NULL)
			goto oom;
		memcpy(longer, segs[k], l);
		memcpy(longer + l, NS_DIR_SUFFIX, sizeof(NS_DIR_SUFFIX));
		free(segs[k]);
		segs[k] = longer;
	}
	*out = location_below(warehouse, segs, n);
	if (*out == NULL)
		goto oom;
	ok = true;
	goto done;
oom:
	floe_err(err, FE_INTERNAL, "out of memory");
done:
	for (size_t i = 0; i < n; i++) {
		free(segs[i]);
		free(prefixes[i]);
	}
	free(taken);
	return ok;
}

/* floe writes files only inside its warehouse, and follows no symbolic
 * link below it. Checked on the canonical form. */
bool table_location_writable(const struct table_env *env, const char *location,
			     struct floe_error *err)
{
	char *canon = location_canonical(location, err);
	bool ok;

	if (canon == NULL)
		return false;
	ok = location_within(canon, env->warehouse) &&
	     strcmp(location_path(canon), env->warehouse_path) != 0;
	if (!ok) {
		free(canon);
		return floe_err(err, FE_BAD_REQUEST,
				"table location %s is outside the warehouse %s", location,
				env->warehouse);
	}
	ok = fileio_location_fits(location_path(canon), err);
	free(canon);
	return ok && fileio_check_beneath(location, env->warehouse_path, err);
}

/* Answers a clash with table `other` (freed here): 409 when a table or
 * view of the same name exists (it was created meanwhile), else 400. */
static bool clash_error(struct store *s, const struct ns_ident *ns, const char *name,
			const char *location, char *other, struct floe_error *err)
{
	char kind[16] = "";
	struct floe_error ignored;

	if (name != NULL && store_name_kind(s, ns, name, kind, sizeof(kind), &ignored) &&
	    kind[0] != '\0') {
		wording_name_taken(s, ns, name, false, err);
	} else {
		floe_err(err, FE_BAD_REQUEST, "table location %s overlaps the location of table %s",
			 location, other);
	}
	free(other);
	return false;
}

/* A table location floe may use: inside the warehouse, and neither
 * holding nor held by another table's location (a purge of one would
 * take the other's files). uuid: the table's own, or NULL. This look is
 * an early answer only; table_location_claim decides. */
bool table_location_usable(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			   const char *name, const char *location, const char *uuid,
			   struct floe_error *err)
{
	char *other = NULL;
	char *canon = NULL;
	bool ok;

	if (!table_location_writable(env, location, err))
		return false;
	canon = location_canonical(location, err);
	if (canon == NULL)
		return false;
	ok = store_table_location_clash(s, canon, uuid, &other, err);
	free(canon);
	if (!ok)
		return false;
	if (other != NULL)
		return clash_error(s, ns, name, location, other, err);
	return true;
}

/* The no-overlap rule, decided: inside the transaction that then inserts
 * or swaps the row, under locks every replica takes for this on the
 * location and the locations holding it, so two nested locations cannot
 * both pass while disjoint ones never wait on each other. key: the
 * canonical location. */
bool table_location_claim(struct store *s, const struct ns_ident *ns, const char *name,
			  const char *location, const char *key, const char *uuid,
			  struct floe_error *err)
{
	char *other = NULL;

	if (!store_location_lock(s, key, err) ||
	    !store_table_location_clash(s, key, uuid, &other, err))
		return false;
	if (other != NULL)
		return clash_error(s, ns, name, location, other, err);
	return true;
}

char *table_default_location(struct store *s, const struct table_env *env,
			     const struct ns_ident *ns, const char *name, const char *uuid,
			     struct floe_error *err)
{
	char *nsloc = NULL;
	char *other = NULL;

	if (!table_namespace_location(s, env->warehouse, ns, &nsloc, err))
		return NULL;
	char *segs[1] = { (char *)name };
	char *location = location_below(nsloc, segs, 1);
	free(nsloc);
	if (location == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	/* The default location may hold a renamed table's files: then this
	 * one gets a location of its own next to it. */
	char *key = location_canonical(location, err);
	bool looked = key != NULL && store_table_location_clash(s, key, NULL, &other, err);
	free(key);
	if (!looked) {
		free(location);
		return NULL;
	}
	if (other == NULL)
		return location;
	free(other);
	size_t len = strlen(location) + UUID_STR_LEN + 2;
	char *unique = malloc(len);
	if (unique != NULL)
		(void)snprintf(unique, len, "%s-%s", location, uuid);
	else
		floe_err(err, FE_INTERNAL, "out of memory");
	free(location);
	return unique;
}
