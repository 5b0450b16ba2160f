/*
 * table.h - the table operations of the Iceberg REST API: create, load,
 * commit (with the optimistic retry loop), multi-table transactions,
 * register, rename and drop. Each ties tablemeta (the rules), fileio (the
 * metadata files) and the store (the pointer and its compare-and-swap).
 */
#ifndef FLOE_TABLE_H
#define FLOE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "access.h"
#include "error.h"
#include "authz.h"
#include "ident.h"

struct store;
struct unsettled;
struct hook_policy;
struct hook_sealer;
struct vend;

/*
 * Striped locks that serialise the commits of one replica to one table:
 * writers on this replica queue instead of racing, so no work is wasted
 * on swaps that would lose. The compare-and-swap in PostgreSQL still
 * decides between replicas.
 */
#define COMMIT_LOCK_STRIPES 256

/* The largest metadata file floe reads (register, loads as of a time;
 * documented in README and the API description): a bound on the memory
 * one request can take. */
#define METADATA_FILE_MAX ((size_t)64 * 1024 * 1024)

struct commit_locks;

/* New locks, or NULL when out of memory. */
struct commit_locks *commit_locks_new(void);

/* Frees the locks; sets *locks to NULL. */
void commit_locks_free(struct commit_locks **locks);

struct idem_as;

/* What the table operations need to know about the deployment. */
struct table_env {
	const char *warehouse;      /* the request's warehouse: its root URL */
	const char *warehouse_path; /* its local directory (s3: the URL) */
	/* Whose catalog: "" the default warehouse's, else the name of a
	 * warehouse of --warehouses (store_use_warehouse). Connections a
	 * request borrows again (the publish after an audit) use it too. */
	const char *warehouse_name;
	const char *request_id;
	/* The request's authenticated principal and its token's client id,
	 * borrowed for the request (and any job it defers); NULL: none,
	 * recorded as "anonymous" and no client id. */
	const char *principal;
	const char *client_id;
	/* The same principal with its roles, for authz_check; NULL when
	 * authentication is off (everything is allowed). */
	const struct principal *acting;
	struct commit_locks *locks;  /* may be NULL: no local serialisation */
	struct unsettled *unsettled; /* commits left to settle; may be NULL */
	/* The request's Idempotency-Key and its owner token, or NULL: table
	 * commits record their answer under the key in the commit's own
	 * transaction, so a key is answered exactly when its commit landed. */
	const char *idem_key;
	const char *idem_owner;
	/* NULL, or how the route answers another route's change (idem.h). */
	const struct idem_as *idem_as;
	const struct hook_policy *hook_policy; /* NULL: no hook allowlist */
	/* Seals and opens hook secrets (hooksecrets.h); NULL: no key, so a
	 * secret can be neither registered nor used. */
	const struct hook_sealer *hook_sealer;
	/* The client asked for vended credentials (vend.h): createTable and
	 * registerTable answer them, vended before anything is stored; NULL:
	 * not asked. */
	struct vend *vend;
	/* Seconds a table dropped without purge is kept for an undrop;
	 * 0: not kept. */
	int undrop_retention_s;
	/* What a release's route needs on every member table (the route
	 * table's privilege; release.c alone knows the members); with a
	 * principal and nothing stated, a member is refused. */
	access_set member_need;
};

/* A table's identity inside one request. */
struct table_ident {
	struct ns_ident ns;
	char *name;
};

void table_ident_clear(struct table_ident *t);

/* Parses {"namespace": [...], "name": "..."}. */
bool table_ident_from_json(const json_t *v, const char *field, struct table_ident *out,
			   struct floe_error *err) FLOE_WUR;

/*
 * The default location of namespace ns: <warehouse>/<levels>, each level
 * escaped so no name can climb out of the warehouse; a table created in
 * ns without a location gets <this>/<name>. A level whose directory is a
 * table's location (table a.b, for namespace a.b) is <level>-ns instead,
 * so the namespace's tables never lie inside that table. *out: a new
 * string. The store's error, or FE_INTERNAL.
 */
bool table_namespace_location(struct store *s, const char *warehouse, const struct ns_ident *ns,
			      char **out, struct floe_error *err) FLOE_WUR;

/* createTable: the LoadTableResult (new reference). */
json_t *table_create(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		     const json_t *body, struct floe_error *err) FLOE_WUR;

enum snapshots_mode { SNAPSHOTS_ALL, SNAPSHOTS_REFS };

/* loadTable: the LoadTableResult as text (caller frees; *len bytes) and
 * its ETag (without quotes, written into etag). extra (borrowed; NULL:
 * {"config": {}}) holds the members that follow "metadata" (vend_table's
 * "config" and "storage-credentials"). With SNAPSHOTS_ALL the
 * stored metadata text is spliced in as it is, never parsed. With gzip
 * (the client accepts it) and a deflated form kept for this version, the
 * answer is one gzip member made around that form without compressing
 * anything now, and *gzipped is set. config: the answer's config
 * object as JSON text (borrowed; NULL: {}). */
char *table_load(struct store *s, const struct ns_ident *ns, const char *name,
		 enum snapshots_mode mode, bool gzip, const json_t *extra, char *etag,
		 size_t etaglen, size_t *len, bool *gzipped, struct floe_error *err) FLOE_WUR;

/* The ETag (without quotes, into etag) of the LoadTableResult for the
 * metadata file metadata_location in mode: loadTable sends it, and so do
 * createTable and updateTable for the metadata they answer with. */
void table_etag(const char *metadata_location, enum snapshots_mode mode, char *etag,
		size_t etaglen);

/* The ETag header value (quoted, into quoted) for an answer that is a
 * LoadTableResult or a CommitTableResponse: that of its metadata-location
 * with all snapshots. False, quoted empty, when it has none (a staged
 * create, or another answer). */
bool table_result_etag(const json_t *result, char *quoted, size_t len);

/* The current metadata of a table, parsed (new reference); its file in
 * *metadata_location when that is not NULL (caller frees). */
json_t *table_load_metadata(struct store *s, const struct ns_ident *ns, const char *name,
			    char **metadata_location, struct floe_error *err) FLOE_WUR;

/* updateTable: {"metadata-location", "metadata"} (new reference). */
json_t *table_commit(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		     const char *name, const json_t *body, struct floe_error *err) FLOE_WUR;

/* Commit flags of floe's own callers. */
#define TABLE_COMMIT_MAIN_MOVE 1u /* main may move under floe.wap.required (WAP publish) */
#define TABLE_COMMIT_CONTROL 2u   /* floe.wap.required may be weakened (the control route) */

/*
 * The commit engine for floe's own callers (refs, write-audit-publish,
 * controls): requirements and updates as in updateTable; flags are
 * TABLE_COMMIT_* (0: the rules of an ordinary commit).
 */
json_t *table_commit_changes(struct store *s, const struct table_env *env,
			     const struct ns_ident *ns, const char *name,
			     const json_t *requirements, const json_t *updates, unsigned flags,
			     struct floe_error *err) FLOE_WUR;

/* Work done in the same database transaction as a commit's swap (the
 * WAP state change and its audit event): returning false undoes both.
 * metadata is the commit's answer. */
typedef bool (*table_commit_also)(struct store *s, void *ctx, const json_t *result,
				  struct floe_error *err);

/* table_commit_changes, with also(ctx) run atomically with the swap. */
json_t *table_commit_with(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *name, const json_t *requirements, const json_t *updates,
			  unsigned flags, table_commit_also also, void *ctx,
			  struct floe_error *err) FLOE_WUR;

/* commitTransaction: every table change lands or none does. */
bool table_commit_transaction(struct store *s, const struct table_env *env, const json_t *body,
			      struct floe_error *err) FLOE_WUR;

/* The engine of commitTransaction for floe's own callers (releases):
 * changes is a "table-changes" array, each committed under flags
 * (TABLE_COMMIT_*), with also(ctx, NULL) in the same database transaction
 * after every swap; every change lands or none does. Privileges are the
 * caller's to check. When a change's requirements or rules refused it,
 * *failed is its index in changes (else SIZE_MAX). */
bool table_commit_many(struct store *s, const struct table_env *env, const json_t *changes,
		       unsigned flags, table_commit_also also, void *ctx, size_t *failed,
		       struct floe_error *err) FLOE_WUR;

/* registerTable: the LoadTableResult of the registered table. */
json_t *table_register(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		       const json_t *body, struct floe_error *err) FLOE_WUR;

/* register through the control route: with reason (not NULL, stored in
 * the audit event) a protected table may be registered over. */
json_t *table_register_with(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			    const json_t *body, const char *reason,
			    struct floe_error *err) FLOE_WUR;

/* dropTable, with its table.dropped audit event in the same transaction;
 * with purge the table's files go too (inside the warehouse
 * only). */
bool table_drop(struct store *s, const struct table_env *env, const struct ns_ident *ns,
		const char *name, bool purge, struct floe_error *err) FLOE_WUR;

/* renameTable from a {"source", "destination"} body, with its
 * table.renamed audit event in the same transaction. A rename that would
 * take a table out of the scope of a namespace's floe.wap.required is
 * FE_FORBIDDEN unless reason (the control route) is given. */
bool table_rename(struct store *s, const struct table_env *env, const json_t *body,
		  const char *reason, struct floe_error *err) FLOE_WUR;

#endif
