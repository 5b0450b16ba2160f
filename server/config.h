/*
 * config.h - floe's configuration: one declarative table of options, each
 * settable by a flag and by an environment variable, printed by --help.
 *
 * Precedence: flag, then environment, then default. The result is filled
 * once at start-up and never changed afterwards.
 */
#ifndef FLOE_CONFIG_H
#define FLOE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "log.h"
#include "warehouses.h"

struct hook_policy;

enum config_action {
	CONFIG_RUN = 0,
	CONFIG_HELP,
	CONFIG_VERSION,
	CONFIG_PRINT_ROUTES,
	CONFIG_PRINT_ROUTES_JSON,
	CONFIG_PRINT_MAN,
};

struct floe_config {
	enum config_action action;
	char *listen_host;        /* without brackets for IPv6 */
	int listen_port;          /* 0: any free port */
	char *database_url;       /* NULL: embedded PostgreSQL */
	char *owner_database_url; /* migrations' role; NULL: database_url's */
	char *data_dir;           /* absolute */
	char *warehouse;          /* file:///absolute/path or s3://bucket/prefix, canonical */
	char *warehouse_path;     /* the warehouse's local directory (s3: the URL) */
	int threads;              /* request workers */
	int http_threads;         /* libmicrohttpd's */
	int commit_threads;
	int idempotency_lease_seconds;
	enum log_level log_level;
	enum log_format log_format;
	long long max_body_bytes;
	char *pg_bin_dir; /* NULL: search */
	char *pg_user;    /* NULL: postgres, else nobody */
	int janitor_interval_s;
	int metrics_retention_days;
	/* --events-retention-days in seconds, 64-bit: its maximum, 36,500
	 * days, is 3,153,600,000 s, past an int. */
	long long events_retention_s;
	int subscription_poll_ms;  /* the event dispatcher's look at the feed */
	int subscription_retry_ms; /* its first retry's wait */
	int undrop_retention_s;    /* 0: drops without purge are not kept */
	int purge_max_attempts;
	/* Resource bounds (see --help). */
	int db_statement_timeout_ms;
	int db_lock_timeout_ms;
	int db_acquire_timeout_ms;
	int db_probe_timeout_ms; /* the database watch's deadline */
	int queue_max;           /* jobs waiting per work queue */
	int publish_threads;
	int idle_timeout_seconds;
	int per_ip_connection_limit;
	int connection_limit;
	long long max_pending_body_bytes;
	int shutdown_grace_seconds;
	struct hook_policy *hook_policy;  /* the hook allowlist, never NULL
					  * after a successful load */
	char *hook_secrets_key;           /* absolute path of the sealing key */
	bool hook_secrets_key_default;    /* it is <data dir>/auth/hook-secrets.key */
	char *audit_signing_key;          /* absolute path, or NULL: none */
	int audit_checkpoint_interval_s;  /* 0: on demand only */
	const char *warehouse_name;       /* /v1/config's warehouse; in raw[] */
	struct warehouse_list warehouses; /* --warehouses, besides the default */
	const char *cors_origins;         /* "*", origins, or "" (CORS off); in raw[] */
	/* Authentication (docs/auth.md); the strings are in raw[]. */
	bool auth_none;          /* --auth=none: no token asked for */
	const char *auth_issuer; /* iss of floe's tokens */
	long long token_ttl_seconds;
	long long auth_leeway_seconds;
	unsigned auth_public;         /* CONFIG_PUBLIC_* of the routes served without a token */
	const char *admin_credential; /* "id:secret" for the first start, or NULL */
	const char *oidc_issuer;      /* NULL: no external issuer */
	const char *oidc_audience;
	const char *oidc_principal_claim;
	const char *oidc_roles_claim; /* NULL: none */
	/* An s3:// warehouse (its strings in raw[] but the copies); the
	 * secrets come from the environment only and are never logged. */
	bool s3;
	const char *s3_endpoint; /* "": AWS's */
	const char *s3_region;
	bool s3_path_style;
	char *s3_profile;
	char *s3_credentials_file; /* NULL: none known (also set for
				    * --warehouses' s3 profiles) */
	char *s3_access_key_id;    /* NULL: from the credentials file */
	char *s3_secret_access_key;
	char *s3_session_token;
	/* Vended credentials (docs/storage.md); the strings are in raw[]. */
	int s3_vend;                      /* CONFIG_VEND_* */
	const char *s3_client_endpoint;   /* "": s3_endpoint */
	const char *s3_sts_endpoint;      /* "": AWS's */
	const char *s3_sts_role_arn;      /* "": none */
	const char *s3_sts_read_role_arn; /* "": s3_sts_role_arn */
	int s3_sts_duration_s;
	bool s3_remote_signing; /* --s3-remote-signing=on */
	/* Raw option values indexed like the option table; freed by
	 * config_free. */
	char *raw[64];
};

enum { CONFIG_VEND_OFF, CONFIG_VEND_STATIC, CONFIG_VEND_STS };

#define CONFIG_PUBLIC_HEALTH 1u
#define CONFIG_PUBLIC_READY 2u
#define CONFIG_PUBLIC_METRICS 4u

/* Looks an environment variable up; getenv when NULL is passed below. */
typedef const char *(*config_getenv_fn)(const char *name);

/*
 * Fills cfg from argv and the environment. On failure writes a message
 * naming the option into errbuf and returns false; cfg must still be passed
 * to config_free. Validation covers every value; nothing is resolved on
 * the network.
 */
bool config_load(struct floe_config *cfg, int argc, char **argv, config_getenv_fn env, char *errbuf,
		 size_t errlen) __attribute__((warn_unused_result));

/* True for localhost, 127.0.0.0/8 and ::1: the addresses --auth=none
 * may listen on. */
bool config_host_is_loopback(const char *host);

/* Prints the usage text with every option, its variable and default. */
void config_print_help(FILE *out, const char *argv0);

/* Prints floe(1), the manual page, in roff from the same option table;
 * version goes into its header. */
void config_print_man(FILE *out, const char *version);

/* Frees everything config_load allocated. Safe to call twice. */
void config_free(struct floe_config *cfg);

#endif
