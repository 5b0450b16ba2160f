/*
 * fileio.h - the table files floe itself writes and removes: metadata
 * files, written durably, and a table's directory on a purge. Each call
 * goes to the storage backend of the location's scheme (backend.h): local
 * storage (file:// URLs and bare paths, local.c) or S3-compatible object
 * storage (s3://bucket/key, s3.c; docs/storage.md has its contract).
 * fileio_local_path and fileio_location_fits are about local paths.
 */
#ifndef FLOE_FILEIO_H
#define FLOE_FILEIO_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* The local path of a location in any form location_canonical accepts,
 * canonicalised (a new string), or NULL with FE_BAD_REQUEST. */
char *fileio_local_path(const char *url, struct floe_error *err) FLOE_WUR;

/*
 * Checks that the location lies below warehouse_path and that no part of
 * it below the warehouse root is a symbolic link (one could lead outside
 * the warehouse, or into another table's directory). Parts that do not
 * exist yet pass: floe creates them as directories. FE_BAD_REQUEST.
 */
bool fileio_check_beneath(const char *url, const char *warehouse_path,
			  struct floe_error *err) FLOE_WUR;

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
bool fileio_write_metadata(const char *table_location, long long version, const char *text,
			   size_t len, char **location, struct floe_error *err) FLOE_WUR;

/* Like fileio_write_metadata, into the directory dir (a location) rather
 * than <table location>/metadata: a view's write.metadata.path. */
bool fileio_write_metadata_in(const char *dir, long long version, const char *text, size_t len,
			      char **location, struct floe_error *err) FLOE_WUR;

/*
 * Makes <table location>/metadata/ exist (with its parents, each made
 * durable), for engines that write their own files below a staged table
 * before its first metadata file exists. FE_BAD_REQUEST when the location
 * is not one floe can write; FE_INTERNAL when a directory cannot be made
 * (logged with its cause).
 */
bool fileio_make_metadata_dir(const char *table_location, struct floe_error *err) FLOE_WUR;

/*
 * Writes data as <table location>/metadata/<name>, a new file (never over
 * another), and syncs it. *location receives the file's URL (caller
 * frees). FE_BAD_REQUEST when the location is not one floe can write or
 * the name does not fit under it; FE_INTERNAL when the write fails (logged
 * with its cause; nothing is left behind).
 */
bool fileio_write_new(const char *table_location, const char *name, const void *data, size_t len,
		      char **location, struct floe_error *err) FLOE_WUR;

/* Reads a whole regular file of at most max bytes named by a location.
 * FIFOs, devices, directories and symbolic links (as the last part) are
 * refused without blocking, and a larger file before it is read:
 * FE_BAD_REQUEST. *text is NUL-terminated (caller frees). */
bool fileio_read(const char *url, size_t max, char **text, size_t *len,
		 struct floe_error *err) FLOE_WUR;

/* Removes a file named by URL; a missing file is not an error. */
void fileio_remove(const char *url);

enum fileio_purge_result {
	FILEIO_PURGE_DONE,    /* removed, or there was nothing to remove */
	FILEIO_PURGE_RETRY,   /* some entries could not be removed (err says) */
	FILEIO_PURGE_REFUSED, /* never floe's to remove: outside the warehouse,
			       * or through a symbolic link (err says) */
};

/*
 * Removes the directory tree of a table location, which must lie below
 * warehouse_path (never the warehouse itself). No symbolic link is
 * followed, on the way to the table directory or inside it: links are
 * removed as links. *removed counts the entries removed.
 */
enum fileio_purge_result fileio_purge(const char *table_location, const char *warehouse_path,
				      long *removed, struct floe_error *err) FLOE_WUR;

/* Removes <location>/metadata/<*>.metadata.json.tmp files older than
 * min_age_s (left by a writer that died between write and rename),
 * following no symbolic link. Returns how many were removed. */
long fileio_remove_stale_tmp(const char *table_location, const char *warehouse_path, int min_age_s);

/* The most S3 stores fileio keeps: one per s3:// warehouse, the default
 * one and the 64 further ones a warehouses file may name. */
#define FILEIO_S3_STORES_MAX (64 + 1)

/* How floe reaches one warehouse's S3-compatible object storage. Strings
 * are borrowed for the call only; the secrets are copied and never
 * logged. */
struct fileio_s3_options {
	const char *endpoint;      /* scheme://host[:port]; NULL or "": AWS's endpoint of region */
	const char *region;        /* signs every request (aws:amz:REGION:s3) */
	bool path_style;           /* endpoint/bucket/key rather than bucket.endpoint/key */
	const char *access_key_id; /* NULL or "": from credentials_file */
	const char *secret_access_key;
	const char *session_token;    /* NULL or "": none */
	const char *credentials_file; /* a shared credentials file (INI), or NULL */
	const char *profile;          /* its section */
	bool default_warehouse;       /* the default warehouse's (--warehouse) store: the
				       * one --s3-client-endpoint and --s3-sts-endpoint
				       * are for, and the one a caller naming no location
				       * gets */
};

/*
 * Adds the S3 store of one s3:// warehouse (location: s3://bucket[/prefix]
 * in any spelling) for the process, before any thread uses the backend,
 * and checks with HeadBucket, signed with the store's own credentials,
 * that its bucket exists and they reach it. From then on every request
 * for an object goes to the store whose location is the longest one
 * holding the object's URL (at a path boundary); an object in no store's
 * location is refused with FE_BAD_REQUEST, never signed with another
 * store's keys. FE_BAD_REQUEST when the configuration is wrong (no or
 * unreadable credentials, no such bucket, credentials refused, another
 * region, a second store for one location or for the default warehouse,
 * more than FILEIO_S3_STORES_MAX), FE_UNAVAILABLE when the storage cannot
 * be reached or keeps failing; the message says which. A failed call adds
 * nothing and leaves the stores added before.
 */
bool fileio_s3_start(const struct fileio_s3_options *o, const char *location,
		     struct floe_error *err) FLOE_WUR;

/* Forgets every store, their secrets wiped (and the calling thread's
 * connection). */
void fileio_s3_stop(void);

/* How engines get access to a table's objects in s3:// storage
 * (docs/storage.md "Vended credentials"). Off unless configured. */
enum fileio_vend_mode {
	FILEIO_VEND_OFF,    /* no credentials are given out */
	FILEIO_VEND_STATIC, /* floe's own credentials, not scoped: the weaker mode */
	FILEIO_VEND_STS,    /* STS AssumeRole, a session policy per table prefix */
};

/* The vending configuration. Strings are borrowed for the call only. */
struct fileio_vend_options {
	enum fileio_vend_mode mode;
	const char *client_endpoint; /* s3.endpoint engines are told for the default
				      * warehouse; NULL or "": its storage's */
	const char *sts_endpoint;    /* the default warehouse's STS, scheme://host[:port];
				      * NULL or "": AWS's of the region */
	const char *role_arn;        /* the role assumed (for writers, and readers too
				      * unless read_role_arn is set) */
	const char *read_role_arn;   /* NULL or "": role_arn */
	int duration_s;              /* lifetime of assumed credentials, 900..43200 */
};

/*
 * Sets vending up for the process, after every fileio_s3_start: the mode
 * and roles apply to every store, and each table's credentials come from
 * the store holding it (its keys for static; STS calls signed with its
 * keys and region). client_endpoint and sts_endpoint are the default
 * warehouse's; a further warehouse's engines are told its own endpoint,
 * and its STS calls go to its own endpoint (AWS's STS of its region when
 * it has none). FE_BAD_REQUEST when a mode other than off is asked
 * without an s3:// warehouse, or sts without a role.
 */
bool fileio_vend_start(const struct fileio_vend_options *o, struct floe_error *err) FLOE_WUR;

/* The mode fileio_vend_start set (FILEIO_VEND_OFF before it). */
enum fileio_vend_mode fileio_vend_mode(void);

/* Credentials for one table's objects. Never logged; wipe after use. */
struct fileio_vended {
	char access_key_id[256];
	char secret_access_key[256];
	char session_token[4096]; /* "" when there is none */
	long long expires_at_ms;  /* 0: they do not expire (static) */
};

/* What engines need besides the keys to reach the storage: the config
 * values of s3.endpoint ("" for AWS's own), s3.path-style-access and the
 * region. */
struct fileio_vend_client {
	char endpoint[272];
	bool path_style;
	char region[72];
};

/* Fills *out for the store holding table_location (a canonical s3://
 * location); false when vending is off or no store holds it. */
bool fileio_vend_client(const char *table_location, struct fileio_vend_client *out);

/*
 * Credentials for the objects of table_location (a canonical s3://
 * location), read-only or (write) read-write, from the store holding it.
 * Static: that store's own keys. STS:
 * AssumeRole of the role (read_role_arn for readers when set) with a
 * session policy allowing only that prefix's objects, session_name
 * (characters outside [A-Za-z0-9+=,.@_-] become '-'; cut to 64) naming
 * the session. FE_BAD_REQUEST when the location is not s3://, in no
 * store's location, or too long for a session policy; FE_UNAVAILABLE when STS cannot be reached, is
 * failing or refuses (the cause is logged, never a secret); FE_INTERNAL
 * when its answer is unreadable.
 */
bool fileio_vend(const char *table_location, bool write, const char *session_name,
		 struct fileio_vended *out, struct floe_error *err) FLOE_WUR;

#endif
