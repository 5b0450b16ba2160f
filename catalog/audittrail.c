/*
 * audittrail.c - verifying the audit log's hash chain and its checkpoints,
 * signing checkpoints, and the export (audittrail.h).
 *
 * Each link is checked against the stored hash of the link before it, so
 * one edited event is one problem at its position. A chain recomputed
 * after an edit passes that check link by link; the signed checkpoints
 * catch it, because the chain recomputed from the first event on no
 * longer reaches the hash a checkpoint signed.
 */
#include "audittrail.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "idem.h"
#include "log.h"

/* Links read from the database a page at a time. */
#define CHAIN_PAGE 1000
/* The checkpoints a verification holds (one every few minutes for years). */
#define CHECKPOINTS_MAX 200000
/* Unlinked events listed. */
#define UNLINKED_MAX TRAIL_PROBLEMS_MAX

struct trail_verifier {
	const struct trail_key *key;
	struct checkpoint_row *cps; /* sorted by position as they come (id order) */
	size_t ncps, capcps, nextcp;
	bool sorted; /* cps in position order: done at the first link */
	size_t checked, unsigned_cps;
	long long links;
	long long expect;                     /* the next position */
	unsigned char stored[TRAIL_HASH_LEN]; /* the previous link's stored hash */
	unsigned char replay[TRAIL_HASH_LEN]; /* the chain recomputed from events */
	bool stored_known;
	json_t *problems;
	size_t nproblems;
	long long last_position;
	char last_hash[TRAIL_HASH_HEX];
};

static void problem(struct trail_verifier *v, long long position, long long event_id,
		    const char *what)
{
	v->nproblems++;
	if (json_array_size(v->problems) >= TRAIL_PROBLEMS_MAX)
		return;
	json_t *p = json_pack("{s:s}", "problem", what);
	if (p == NULL)
		return;
	if (position > 0)
		(void)json_object_set_new(p, "position", json_integer(position));
	if (event_id > 0)
		(void)json_object_set_new(p, "event-id", json_integer(event_id));
	(void)json_array_append_new(v->problems, p);
}

struct trail_verifier *trail_verifier_new(const struct trail_key *key)
{
	struct trail_verifier *v = calloc(1, sizeof(*v));

	if (v == NULL)
		return NULL;
	v->problems = json_array();
	if (v->problems == NULL) {
		free(v);
		return NULL;
	}
	v->key = key;
	v->expect = 1;
	trail_genesis(v->stored);
	trail_genesis(v->replay);
	v->stored_known = true;
	trail_hex(v->stored, v->last_hash);
	return v;
}

void trail_verifier_free(struct trail_verifier *v)
{
	if (v == NULL)
		return;
	free(v->cps);
	json_decref(v->problems);
	free(v);
}

static int cp_cmp(const void *a, const void *b)
{
	const struct checkpoint_row *x = a, *y = b;

	return (x->position > y->position) - (x->position < y->position);
}

bool trail_verifier_checkpoint(struct trail_verifier *v, const struct checkpoint_row *cp)
{
	unsigned char hash[TRAIL_HASH_LEN];
	unsigned char sig[TRAIL_SIG_MAX * 2];
	size_t siglen = 0;

	if (!trail_unhex(cp->hash, hash) ||
	    !trail_unhex_bytes(cp->signature, sig, sizeof(sig), &siglen)) {
		problem(v, cp->position, 0, "a checkpoint's hash or signature is not hex");
		return true;
	}
	if (v->key == NULL) {
		v->unsigned_cps++;
	} else if (!trail_checkpoint_verify(v->key, cp->position, hash, cp->signed_at, cp->key_id,
					    sig, siglen)) {
		problem(v, cp->position, 0,
			strcmp(cp->key_id, trail_key_id(v->key)) != 0
				? "a checkpoint is signed by another key than the one verifying"
				: "a checkpoint's signature does not verify: the checkpoint was forged "
				  "or changed");
		return true;
	}
	if (v->ncps >= CHECKPOINTS_MAX)
		return true;
	if (v->ncps == v->capcps) {
		size_t cap = v->capcps ? 2 * v->capcps : 64;
		void *p = realloc(v->cps, cap * sizeof(*v->cps));
		if (p == NULL)
			return false;
		v->cps = p;
		v->capcps = cap;
	}
	v->cps[v->ncps++] = *cp;
	return true;
}

/* The checkpoints at position: compared with the chain recomputed from
 * the events, which then continues from the signed hash, so a later
 * checkpoint tells only of changes after this one. */
static void check_checkpoints(struct trail_verifier *v, long long position)
{
	char replay_hex[TRAIL_HASH_HEX];

	while (v->nextcp < v->ncps && v->cps[v->nextcp].position < position)
		v->nextcp++; /* a position missing from the chain: reported there */
	trail_hex(v->replay, replay_hex);
	while (v->nextcp < v->ncps && v->cps[v->nextcp].position == position) {
		const struct checkpoint_row *cp = &v->cps[v->nextcp++];
		v->checked++;
		if (strcmp(cp->hash, replay_hex) != 0) {
			char what[200];
			(void)snprintf(what, sizeof(what),
				       "the chain up to this position differs from the checkpoint "
				       "signed at %s: an event at or before it was changed, "
				       "removed or added and the chain rewritten",
				       cp->signed_at);
			problem(v, position, 0, what);
			unsigned char signed_hash[TRAIL_HASH_LEN];
			if (trail_unhex(cp->hash, signed_hash))
				memcpy(v->replay, signed_hash, TRAIL_HASH_LEN);
		}
	}
}

void trail_verifier_link(struct trail_verifier *v, const struct chain_row *row)
{
	unsigned char stored[TRAIL_HASH_LEN];
	unsigned char computed[TRAIL_HASH_LEN];

	if (!v->sorted) {
		/* They come in id order; links need them in position order. */
		if (v->ncps > 1)
			qsort(v->cps, v->ncps, sizeof(*v->cps), cp_cmp);
		v->sorted = true;
	}
	v->links++;
	if (row->position != v->expect) {
		char what[160];
		if (row->position > v->expect)
			(void)snprintf(what, sizeof(what),
				       "positions %lld to %lld are missing from the chain: links "
				       "were deleted",
				       v->expect, row->position - 1);
		else
			(void)snprintf(what, sizeof(what),
				       "the chain's positions are out of order");
		problem(v, v->expect, 0, what);
		v->stored_known = false;
	}
	bool hash_ok = trail_unhex(row->hash, stored);
	if (!hash_ok)
		problem(v, row->position, row->event_id, "the link's hash is not a SHA-256 hash");
	if (!row->present) {
		problem(v, row->position, row->event_id,
			"the event of this link was deleted from the audit log");
		/* Said once here: the replay goes on from the link's own hash,
		 * so later checkpoints do not say it again. */
		if (hash_ok)
			memcpy(v->replay, stored, TRAIL_HASH_LEN);
	} else {
		struct trail_event e = {
			.position = row->position,
			.id = row->f[CHAIN_F_ID],
			.at = row->f[CHAIN_F_AT],
			.event = row->f[CHAIN_F_EVENT],
			.principal = row->f[CHAIN_F_PRINCIPAL],
			.client_id = row->f[CHAIN_F_CLIENT_ID],
			.request_id = row->f[CHAIN_F_REQUEST_ID],
			.ns = row->f[CHAIN_F_NAMESPACE],
			.table = row->f[CHAIN_F_TABLE],
			.run_id = row->f[CHAIN_F_RUN_ID],
			.details = row->f[CHAIN_F_DETAILS],
		};
		unsigned char next[TRAIL_HASH_LEN];
		if (v->stored_known && hash_ok &&
		    (!trail_event_hash(v->stored, &e, computed) ||
		     memcmp(computed, stored, TRAIL_HASH_LEN) != 0)) {
			problem(v, row->position, row->event_id,
				"the event does not match its link: it was changed, or moved "
				"to another position");
			/* Said here: the replay goes on from the link as stored. */
			memcpy(v->replay, stored, TRAIL_HASH_LEN);
		} else if (trail_event_hash(v->replay, &e, next)) {
			memcpy(v->replay, next, TRAIL_HASH_LEN);
		}
	}
	check_checkpoints(v, row->position);
	if (hash_ok)
		memcpy(v->stored, stored, TRAIL_HASH_LEN);
	v->stored_known = hash_ok;
	v->expect = row->position + 1;
	v->last_position = row->position;
	(void)snprintf(v->last_hash, sizeof(v->last_hash), "%s", row->hash);
}

void trail_verifier_unlinked(struct trail_verifier *v, long long event_id)
{
	problem(v, 0, event_id,
		"the event is in the audit log but not in the chain: it was written around "
		"floe's trigger");
}

json_t *trail_verifier_finish(struct trail_verifier *v, long long head_position,
			      const char *head_hash)
{
	json_t *out = NULL;

	if (head_position != v->last_position ||
	    strcmp(head_hash != NULL ? head_hash : "", v->last_hash) != 0)
		problem(v, head_position, 0,
			"the chain's head does not name its last link: links were removed "
			"from the end, or the head was rewritten");
	/* Checkpoints past the last link: the end of the chain was cut. */
	for (; v->nextcp < v->ncps; v->nextcp++) {
		if (v->cps[v->nextcp].position > v->last_position) {
			v->checked++;
			problem(v, v->cps[v->nextcp].position, 0,
				"a checkpoint names a position past the chain's end: events were "
				"removed from the end of the log");
		}
	}
	if (!v->sorted) {
		if (v->ncps > 1)
			qsort(v->cps, v->ncps, sizeof(*v->cps), cp_cmp);
		v->sorted = true;
	}
	out = json_pack("{s:b, s:I, s:{s:I, s:s}, s:{s:I, s:I, s:o}, s:I, s:O, s:b}", "valid",
			v->nproblems == 0, "links", (json_int_t)v->links, "head", "position",
			(json_int_t)head_position, "hash", head_hash ? head_hash : "",
			"checkpoints", "checked", (json_int_t)v->checked, "signatures-unchecked",
			(json_int_t)v->unsigned_cps, "key-id",
			v->key ? json_string(trail_key_id(v->key)) : json_null(), "problem-count",
			(json_int_t)v->nproblems, "problems", v->problems, "problems-truncated",
			v->nproblems > json_array_size(v->problems));
	trail_verifier_free(v);
	return out;
}

/* Calls fn on every checkpoint of the database, oldest first; false (err
 * set) when the store fails or fn does (FE_INTERNAL). */
static bool each_checkpoint(struct store *s, bool (*fn)(void *ctx, const struct checkpoint_row *),
			    void *ctx, struct floe_error *err)
{
	long long after = 0;
	bool more = true;

	while (more) {
		struct checkpoint_row *rows = NULL;
		size_t n = 0;
		if (!store_checkpoint_list(s, after, CHAIN_PAGE, &rows, &n, &more, err))
			return false;
		bool ok = true;
		for (size_t i = 0; i < n && ok; i++)
			ok = fn(ctx, &rows[i]);
		if (n > 0)
			after = rows[n - 1].id;
		free(rows);
		if (!ok)
			return floe_err(err, FE_INTERNAL, "the audit trail cannot be walked");
		if (n == 0)
			break;
	}
	return true;
}

/* Calls fn on every link up to position head, in order, a page at a time
 * (links written after head was read are left for the next walk); then
 * unlinked on each event no link names (at most UNLINKED_MAX). False as
 * each_checkpoint. */
static bool each_link(struct store *s, long long head,
		      bool (*fn)(void *ctx, const struct chain_row *),
		      bool (*unlinked)(void *ctx, long long event_id), void *ctx,
		      struct floe_error *err)
{
	long long ids[UNLINKED_MAX];
	long long after = 0;
	size_t nids = 0;
	bool more = true;

	while (more) {
		struct chain_row *rows = NULL;
		size_t n = 0;
		if (!store_chain_page(s, after, CHAIN_PAGE, &rows, &n, &more, err))
			return false;
		bool ok = true;
		for (size_t i = 0; i < n && ok && rows[i].position <= head; i++)
			ok = fn(ctx, &rows[i]);
		bool past = n > 0 && rows[n - 1].position >= head;
		if (n > 0)
			after = rows[n - 1].position;
		store_chain_rows_free(rows, n);
		if (!ok)
			return floe_err(err, FE_INTERNAL, "the audit trail cannot be walked");
		if (n == 0 || past)
			break;
	}
	if (!store_chain_unlinked(s, UNLINKED_MAX, ids, &nids, err))
		return false;
	for (size_t i = 0; i < nids; i++) {
		if (!unlinked(ctx, ids[i]))
			return floe_err(err, FE_INTERNAL, "the audit trail cannot be walked");
	}
	return true;
}

static bool verify_checkpoint(void *ctx, const struct checkpoint_row *cp)
{
	return trail_verifier_checkpoint(ctx, cp);
}

static bool verify_link(void *ctx, const struct chain_row *row)
{
	trail_verifier_link(ctx, row);
	return true;
}

static bool verify_unlinked(void *ctx, long long event_id)
{
	trail_verifier_unlinked(ctx, event_id);
	return true;
}

json_t *audittrail_verify(struct store *s, const struct trail_key *key, struct floe_error *err)
{
	struct trail_verifier *v = trail_verifier_new(key);
	long long head = 0;
	char head_hash[65];

	if (v == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	/* The head first: links written after it are past it, not missing. */
	if (!store_chain_head(s, &head, head_hash, err) ||
	    !each_checkpoint(s, verify_checkpoint, v, err) ||
	    !each_link(s, head, verify_link, verify_unlinked, v, err)) {
		trail_verifier_free(v);
		log_error("audit", "the audit chain cannot be read: %s", err->message);
		return floe_err(err, FE_UNAVAILABLE,
				"the audit log cannot be read to verify it; retry later"),
		       NULL;
	}
	json_t *out = trail_verifier_finish(v, head, head_hash);
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	return out;
}

json_t *audittrail_checkpoint_json(const struct checkpoint_row *cp)
{
	return json_pack("{s:I, s:I, s:s, s:s, s:s, s:s}", "id", (json_int_t)cp->id, "position",
			 (json_int_t)cp->position, "hash", cp->hash, "signed-at", cp->signed_at,
			 "key-id", cp->key_id, "signature", cp->signature);
}

/* Now in UTC as RFC 3339 with microseconds. */
static void now_utc(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	(void)gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	(void)snprintf(buf + n, len - n, ".%06ldZ", ts.tv_nsec / 1000);
}

json_t *audittrail_checkpoint(struct store *s, const struct table_env *env,
			      const struct trail_key *key, struct floe_error *err)
{
	struct checkpoint_row cp = { 0 };
	unsigned char hash[TRAIL_HASH_LEN];
	unsigned char sig[TRAIL_SIG_MAX];
	size_t siglen = 0;
	bool inserted = false;

	if (key == NULL)
		return floe_err(err, FE_UNSUPPORTED,
				"no audit signing key is configured (--audit-signing-key)"),
		       NULL;
	if (!store_chain_head(s, &cp.position, cp.hash, err))
		return floe_err(err, FE_UNAVAILABLE, "the audit chain cannot be read; retry later"),
		       NULL;
	now_utc(cp.signed_at, sizeof(cp.signed_at));
	(void)snprintf(cp.key_id, sizeof(cp.key_id), "%s", trail_key_id(key));
	if (!trail_unhex(cp.hash, hash) ||
	    !trail_checkpoint_sign(key, cp.position, hash, cp.signed_at, sig, &siglen))
		return floe_err(err, FE_INTERNAL, "the checkpoint cannot be signed"), NULL;
	trail_hex_bytes(sig, siglen, cp.signature);
	if (!store_begin(s, err))
		return NULL;
	json_t *out = NULL;
	if (!store_checkpoint_insert(s, &cp, &inserted, &cp.id, err)) {
		floe_err(err, FE_UNAVAILABLE, "the checkpoint cannot be recorded; retry later");
		goto fail;
	}
	out = audittrail_checkpoint_json(&cp);
	if (out == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto fail;
	}
	(void)json_object_set_new(out, "created", json_boolean(inserted));
	if (env != NULL && !idem_record(s, env, inserted ? 201 : 200, out, err))
		goto fail;
	if (store_commit(s, err))
		return out;
	if (err->kind == FE_COMMIT_STATE_UNKNOWN) {
		json_decref(out);
		return NULL;
	}
fail:
	store_rollback(s);
	json_decref(out);
	return NULL;
}

json_t *audittrail_checkpoints(struct store *s, const struct trail_key *key, const char *token,
			       long page_size, struct floe_error *err)
{
	long long after = 0;
	struct checkpoint_row *rows = NULL;
	size_t n = 0;
	bool more = false;
	char *end = NULL;

	if (token != NULL && *token != '\0') {
		after = strtoll(token, &end, 10);
		if (end == token || *end != '\0' || after < 0)
			return floe_err(err, FE_BAD_REQUEST,
					"pageToken is not a token this server issued"),
			       NULL;
	}
	long limit = page_size > CHAIN_PAGE ? CHAIN_PAGE : page_size;
	if (!store_checkpoint_list(s, after, limit, &rows, &n, &more, err))
		return NULL;
	json_t *list = json_array();
	for (size_t i = 0; list != NULL && i < n; i++) {
		if (json_array_append_new(list, audittrail_checkpoint_json(&rows[i])) != 0) {
			json_decref(list);
			list = NULL;
		}
	}
	json_t *next = json_null();
	if (more && n > 0) {
		char t[32];
		(void)snprintf(t, sizeof(t), "%lld", rows[n - 1].id);
		next = json_string(t);
	}
	free(rows);
	char *pem = key ? trail_key_public_pem(key) : NULL;
	json_t *out = list ? json_pack("{s:o, s:o, s:o, s:o}", "checkpoints", list,
				       "next-page-token", next, "key-id",
				       key ? json_string(trail_key_id(key)) : json_null(),
				       "public-key", pem ? json_string(pem) : json_null())
			   : NULL;
	free(pem);
	if (out == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	return out;
}

static json_t *opt_string(const char *v)
{
	return v != NULL ? json_string(v) : json_null();
}

/* An event's fields as an export names them. */
static const char *const export_names[CHAIN_FIELDS] = {
	[CHAIN_F_ID] = "id",
	[CHAIN_F_AT] = "at",
	[CHAIN_F_EVENT] = "event",
	[CHAIN_F_PRINCIPAL] = "principal",
	[CHAIN_F_CLIENT_ID] = "client-id",
	[CHAIN_F_REQUEST_ID] = "request-id",
	[CHAIN_F_NAMESPACE] = "namespace",
	[CHAIN_F_TABLE] = "table",
	[CHAIN_F_RUN_ID] = "run-id",
	[CHAIN_F_DETAILS] = "details",
};

/* An export line of a link and its event (new reference). */
static json_t *link_json(const struct chain_row *r)
{
	json_t *ev = json_null();

	if (r->present) {
		ev = json_object();
		for (int k = 0; ev != NULL && k < CHAIN_FIELDS; k++)
			(void)json_object_set_new(ev, export_names[k], opt_string(r->f[k]));
	}
	return json_pack("{s:s, s:I, s:s, s:I, s:o}", "kind", "link", "position",
			 (json_int_t)r->position, "hash", r->hash, "event-id",
			 (json_int_t)r->event_id, "event", ev);
}

struct export_ctx {
	trail_emit_fn emit;
	void *ctx;
};

/* Emits line and drops it; false when it is NULL or emit fails. */
static bool emit_own(const struct export_ctx *x, json_t *line)
{
	bool ok = line != NULL && x->emit(x->ctx, line);

	json_decref(line);
	return ok;
}

static bool export_checkpoint(void *ctx, const struct checkpoint_row *cp)
{
	json_t *line = audittrail_checkpoint_json(cp);

	if (line != NULL)
		(void)json_object_set_new(line, "kind", json_string("checkpoint"));
	return emit_own(ctx, line);
}

static bool export_link(void *ctx, const struct chain_row *row)
{
	return emit_own(ctx, link_json(row));
}

static bool export_unlinked(void *ctx, long long event_id)
{
	return emit_own(ctx, json_pack("{s:s, s:I}", "kind", "unlinked", "event-id",
				       (json_int_t)event_id));
}

bool audittrail_export(struct store *s, const struct trail_key *key, trail_emit_fn emit, void *ctx,
		       struct floe_error *err)
{
	struct export_ctx x = { emit, ctx };
	long long head = 0;
	char head_hash[65];
	char at[40];

	if (!store_chain_head(s, &head, head_hash, err))
		return false;
	now_utc(at, sizeof(at));
	char *pem = key ? trail_key_public_pem(key) : NULL;
	json_t *header = json_pack("{s:s, s:i, s:s, s:{s:I, s:s}, s:o, s:o}", "kind",
				   "floe-audit-export", "version", 1, "exported-at", at, "head",
				   "position", (json_int_t)head, "hash", head_hash, "key-id",
				   key ? json_string(trail_key_id(key)) : json_null(), "public-key",
				   pem ? json_string(pem) : json_null());
	free(pem);
	if (!emit_own(&x, header))
		return floe_err(err, FE_INTERNAL, "the export cannot be written");
	return each_checkpoint(s, export_checkpoint, &x, err) &&
	       each_link(s, head, export_link, export_unlinked, &x, err);
}

static const char *line_str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Copies the string key of o into a fixed field (truncated). */
static void copy_field(char *dst, size_t cap, const json_t *o, const char *key)
{
	const char *v = line_str(o, key);

	(void)snprintf(dst, cap, "%s", v ? v : "");
}

/* Feeds one export line after the header to v; false (err set) when it is
 * no line of an export. */
static bool verify_line(struct trail_verifier *v, const json_t *o, long long lineno,
			struct floe_error *err)
{
	const char *kind = line_str(o, "kind");

	if (kind != NULL && strcmp(kind, "checkpoint") == 0) {
		struct checkpoint_row cp = { 0 };
		cp.position = json_integer_value(json_object_get(o, "position"));
		copy_field(cp.hash, sizeof(cp.hash), o, "hash");
		copy_field(cp.signed_at, sizeof(cp.signed_at), o, "signed-at");
		copy_field(cp.key_id, sizeof(cp.key_id), o, "key-id");
		copy_field(cp.signature, sizeof(cp.signature), o, "signature");
		return trail_verifier_checkpoint(v, &cp) ||
		       floe_err(err, FE_INTERNAL, "out of memory");
	}
	if (kind != NULL && strcmp(kind, "link") == 0) {
		struct chain_row row = { 0 };
		const json_t *ev = json_object_get(o, "event");
		row.position = json_integer_value(json_object_get(o, "position"));
		row.event_id = json_integer_value(json_object_get(o, "event-id"));
		copy_field(row.hash, sizeof(row.hash), o, "hash");
		row.present = json_is_object(ev);
		for (int k = 0; row.present && k < CHAIN_FIELDS; k++)
			row.f[k] = (char *)line_str(ev, export_names[k]);
		trail_verifier_link(v, &row);
		return true;
	}
	if (kind != NULL && strcmp(kind, "unlinked") == 0) {
		trail_verifier_unlinked(v, json_integer_value(json_object_get(o, "event-id")));
		return true;
	}
	return floe_err(err, FE_BAD_REQUEST, "line %lld is no line of a floe audit export", lineno);
}

json_t *audittrail_verify_export(trail_line_fn next, void *ctx, const struct trail_key *pinned,
				 struct floe_error *err)
{
	struct trail_verifier *v = NULL;
	struct trail_key *own = NULL;
	json_t *report = NULL;
	long long head = 0, lineno = 0;
	char head_hash[TRAIL_HASH_HEX] = "";
	json_t *o;

	floe_error_clear(err);
	while ((o = next(ctx, err)) != NULL) {
		bool ok = true;
		lineno++;
		if (lineno == 1) {
			const char *kind = line_str(o, "kind");
			const json_t *h = json_object_get(o, "head");
			const char *pem = line_str(o, "public-key");
			ok = kind != NULL && strcmp(kind, "floe-audit-export") == 0 &&
			     json_integer_value(json_object_get(o, "version")) == 1;
			if (!ok)
				floe_err(err, FE_BAD_REQUEST,
					 "it is no floe audit export (version 1)");
			head = json_integer_value(json_object_get(h, "position"));
			copy_field(head_hash, sizeof(head_hash), h, "hash");
			if (ok && pinned == NULL && pem != NULL) {
				struct floe_error kerr;
				own = trail_key_parse_public(pem, strlen(pem), &kerr);
			}
			v = ok ? trail_verifier_new(pinned ? pinned : own) : NULL;
			if (ok && v == NULL)
				ok = floe_err(err, FE_INTERNAL, "out of memory");
		} else {
			ok = verify_line(v, o, lineno, err);
		}
		json_decref(o);
		if (!ok)
			goto done;
	}
	if (err->kind != FE_NONE)
		goto done;
	if (v == NULL) {
		floe_err(err, FE_BAD_REQUEST, "the export is empty");
		goto done;
	}
	report = trail_verifier_finish(v, head, head_hash);
	v = NULL;
	if (report == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	if (pinned == NULL)
		(void)json_object_set_new(report, "key-source",
					  json_string(own ? "the export's own public key (pass "
							    "--public-key to pin it)"
							  : "none: signatures not checked"));
done:
	trail_verifier_free(v);
	trail_key_free(own);
	return report;
}
