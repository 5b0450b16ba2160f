/*
 * rowfree.c - freeing the rows the store hands out: audit events, hooks,
 * principals, roles, grants, name lists,
 * hook targets and write-audit-publish runs. Nothing here touches libpq,
 * so the fakes of the store port (tests/unit/fakes/) link this file
 * instead of repeating it.
 */
#include "store.h"
#include "store_internal.h"

#include <stdlib.h>
#include <string.h>

void store_rows_free(void *rows, size_t count, size_t size, void (*clear)(void *row))
{
	for (size_t i = 0; rows != NULL && i < count; i++)
		clear((char *)rows + i * size);
	free(rows);
}

void store_event_row_clear(struct event_row *row)
{
	free(row->event);
	free(row->principal);
	free(row->client_id);
	free(row->request_id);
	ident_ns_clear(&row->ns);
	free(row->table);
	free(row->run_id);
	free(row->details);
	memset(row, 0, sizeof(*row));
}

void store_event_clear(void *row)
{
	store_event_row_clear(row);
}

void store_event_rows_free(struct event_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), store_event_clear);
}

void store_hook_row_clear(struct hook_row *row)
{
	free(row->name);
	free(row->url);
	free(row->scope_table);
	ident_ns_clear(&row->scope_ns);
	memset(row, 0, sizeof(*row));
}

void store_hook_clear(void *row)
{
	store_hook_row_clear(row);
}

void store_hook_rows_free(struct hook_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), store_hook_clear);
}

void store_hook_target_clear(void *dst)
{
	struct hook_target *row = dst;

	free(row->name);
	free(row->url);
	free(row->secret);
	memset(row, 0, sizeof(*row));
}

void store_hook_targets_free(struct hook_target *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), store_hook_target_clear);
}

void store_run_row_clear(struct run_row *row)
{
	ident_ns_clear(&row->ns);
	free(row->table_name);
	free(row->branch);
	free(row->state);
	free(row->audits);
	free(row->staged_by);
	free(row->staged_client_id);
	free(row->published_by);
	free(row->published_client_id);
	free(row->abandoned_by);
	free(row->abandoned_client_id);
	free(row->written_by);
	memset(row, 0, sizeof(*row));
}

void store_run_clear(void *row)
{
	store_run_row_clear(row);
}

void store_run_rows_free(struct run_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), store_run_clear);
}

void store_names_free(char **names, size_t count)
{
	(void)count; /* one block: the pointers, then the names */
	free(names);
}

void store_principal_row_clear(struct principal_row *row)
{
	free(row->name);
	free(row->kind);
	free(row->client_id);
	free(row->secret_hash);
	free(row->source);
	free(row->created_at);
	memset(row, 0, sizeof(*row));
}

void store_principal_clear(void *row)
{
	store_principal_row_clear(row);
}

void store_principal_rows_free(struct principal_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), store_principal_clear);
}

void store_role_clear(void *dst)
{
	struct role_row *row = dst;

	free(row->name);
	memset(row, 0, sizeof(*row));
}

void store_role_row_clear(struct role_row *row)
{
	store_role_clear(row);
}

void store_role_rows_free(struct role_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), store_role_clear);
}

void store_grant_clear(void *dst)
{
	struct grant_row *row = dst;

	free(row->privilege);
	ident_ns_clear(&row->ns);
	free(row->table);
	memset(row, 0, sizeof(*row));
}

void store_grant_rows_free(struct grant_row *rows, size_t count)
{
	store_rows_free(rows, count, sizeof(*rows), store_grant_clear);
}
