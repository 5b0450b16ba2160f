/*
 * namespace.h - the namespace operations of the Iceberg REST API: request
 * validation and answer shapes. Persistence is the store's.
 */
#ifndef FLOE_NAMESPACE_H
#define FLOE_NAMESPACE_H

#include <stdbool.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"

struct store;
struct principal;
struct table_env;

#define NS_PAGE_SIZE_DEFAULT 100
#define NS_PAGE_SIZE_MAX 1000

/* Pagination as the Iceberg spec has it: without a page token, everything
 * in one answer; with one (even empty), pages of page_size. */
struct page_request {
	bool paginate;
	long page_size;
	struct ns_ident after; /* empty: from the start */
};

/* Parses the pageToken and pageSize query values (either may be NULL,
 * both still percent-encoded). FE_BAD_REQUEST on a bad value. */
bool page_request_parse(const char *token, const char *size, struct page_request *out,
			struct floe_error *err) FLOE_WUR;

/* Frees what page_request_parse allocated. */
void page_request_clear(struct page_request *page);

/* The opaque token that resumes a listing after `last` (caller frees). */
char *page_token_encode(const struct ns_ident *last);

/* Checks that v is a JSON object whose values are all strings; field names
 * it in messages. */
bool ns_check_string_map(const json_t *v, const char *field, struct floe_error *err) FLOE_WUR;

/* POST /namespaces: returns the answer {"namespace", "properties"}
 * (new reference) or NULL with err set. Properties without "location"
 * are answered with the namespace's default location below env's
 * warehouse (the root URL), which is not stored. The namespace and its
 * namespace.created audit event (by env's principal) are one
 * transaction. */
json_t *ns_create(struct store *s, const struct table_env *env, const json_t *body,
		  struct floe_error *err) FLOE_WUR;

/* GET /namespaces/{ns}: {"namespace", "properties"}, with the default
 * "location" as ns_create answers it. */
json_t *ns_load(struct store *s, const char *warehouse, const struct ns_ident *ns,
		struct floe_error *err) FLOE_WUR;

/* HEAD /namespaces/{ns}: sets *exists. */
bool ns_exists(struct store *s, const struct ns_ident *ns, bool *exists,
	       struct floe_error *err) FLOE_WUR;

/* DELETE /namespaces/{ns}, with its namespace.dropped audit event (by
 * env's principal, naming the control properties it set) in the same
 * transaction. FE_NO_SUCH_NAMESPACE; FE_NAMESPACE_NOT_EMPTY when it holds
 * tables or namespaces. */
bool ns_drop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
	     struct floe_error *err) FLOE_WUR;

/* GET /namespaces?parent=: {"namespaces", "next-page-token"}. parent may
 * be NULL for the top level. With who (NULL: authentication off), only the
 * namespaces who may see; whether who may list parent at all is asked
 * before (access_check_listing, by the gate). */
json_t *ns_list(struct store *s, const struct principal *who, const struct ns_ident *parent,
		const struct page_request *page, struct floe_error *err) FLOE_WUR;

/* POST /namespaces/{ns}/properties: {"updated", "removed", "missing"}.
 * A key both set and removed is FE_UNPROCESSABLE. Weakening a control
 * property (floe.wap.required, floe.wap.separation-of-duties) is
 * FE_FORBIDDEN unless reason (the control route) is given; a change of one
 * writes its control event, by env's principal, in the same transaction. */
json_t *ns_update_properties(struct store *s, const struct ns_ident *ns, const json_t *body,
			     const struct table_env *env, const char *reason,
			     struct floe_error *err) FLOE_WUR;

#endif
