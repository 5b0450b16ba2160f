/*
 * backend.h - what a storage backend of fileio provides: one table of
 * operations per URL scheme (as curl's struct Curl_ssl is per TLS
 * library). fileio.c picks the table by the location's scheme; each
 * operation has the contract of the fileio.h function of the same name.
 * Only backends and fileio.c include this header.
 */
#ifndef FLOE_FILEIO_BACKEND_H
#define FLOE_FILEIO_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "fileio.h"

struct fileio_backend {
	const char *scheme; /* "file": matched case-insensitively */
	bool (*check_beneath)(const char *url, const char *warehouse_path, struct floe_error *err);
	bool (*write_metadata)(const char *table_location, long long version, const char *text,
			       size_t len, char **location, struct floe_error *err);
	bool (*write_metadata_in)(const char *dir, long long version, const char *text, size_t len,
				  char **location, struct floe_error *err);
	bool (*make_metadata_dir)(const char *table_location, struct floe_error *err);
	bool (*write_new)(const char *table_location, const char *name, const void *data,
			  size_t len, char **location, struct floe_error *err);
	bool (*read)(const char *url, size_t max, char **text, size_t *len, struct floe_error *err);
	void (*remove)(const char *url);
	enum fileio_purge_result (*purge)(const char *table_location, const char *warehouse_path,
					  long *removed, struct floe_error *err);
	long (*remove_stale_tmp)(const char *table_location, const char *warehouse_path,
				 int min_age_s);
};

/* Local files: file:// URLs and bare absolute paths (local.c). */
extern const struct fileio_backend fileio_local;

/* S3-compatible object storage: s3:// URLs (s3.c), once
 * fileio_s3_start has set it up. */
extern const struct fileio_backend fileio_s3;

#endif
