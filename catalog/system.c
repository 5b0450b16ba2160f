/*
 * system.c - connections for requests and the readiness check. The
 * daemon's start-up creates the pools (store_admin.h); this only borrows.
 */
#include "system.h"

#include "ports.h"

struct store *system_acquire(struct store_pool *pool, struct floe_error *err)
{
	return store_pool_acquire(pool, err);
}

struct store *system_acquire_in(struct store_pool *pool, const char *warehouse,
				struct floe_error *err)
{
	struct store *s = store_pool_acquire(pool, err);

	if (s != NULL)
		store_use_warehouse(s, warehouse);
	return s;
}

void system_use(struct store *s, const char *warehouse)
{
	store_use_warehouse(s, warehouse);
}

void system_release(struct store_pool *pool, struct store *s)
{
	store_pool_release(pool, s);
}

bool system_ready(struct store_pool *pool, struct floe_error *err)
{
	struct store *s = store_pool_acquire(pool, err);

	if (s == NULL)
		return false;
	bool ok = store_ping(s, err);
	store_pool_release(pool, s);
	if (!ok)
		err->kind = FE_UNAVAILABLE;
	return ok;
}
