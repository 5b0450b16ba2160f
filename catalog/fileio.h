/*
 * fileio.h - the table files floe itself writes and removes: metadata
 * files, written durably, and a table's directory on a purge. Local
 * storage (file:// URLs) only.
 */
#ifndef FLOE_FILEIO_H
#define FLOE_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The local path of a file:// URL (a new string), or NULL with
 * FE_BAD_REQUEST naming what is unsupported. */
char *fileio_local_path(const char *url, struct floe_error *err) FLOE_WUR;

/*
 * Writes text as <table location>/metadata/<NNNNN>-<uuid>.metadata.json
 * (NNNNN = version): a temporary file, fsync, rename, fsync of the
 * directory, so a reader sees the whole file or none. *location receives
 * the file's URL (caller frees).
 */
bool fileio_write_metadata(const char *table_location, long long version,
			   const char *text, size_t len, char **location,
			   struct floe_error *err) FLOE_WUR;

/* Reads a whole file (at most max bytes) named by a file:// URL. */
bool fileio_read(const char *url, size_t max, char **text, size_t *len,
		 struct floe_error *err) FLOE_WUR;

/* Removes a file named by URL; a missing file is not an error. */
void fileio_remove(const char *url);

/*
 * Removes the directory tree of a table location, but only when it lies
 * inside the warehouse directory (never the warehouse itself). *removed
 * counts the files removed. Symbolic links are removed, never followed.
 */
bool fileio_purge(const char *table_location, const char *warehouse_path,
		  long *removed, struct floe_error *err) FLOE_WUR;

#endif
