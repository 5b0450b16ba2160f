/*
 * janitor.c - the janitor thread (see janitor.h). Each round does a
 * bounded amount of each chore, so one round never runs long and a
 * backlog drains over several rounds. A run left auditing by a floe that
 * stopped is failed once its lease is over (a publish may also take it
 * over before that, wap.c).
 */
#include "janitor.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "audittrail.h"
#include "location.h"
#include "log.h"
#include "metric.h"
#include "ports.h"
#include "txguard.h"
#include "unsettled.h"
#include "uuid.h"

/* Purges per round, rows per bounded DELETE, tables visited for orphan
 * temporary files per round. */
#define JANITOR_PURGE_BATCH 16
#define JANITOR_DELETE_BATCH 1000
#define JANITOR_DELETE_ROUNDS 10
#define JANITOR_VISIT_BATCH 100
/* A temporary metadata file lives for milliseconds (write, fsync,
 * rename); one this old was left by a writer that died. */
#define JANITOR_TMP_MIN_AGE_S (10 * 60)
/* The longest wait between two attempts at a failing purge. */
#define JANITOR_RETRY_MAX_S 3600
/* How long a purge is this janitor's: past it (the janitor stopped, or a
 * purge ran this long) another janitor takes the purge over. Removing a
 * file twice does no harm, so an overlap costs only time. */
#define JANITOR_PURGE_LEASE_S (15 * 60)

struct janitor {
	struct janitor_config cfg;
	char *warehouse_path;
	char *further[JANITOR_WAREHOUSES_MAX];
	size_t nfurther;
	struct store_pool *pool;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stopping;
	bool woken;
	char owner[UUID_STR_LEN];        /* this janitor's purge leases */
	long long visit_after;           /* the tables id the orphan visit resumes at */
	struct timespec last_checkpoint; /* CLOCK_MONOTONIC; zero: none yet */
};

/* The directory (s3: the URL) of the warehouse holding a table's
 * location: a further warehouse's when the location is below it, else
 * the default one's, below which fileio refuses anything outside. */
static const char *root_of(const struct janitor *j, const char *location)
{
	const char *path = location_path(location);

	for (size_t i = 0; path != NULL && i < j->nfurther; i++) {
		size_t n = strlen(j->further[i]);
		if (strncmp(path, j->further[i], n) == 0 && (path[n] == '/' || path[n] == '\0'))
			return j->further[i];
	}
	return j->warehouse_path;
}

/* The wait before attempt number attempts + 1: the interval, doubling. */
static int retry_delay(const struct janitor *j, int attempts)
{
	long long d = (long long)j->cfg.interval_s << (attempts < 12 ? attempts : 12);
	return d > JANITOR_RETRY_MAX_S ? JANITOR_RETRY_MAX_S : (int)d;
}

/* One purge row, leased to this janitor: the files go with no
 * transaction open, and the outcome is recorded under the lease. */
static bool purge_one(struct janitor *j, struct store *s, const struct purge_row *row,
		      struct floe_error *err)
{
	bool kept = false;

	struct floe_error perr;
	char *other = NULL;
	long removed = 0;
	enum fileio_purge_result res;
	char reason[FLOE_ERROR_MESSAGE_MAX];

	floe_error_clear(&perr);
	/* Rows from before canonical locations are compared canonically
	 * too. */
	char *canon = location_canonical(row->location, &perr);
	if (canon == NULL) {
		(void)snprintf(reason, sizeof(reason), "%s", perr.message);
		res = FILEIO_PURGE_REFUSED;
		goto record;
	}
	/* The no-overlap rule keeps new tables out of a tombstoned location;
	 * a table that shares it from before that rule keeps its files. */
	bool looked = store_live_location_clash(s, canon, &other, err);
	if (!looked) {
		free(canon);
		return false;
	}
	if (other != NULL) {
		(void)snprintf(reason, sizeof(reason),
			       "table %s lives in or around this location; its files are kept",
			       other);
		free(other);
		res = FILEIO_PURGE_REFUSED;
	} else {
		res = fileio_purge(canon, root_of(j, canon), &removed, &perr);
		(void)snprintf(reason, sizeof(reason), "%s", perr.message);
	}
	free(canon);
record:
	if (res == FILEIO_PURGE_DONE) {
		if (!store_purge_done(s, row->id, j->owner, &kept, err))
			return false;
		if (!kept) {
			log_warn(
				"janitor",
				"purge of %s (table %s) outlasted its lease; another janitor took it over",
				row->location, row->uuid);
			return true;
		}
		metric_add(METRIC_JANITOR_ROWS, METRIC_ROWS_PURGES_DONE, 1);
		metric_add(METRIC_JANITOR_FILES, METRIC_FILES_PURGED, removed);
		log_info("janitor", "purged %s (table %s): %ld entries removed", row->location,
			 row->uuid, removed);
		return true;
	}
	int attempts = 0;
	bool gave_up = false;
	if (!store_purge_failed(s, row->id, j->owner, reason, j->cfg.purge_max_attempts,
				retry_delay(j, row->attempts), res == FILEIO_PURGE_REFUSED,
				&attempts, &gave_up, &kept, err))
		return false;
	if (!kept) {
		log_warn(
			"janitor",
			"purge of %s (table %s) outlasted its lease; another janitor took it over: %s",
			row->location, row->uuid, reason);
		return true;
	}
	metric_add(METRIC_JANITOR_ROWS, METRIC_ROWS_PURGES_FAILED, gave_up);
	if (gave_up)
		log_warn(
			"janitor",
			"purge of %s (table %s) failed for good after %d attempt(s): %s; the files stay until an operator acts",
			row->location, row->uuid, attempts, reason);
	else
		log_warn("janitor",
			 "purge of %s (table %s) failed (attempt %d of %d), retried in %d s: %s",
			 row->location, row->uuid, attempts, j->cfg.purge_max_attempts,
			 retry_delay(j, row->attempts), reason);
	return true;
}

static void run_purges(struct janitor *j, struct store *s)
{
	struct floe_error err;

	for (int i = 0; i < JANITOR_PURGE_BATCH; i++) {
		struct purge_row row;
		bool found = false;

		floe_error_clear(&err);
		/* Leased, not locked: no transaction is open while files go. */
		TXGUARD_ASSERT_NONE();
		if (!store_purge_claim(s, j->owner, JANITOR_PURGE_LEASE_S, &row, &found, &err))
			goto fail;
		if (!found)
			return;
		bool ok = purge_one(j, s, &row, &err);
		store_purge_row_clear(&row);
		if (!ok)
			goto fail; /* the lease runs out; a later round retries */
	}
	return;
fail:
	log_warn("janitor", "purges paused until the next round: %s", err.message);
}

static void run_expiry(struct store *s, const char *what,
		       bool (*expire)(struct store *, long long, int, long *, struct floe_error *),
		       long long age, enum metric_janitor_rows kind)
{
	struct floe_error err;
	long total = 0;

	for (int i = 0; i < JANITOR_DELETE_ROUNDS; i++) {
		long n = 0;
		floe_error_clear(&err);
		if (!expire(s, age, JANITOR_DELETE_BATCH, &n, &err)) {
			log_warn("janitor", "%s: failed: %s", what, err.message);
			break;
		}
		total += n;
		metric_add(METRIC_JANITOR_ROWS, kind, n);
		if (n < JANITOR_DELETE_BATCH)
			break;
	}
	if (total > 0)
		log_info("janitor", "%s: %ld", what, total);
}

/* Visits a slice of the tables for orphan temporary metadata files. */
static void run_visit(struct janitor *j, struct store *s)
{
	struct floe_error err;
	struct table_location *rows = NULL;
	size_t count = 0;

	floe_error_clear(&err);
	if (!store_table_locations_after(s, j->visit_after, JANITOR_VISIT_BATCH, &rows, &count,
					 &err)) {
		log_warn("janitor", "listing tables for orphan files failed: %s", err.message);
		return;
	}
	for (size_t i = 0; i < count; i++) {
		j->visit_after = rows[i].id;
		metric_add(METRIC_JANITOR_FILES, METRIC_FILES_TEMPORARY,
			   fileio_remove_stale_tmp(rows[i].location, root_of(j, rows[i].location),
						   JANITOR_TMP_MIN_AGE_S));
	}
	if (count < JANITOR_VISIT_BATCH)
		j->visit_after = 0; /* round the table list again next time */
	store_table_locations_free(rows, count);
}

/* unsettled_drain's callback: asks the database about one commit, by its
 * transaction's status. Only a transaction proved aborted loses its file;
 * one still in progress is asked again next round. */
static bool settle_one(void *ctx, const struct unsettled_commit *c)
{
	struct store *s = ctx;
	struct floe_error err;
	enum store_commit_fate fate = STORE_COMMIT_UNPROVED;

	if (!store_commit_landed(s, c->xid, c->table_uuid, c->version, c->location, &fate, &err))
		return false; /* the database is still away: next round */
	if (fate == STORE_COMMIT_PENDING) {
		log_info(
			"janitor",
			"version %lld of table %s: its transaction %s is still in progress; asking again next round rid=%s",
			c->version, c->table_uuid, c->xid, c->request_id);
		return false;
	}
	metric_add(METRIC_JANITOR_ROWS, METRIC_ROWS_UNSETTLED_COMMITS, 1);
	metric_add(METRIC_JANITOR_FILES, METRIC_FILES_UNSETTLED, fate == STORE_COMMIT_ABORTED);
	if (fate == STORE_COMMIT_LANDED) {
		log_warn(
			"janitor",
			"settled: version %lld of table %s landed (its client was told the outcome is unknown) rid=%s",
			c->version, c->table_uuid, c->request_id);
	} else if (fate == STORE_COMMIT_ABORTED) {
		fileio_remove(c->location);
		log_warn(
			"janitor",
			"settled: version %lld of table %s did not land, its transaction %s aborted (its client was told the outcome is unknown); removed %s rid=%s",
			c->version, c->table_uuid, c->xid, c->location, c->request_id);
	} else {
		log_warn(
			"janitor",
			"version %lld of table %s: the database cannot tell whether transaction %s committed and the commit log does not hold it; %s is kept rid=%s",
			c->version, c->table_uuid, c->xid[0] != '\0' ? c->xid : "(unknown)",
			c->location, c->request_id);
	}
	return true;
}

/* A signed checkpoint of the audit chain's head, when one is due (a
 * head already signed is not signed again). */
static void run_checkpoint(struct janitor *j, struct store *s)
{
	struct timespec now;
	struct floe_error err;

	if (j->cfg.audit_key == NULL || j->cfg.checkpoint_interval_s <= 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (j->last_checkpoint.tv_sec != 0 &&
	    now.tv_sec - j->last_checkpoint.tv_sec < j->cfg.checkpoint_interval_s)
		return;
	json_t *cp = audittrail_checkpoint(s, NULL, j->cfg.audit_key, &err);
	if (cp == NULL) {
		log_warn("janitor", "no checkpoint of the audit chain this round: %s", err.message);
		return;
	}
	j->last_checkpoint = now;
	if (json_is_true(json_object_get(cp, "created")))
		log_info("janitor", "signed a checkpoint of the audit chain at position %lld",
			 (long long)json_integer_value(json_object_get(cp, "position")));
	json_decref(cp);
}

static void janitor_round(struct janitor *j)
{
	struct floe_error err;
	struct store *s = store_pool_acquire(j->pool, &err);

	if (s == NULL) {
		log_warn("janitor", "no database connection; upkeep waits: %s", err.message);
		return;
	}
	metric_add(METRIC_JANITOR_ROUNDS, 0, 1);
	unsettled_drain(j->cfg.unsettled, settle_one, s);
	run_purges(j, s);
	run_expiry(s, "expired idempotency keys removed", store_idem_expire,
		   j->cfg.idempotency_keep_s, METRIC_ROWS_IDEMPOTENCY_KEYS);
	run_expiry(s, "metrics reports past their retention removed", store_metrics_expire,
		   j->cfg.metrics_retention_days, METRIC_ROWS_METRICS_REPORTS);
	run_expiry(s, "runs left auditing past their lease failed (wap.lease-expired)",
		   store_run_expire_stale, 0, METRIC_ROWS_EXPIRED_AUDITS);
	run_expiry(s, "releases left auditing past their lease failed (release.lease-expired)",
		   store_release_expire_stale, 0, METRIC_ROWS_EXPIRED_AUDITS);
	run_expiry(s, "dropped tables past their undrop retention forgotten", store_dropped_expire,
		   j->cfg.undrop_retention_s, METRIC_ROWS_DROPPED_TABLES);
	run_expiry(s, "change-feed events past their retention removed", store_feed_expire,
		   j->cfg.events_retention_s, METRIC_ROWS_FEED_EVENTS);
	run_visit(j, s);
	run_checkpoint(j, s);
	store_pool_release(j->pool, s);
}

static void *janitor_main(void *arg)
{
	struct janitor *j = arg;

	pthread_mutex_lock(&j->mu);
	while (!j->stopping) {
		pthread_mutex_unlock(&j->mu);
		janitor_round(j);
		pthread_mutex_lock(&j->mu);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_sec += j->cfg.interval_s;
		while (!j->stopping && !j->woken) {
			if (pthread_cond_timedwait(&j->cv, &j->mu, &until) == ETIMEDOUT)
				break;
		}
		j->woken = false;
	}
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

static void janitor_free(struct janitor *j)
{
	pthread_mutex_destroy(&j->mu);
	pthread_cond_destroy(&j->cv);
	free(j->warehouse_path);
	for (size_t i = 0; i < j->nfurther; i++)
		free(j->further[i]);
	free(j);
}

struct janitor *janitor_start(const struct janitor_config *cfg)
{
	struct janitor *j = calloc(1, sizeof(*j));
	pthread_condattr_t ca;

	if (j == NULL) {
		log_error("janitor", "out of memory");
		return NULL;
	}
	j->cfg = *cfg;
	j->warehouse_path = strdup(cfg->warehouse_path);
	bool copied = j->warehouse_path != NULL && cfg->nfurther <= JANITOR_WAREHOUSES_MAX &&
		      uuid_v4(j->owner);
	for (size_t i = 0; copied && i < cfg->nfurther; i++) {
		j->further[i] = strdup(cfg->further_paths[i]);
		copied = j->further[i] != NULL;
		j->nfurther = i + 1;
	}
	pthread_mutex_init(&j->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->cv, &ca);
	pthread_condattr_destroy(&ca);
	j->pool = cfg->pool;
	if (!copied) {
		log_error("janitor", "out of memory");
		janitor_free(j);
		return NULL;
	}
	j->cfg.warehouse_path = j->warehouse_path;
	j->cfg.further_paths = NULL;
	if (pthread_create(&j->thread, NULL, janitor_main, j) != 0) {
		log_error("janitor", "cannot start the janitor thread");
		janitor_free(j);
		return NULL;
	}
	log_info("janitor",
		 "started: a round every %d s, metrics kept %lld days, purges tried %d times",
		 cfg->interval_s, cfg->metrics_retention_days, cfg->purge_max_attempts);
	return j;
}

void janitor_wake(struct janitor *j)
{
	if (j == NULL)
		return;
	pthread_mutex_lock(&j->mu);
	j->woken = true;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
}

void janitor_stop(struct janitor **jp)
{
	struct janitor *j = *jp;

	if (j == NULL)
		return;
	pthread_mutex_lock(&j->mu);
	j->stopping = true;
	pthread_cond_signal(&j->cv);
	pthread_mutex_unlock(&j->mu);
	pthread_join(j->thread, NULL);
	janitor_free(j);
	*jp = NULL;
}
