/*
 * fileio.c - the table files floe writes, reads and removes, routed to the
 * backend of the location's scheme (backend.h): local files (local.c) and
 * S3-compatible object storage (s3.c). Each waits on a disk or a bucket,
 * so none runs inside a database transaction (txguard.h).
 */
#include "fileio.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "backend.h"
#include "txguard.h"

static const struct fileio_backend *const backends[] = {
	&fileio_local,
	&fileio_s3,
};

/*
 * The backend of a location: its scheme (the letters before the first
 * ':'), or local files for a bare path. A scheme no backend serves goes to
 * the local backend too, which refuses it with the message a client has
 * always had (location_canonical's).
 */
static const struct fileio_backend *backend_for(const char *url)
{
	size_t n = strcspn(url, ":/");

	if (url[n] == ':' && n > 0) {
		for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++) {
			if (strlen(backends[i]->scheme) == n &&
			    strncasecmp(url, backends[i]->scheme, n) == 0)
				return backends[i];
		}
	}
	return &fileio_local;
}

bool fileio_check_beneath(const char *url, const char *warehouse_path, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE();
	return backend_for(url)->check_beneath(url, warehouse_path, err);
}

bool fileio_write_metadata(const char *table_location, long long version, const char *text,
			   size_t len, char **location, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE();
	return backend_for(table_location)
		->write_metadata(table_location, version, text, len, location, err);
}

bool fileio_write_metadata_in(const char *dir, long long version, const char *text, size_t len,
			      char **location, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE();
	return backend_for(dir)->write_metadata_in(dir, version, text, len, location, err);
}

bool fileio_make_metadata_dir(const char *table_location, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE();
	return backend_for(table_location)->make_metadata_dir(table_location, err);
}

bool fileio_write_new(const char *table_location, const char *name, const void *data, size_t len,
		      char **location, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE();
	return backend_for(table_location)
		->write_new(table_location, name, data, len, location, err);
}

bool fileio_read(const char *url, size_t max, char **text, size_t *len, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE();
	return backend_for(url)->read(url, max, text, len, err);
}

void fileio_remove(const char *url)
{
	TXGUARD_ASSERT_NONE();
	backend_for(url)->remove(url);
}

enum fileio_purge_result fileio_purge(const char *table_location, const char *warehouse_path,
				      long *removed, struct floe_error *err)
{
	TXGUARD_ASSERT_NONE();
	return backend_for(table_location)->purge(table_location, warehouse_path, removed, err);
}

long fileio_remove_stale_tmp(const char *table_location, const char *warehouse_path, int min_age_s)
{
	TXGUARD_ASSERT_NONE();
	return backend_for(table_location)
		->remove_stale_tmp(table_location, warehouse_path, min_age_s);
}
