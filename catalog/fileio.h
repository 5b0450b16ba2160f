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
 * Checks, before anything is written, that the files floe writes under a
 * table location (a local path, as fileio_local_path gives) can be named:
 * every path component at most NAME_MAX bytes, and the longest metadata
 * file path under PATH_MAX. FE_BAD_REQUEST names the component and says
 * that a name's escaped form counts ('%', '/' and '\' take 3 bytes).
 */
bool fileio_location_fits(const char *path, struct floe_error *err) FLOE_WUR;

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
