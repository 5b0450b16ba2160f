/*
 * main.c - floe's start-up and shutdown: configuration, the embedded or
 * external PostgreSQL, migrations, the HTTP server, and the signal loop
 * that ties their lifetimes together.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "app.h"
#include "auth.h"
#include "auditcli.h"
#include "authcli.h"
#include "config.h"
#include "datadir.h"
#include "embedpg.h"
#include "fileio.h"
#include "hooks.h"
#include "hooksecrets.h"
#include "http.h"
#include "gate.h"
#include "idempotency.h"
#include "janitor.h"
#include "inject.h"
#include "jsonmem.h"
#include "subscriptions.h"
#include "system.h"
#include "log.h"
#include "router.h"
#include "sealing.h"
#include "store.h"
#include "store_admin.h"
#include "trail.h"
#include "unsettled.h"
#include "vend.h"

#ifndef FLOE_VERSION
#define FLOE_VERSION "unknown"
#endif

/* Seconds to keep retrying migrations while the database is unreachable
 * (a compose deployment may start floe before PostgreSQL accepts). */
#define MIGRATE_RETRY_SECONDS 60

/* Vended credentials kept at once (per table, principal and access). */
#define VEND_CACHE_SLOTS 4096

/* mkdir -p of the data directory: each missing directory on the way is
 * made with mode, as the data directory itself, so that a --data-dir
 * whose parent does not exist yet is not a failed start. */
static bool make_data_dir(const char *path, mode_t mode)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf)) {
		(void)fprintf(stderr, "floe: data directory path is empty or too long\n");
		return false;
	}
	memcpy(buf, path, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, mode) != 0 && errno != EEXIST) {
			log_error("main", "cannot create the data directory %s: %s", buf,
				  log_strerror(errno));
			(void)fprintf(stderr, "floe: cannot create the data directory %s: %s\n",
				      buf, log_strerror(errno));
			return false;
		}
		buf[i] = c;
	}
	return true;
}

/* Waits up to one second for SIGTERM or SIGINT (blocked, so pending
 * until taken here). Returns true when one arrived. */
static bool stop_requested(void)
{
	struct timespec one = { 1, 0 };
	sigset_t stops;

	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	int sig = sigtimedwait(&stops, NULL, &one);
	if (sig == SIGTERM || sig == SIGINT) {
		log_info("main", "%s received during start-up: stopping",
			 sig == SIGTERM ? "SIGTERM" : "SIGINT");
		return true;
	}
	return false;
}

/* The embedded PostgreSQL, for the libmicrohttpd panic handler. */
static struct embedpg *panic_pg;

/* libmicrohttpd found its own state broken: log it, stop the embedded
 * PostgreSQL so that it does not outlive floe, and exit non-zero. */
static void on_mhd_panic(void *cls, const char *file, unsigned int line, const char *reason)
{
	(void)cls;
	log_error("http", "libmicrohttpd failed at %s:%u: %s; floe is stopping", file ? file : "?",
		  line, reason ? reason : "no reason given");
	if (panic_pg != NULL)
		embedpg_stop(panic_pg);
	_exit(70);
}

/* Authentication: the keys, the first start's admin client, and the
 * warning that --auth=none is on. */
static bool start_auth(struct app *app, const struct floe_config *cfg, const char *conninfo,
		       const struct sealing *sealing)
{
	struct floe_error err;
	struct secret_key key;
	struct store *s;
	bool ok;

	floe_error_clear(&err);
	app->auth = auth_new(cfg, &err);
	if (app->auth == NULL) {
		log_error("main", "cannot set up authentication: %s", err.message);
		return false;
	}
	/* Client secrets are hashed under a key of the hook secrets key file,
	 * which every floe of a catalog shares already. */
	if (!sealing_client_secret_key(sealing, &key)) {
		log_error("main", "cannot derive the client secrets key");
		return false;
	}
	auth_use_secret_key(app->auth, &key);
	secret_key_clear(&key);
	if (cfg->auth_none) {
		log_warn("main",
			 "authentication is off (--auth=none): anyone who reaches %s:%d may read, "
			 "change, drop and publish everything; for development on one machine only",
			 cfg->listen_host, cfg->listen_port);
		return true;
	}
	s = store_pool_acquire(app->pool, &err);
	if (s == NULL) {
		log_error("main", "cannot make the first admin client: %s", err.message);
		return false;
	}
	ok = auth_bootstrap(app->auth, s, &err);
	store_pool_release(app->pool, s);
	if (!ok) {
		log_error("main", "cannot make the first admin client: %s", err.message);
		return false;
	}
	if (!auth_watch_start(app->auth, conninfo, app->vend, &err)) {
		log_error("main", "cannot set up authentication: %s", err.message);
		return false;
	}
	return true;
}

/* Seals the hook secrets an older floe stored in plain text. */
static bool seal_plain_secrets(struct app *app)
{
	struct floe_error err;
	struct store *s;
	size_t sealed = 0;
	bool ok;

	floe_error_clear(&err);
	s = store_pool_acquire(app->pool, &err);
	ok = s != NULL && hooksecrets_seal_legacy(s, app->hook_sealer, &sealed, &err);
	if (s != NULL)
		store_pool_release(app->pool, s);
	if (!ok)
		log_error("main", "cannot seal the hook secrets stored in plain text: %s",
			  err.message);
	else if (sealed > 0)
		log_info("main",
			 "sealed %zu audit hook secrets stored in plain text by an older floe",
			 sealed);
	return ok;
}

static bool migrate_with_retry(const char *conninfo, bool *stopped)
{
	struct floe_error err;

	*stopped = false;
	for (int waited = 0;; waited++) {
		floe_error_clear(&err);
		if (store_migrate(conninfo, &err))
			return true;
		if (err.kind != FE_UNAVAILABLE || waited >= MIGRATE_RETRY_SECONDS) {
			log_error("main", "floe %s cannot prepare the catalog database: %s",
				  FLOE_VERSION, err.message);
			return false;
		}
		if (waited % 10 == 0)
			log_info("main", "waiting for PostgreSQL to accept connections");
		if (stop_requested()) {
			*stopped = true;
			return false;
		}
	}
}

/* Every s3:// warehouse's storage, the default one's and each further
 * one's: a store of its own (endpoint, region, addressing, keys) kept
 * for its requests, its bucket reached first. Then vending, once, for
 * all of them. Returns 0, 2 when the configuration is wrong (no such
 * bucket, credentials refused or missing) or 1 when a storage cannot be
 * reached. */
static int start_storage(const struct floe_config *cfg)
{
	struct floe_error err;
	size_t started = 0;

	if (cfg->s3) {
		struct fileio_s3_options o = {
			.endpoint = cfg->s3_endpoint,
			.region = cfg->s3_region,
			.path_style = cfg->s3_path_style,
			.access_key_id = cfg->s3_access_key_id,
			.secret_access_key = cfg->s3_secret_access_key,
			.session_token = cfg->s3_session_token,
			.credentials_file = cfg->s3_credentials_file,
			.profile = cfg->s3_profile,
			.default_warehouse = true,
		};
		if (!fileio_s3_start(&o, cfg->warehouse, &err)) {
			log_error("main", "cannot use the warehouse %s: %s", cfg->warehouse,
				  err.message);
			return err.kind == FE_BAD_REQUEST ? 2 : 1;
		}
		started++;
	}
	/* Each further one with its own endpoint and profile, never the
	 * default one's keys. */
	for (size_t i = 0; i < cfg->warehouses.count; i++) {
		const struct warehouse *w = &cfg->warehouses.items[i];
		if (!w->s3)
			continue;
		struct fileio_s3_options wo = {
			.endpoint = w->s3_endpoint,
			.region = w->s3_region,
			.path_style = w->s3_path_style,
			.credentials_file = cfg->s3_credentials_file,
			.profile = w->s3_profile,
		};
		if (!fileio_s3_start(&wo, w->location, &err)) {
			log_error("main", "cannot use the warehouse \"%s\" (%s): %s", w->name,
				  w->location, err.message);
			return err.kind == FE_BAD_REQUEST ? 2 : 1;
		}
		started++;
	}
	if (started == 0)
		return 0;
	static const enum fileio_vend_mode modes[] = { [CONFIG_VEND_OFF] = FILEIO_VEND_OFF,
						       [CONFIG_VEND_STATIC] = FILEIO_VEND_STATIC,
						       [CONFIG_VEND_STS] = FILEIO_VEND_STS };
	struct fileio_vend_options v = {
		.mode = modes[cfg->s3_vend],
		.client_endpoint = cfg->s3_client_endpoint,
		.sts_endpoint = cfg->s3_sts_endpoint,
		.role_arn = cfg->s3_sts_role_arn,
		.read_role_arn = cfg->s3_sts_read_role_arn,
		.duration_s = cfg->s3_sts_duration_s,
	};
	if (!fileio_vend_start(&v, &err)) {
		log_error("main", "cannot vend credentials: %s", err.message);
		return 2;
	}
	if (v.mode != FILEIO_VEND_OFF)
		log_info("main", "vended credentials: %s%s",
			 v.mode == FILEIO_VEND_STS ? "sts" : "static",
			 v.mode == FILEIO_VEND_STATIC
				 ? " (floe's own credentials, not scoped to a table)"
				 : "");
	return 0;
}

int main(int argc, char **argv)
{
	struct floe_config cfg;
	char msg[512];
	struct embedpg pg = { 0 };
	struct app app = { 0 };
	struct MHD_Daemon *d = NULL;
	struct store_pool *janitor_pool = NULL; /* the janitor's own connection */
	struct store_pool *events_pool = NULL;  /* the event dispatcher's */
	struct store_pool *watch_pool = NULL;   /* the database watch's */
	struct dispatcher *dispatcher = NULL;
	const char *conninfo;
	sigset_t waitset;
	int exit_code = 1;
	int dir_lock = -1;
	bool embedded = false;

	if (argc > 1 && strcmp(argv[1], "auth") == 0)
		return authcli_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "audit") == 0)
		return auditcli_main(argc - 1, argv + 1);
	if (!config_load(&cfg, argc, argv, NULL, msg, sizeof(msg))) {
		(void)fprintf(stderr, "floe: %s\n", msg);
		config_free(&cfg);
		return 2;
	}
	switch (cfg.action) {
	case CONFIG_HELP:
		config_print_help(stdout, "floe");
		config_free(&cfg);
		return 0;
	case CONFIG_VERSION:
		printf("floe %s\n", FLOE_VERSION);
		config_free(&cfg);
		return 0;
	case CONFIG_PRINT_ROUTES:
	case CONFIG_PRINT_ROUTES_JSON:
		router_print(stdout, cfg.action == CONFIG_PRINT_ROUTES_JSON);
		config_free(&cfg);
		return 0;
	case CONFIG_PRINT_MAN:
		config_print_man(stdout, FLOE_VERSION);
		config_free(&cfg);
		return 0;
	case CONFIG_RUN:
		break;
	}
	/* Before any thread: a request's parsed body is counted in
	 * --max-pending-body-bytes by what jansson allocated for it. */
	jsonmem_install();
	log_set_level(cfg.log_level);
	log_set_format(cfg.log_format);
	/* A test build's injection points (lib/inject.h), armed by the
	 * environment of a test, never by a flag. */
	struct floe_error ierr;
	floe_error_clear(&ierr);
	if (!inject_init(getenv("FLOE_INJECTION_POINTS"), getenv("FLOE_INJECTION_DIR"), &ierr)) {
		(void)fprintf(stderr, "floe: %s\n", ierr.message);
		config_free(&cfg);
		return 2;
	}
	if (!hooks_global_init()) {
		(void)fprintf(stderr, "floe: cannot initialise libcurl\n");
		config_free(&cfg);
		return 1;
	}
	/* The data directory and its missing parents: 0755 for an embedded
	 * PostgreSQL run as another user, who passes through them; else
	 * 0700, floe's alone. Failing is a setup mistake (exit status 2). */
	if (!make_data_dir(cfg.data_dir, cfg.database_url == NULL ? 0755 : 0700)) {
		config_free(&cfg);
		return 2;
	}
	/* Before PostgreSQL, the keys or the port: a second floe on a data
	 * directory whose embedded PostgreSQL another floe runs would stop
	 * that cluster as left over. The lock is held until the exit. */
	embedded = cfg.database_url == NULL;
	dir_lock = datadir_lock(cfg.data_dir, embedded, msg, sizeof(msg));
	if (dir_lock < 0) {
		log_error("main", "%s", msg);
		(void)fprintf(stderr, "floe: %s\n", msg);
		config_free(&cfg);
		return 2;
	}
	/* Before anything starts: a key file that is refused is a setup
	 * mistake (exit status 2), whatever --auth is. */
	struct floe_error kerr;
	struct sealing *sealing = sealing_open(&cfg, &kerr);
	if (sealing == NULL) {
		log_error("main", "%s", kerr.message);
		(void)fprintf(stderr, "floe: %s\n", kerr.message);
		datadir_unlock(&dir_lock, embedded);
		config_free(&cfg);
		return 2;
	}
	app.hook_sealer = sealing_sealer(sealing);

	/* Every thread inherits this mask; the signals are taken only by the
	 * sigwait loop below. */
	sigemptyset(&waitset);
	sigaddset(&waitset, SIGTERM);
	sigaddset(&waitset, SIGINT);
	sigaddset(&waitset, SIGHUP);
	sigaddset(&waitset, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &waitset, NULL);
	(void)signal(SIGPIPE, SIG_IGN);

	log_info(
		"main",
		"floe %s starting: %d request workers, %d HTTP threads, %d commit threads, %d publish threads, warehouse %s",
		FLOE_VERSION, cfg.threads, cfg.http_threads, cfg.commit_threads,
		cfg.publish_threads, cfg.warehouse);
	for (size_t i = 0; i < cfg.warehouses.count; i++)
		log_info("main", "warehouse \"%s\": %s", cfg.warehouses.items[i].name,
			 cfg.warehouses.items[i].location);
	int storage = start_storage(&cfg);
	if (storage != 0) {
		exit_code = storage;
		goto done;
	}
	struct store_limits limits = {
		.statement_timeout_ms = cfg.db_statement_timeout_ms,
		.lock_timeout_ms = cfg.db_lock_timeout_ms,
		.acquire_timeout_ms = cfg.db_acquire_timeout_ms,
	};
	store_set_limits(&limits);
	panic_pg = &pg;
	MHD_set_panic_func(on_mhd_panic, NULL);
	const char *owner_conninfo;
	if (cfg.database_url != NULL) {
		conninfo = cfg.database_url;
		owner_conninfo = cfg.owner_database_url;
		if (owner_conninfo == NULL)
			log_warn(
				"main",
				"no --owner-database (FLOE_OWNER_DATABASE_URL): migrations run as floe's own database role, which then owns the audit log and could change it; see README, \"Database roles\"");
	} else {
		if (!embedpg_start(&cfg, &pg))
			goto done;
		conninfo = pg.conninfo;
		owner_conninfo = pg.owner_conninfo;
	}
	bool stopped = false;
	if (!migrate_with_retry(owner_conninfo ? owner_conninfo : conninfo, &stopped)) {
		if (stopped)
			exit_code = 0;
		goto done;
	}
	if (owner_conninfo != NULL) {
		struct floe_error gerr;
		if (!store_grant_runtime(owner_conninfo, conninfo, &gerr)) {
			log_error("main", "cannot set up floe's runtime role: %s", gerr.message);
			goto done;
		}
	}

	app.cfg = &cfg;
	app.middleware.admit = auth_admit;
	app.middleware.admits_all = auth_admits_all;
	app.middleware.run = gate_run;
	app.middleware.finish = idempotent_finish;
	app.middleware.release = gate_release;
	atomic_init(&app.inflight, 0);
	atomic_init(&app.async, 0);
	atomic_init(&app.body_bytes, 0);
	atomic_init(&app.stopping, false);
	/* One connection per request worker, per commit thread and per
	 * publish thread, each kind in a pool of its own: no thread ever waits
	 * for another kind's connection. libmicrohttpd's threads have none. */
	app.pool = store_pool_new(conninfo, cfg.threads, "http");
	app.commit_pool = store_pool_new(conninfo, cfg.commit_threads, "commit");
	app.publish_pool = store_pool_new(conninfo, cfg.publish_threads, "publish");
	app.locks = commit_locks_new();
	app.unsettled = unsettled_new();
	app.requests = workq_start("request", cfg.threads, cfg.queue_max);
	app.commits = workq_start("commit", cfg.commit_threads, cfg.queue_max);
	app.publishes = workq_start("publish", cfg.publish_threads, cfg.queue_max);
	if (app.pool == NULL || app.commit_pool == NULL || app.publish_pool == NULL ||
	    app.locks == NULL || app.unsettled == NULL || app.requests == NULL ||
	    app.commits == NULL || app.publishes == NULL) {
		log_error("main", "out of memory");
		goto done;
	}
	/* Before anything that serves: /ready answers from its verdict, and a
	 * stall ends every wait on the database within its deadline. */
	watch_pool = store_watch_pool_new(conninfo);
	if (watch_pool == NULL)
		goto done;
	app.watch = system_watch_start(watch_pool, cfg.db_probe_timeout_ms);
	if (app.watch == NULL)
		goto done;
	/* Before the watch that forgets them starts (start_auth). */
	if (fileio_vend_mode() != FILEIO_VEND_OFF) {
		app.vend = vend_new(VEND_CACHE_SLOTS);
		if (app.vend == NULL) {
			log_error("main", "out of memory");
			goto done;
		}
	}
	if (!start_auth(&app, &cfg, conninfo, sealing) || !seal_plain_secrets(&app))
		goto done;
	if (cfg.audit_signing_key != NULL) {
		struct floe_error aerr;
		app.audit_key = trail_key_load(cfg.audit_signing_key, &aerr);
		if (app.audit_key == NULL) {
			log_error("main", "%s", aerr.message);
			goto done;
		}
		log_info("main", "audit checkpoints are signed with key %s, every %d s",
			 trail_key_id(app.audit_key), cfg.audit_checkpoint_interval_s);
	}
	/* Its own connection, outside the pool: upkeep never waits for a
	 * request's connection, nor a request for upkeep's. */
	janitor_pool = store_pool_new(conninfo, 1, "janitor");
	if (janitor_pool == NULL)
		goto done;
	const char *further[WAREHOUSES_MAX];
	for (size_t i = 0; i < cfg.warehouses.count && i < WAREHOUSES_MAX; i++)
		further[i] = cfg.warehouses.items[i].path;
	struct janitor_config jcfg = {
		.pool = janitor_pool,
		.warehouse_path = cfg.warehouse_path,
		.further_paths = further,
		.nfurther = cfg.warehouses.count < WAREHOUSES_MAX ? cfg.warehouses.count
								  : WAREHOUSES_MAX,
		.interval_s = cfg.janitor_interval_s,
		/* as long as idempotency.c keeps a key */
		.idempotency_keep_s = IDEMPOTENCY_LIFETIME_SECONDS + 5 * 60,
		.metrics_retention_days = cfg.metrics_retention_days,
		.undrop_retention_s = cfg.undrop_retention_s,
		.events_retention_s = cfg.events_retention_s,
		.purge_max_attempts = cfg.purge_max_attempts,
		.unsettled = app.unsettled,
		.audit_key = app.audit_key,
		.checkpoint_interval_s = cfg.audit_checkpoint_interval_s,
	};
	app.janitor = janitor_start(&jcfg);
	if (app.janitor == NULL)
		goto done;
	events_pool = store_pool_new(conninfo, 1, "events");
	if (events_pool == NULL)
		goto done;
	struct dispatcher_config dcfg = {
		.pool = events_pool,
		.sealer = app.hook_sealer,
		.policy = cfg.hook_policy,
		.default_name = cfg.warehouse_name,
		.poll_ms = cfg.subscription_poll_ms,
		.retry_ms = cfg.subscription_retry_ms,
	};
	dispatcher = dispatcher_start(&dcfg);
	if (dispatcher == NULL)
		goto done;
	d = http_start(&app);
	if (d == NULL)
		goto done;
	log_info("main", "listening on http://%s%s%s:%d", strchr(cfg.listen_host, ':') ? "[" : "",
		 cfg.listen_host, strchr(cfg.listen_host, ':') ? "]" : "", http_bound_port(d));

	for (;;) {
		int sig = 0;
		int status = 0;

		/* The signing keys are reread every minute too, so a key that
		 * `floe auth rotate-key` wrote is used without a signal. */
		struct timespec minute = { 60, 0 };
		sig = sigtimedwait(&waitset, NULL, &minute);
		if (sig < 0) {
			if (errno == EAGAIN)
				auth_reload_keys(app.auth);
			continue;
		}
		if (sig == SIGCHLD) {
			if (embedpg_exited(&pg, &status)) {
				log_error(
					"pg",
					"the embedded PostgreSQL exited unexpectedly (%s %d); floe cannot serve without it and is stopping",
					WIFSIGNALED(status) ? "signal" : "status",
					WIFSIGNALED(status) ? WTERMSIG(status)
							    : WEXITSTATUS(status));
				exit_code = 1;
				break;
			}
			continue;
		}
		if (sig == SIGHUP) {
			log_info("main", "SIGHUP: rereading the signing keys (the rest of the "
					 "configuration is read at start-up only)");
			auth_reload_keys(app.auth);
			continue;
		}
		log_info("main", "%s received: finishing in-flight requests",
			 sig == SIGTERM ? "SIGTERM" : "SIGINT");
		exit_code = 0;
		break;
	}
done:
	if (d != NULL && !http_stop(d, &app, exit_code == 0 ? cfg.shutdown_grace_seconds : 2)) {
		/* Work still running holds connections and the pools: leave
		 * them to the exit, but not the embedded PostgreSQL. */
		embedpg_stop(&pg);
		log_error("main", "floe stopped with work still running");
		_exit(1);
	}
	/* http_stop answered or waited for every suspended request, so no
	 * job is queued or running any more. */
	workq_stop(&app.requests);
	workq_stop(&app.commits);
	workq_stop(&app.publishes);
	janitor_stop(&app.janitor);
	dispatcher_stop(&dispatcher);
	system_watch_stop(&app.watch);
	store_pool_free(&watch_pool);
	store_pool_free(&janitor_pool);
	store_pool_free(&events_pool);
	store_pool_free(&app.pool);
	store_pool_free(&app.commit_pool);
	store_pool_free(&app.publish_pool);
	commit_locks_free(&app.locks);
	auth_free(app.auth);
	vend_free(&app.vend);
	trail_key_free(app.audit_key);
	sealing_close(sealing);
	unsettled_free(&app.unsettled);
	panic_pg = NULL;
	embedpg_stop(&pg);
	fileio_s3_stop();
	/* Only once the embedded PostgreSQL has stopped. */
	datadir_unlock(&dir_lock, embedded);
	log_info("main", "floe stopped");
	config_free(&cfg);
	return exit_code;
}
