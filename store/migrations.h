/*
 * migrations.h - the numbered .sql files of store/migrations, embedded into
 * the binary at build time (scripts/embed-sql.py), in ascending order.
 */
#ifndef FLOE_MIGRATIONS_H
#define FLOE_MIGRATIONS_H

#include <stddef.h>

struct store_migration {
	int version;      /* the file's number */
	const char *name; /* the file name without .sql */
	const char *sql;
};

extern const struct store_migration store_migrations[];
extern const size_t store_migrations_count;

#endif
