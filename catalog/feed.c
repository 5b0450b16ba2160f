/*
 * feed.c - the change feed read as the Iceberg REST events endpoint
 * (apache/iceberg#12584): QueryEventsRequest in, QueryEventsResponse out.
 * Each event is one change_events row (migration 0020); the events of
 * one transaction share a request-id and say how many they are.
 */
#include "feed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "ident.h"
#include "ports.h"
#include "position.h"
#include "rowjson.h"

/* The longest list of one filter, joined. */
#define FEED_FILTER_MAX ((size_t)64 * 1024)
/* 9999-12-31T23:59:59.999Z: the latest time a bound needs to name. */
#define FEED_LAST_MS 253402300799999LL

static const char *const operations[] = {
	"create-table",
	"register-table",
	"drop-table",
	"update-table",
	"rename-table",
	"create-view",
	"drop-view",
	"update-view",
	"rename-view",
	"create-namespace",
	"update-namespace-properties",
	"drop-namespace",
};

static bool known_operation(const char *op)
{
	for (size_t i = 0; i < sizeof(operations) / sizeof(operations[0]); i++)
		if (strcmp(op, operations[i]) == 0)
			return true;
	/* A custom type: x- then letters, digits, '-', '_' or '.'. */
	if (strncmp(op, "x-", 2) != 0 || op[2] == '\0')
		return false;
	for (const char *p = op + 2; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return false;
	return true;
}

/* A filter list's text, joined into b: *out (NULL for an empty list,
 * which is no filter). */
static bool joined(struct buf *b, size_t n, const char *field, char **out, struct floe_error *err)
{
	size_t len;

	if (b->status != BUF_OK) {
		enum buf_status st = b->status;
		buf_free(b);
		return st == BUF_FULL
			       ? floe_err(err, FE_BAD_REQUEST, "field '%s' is too long", field)
			       : floe_err(err, FE_INTERNAL, "out of memory");
	}
	if (n == 0) {
		buf_free(b);
		return true;
	}
	*out = buf_take(b, &len);
	return *out != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

/* Joins the strings of array field (each passing ok, when given) with
 * \x1f into *out (NULL when absent; caller frees). */
static bool string_list(const json_t *body, const char *field, bool (*ok)(const char *),
			const char *what, char **out, struct floe_error *err)
{
	const json_t *v = json_object_get(body, field);
	struct buf b;
	size_t i;
	json_t *e;

	*out = NULL;
	buf_init(&b, FEED_FILTER_MAX);
	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_array(v))
		return floe_err(err, FE_BAD_REQUEST, "field '%s' must be an array of strings",
				field);
	json_array_foreach(v, i, e) {
		const char *s = json_string_value(e);
		if (s == NULL || *s == '\0' || strchr(s, '\x1f') != NULL) {
			buf_free(&b);
			return floe_err(err, FE_BAD_REQUEST,
					"field '%s' must be an array of strings", field);
		}
		if (ok != NULL && !ok(s)) {
			buf_free(&b);
			return floe_err(err, FE_BAD_REQUEST,
					"%s '%.100s' in '%s' is not one floe knows", what, s,
					field);
		}
		if (i > 0)
			(void)buf_append(&b, "\x1f", 1);
		(void)buf_append(&b, s, strlen(s));
	}
	return joined(&b, json_array_size(v), field, out, err);
}

static bool object_type(const char *t)
{
	return strcmp(t, "namespace") == 0 || strcmp(t, "table") == 0 || strcmp(t, "view") == 0;
}

/* catalog-objects-by-name: an array of non-empty arrays of names, passed
 * on as JSON text. */
static bool objects_by_name(const json_t *body, char **out, struct floe_error *err)
{
	const json_t *v = json_object_get(body, "catalog-objects-by-name");
	size_t i, j;
	json_t *o, *n;

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_array(v))
		return floe_err(err, FE_BAD_REQUEST,
				"field 'catalog-objects-by-name' must be an array of name arrays");
	json_array_foreach(v, i, o) {
		if (!json_is_array(o) || json_array_size(o) == 0)
			return floe_err(
				err, FE_BAD_REQUEST,
				"field 'catalog-objects-by-name' must be an array of name arrays");
		json_array_foreach(o, j, n) {
			if (!json_is_string(n) || json_string_length(n) == 0)
				return floe_err(
					err, FE_BAD_REQUEST,
					"field 'catalog-objects-by-name' must be an array of name arrays");
		}
	}
	if (json_array_size(v) == 0)
		return true;
	*out = json_dumps(v, JSON_COMPACT);
	return *out != NULL || floe_err(err, FE_INTERNAL, "out of memory");
}

/* catalog-objects-by-id: [{"uuid": ..., "type": "table" | "view"}]. */
static bool objects_by_id(const json_t *body, char **out, struct floe_error *err)
{
	const json_t *v = json_object_get(body, "catalog-objects-by-id");
	struct buf b;
	size_t i;
	json_t *o;

	*out = NULL;
	buf_init(&b, FEED_FILTER_MAX);
	if (v == NULL || json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0))
		return true;
	if (!json_is_array(v))
		return floe_err(err, FE_BAD_REQUEST,
				"field 'catalog-objects-by-id' must be an array of {uuid, type}");
	json_array_foreach(v, i, o) {
		const char *u = json_string_value(json_object_get(o, "uuid"));
		const char *t = json_string_value(json_object_get(o, "type"));
		if (u == NULL || strlen(u) != 36 || strchr(u, '\x1f') != NULL || t == NULL ||
		    (strcmp(t, "table") != 0 && strcmp(t, "view") != 0)) {
			buf_free(&b);
			return floe_err(
				err, FE_BAD_REQUEST,
				"field 'catalog-objects-by-id' must be an array of {uuid, type}");
		}
		if (i > 0)
			(void)buf_append(&b, "\x1f", 1);
		(void)buf_append(&b, u, strlen(u));
	}
	return joined(&b, json_array_size(v), "catalog-objects-by-id", out, err);
}

static json_t *identifier(const struct feed_row *e)
{
	return json_pack("{s:o, s:s}", "namespace", ident_ns_to_json(&e->ns), "name",
			 e->name != NULL ? e->name : "");
}

json_t *feed_event_json(const struct feed_row *e)
{
	json_t *details = rowjson_text(e->details);
	json_t *op = NULL;
	bool custom = strncmp(e->operation, "x-", 2) == 0;
	bool is_ns = strcmp(e->object_type, "namespace") == 0;

	if (is_ns) {
		op = json_pack("{s:s, s:o}", "operation-type", e->operation, "namespace",
			       ident_ns_to_json(&e->ns));
	} else {
		op = json_pack("{s:s, s:o}", "operation-type", custom ? "custom" : e->operation,
			       "identifier", identifier(e));
		if (op != NULL && custom)
			(void)json_object_set_new(op, "custom-type", json_string(e->operation));
		if (op != NULL && e->uuid[0] != '\0')
			(void)json_object_set_new(op,
						  strcmp(e->object_type, "view") == 0
							  ? "view-uuid"
							  : "table-uuid",
						  json_string(e->uuid));
		/* A rename names where the object came from and where it is. */
		json_t *source = json_object_get(details, "source");
		if (op != NULL && source != NULL) {
			(void)json_object_set(op, "source", source);
			(void)json_object_set_new(op, "destination", identifier(e));
			(void)json_object_del(details, "source");
		}
	}
	if (op != NULL && json_is_object(details))
		(void)json_object_update_missing(op, details);
	json_decref(details);
	char id[32], xid[40];
	(void)snprintf(id, sizeof(id), "%lld", e->id);
	(void)snprintf(xid, sizeof(xid), "xact-%s", e->xid);
	json_t *ev = json_pack("{s:s, s:s, s:I, s:I, s:o}", "event-id", id, "request-id", xid,
			       "request-event-count", (json_int_t)e->xact_events, "timestamp-ms",
			       (json_int_t)e->at_ms, "operation", op);
	if (ev != NULL && e->principal != NULL)
		(void)json_object_set_new(ev, "actor",
					  json_pack("{s:s}", "principal", e->principal));
	return ev;
}

static json_t *event_json(const void *p)
{
	return feed_event_json(p);
}

bool feed_filter_parse(const json_t *body, struct feed_filter *f, struct floe_error *err)
{
	memset(f, 0, sizeof(*f));
	if (string_list(body, "operation-types", known_operation, "operation type", &f->operations,
			err) &&
	    string_list(body, "object-types", object_type, "object type", &f->object_types, err) &&
	    objects_by_name(body, &f->objects_by_name, err) && objects_by_id(body, &f->uuids, err))
		return true;
	feed_filter_clear(f);
	return false;
}

void feed_filter_clear(struct feed_filter *f)
{
	free(f->operations);
	free(f->object_types);
	free(f->objects_by_name);
	free(f->uuids);
	memset(f, 0, sizeof(*f));
}

void feed_filter_apply(const struct feed_filter *f, struct feed_query *q)
{
	q->operations = f->operations;
	q->object_types = f->object_types;
	q->objects_by_name = f->objects_by_name;
	q->uuids = f->uuids;
}

json_t *feed_query(struct store *s, const json_t *body, struct floe_error *err)
{
	struct feed_query q = { .since_ms = -1 };
	struct feed_here here = { 0 };
	struct feed_filter filter = { 0 };
	struct feed_row *rows = NULL;
	size_t count = 0;
	bool more = false;
	json_t *out = NULL;
	long limit = FEED_PAGE_DEFAULT;
	long long asked_ms = -1;

	if (!json_is_object(body))
		return floe_err(err, FE_BAD_REQUEST,
				"the body must be a QueryEventsRequest object"),
		       NULL;
	const json_t *token = json_object_get(body, "continuation-token");
	const json_t *size = json_object_get(body, "page-size");
	const json_t *after = json_object_get(body, "after-timestamp-ms");
	const json_t *custom = json_object_get(body, "custom-filters");
	if (token != NULL && !json_is_null(token) && !json_is_string(token))
		return floe_err(err, FE_BAD_REQUEST, "field 'continuation-token' must be a string"),
		       NULL;
	if (json_is_string(token) && !position_parse(json_string_value(token), &q.after))
		return floe_err(err, FE_BAD_REQUEST,
				"continuation-token is not a token this server issued"),
		       NULL;
	if (size != NULL && !json_is_null(size)) {
		if (!json_is_integer(size) || json_integer_value(size) < 1)
			return floe_err(err, FE_BAD_REQUEST,
					"field 'page-size' must be a positive integer"),
			       NULL;
		limit = json_integer_value(size) > FEED_PAGE_MAX ? FEED_PAGE_MAX
								 : (long)json_integer_value(size);
	}
	if (after != NULL && !json_is_null(after)) {
		if (!json_is_integer(after) || json_integer_value(after) < 0)
			return floe_err(
				       err, FE_BAD_REQUEST,
				       "field 'after-timestamp-ms' must be milliseconds since the epoch"),
			       NULL;
		asked_ms = json_integer_value(after);
		/* PostgreSQL holds times up to year 294276; no event is later
		 * than the last millisecond of 9999, so a later bound is that. */
		q.since_ms = asked_ms > FEED_LAST_MS ? FEED_LAST_MS : asked_ms;
	}
	if (custom != NULL && !json_is_null(custom) &&
	    (!json_is_object(custom) || json_object_size(custom) > 0))
		return floe_err(err, FE_BAD_REQUEST, "floe supports no custom-filters"), NULL;
	if (!feed_filter_parse(body, &filter, err))
		goto done;
	feed_filter_apply(&filter, &q);
	/* A position of another timeline is read on only when nothing after
	 * it was lost in the switch: never a silent skip (migration 0032). */
	if (!position_check(s, POSITION_CHANGE_FEED, &q.after, "continuation-token", &here, err) ||
	    !store_feed_list(s, &q, limit, &rows, &count, &more, err))
		goto done;
	json_t *events = rowjson_array(rows, count, sizeof(*rows), event_json);
	char next[POSITION_TOKEN_MAX];
	long long highest = asked_ms > 0 ? asked_ms : 0;
	if (count > 0) {
		position_format(next, sizeof(next), rows[count - 1].xid, rows[count - 1].id, &here);
		highest = rows[count - 1].at_ms;
	} else {
		position_format(next, sizeof(next), q.after.xid, q.after.id, &here);
	}
	(void)more; /* the reader asks again with the token in every case */
	out = events != NULL ? json_pack("{s:s, s:I, s:o}", "next-page-token", next,
					 "highest-processed-timestamp-ms", (json_int_t)highest,
					 "events", events)
			     : NULL;
	if (out == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
done:
	store_feed_rows_free(rows, count);
	feed_filter_clear(&filter);
	return out;
}
