/*
 * wording.c - the client's wording of not-found and already-exists errors
 * (wording.h): Iceberg's "<Thing> does not exist: <name>".
 */
#include "wording.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ports.h"

/* kind with "<what> <ns>[.<name>]", the names as Iceberg prints them:
 * levels and table name joined by dots. */
static bool word_named(struct floe_error *err, enum floe_errkind kind, const char *what,
		       const struct ns_ident *ns, const char *name)
{
	char *shown = ident_ns_display(ns);
	const char *n = shown ? shown : "?";

	if (name != NULL)
		floe_err(err, kind, "%s: %s.%s", what, n, name);
	else
		floe_err(err, kind, "%s: %s", what, n);
	free(shown);
	return false;
}

bool wording_no_such_namespace(const struct ns_ident *ns, struct floe_error *err)
{
	return word_named(err, FE_NO_SUCH_NAMESPACE, "Namespace does not exist", ns, NULL);
}

bool wording_no_such_table(const struct ns_ident *ns, const char *name, struct floe_error *err)
{
	return word_named(err, FE_NO_SUCH_TABLE, "Table does not exist", ns, name);
}

bool wording_table_exists(const struct ns_ident *ns, const char *name, struct floe_error *err)
{
	return word_named(err, FE_ALREADY_EXISTS, "Table already exists", ns, name);
}

bool wording_no_such_view(const struct ns_ident *ns, const char *name, struct floe_error *err)
{
	return word_named(err, FE_NO_SUCH_VIEW, "View does not exist", ns, name);
}

bool wording_name_taken(struct store *s, const struct ns_ident *ns, const char *name, bool view,
			struct floe_error *err)
{
	char kind[16] = "";
	struct floe_error ignored;

	/* Unknown (the database went away): the kind asked for. */
	if (!store_name_kind(s, ns, name, kind, sizeof(kind), &ignored) || kind[0] == '\0')
		(void)snprintf(kind, sizeof(kind), "%s", view ? "view" : "table");
	if (strcmp(kind, "view") == 0)
		return word_named(err, FE_ALREADY_EXISTS,
				  view ? "View already exists"
				       : "View with same name already exists",
				  ns, name);
	return word_named(err, FE_ALREADY_EXISTS,
			  view ? "Table with same name already exists" : "Table already exists", ns,
			  name);
}

bool wording_rename_taken(struct store *s, bool view, const struct ns_ident *from_ns,
			  const char *from, const struct ns_ident *to_ns, const char *to,
			  struct floe_error *err)
{
	char kind[16] = "";
	struct floe_error ignored;

	if (!store_name_kind(s, to_ns, to, kind, sizeof(kind), &ignored) || kind[0] == '\0')
		(void)snprintf(kind, sizeof(kind), "%s", view ? "view" : "table");
	if (!view && strcmp(kind, "table") == 0)
		return wording_table_exists(to_ns, to, err);
	char *a = ident_ns_display(from_ns);
	char *b = ident_ns_display(to_ns);
	floe_err(err, FE_ALREADY_EXISTS, "Cannot rename %s.%s to %s.%s. %s already exists",
		 a ? a : "?", from, b ? b : "?", to, strcmp(kind, "view") == 0 ? "View" : "Table");
	free(a);
	free(b);
	return false;
}

bool views_word_error(struct store *s, const struct ns_ident *ns, const char *name,
		      struct floe_error *err)
{
	if (err->kind == FE_NO_SUCH_NAMESPACE)
		return ns_word_error(ns, err);
	if (err->kind == FE_ALREADY_EXISTS && strcmp(err->sqlstate, "23505") == 0)
		return floe_err(err, FE_ALREADY_EXISTS,
				"A view with this uuid is already registered");
	if (err->kind == FE_ALREADY_EXISTS)
		return wording_name_taken(s, ns, name, true, err);
	if (err->kind != FE_NO_SUCH_VIEW)
		return false;
	return wording_no_such_view(ns, name, err);
}

bool wording_no_such_ref(const char *ref, struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_REFERENCE, "Reference does not exist: %s", ref);
}

bool wording_no_such_snapshot(long long id, struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_SNAPSHOT, "Snapshot does not exist: %lld", id);
}

bool wording_no_such_hook(const char *id, struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_HOOK, "Audit hook does not exist: %s", id);
}

bool wording_no_such_subscription(const char *id, struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_SUBSCRIPTION, "Event subscription does not exist: %.64s",
			id);
}

bool wording_no_such_run(const char *id, struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_RUN, "Write-audit-publish run does not exist: %s", id);
}

bool wording_no_such_warehouse(const char *name, struct floe_error *err)
{
	return floe_err(err, FE_NO_SUCH_WAREHOUSE, "Warehouse does not exist: %.255s", name);
}

bool ns_word_error(const struct ns_ident *ns, struct floe_error *err)
{
	enum floe_errkind kind = err->kind;

	if (kind == FE_NO_SUCH_NAMESPACE)
		return wording_no_such_namespace(ns, err);
	if (kind == FE_ALREADY_EXISTS)
		return word_named(err, kind, "Namespace already exists", ns, NULL);
	if (kind != FE_NAMESPACE_NOT_EMPTY)
		return false;
	/* As Iceberg's catalogs word it: "Namespace a is not empty." */
	char *shown = ident_ns_display(ns);
	floe_err(err, kind, "Namespace %s is not empty.", shown ? shown : "?");
	free(shown);
	return false;
}

bool tables_word_error(struct store *s, const struct ns_ident *ns, const char *name,
		       const char *uuid, bool ns_error, struct floe_error *err)
{
	bool ns_exists = false;

	if (err->kind == FE_NO_SUCH_NAMESPACE)
		return ns_word_error(ns, err);
	if (err->kind == FE_ALREADY_EXISTS && strcmp(err->sqlstate, "23505") == 0)
		return floe_err(err, FE_ALREADY_EXISTS,
				"A table with uuid %s is already registered", uuid ? uuid : "?");
	if (err->kind == FE_ALREADY_EXISTS)
		return wording_name_taken(s, ns, name, false, err);
	if (err->kind != FE_NO_SUCH_TABLE)
		return false;
	if (!store_ns_exists(s, ns, &ns_exists, err))
		return false;
	if (!ns_exists && ns_error)
		return wording_no_such_namespace(ns, err);
	return wording_no_such_table(ns, name, err);
}
