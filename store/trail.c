/*
 * trail.c - the audit_chain, audit_chain_head and audit_checkpoints
 * relations: the hash chain over the audit log (written by the database
 * itself, store/migrations/0015_audit_chain.sql) read back for
 * verification and export, and the signed checkpoints of its head.
 */
#include "store.h"
#include "store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	ST_CHAIN_PAGE,
	ST_CHAIN_UNLINKED,
	ST_CHAIN_HEAD,
	ST_CHECKPOINT_INSERT,
	ST_CHECKPOINT_LIST,
	ST_COUNT
};

/* clang-format off */
static const struct store_statement statements[ST_COUNT] = {
	/* Every column as the text the chain's canonical form covers. */
	[ST_CHAIN_PAGE] = { "chain_page",
		"SELECT c.position, encode(c.hash, 'hex'), c.event_id, e.id IS NOT NULL, "
		"  e.id::text, " TS("e.at") ", e.event, e.principal, e.client_id, e.request_id, "
		"  array_to_string(e.namespace, E'\\x1f'), e.table_name, e.run_id::text, "
		"  e.details::text "
		"FROM audit_chain c LEFT JOIN audit_events e ON e.id = c.event_id "
		"WHERE c.position > $1::bigint ORDER BY c.position LIMIT $2::bigint" },
	[ST_CHAIN_UNLINKED] = { "chain_unlinked",
		"SELECT e.id FROM audit_events e "
		"WHERE NOT EXISTS (SELECT 1 FROM audit_chain c WHERE c.event_id = e.id) "
		"ORDER BY e.id LIMIT $1::bigint" },
	[ST_CHAIN_HEAD] = { "chain_head",
		"SELECT position, encode(hash, 'hex') FROM audit_chain_head" },
	[ST_CHECKPOINT_INSERT] = { "checkpoint_insert",
		"INSERT INTO audit_checkpoints (position, hash, signed_at, key_id, signature) "
		"VALUES ($1::bigint, decode($2, 'hex'), $3, $4, decode($5, 'hex')) "
		"ON CONFLICT (position, key_id) DO NOTHING RETURNING id" },
	[ST_CHECKPOINT_LIST] = { "checkpoint_list",
		"SELECT id, position, encode(hash, 'hex'), signed_at, key_id, "
		"  encode(signature, 'hex') "
		"FROM audit_checkpoints WHERE id > $1::bigint ORDER BY id LIMIT $2::bigint" },
};
/* clang-format on */

const struct store_statements store_trail_statements = { statements, ST_COUNT, NULL };

void store_chain_row_clear(void *row)
{
	struct chain_row *c = row;

	for (size_t k = 0; k < CHAIN_FIELDS; k++)
		free(c->f[k]);
	memset(c, 0, sizeof(*c));
}

void store_chain_rows_free(struct chain_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), store_chain_row_clear);
}

static bool chain_fill(PGresult *r, int i, void *dst)
{
	struct chain_row *c = dst;

	memset(c, 0, sizeof(*c));
	c->position = store_col_ll(r, i, 0);
	store_col_text(r, i, 1, c->hash, sizeof(c->hash));
	c->event_id = store_col_ll(r, i, 2);
	c->present = PQgetvalue(r, i, 3)[0] == 't';
	for (int k = 0; k < CHAIN_FIELDS; k++) {
		if (!store_col_copy(r, i, 4 + k, &c->f[k])) {
			store_chain_row_clear(c);
			return false;
		}
	}
	return true;
}

bool store_chain_page(struct store *s, long long after, long limit, struct chain_row **rows,
		      size_t *count, bool *more, struct floe_error *err)
{
	char afterp[32];
	void *out = NULL;

	(void)snprintf(afterp, sizeof(afterp), "%lld", after);
	bool ok = store_list_after(s, &statements[ST_CHAIN_PAGE], afterp, limit, sizeof(**rows),
				   chain_fill, store_chain_row_clear, &out, count, more, err);
	*rows = out;
	return ok;
}

bool store_chain_unlinked(struct store *s, long limit, long long *ids, size_t *count,
			  struct floe_error *err)
{
	char lim[32];
	const char *params[1] = { lim };

	*count = 0;
	(void)snprintf(lim, sizeof(lim), "%ld", limit);
	PGresult *r = store_exec(s, &statements[ST_CHAIN_UNLINKED], 1, params, err);
	if (r == NULL)
		return false;
	for (int i = 0; i < PQntuples(r) && (long)*count < limit; i++)
		ids[(*count)++] = store_col_ll(r, i, 0);
	PQclear(r);
	return true;
}

bool store_chain_head(struct store *s, long long *position, char hash[65], struct floe_error *err)
{
	PGresult *r = store_exec(s, &statements[ST_CHAIN_HEAD], 0, NULL, err);

	*position = 0;
	hash[0] = '\0';
	if (r == NULL)
		return false;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return floe_err(err, FE_INTERNAL, "the audit chain has no head row");
	}
	*position = store_col_ll(r, 0, 0);
	store_col_text(r, 0, 1, hash, 65);
	PQclear(r);
	return true;
}

bool store_checkpoint_insert(struct store *s, const struct checkpoint_row *cp, bool *inserted,
			     long long *id, struct floe_error *err)
{
	char pos[32];

	*inserted = false;
	*id = 0;
	(void)snprintf(pos, sizeof(pos), "%lld", cp->position);
	const char *params[5] = { pos, cp->hash, cp->signed_at, cp->key_id, cp->signature };
	PGresult *r = store_exec(s, &statements[ST_CHECKPOINT_INSERT], 5, params, err);
	if (r == NULL)
		return false;
	if (PQntuples(r) == 1) {
		*inserted = true;
		*id = store_col_ll(r, 0, 0);
	}
	PQclear(r);
	return true;
}

static bool checkpoint_fill(PGresult *r, int i, void *dst)
{
	struct checkpoint_row *cp = dst;

	memset(cp, 0, sizeof(*cp));
	cp->id = store_col_ll(r, i, 0);
	cp->position = store_col_ll(r, i, 1);
	store_col_text(r, i, 2, cp->hash, sizeof(cp->hash));
	store_col_text(r, i, 3, cp->signed_at, sizeof(cp->signed_at));
	store_col_text(r, i, 4, cp->key_id, sizeof(cp->key_id));
	store_col_text(r, i, 5, cp->signature, sizeof(cp->signature));
	return true;
}

static void checkpoint_clear(void *row)
{
	memset(row, 0, sizeof(struct checkpoint_row));
}

bool store_checkpoint_list(struct store *s, long long after_id, long limit,
			   struct checkpoint_row **rows, size_t *count, bool *more,
			   struct floe_error *err)
{
	char afterp[32];
	void *out = NULL;

	(void)snprintf(afterp, sizeof(afterp), "%lld", after_id);
	bool ok = store_list_after(s, &statements[ST_CHECKPOINT_LIST], afterp, limit,
				   sizeof(**rows), checkpoint_fill, checkpoint_clear, &out, count,
				   more, err);
	*rows = out;
	return ok;
}
