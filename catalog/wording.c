/*
 * wording.c - the client's wording of the store's not-found and
 * already-exists errors (wording.h).
 */
#include "wording.h"

#include <stdlib.h>
#include <string.h>

#include "ports.h"

bool ns_word_error(const struct ns_ident *ns, struct floe_error *err)
{
	enum floe_errkind kind = err->kind;
	char *name = NULL;

	if (kind != FE_NO_SUCH_NAMESPACE && kind != FE_ALREADY_EXISTS &&
	    kind != FE_NAMESPACE_NOT_EMPTY)
		return false;
	name = ident_ns_display(ns);
	const char *shown = name ? name : "?";
	if (kind == FE_NO_SUCH_NAMESPACE)
		floe_err(err, kind, "namespace does not exist: %s", shown);
	else if (kind == FE_ALREADY_EXISTS)
		floe_err(err, kind, "namespace already exists: %s", shown);
	else
		floe_err(err, kind, "namespace is not empty: %s holds tables or namespaces", shown);
	free(name);
	return false;
}

bool tables_word_error(struct store *s, const struct ns_ident *ns, const char *name,
		       const char *uuid, bool ns_error, struct floe_error *err)
{
	char *shown = NULL;
	bool ns_exists = false;

	if (err->kind == FE_NO_SUCH_NAMESPACE)
		return ns_word_error(ns, err);
	if (err->kind == FE_ALREADY_EXISTS && strcmp(err->sqlstate, "23505") == 0)
		return floe_err(err, FE_ALREADY_EXISTS,
				"a table with uuid %s is already registered", uuid ? uuid : "?");
	if (err->kind != FE_ALREADY_EXISTS && err->kind != FE_NO_SUCH_TABLE)
		return false;
	if (err->kind == FE_NO_SUCH_TABLE && !store_ns_exists(s, ns, &ns_exists, err))
		return false;
	shown = ident_ns_display(ns);
	const char *n = shown ? shown : "?";
	if (err->kind == FE_ALREADY_EXISTS)
		floe_err(err, FE_ALREADY_EXISTS, "table already exists: %s.%s", n, name);
	else if (ns_exists)
		floe_err(err, FE_NO_SUCH_TABLE, "table does not exist: %s.%s", n, name);
	else if (ns_error)
		floe_err(err, FE_NO_SUCH_NAMESPACE, "namespace does not exist: %s", n);
	else
		floe_err(err, FE_NO_SUCH_TABLE,
			 "table does not exist: %s.%s (namespace %s does not exist)", n, name, n);
	free(shown);
	return false;
}
