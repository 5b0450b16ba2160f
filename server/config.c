/*
 * config.c - the option table and its parser. Adding an option is one row
 * in `config_options` plus its conversion in config_finish; confighelp.c
 * prints the table as --help and as the manual page.
 */
#include "config.h"
#include "configtable.h"

#include "location.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "hooks.h"

enum opt_id {
	OPT_LISTEN,
	OPT_DATABASE,
	OPT_OWNER_DATABASE,
	OPT_DATA_DIR,
	OPT_WAREHOUSE,
	OPT_THREADS,
	OPT_HTTP_THREADS,
	OPT_LOG_LEVEL,
	OPT_LOG_FORMAT,
	OPT_MAX_BODY,
	OPT_PG_BIN_DIR,
	OPT_PG_USER,
	OPT_COMMIT_THREADS,
	OPT_IDEM_LEASE,
	OPT_JANITOR_INTERVAL,
	OPT_METRICS_RETENTION,
	OPT_UNDROP_RETENTION,
	OPT_EVENTS_RETENTION,
	OPT_SUB_POLL,
	OPT_SUB_RETRY,
	OPT_PURGE_ATTEMPTS,
	OPT_DB_STATEMENT_TIMEOUT,
	OPT_DB_LOCK_TIMEOUT,
	OPT_DB_ACQUIRE_TIMEOUT,
	OPT_DB_PROBE_TIMEOUT,
	OPT_QUEUE_MAX,
	OPT_PUBLISH_THREADS,
	OPT_IDLE_TIMEOUT,
	OPT_PER_IP_LIMIT,
	OPT_CONNECTION_LIMIT,
	OPT_MAX_PENDING_BODY,
	OPT_SHUTDOWN_GRACE,
	OPT_HOOK_ALLOW,
	OPT_HOOK_SECRETS_KEY,
	OPT_AUDIT_SIGNING_KEY,
	OPT_AUDIT_CHECKPOINT_INTERVAL,
	OPT_WAREHOUSE_NAME,
	OPT_WAREHOUSES,
	OPT_CORS_ORIGINS,
	OPT_AUTH,
	OPT_AUTH_ISSUER,
	OPT_TOKEN_TTL,
	OPT_AUTH_LEEWAY,
	OPT_AUTH_PUBLIC,
	OPT_ADMIN_CREDENTIAL,
	OPT_OIDC_ISSUER,
	OPT_OIDC_AUDIENCE,
	OPT_OIDC_PRINCIPAL_CLAIM,
	OPT_OIDC_ROLES_CLAIM,
	OPT_S3_ENDPOINT,
	OPT_S3_REGION,
	OPT_S3_PATH_STYLE,
	OPT_S3_PROFILE,
	OPT_S3_VENDED_CREDENTIALS,
	OPT_S3_CLIENT_ENDPOINT,
	OPT_S3_STS_ENDPOINT,
	OPT_S3_STS_ROLE_ARN,
	OPT_S3_STS_READ_ROLE_ARN,
	OPT_S3_STS_DURATION,
	OPT_S3_REMOTE_SIGNING,
	OPT_COUNT
};

/* clang-format off */
const struct option_def config_options[OPT_COUNT] = {
	[OPT_LISTEN] = { "listen", "FLOE_LISTEN", "127.0.0.1:8181",
		"Address to serve HTTP on, host:port or [ipv6]:port (port 0: any free port)" },
	[OPT_DATABASE] = { "database", "FLOE_DATABASE_URL", "",
		"PostgreSQL connection string or postgresql:// URL; empty: run a private PostgreSQL under the data directory" },
	[OPT_OWNER_DATABASE] = { "owner-database", "FLOE_OWNER_DATABASE_URL", "",
		"With --database: connection string of the role that owns floe's tables, used for migrations only, so that floe's own role cannot change the audit log; empty: migrate with --database (the audit log is then not protected from floe's role)" },
	[OPT_DATA_DIR] = { "data-dir", "FLOE_DATA_DIR", "./floe-data",
		"Directory for the embedded PostgreSQL, floe's keys (auth/) and the default warehouse; made with its missing parents (0700, or 0755 for the embedded PostgreSQL); locked by the running floe (floe.pid): a second floe on it exits with status 2, unless both run with --database" },
	[OPT_WAREHOUSE] = { "warehouse", "FLOE_WAREHOUSE", NULL,
		"Warehouse root URL where table files are written: file:///path or file:/path, or s3://bucket/prefix for S3-compatible object storage (see the --s3-* options; the bucket must exist) (default: file://<data dir>/warehouse)" },
	[OPT_THREADS] = { "threads", "FLOE_THREADS", NULL,
		"Request workers, each with one PostgreSQL connection, that run every request that may need the database (authentication included), 1-256 (default: number of cores)" },
	[OPT_HTTP_THREADS] = { "http-threads", "FLOE_HTTP_THREADS", "2",
		"Threads that read requests and write answers, 1-64; they never wait on the database and answer /health, /ready and /metrics themselves while those are public" },
	[OPT_LOG_LEVEL] = { "log-level", "FLOE_LOG_LEVEL", "info",
		"Log level: error, warn, info or debug" },
	[OPT_LOG_FORMAT] = { "log-format", "FLOE_LOG_FORMAT", "text",
		"Log line format: text, or json (one JSON object a line: time, level, component, message, and request_id and principal while a request is served)" },
	[OPT_MAX_BODY] = { "max-body-bytes", "FLOE_MAX_BODY_BYTES", "8388608",
		"Largest request body accepted, in bytes (1024-1073741824); larger ones get 413" },
	[OPT_PG_BIN_DIR] = { "pg-bin-dir", "FLOE_PG_BIN_DIR", NULL,
		"Directory holding initdb and postgres for the embedded PostgreSQL (default: PATH, then /usr/lib/postgresql/<newest>/bin)" },
	[OPT_COMMIT_THREADS] = { "commit-threads", "FLOE_COMMIT_THREADS", NULL,
		"Threads that run commits, each with one PostgreSQL connection, 1-256 (default: 4 per core, at least 4)" },
	[OPT_IDEM_LEASE] = { "idempotency-lease-seconds", "FLOE_IDEMPOTENCY_LEASE_SECONDS", "120",
		"How long a request holding an Idempotency-Key is presumed running, 1-3600; a retry meanwhile gets 503, and after it a key left unanswered by a floe that stopped can be claimed again (at once when the database session that claimed it is gone)" },
	[OPT_PG_USER] = { "pg-user", "FLOE_PG_USER", NULL,
		"User the embedded PostgreSQL runs as when floe runs as root (default: postgres, else nobody)" },
	[OPT_JANITOR_INTERVAL] = { "janitor-interval-seconds", "FLOE_JANITOR_INTERVAL_SECONDS", "30",
		"Seconds between the janitor's rounds (purges of dropped tables, expired idempotency keys, old metrics reports, orphan temporary files), 1-86400" },
	[OPT_METRICS_RETENTION] = { "metrics-retention-days", "FLOE_METRICS_RETENTION_DAYS", "7",
		"Days a stored metrics report is kept, 1-36500" },
	[OPT_UNDROP_RETENTION] = { "undrop-retention-seconds", "FLOE_UNDROP_RETENTION_SECONDS", "604800",
		"Seconds a table dropped without purge is kept to be undropped (POST .../tables/{t}/undrop), 0-31536000; 0 keeps none" },
	[OPT_EVENTS_RETENTION] = { "events-retention-days", "FLOE_EVENTS_RETENTION_DAYS", "30",
		"Days an event of the change feed (POST /v1/{prefix}/events) is kept, 1-36500" },
	[OPT_SUB_POLL] = { "subscription-poll-ms", "FLOE_SUBSCRIPTION_POLL_MS", "1000",
		"How often the event dispatcher looks for new events when it has delivered none, 10-60000 ms" },
	[OPT_SUB_RETRY] = { "subscription-retry-ms", "FLOE_SUBSCRIPTION_RETRY_MS", "1000",
		"Wait before retrying a failed event delivery, 10-300000 ms; it doubles with each failure up to 5 minutes, with jitter" },
	[OPT_PURGE_ATTEMPTS] = { "purge-max-attempts", "FLOE_PURGE_MAX_ATTEMPTS", "10",
		"Attempts at purging a dropped table's files before its purge is marked failed, 1-1000" },
	[OPT_DB_STATEMENT_TIMEOUT] = { "db-statement-timeout-ms", "FLOE_DB_STATEMENT_TIMEOUT_MS", "30000",
		"PostgreSQL statement_timeout of every session, 100-3600000 ms; a statement past it, or a database silent for it plus 5 s, gets 503" },
	[OPT_DB_LOCK_TIMEOUT] = { "db-lock-timeout-ms", "FLOE_DB_LOCK_TIMEOUT_MS", "10000",
		"PostgreSQL lock_timeout of every session, 100-3600000 ms; a commit waiting longer for a lock gets 503" },
	[OPT_DB_ACQUIRE_TIMEOUT] = { "db-acquire-timeout-ms", "FLOE_DB_ACQUIRE_TIMEOUT_MS", "5000",
		"Longest wait for a free database connection, 1-600000 ms; then 503" },
	[OPT_DB_PROBE_TIMEOUT] = { "db-probe-timeout-ms", "FLOE_DB_PROBE_TIMEOUT_MS", "1000",
		"How long the database watch, which asks PostgreSQL for a round trip every 250 ms, waits for its answer, 100-60000 ms; past it the database is stalled until it answers again: /ready answers 503, a request that needs the database gets 503 with Retry-After at once, and statements waiting on it are abandoned (503)" },
	[OPT_QUEUE_MAX] = { "queue-max", "FLOE_QUEUE_MAX", "1024",
		"Requests (and, separately, commits and publishes) that may wait for a thread, 1-1000000; more get 503" },
	[OPT_PUBLISH_THREADS] = { "publish-threads", "FLOE_PUBLISH_THREADS", "4",
		"Threads that run write-audit-publish publishes, each with one PostgreSQL connection, 1-256" },
	[OPT_IDLE_TIMEOUT] = { "idle-timeout-seconds", "FLOE_IDLE_TIMEOUT_SECONDS", "60",
		"Seconds a client connection may stay silent (idle keep-alive, or a slow request) before it is closed, 1-3600" },
	[OPT_PER_IP_LIMIT] = { "per-ip-connection-limit", "FLOE_PER_IP_CONNECTION_LIMIT", "256",
		"Open connections one client address may hold, 1-65536" },
	[OPT_CONNECTION_LIMIT] = { "connection-limit", "FLOE_CONNECTION_LIMIT", "4096",
		"Open client connections in all, 1-1000000 (kept below the open-file limit)" },
	[OPT_MAX_PENDING_BODY] = { "max-pending-body-bytes", "FLOE_MAX_PENDING_BODY_BYTES", "268435456",
		"Request bodies held in memory at once, arriving or waiting for their answer, in bytes (1048576-68719476736): a body's text and, once parsed, what its parsed form holds (several times the text); past it 503" },
	[OPT_SHUTDOWN_GRACE] = { "shutdown-grace-seconds", "FLOE_SHUTDOWN_GRACE_SECONDS", "30",
		"Seconds in-flight requests get to finish on SIGTERM, 1-3600; commits and publishes still queued then get 503" },
	[OPT_HOOK_ALLOW] = { "hook-allow", "FLOE_HOOK_ALLOW", "",
		"Comma-separated hosts and networks (address or address/prefix) audit hooks may reach although they are loopback, private, link-local, CGNAT, unique-local or otherwise internal; empty: none" },
	[OPT_HOOK_SECRETS_KEY] = { "hook-secrets-key", "FLOE_HOOK_SECRETS_KEY", "",
		"File holding the 32-byte key that seals audit hook secrets at rest (AES-256-GCM) and keys the hashes of floe's client secrets, mode 0600, owned by floe's user; it must exist. Replicas with separate data directories must share one key. Empty: <data dir>/auth/hook-secrets.key, made on the first start" },
	[OPT_AUDIT_SIGNING_KEY] = { "audit-signing-key", "FLOE_AUDIT_SIGNING_KEY", "",
		"File holding the Ed25519 private key (PEM, mode 0600, owned by floe's user) that signs checkpoints of the audit log's hash chain; keep it out of the database's reach. Make one with: openssl genpkey -algorithm ed25519 -out FILE. Empty: no checkpoints are signed (the chain is still kept and verified)" },
	[OPT_AUDIT_CHECKPOINT_INTERVAL] = { "audit-checkpoint-interval-seconds", "FLOE_AUDIT_CHECKPOINT_INTERVAL_SECONDS", "300",
		"With --audit-signing-key: seconds between signed checkpoints of the audit chain's head, taken by the janitor when the chain has grown, 0-86400 (0: only on demand, POST .../audit-log/checkpoints)" },
	[OPT_WAREHOUSE_NAME] = { "warehouse-name", "FLOE_WAREHOUSE_NAME", "warehouse",
		"Name of the default warehouse (--warehouse) for a client's /v1/config?warehouse=NAME (the warehouse URL is accepted too), and the /v1/{prefix} its routes are also served under; a name of --warehouses is that warehouse, any other gets 404 NoSuchWarehouseException" },
	[OPT_WAREHOUSES] = { "warehouses", "FLOE_WAREHOUSES", "",
		"JSON file naming further warehouses, each with a name (its /v1/{prefix}, and /v1/config?warehouse=NAME's), a location and, for s3, its own storage: {\"warehouses\": [{\"name\": N, \"location\": \"file:///path\" or \"s3://bucket/prefix\", \"s3\": {\"endpoint\", \"region\", \"path-style\", \"profile\"}}]}; an s3 warehouse's keys come from that profile of the shared credentials file, never from this file. Every entry is checked at start-up, its bucket too. Each serves a catalog of its own under /v1/NAME/ (docs/storage.md). Empty: only --warehouse" },
	[OPT_CORS_ORIGINS] = { "cors-origins", "FLOE_CORS_ORIGINS", "",
		"Comma-separated origins (scheme://host[:port]) whose browser clients may call floe, or * for any; empty: CORS off, no answer carries CORS headers" },
	[OPT_AUTH] = { "auth", "FLOE_AUTH", "floe",
		"Authentication: floe (every route but the public ones needs a bearer token, issued by POST /v1/oauth/tokens or, with --oidc-issuer, by that issuer) or none (development only: anyone who reaches the port may do anything; refused unless --listen is a loopback address, and logged as a warning at every start)" },
	[OPT_AUTH_ISSUER] = { "auth-issuer", "FLOE_AUTH_ISSUER", "floe",
		"The iss claim of the tokens floe issues, 1-255 printable characters" },
	[OPT_TOKEN_TTL] = { "token-ttl-seconds", "FLOE_TOKEN_TTL_SECONDS", "3600",
		"Lifetime of the tokens floe issues, 60-86400 seconds" },
	[OPT_AUTH_LEEWAY] = { "auth-leeway-seconds", "FLOE_AUTH_LEEWAY_SECONDS", "60",
		"Clock skew allowed on a token's exp and nbf, 0-600 seconds" },
	[OPT_AUTH_PUBLIC] = { "auth-public-routes", "FLOE_AUTH_PUBLIC_ROUTES", "/health,/ready,/metrics",
		"Comma-separated routes served without a token, from /health, /ready and /metrics (the token endpoint and its key set are always public); empty: none of them" },
	[OPT_ADMIN_CREDENTIAL] = { "admin-credential", "FLOE_ADMIN_CREDENTIAL", "",
		"CLIENT_ID:SECRET of the admin client the first start makes when the catalog has no principal (the secret at least 16 characters), for deployments that provision it; empty: the first start makes one and writes it to <data dir>/auth/admin-credential (mode 0600). Ignored once a principal exists" },
	[OPT_OIDC_ISSUER] = { "oidc-issuer", "FLOE_OIDC_ISSUER", "",
		"URL of an external OpenID issuer whose JWT access tokens floe accepts besides its own (https, or http on a loopback host); empty: none" },
	[OPT_OIDC_AUDIENCE] = { "oidc-audience", "FLOE_OIDC_AUDIENCE", "floe",
		"The aud an external issuer's token must name" },
	[OPT_OIDC_PRINCIPAL_CLAIM] = { "oidc-principal-claim", "FLOE_OIDC_PRINCIPAL_CLAIM", "sub",
		"The claim of an external issuer's token that names the principal" },
	[OPT_OIDC_ROLES_CLAIM] = { "oidc-roles-claim", "FLOE_OIDC_ROLES_CLAIM", "",
		"The claim of an external issuer's token that lists floe role names (an array of strings or a space-separated string); it grants only roles marked issuer-grantable, never one holding ADMIN; empty: roles come from floe's grants only" },
	[OPT_S3_ENDPOINT] = { "s3-endpoint", "FLOE_S3_ENDPOINT", "",
		"With an s3:// warehouse: the S3-compatible server, https://host[:port] (or http://, unencrypted: for a server on loopback or a private network); empty: AWS's endpoint of --s3-region. Credentials come from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, else from the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials)" },
	[OPT_S3_REGION] = { "s3-region", "FLOE_S3_REGION", "us-east-1",
		"With an s3:// warehouse: the region requests are signed for" },
	[OPT_S3_PATH_STYLE] = { "s3-path-style", "FLOE_S3_PATH_STYLE", "false",
		"With an s3:// warehouse: true to address the bucket in the path (endpoint/bucket/key, which most self-hosted S3 servers need), false for virtual-hosted addressing (bucket.endpoint/key)" },
	[OPT_S3_PROFILE] = { "s3-profile", "FLOE_S3_PROFILE", "",
		"With an s3:// warehouse: the profile of the shared credentials file to use, which then wins over AWS_ACCESS_KEY_ID; empty: AWS_PROFILE, else default (used when AWS_ACCESS_KEY_ID is not set)" },
	[OPT_S3_VENDED_CREDENTIALS] = { "s3-vended-credentials", "FLOE_S3_VENDED_CREDENTIALS", "off",
		"With an s3:// warehouse (the default one or one of --warehouses; a table's credentials come from its own warehouse's storage, and a file:// warehouse's tables get none): what a client sending X-Iceberg-Access-Delegation: vended-credentials gets for a table's objects. off: nothing; static: floe's own credentials for the table's warehouse, not scoped to the table (the weaker mode); sts: STS AssumeRole of --s3-sts-role-arn with a session policy allowing only the table's prefix, read-only unless the principal may write the table" },
	[OPT_S3_CLIENT_ENDPOINT] = { "s3-client-endpoint", "FLOE_S3_CLIENT_ENDPOINT", "",
		"With vended credentials: the s3.endpoint engines are told for the default warehouse, when they reach its S3 server at another address than floe does; empty: --s3-endpoint. A warehouse of --warehouses tells its own endpoint" },
	[OPT_S3_STS_ENDPOINT] = { "s3-sts-endpoint", "FLOE_S3_STS_ENDPOINT", "",
		"With --s3-vended-credentials=sts: the default warehouse's STS server, https://host[:port] (or http://); empty: AWS's STS endpoint of --s3-region. Calls are signed with floe's own S3 credentials. A warehouse of --warehouses calls the STS at its own endpoint (AWS's of its region when it has none), signed with its own profile's keys" },
	[OPT_S3_STS_ROLE_ARN] = { "s3-sts-role-arn", "FLOE_S3_STS_ROLE_ARN", "",
		"With --s3-vended-credentials=sts: the role assumed for the credentials engines get (required)" },
	[OPT_S3_STS_READ_ROLE_ARN] = { "s3-sts-read-role-arn", "FLOE_S3_STS_READ_ROLE_ARN", "",
		"With --s3-vended-credentials=sts: the role assumed for principals who may only read the table, so the role's own policy also allows no write; empty: --s3-sts-role-arn" },
	[OPT_S3_STS_DURATION] = { "s3-sts-duration", "FLOE_S3_STS_DURATION", "900",
		"With --s3-vended-credentials=sts: seconds the assumed credentials last (900 to 43200); floe keeps them per table, principal and access until shortly before they expire" },
	[OPT_S3_REMOTE_SIGNING] = { "s3-remote-signing", "FLOE_S3_REMOTE_SIGNING", "off",
		"With an s3:// warehouse (the default one or one of --warehouses): on to sign engines' S3 requests with the table's warehouse's credentials when they ask for remote-signing (X-Iceberg-Access-Delegation), at POST .../tables/{table}/sign, only for the table's own objects and with the methods the caller may use; off: never (engines then need storage credentials of their own)" },
};
/* clang-format on */

const int config_option_count = OPT_COUNT;

_Static_assert(OPT_COUNT <= sizeof(((struct floe_config *)0)->raw) / sizeof(char *),
	       "raw[] too small for the option table");

static const char *process_getenv(const char *name)
{
	return getenv(name);
}

/* Says which option has a bad value, and why, into errbuf; false. The
 * admin credential's value is not repeated. */
static bool bad_value(const struct floe_config *cfg, int id, const char *why, char *errbuf,
		      size_t errlen)
{
	return floe_errbuf(errbuf, errlen, "invalid value \"%s\" for --%s (%s): %s",
			   id == OPT_ADMIN_CREDENTIAL ? "(not shown)" : cfg->raw[id],
			   config_options[id].flag, config_options[id].env, why);
}

/* The parsers' failure: cfg, errbuf and errlen are theirs. */
#define BAD(id, why) (bad_value(cfg, id, why, errbuf, errlen), false)

static bool parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end = NULL;
	long long v;

	if (*s == '\0')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool parse_listen(struct floe_config *cfg, const char *s, char *errbuf, size_t errlen)
{
	const char *colon;
	const char *host;
	size_t hostlen;
	long long port;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close[1] != ':')
			goto bad;
		host = s + 1;
		hostlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			goto bad;
		host = s;
		hostlen = (size_t)(colon - s);
		if (memchr(host, ':', hostlen) != NULL)
			goto bad; /* a bare IPv6 address needs brackets */
	}
	if (hostlen == 0 || !parse_int(colon + 1, 0, 65535, &port))
		goto bad;
	cfg->listen_host = strndup(host, hostlen);
	cfg->listen_port = (int)port;
	return cfg->listen_host != NULL || floe_errbuf(errbuf, errlen, "out of memory");
bad:
	return floe_errbuf(
		errbuf, errlen,
		"invalid value \"%s\" for --listen (FLOE_LISTEN): expected host:port or [ipv6]:port",
		s);
}

static char *absolute_path(const char *p)
{
	char cwd[PATH_MAX];
	size_t len;
	char *abs;

	if (p[0] == '/') {
		abs = strdup(p);
	} else {
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return NULL;
		while (p[0] == '.' && p[1] == '/')
			p += 2;
		len = strlen(cwd) + strlen(p) + 2;
		abs = malloc(len);
		if (abs != NULL)
			(void)snprintf(abs, len, "%s/%s", cwd, strcmp(p, ".") == 0 ? "" : p);
	}
	if (abs == NULL)
		return NULL;
	len = strlen(abs);
	while (len > 1 && abs[len - 1] == '/')
		abs[--len] = '\0';
	return abs;
}

static unsigned count_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		return 1;
	return n > 256 ? 256 : (unsigned)n;
}

/* A --cors-origins list: "*" alone, or origins scheme://host[:port]
 * (http or https, no path) separated by commas and optional spaces. */
static bool cors_origins_valid(const char *list)
{
	if (strcmp(list, "*") == 0)
		return true;
	for (const char *p = list; *p != '\0';) {
		while (*p == ' ' || *p == ',')
			p++;
		size_t len = strcspn(p, ", ");
		if (len == 0)
			break;
		size_t scheme = strncmp(p, "https://", 8) == 0  ? 8
				: strncmp(p, "http://", 7) == 0 ? 7
								: 0;
		if (scheme == 0 || len == scheme || len > 255)
			return false;
		for (size_t i = scheme; i < len; i++) {
			if (p[i] == '/' || p[i] == '*' || p[i] < '!' || p[i] > '~')
				return false;
		}
		p += len;
	}
	return true;
}

/* 1-255 printable ASCII characters, no space (a warehouse name, an issuer,
 * a claim name). */
static bool printable_token(const char *s)
{
	size_t len = strlen(s);

	if (len == 0 || len > 255)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (s[i] <= ' ' || s[i] > '~')
			return false;
	}
	return true;
}

bool config_host_is_loopback(const char *host)
{
	unsigned char a[16];

	if (strcasecmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, a) == 1)
		return a[0] == 127;
	if (inet_pton(AF_INET6, host, a) == 1) {
		static const unsigned char one[16] = { [15] = 1 };
		return memcmp(a, one, sizeof(one)) == 0;
	}
	return false;
}

/* The public-route list: a comma-separated subset of the three. */
static bool public_routes_parse(const char *list, unsigned *mask)
{
	static const char *const names[] = { "/health", "/ready", "/metrics" };

	*mask = 0;
	for (const char *p = list; *p != '\0';) {
		while (*p == ' ' || *p == ',')
			p++;
		size_t len = strcspn(p, ", ");
		if (len == 0)
			break;
		size_t i = 0;
		while (i < 3 && (strlen(names[i]) != len || strncmp(p, names[i], len) != 0))
			i++;
		if (i == 3)
			return false;
		*mask |= 1u << i;
		p += len;
	}
	return true;
}

/* The options of authentication (docs/auth.md). */
static bool auth_finish(struct floe_config *cfg, char *errbuf, size_t errlen)
{
	char **raw = cfg->raw;
	long long v;

	if (strcmp(raw[OPT_AUTH], "none") == 0) {
		cfg->auth_none = true;
		if (!config_host_is_loopback(cfg->listen_host))
			return floe_errbuf(
				errbuf, errlen,
				"--auth=none (FLOE_AUTH) is refused on %s: without "
				"authentication anyone who reaches the port may drop tables and "
				"publish; listen on a loopback address or use --auth=floe",
				cfg->listen_host);
	} else if (strcmp(raw[OPT_AUTH], "floe") != 0) {
		return BAD(OPT_AUTH, "expected floe or none");
	}
	if (!printable_token(raw[OPT_AUTH_ISSUER]))
		return BAD(OPT_AUTH_ISSUER, "expected 1-255 printable characters without spaces");
	cfg->auth_issuer = raw[OPT_AUTH_ISSUER];
	if (!parse_int(raw[OPT_TOKEN_TTL], 60, 86400, &v))
		return BAD(OPT_TOKEN_TTL, "expected seconds from 60 to 86400");
	cfg->token_ttl_seconds = v;
	if (!parse_int(raw[OPT_AUTH_LEEWAY], 0, 600, &v))
		return BAD(OPT_AUTH_LEEWAY, "expected seconds from 0 to 600");
	cfg->auth_leeway_seconds = v;
	if (!public_routes_parse(raw[OPT_AUTH_PUBLIC], &cfg->auth_public))
		return BAD(OPT_AUTH_PUBLIC, "expected routes from /health, /ready and /metrics");

	const char *cred = raw[OPT_ADMIN_CREDENTIAL];
	if (cred[0] != '\0') {
		const char *colon = strchr(cred, ':');
		if (colon == NULL || colon == cred || colon - cred > 255 ||
		    strlen(colon + 1) < 16 || strlen(colon + 1) > 255)
			return BAD(OPT_ADMIN_CREDENTIAL,
				   "expected CLIENT_ID:SECRET, a client id of 1-255 characters and "
				   "a secret of 16-255");
		for (const char *p = cred; *p != '\0'; p++) {
			if (*p <= ' ' || *p > '~')
				return BAD(OPT_ADMIN_CREDENTIAL,
					   "expected printable characters without spaces");
		}
		cfg->admin_credential = cred;
	}

	const char *iss = raw[OPT_OIDC_ISSUER];
	if (iss[0] != '\0') {
		if (!printable_token(iss) ||
		    (strncmp(iss, "https://", 8) != 0 && strncmp(iss, "http://", 7) != 0))
			return BAD(OPT_OIDC_ISSUER, "expected an https:// URL");
		cfg->oidc_issuer = iss;
	}
	if (!printable_token(raw[OPT_OIDC_AUDIENCE]))
		return BAD(OPT_OIDC_AUDIENCE, "expected 1-255 printable characters without spaces");
	cfg->oidc_audience = raw[OPT_OIDC_AUDIENCE];
	if (!printable_token(raw[OPT_OIDC_PRINCIPAL_CLAIM]))
		return BAD(OPT_OIDC_PRINCIPAL_CLAIM, "expected a claim name");
	cfg->oidc_principal_claim = raw[OPT_OIDC_PRINCIPAL_CLAIM];
	if (raw[OPT_OIDC_ROLES_CLAIM][0] != '\0') {
		if (!printable_token(raw[OPT_OIDC_ROLES_CLAIM]))
			return BAD(OPT_OIDC_ROLES_CLAIM, "expected a claim name");
		cfg->oidc_roles_claim = raw[OPT_OIDC_ROLES_CLAIM];
	}
	if (cfg->auth_none && cfg->oidc_issuer != NULL)
		return floe_errbuf(
			errbuf, errlen,
			"--oidc-issuer (FLOE_OIDC_ISSUER) needs --auth=floe (FLOE_AUTH)");
	return true;
}

/* An --s3-endpoint: http(s)://host[:port], nothing more. */
static bool endpoint_valid(const char *e)
{
	size_t scheme = strncmp(e, "https://", 8) == 0 ? 8 : strncmp(e, "http://", 7) == 0 ? 7 : 0;
	size_t len = strlen(e);

	if (scheme == 0 || len == scheme || len > 255)
		return false;
	for (size_t i = scheme; i < len; i++) {
		char c = e[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '.' || c == '-' || c == ':' || c == '[' ||
			  c == ']';
		if (!ok)
			return false;
	}
	return true;
}

static char *env_copy(config_getenv_fn env, const char *name)
{
	const char *v = env(name);

	return v != NULL && v[0] != '\0' ? strdup(v) : NULL;
}

/* Where the shared credentials file is: AWS_SHARED_CREDENTIALS_FILE, else
 * ~/.aws/credentials; NULL in *out when neither is known. */
static bool credentials_file(config_getenv_fn env, char **out)
{
	*out = env_copy(env, "AWS_SHARED_CREDENTIALS_FILE");
	const char *home = env("HOME");
	if (*out == NULL && home != NULL && home[0] == '/') {
		size_t len = strlen(home) + sizeof("/.aws/credentials");
		*out = malloc(len);
		if (*out == NULL)
			return false;
		(void)snprintf(*out, len, "%s/.aws/credentials", home);
	}
	return true;
}

/* The options of an s3:// warehouse, and floe's credentials for it from
 * the environment (never from a flag: a flag shows in ps). */
static bool s3_finish(struct floe_config *cfg, config_getenv_fn env, char *errbuf, size_t errlen)
{
	char **raw = cfg->raw;

	if (strcmp(raw[OPT_S3_REMOTE_SIGNING], "on") == 0)
		cfg->s3_remote_signing = true;
	else if (strcmp(raw[OPT_S3_REMOTE_SIGNING], "off") != 0)
		return BAD(OPT_S3_REMOTE_SIGNING, "expected on or off");
	/* Whether some warehouse is on S3 at all is checked once the
	 * further ones are read (s3_anywhere). */
	if (strncmp(cfg->warehouse, "s3://", 5) != 0)
		return true;
	cfg->s3 = true;
	if (raw[OPT_S3_ENDPOINT][0] != '\0' && !endpoint_valid(raw[OPT_S3_ENDPOINT]))
		return BAD(OPT_S3_ENDPOINT, "expected https://host[:port] or http://host[:port]");
	cfg->s3_endpoint = raw[OPT_S3_ENDPOINT];
	const char *region = raw[OPT_S3_REGION];
	if (region[0] == '\0' || strlen(region) > 64 ||
	    strspn(region, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(region))
		return BAD(OPT_S3_REGION, "expected a region name such as us-east-1");
	cfg->s3_region = region;
	if (strcmp(raw[OPT_S3_PATH_STYLE], "true") == 0)
		cfg->s3_path_style = true;
	else if (strcmp(raw[OPT_S3_PATH_STYLE], "false") != 0)
		return BAD(OPT_S3_PATH_STYLE, "expected true or false");
	bool profile_given = raw[OPT_S3_PROFILE][0] != '\0';
	const char *profile = profile_given ? raw[OPT_S3_PROFILE] : env("AWS_PROFILE");
	cfg->s3_profile = strdup(profile != NULL && profile[0] != '\0' ? profile : "default");
	if (cfg->s3_profile == NULL)
		return floe_errbuf(errbuf, errlen, "out of memory");
	if (!profile_given) {
		cfg->s3_access_key_id = env_copy(env, "AWS_ACCESS_KEY_ID");
		cfg->s3_secret_access_key = env_copy(env, "AWS_SECRET_ACCESS_KEY");
		cfg->s3_session_token = env_copy(env, "AWS_SESSION_TOKEN");
	}
	if (!credentials_file(env, &cfg->s3_credentials_file))
		return floe_errbuf(errbuf, errlen, "out of memory");
	return true;
}

/* An ARN: "arn:" and printable characters, at most 2,047 bytes. */
static bool arn_valid(const char *a)
{
	size_t len = strlen(a);

	if (len < 5 || len > 2047 || strncmp(a, "arn:", 4) != 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (a[i] <= ' ' || a[i] > '~')
			return false;
	}
	return true;
}

/* The options of vended credentials (docs/storage.md). */
static bool vend_finish(struct floe_config *cfg, char *errbuf, size_t errlen)
{
	char **raw = cfg->raw;
	long long v;

	const char *mode = raw[OPT_S3_VENDED_CREDENTIALS];
	if (strcmp(mode, "off") == 0)
		cfg->s3_vend = CONFIG_VEND_OFF;
	else if (strcmp(mode, "static") == 0)
		cfg->s3_vend = CONFIG_VEND_STATIC;
	else if (strcmp(mode, "sts") == 0)
		cfg->s3_vend = CONFIG_VEND_STS;
	else
		return BAD(OPT_S3_VENDED_CREDENTIALS, "expected off, static or sts");
	if (raw[OPT_S3_CLIENT_ENDPOINT][0] != '\0' && !endpoint_valid(raw[OPT_S3_CLIENT_ENDPOINT]))
		return BAD(OPT_S3_CLIENT_ENDPOINT,
			   "expected https://host[:port] or http://host[:port]");
	cfg->s3_client_endpoint = raw[OPT_S3_CLIENT_ENDPOINT];
	if (raw[OPT_S3_STS_ENDPOINT][0] != '\0' && !endpoint_valid(raw[OPT_S3_STS_ENDPOINT]))
		return BAD(OPT_S3_STS_ENDPOINT,
			   "expected https://host[:port] or http://host[:port]");
	cfg->s3_sts_endpoint = raw[OPT_S3_STS_ENDPOINT];
	if (raw[OPT_S3_STS_ROLE_ARN][0] != '\0' && !arn_valid(raw[OPT_S3_STS_ROLE_ARN]))
		return BAD(OPT_S3_STS_ROLE_ARN,
			   "expected a role ARN (arn:aws:iam::ACCOUNT:role/NAME)");
	cfg->s3_sts_role_arn = raw[OPT_S3_STS_ROLE_ARN];
	if (raw[OPT_S3_STS_READ_ROLE_ARN][0] != '\0' && !arn_valid(raw[OPT_S3_STS_READ_ROLE_ARN]))
		return BAD(OPT_S3_STS_READ_ROLE_ARN,
			   "expected a role ARN (arn:aws:iam::ACCOUNT:role/NAME)");
	cfg->s3_sts_read_role_arn = raw[OPT_S3_STS_READ_ROLE_ARN];
	if (cfg->s3_vend == CONFIG_VEND_STS && cfg->s3_sts_role_arn[0] == '\0')
		return floe_errbuf(
			errbuf, errlen,
			"--s3-vended-credentials=sts needs --s3-sts-role-arn (FLOE_S3_STS_ROLE_ARN)");
	if (!parse_int(raw[OPT_S3_STS_DURATION], 900, 43200, &v))
		return BAD(OPT_S3_STS_DURATION, "expected seconds from 900 to 43200");
	cfg->s3_sts_duration_s = (int)v;
	return true;
}

/* --warehouses: the file read and every warehouse in it checked against
 * the default one (warehouses.h). */
static bool warehouses_finish(struct floe_config *cfg, config_getenv_fn env, char *errbuf,
			      size_t errlen)
{
	const char *file = cfg->raw[OPT_WAREHOUSES];
	char why[512];

	if (file[0] == '\0')
		return true;
	if (!warehouses_load(file, cfg->warehouse_name, cfg->warehouse, &cfg->warehouses, why,
			     sizeof(why)))
		return floe_errbuf(errbuf, errlen, "--warehouses (FLOE_WAREHOUSES): %s", why);
	bool any_s3 = false;
	for (size_t i = 0; i < cfg->warehouses.count; i++)
		any_s3 = any_s3 || cfg->warehouses.items[i].s3;
	if (any_s3 && cfg->s3_credentials_file == NULL &&
	    !credentials_file(env, &cfg->s3_credentials_file))
		return floe_errbuf(errbuf, errlen, "out of memory");
	if (any_s3 && cfg->s3_credentials_file == NULL)
		return floe_errbuf(
			errbuf, errlen,
			"--warehouses (FLOE_WAREHOUSES): an s3:// warehouse's profile needs "
			"a shared credentials file: set AWS_SHARED_CREDENTIALS_FILE or HOME");
	return true;
}

/* Vended credentials and remote signing need an s3:// warehouse: the
 * default one or one of --warehouses (a file:// one's tables get
 * neither). */
static bool s3_anywhere(struct floe_config *cfg, char *errbuf, size_t errlen)
{
	bool any = cfg->s3;

	for (size_t i = 0; i < cfg->warehouses.count; i++)
		any = any || cfg->warehouses.items[i].s3;
	if (any)
		return true;
	if (cfg->s3_vend != CONFIG_VEND_OFF)
		return BAD(OPT_S3_VENDED_CREDENTIALS,
			   "vended credentials need an s3:// warehouse (--warehouse or one of "
			   "--warehouses)");
	if (cfg->s3_remote_signing)
		return BAD(OPT_S3_REMOTE_SIGNING,
			   "remote signing needs an s3:// warehouse (--warehouse or one of "
			   "--warehouses)");
	return true;
}

/* Converts and checks each raw value; messages name flag and variable. */
static bool config_finish(struct floe_config *cfg, config_getenv_fn env, char *errbuf,
			  size_t errlen)
{
	char **raw = cfg->raw;
	long long v;

	if (!parse_listen(cfg, raw[OPT_LISTEN], errbuf, errlen))
		return false;

	if (raw[OPT_DATABASE][0] != '\0') {
		cfg->database_url = strdup(raw[OPT_DATABASE]);
		if (cfg->database_url == NULL)
			return floe_errbuf(errbuf, errlen, "out of memory");
	}

	if (raw[OPT_OWNER_DATABASE][0] != '\0') {
		if (cfg->database_url == NULL)
			return BAD(OPT_OWNER_DATABASE, "needs --database (FLOE_DATABASE_URL)");
		cfg->owner_database_url = strdup(raw[OPT_OWNER_DATABASE]);
		if (cfg->owner_database_url == NULL)
			return floe_errbuf(errbuf, errlen, "out of memory");
	}

	if (raw[OPT_DATA_DIR][0] == '\0')
		return BAD(OPT_DATA_DIR, "must not be empty");
	cfg->data_dir = absolute_path(raw[OPT_DATA_DIR]);
	if (cfg->data_dir == NULL)
		return BAD(OPT_DATA_DIR, "cannot make it an absolute path");

	if (raw[OPT_WAREHOUSE][0] == '\0') {
		size_t len = strlen(cfg->data_dir) + sizeof("file:///warehouse");
		cfg->warehouse = malloc(len);
		if (cfg->warehouse == NULL)
			return floe_errbuf(errbuf, errlen, "out of memory");
		(void)snprintf(cfg->warehouse, len, "file://%s/warehouse", cfg->data_dir);
	} else {
		const char *w = raw[OPT_WAREHOUSE];
		/* file:/p (as Java and Hadoop write it) is file:///p; what
		 * else is no absolute local path location_canonical refuses. */
		if (strncasecmp(w, "file:", 5) != 0 && strncasecmp(w, "s3://", 5) != 0)
			return BAD(OPT_WAREHOUSE,
				   "only file:// and s3:// warehouses are supported");
		cfg->warehouse = strdup(w);
		if (cfg->warehouse == NULL)
			return floe_errbuf(errbuf, errlen, "out of memory");
		size_t len = strlen(cfg->warehouse);
		while (len > 8 && cfg->warehouse[len - 1] == '/')
			cfg->warehouse[--len] = '\0';
	}
	/* One spelling of the warehouse, the one table locations are
	 * compared with. */
	struct floe_error lerr;
	char *canon = location_canonical(cfg->warehouse, &lerr);
	if (canon == NULL)
		return BAD(OPT_WAREHOUSE, lerr.message);
	if (strcmp(canon, "file:///") == 0) {
		free(canon);
		return BAD(OPT_WAREHOUSE, "the warehouse cannot be the root directory");
	}
	free(cfg->warehouse);
	cfg->warehouse = canon;
	cfg->warehouse_path = strdup(location_path(cfg->warehouse));
	if (cfg->warehouse_path == NULL)
		return floe_errbuf(errbuf, errlen, "out of memory");
	if (!s3_finish(cfg, env, errbuf, errlen) || !vend_finish(cfg, errbuf, errlen))
		return false;

	if (raw[OPT_THREADS][0] == '\0') {
		cfg->threads = (int)count_cores();
	} else {
		if (!parse_int(raw[OPT_THREADS], 1, 256, &v))
			return BAD(OPT_THREADS, "expected an integer from 1 to 256");
		cfg->threads = (int)v;
	}

	if (raw[OPT_COMMIT_THREADS][0] == '\0') {
		long long c = 4LL * count_cores();
		cfg->commit_threads = (int)(c < 4 ? 4 : (c > 256 ? 256 : c));
	} else {
		if (!parse_int(raw[OPT_COMMIT_THREADS], 1, 256, &v))
			return BAD(OPT_COMMIT_THREADS, "expected an integer from 1 to 256");
		cfg->commit_threads = (int)v;
	}

	if (!parse_int(raw[OPT_IDEM_LEASE], 1, 3600, &v))
		return BAD(OPT_IDEM_LEASE, "expected a number of seconds from 1 to 3600");
	cfg->idempotency_lease_seconds = (int)v;

	if (!log_level_parse(raw[OPT_LOG_LEVEL], &cfg->log_level))
		return BAD(OPT_LOG_LEVEL, "expected error, warn, info or debug");
	if (!log_format_parse(raw[OPT_LOG_FORMAT], &cfg->log_format))
		return BAD(OPT_LOG_FORMAT, "expected text or json");

	if (!parse_int(raw[OPT_MAX_BODY], 1024, 1073741824LL, &v))
		return BAD(OPT_MAX_BODY, "expected a byte count from 1024 to 1073741824");
	cfg->max_body_bytes = v;

	static const struct {
		int id;
		long long min, max;
		const char *why;
	} bounds[] = {
		{ OPT_DB_STATEMENT_TIMEOUT, 100, 3600000,
		  "expected milliseconds from 100 to 3600000" },
		{ OPT_DB_LOCK_TIMEOUT, 100, 3600000, "expected milliseconds from 100 to 3600000" },
		{ OPT_DB_ACQUIRE_TIMEOUT, 1, 600000, "expected milliseconds from 1 to 600000" },
		{ OPT_DB_PROBE_TIMEOUT, 100, 60000, "expected milliseconds from 100 to 60000" },
		{ OPT_HTTP_THREADS, 1, 64, "expected an integer from 1 to 64" },
		{ OPT_QUEUE_MAX, 1, 1000000, "expected an integer from 1 to 1000000" },
		{ OPT_PUBLISH_THREADS, 1, 256, "expected an integer from 1 to 256" },
		{ OPT_IDLE_TIMEOUT, 1, 3600, "expected seconds from 1 to 3600" },
		{ OPT_PER_IP_LIMIT, 1, 65536, "expected an integer from 1 to 65536" },
		{ OPT_CONNECTION_LIMIT, 1, 1000000, "expected an integer from 1 to 1000000" },
		{ OPT_MAX_PENDING_BODY, 1048576, 68719476736LL,
		  "expected a byte count from 1048576 to 68719476736" },
		{ OPT_SHUTDOWN_GRACE, 1, 3600, "expected seconds from 1 to 3600" },
	};
	long long bounded[OPT_COUNT] = { 0 };
	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		if (!parse_int(raw[bounds[i].id], bounds[i].min, bounds[i].max, &v))
			return BAD(bounds[i].id, bounds[i].why);
		bounded[bounds[i].id] = v;
	}
	cfg->db_statement_timeout_ms = (int)bounded[OPT_DB_STATEMENT_TIMEOUT];
	cfg->db_lock_timeout_ms = (int)bounded[OPT_DB_LOCK_TIMEOUT];
	cfg->db_acquire_timeout_ms = (int)bounded[OPT_DB_ACQUIRE_TIMEOUT];
	cfg->db_probe_timeout_ms = (int)bounded[OPT_DB_PROBE_TIMEOUT];
	cfg->http_threads = (int)bounded[OPT_HTTP_THREADS];
	cfg->queue_max = (int)bounded[OPT_QUEUE_MAX];
	cfg->publish_threads = (int)bounded[OPT_PUBLISH_THREADS];
	cfg->idle_timeout_seconds = (int)bounded[OPT_IDLE_TIMEOUT];
	cfg->per_ip_connection_limit = (int)bounded[OPT_PER_IP_LIMIT];
	cfg->connection_limit = (int)bounded[OPT_CONNECTION_LIMIT];
	cfg->max_pending_body_bytes = bounded[OPT_MAX_PENDING_BODY];
	cfg->shutdown_grace_seconds = (int)bounded[OPT_SHUTDOWN_GRACE];

	if (raw[OPT_PG_BIN_DIR][0] != '\0') {
		cfg->pg_bin_dir = absolute_path(raw[OPT_PG_BIN_DIR]);
		if (cfg->pg_bin_dir == NULL)
			return BAD(OPT_PG_BIN_DIR, "cannot make it an absolute path");
	}
	if (!parse_int(raw[OPT_JANITOR_INTERVAL], 1, 86400, &v))
		return BAD(OPT_JANITOR_INTERVAL, "expected seconds from 1 to 86400");
	cfg->janitor_interval_s = (int)v;
	if (!parse_int(raw[OPT_METRICS_RETENTION], 1, 36500, &v))
		return BAD(OPT_METRICS_RETENTION, "expected days from 1 to 36500");
	cfg->metrics_retention_days = (int)v;
	if (!parse_int(raw[OPT_UNDROP_RETENTION], 0, 31536000, &v))
		return BAD(OPT_UNDROP_RETENTION, "expected seconds from 0 to 31536000");
	cfg->undrop_retention_s = (int)v;
	if (!parse_int(raw[OPT_EVENTS_RETENTION], 1, 36500, &v))
		return BAD(OPT_EVENTS_RETENTION, "expected days from 1 to 36500");
	cfg->events_retention_s = v * 86400LL;
	if (!parse_int(raw[OPT_SUB_POLL], 10, 60000, &v))
		return BAD(OPT_SUB_POLL, "expected milliseconds from 10 to 60000");
	cfg->subscription_poll_ms = (int)v;
	if (!parse_int(raw[OPT_SUB_RETRY], 10, 300000, &v))
		return BAD(OPT_SUB_RETRY, "expected milliseconds from 10 to 300000");
	cfg->subscription_retry_ms = (int)v;
	if (!parse_int(raw[OPT_PURGE_ATTEMPTS], 1, 1000, &v))
		return BAD(OPT_PURGE_ATTEMPTS, "expected a count from 1 to 1000");
	cfg->purge_max_attempts = (int)v;

	if (raw[OPT_PG_USER][0] != '\0') {
		cfg->pg_user = strdup(raw[OPT_PG_USER]);
		if (cfg->pg_user == NULL)
			return floe_errbuf(errbuf, errlen, "out of memory");
	}
	char hook_err[200];
	cfg->hook_policy = hook_policy_parse(raw[OPT_HOOK_ALLOW], hook_err, sizeof(hook_err));
	if (cfg->hook_policy == NULL)
		return BAD(OPT_HOOK_ALLOW, hook_err);
	if (raw[OPT_HOOK_SECRETS_KEY][0] == '\0') {
		size_t len = strlen(cfg->data_dir) + sizeof("/auth/hook-secrets.key");
		cfg->hook_secrets_key = malloc(len);
		if (cfg->hook_secrets_key == NULL)
			return floe_errbuf(errbuf, errlen, "out of memory");
		(void)snprintf(cfg->hook_secrets_key, len, "%s/auth/hook-secrets.key",
			       cfg->data_dir);
		cfg->hook_secrets_key_default = true;
	} else {
		cfg->hook_secrets_key = absolute_path(raw[OPT_HOOK_SECRETS_KEY]);
		if (cfg->hook_secrets_key == NULL)
			return BAD(OPT_HOOK_SECRETS_KEY, "cannot make it an absolute path");
	}
	if (raw[OPT_AUDIT_SIGNING_KEY][0] != '\0') {
		cfg->audit_signing_key = absolute_path(raw[OPT_AUDIT_SIGNING_KEY]);
		if (cfg->audit_signing_key == NULL)
			return BAD(OPT_AUDIT_SIGNING_KEY, "cannot make it an absolute path");
	}
	if (!parse_int(raw[OPT_AUDIT_CHECKPOINT_INTERVAL], 0, 86400, &v))
		return BAD(OPT_AUDIT_CHECKPOINT_INTERVAL, "expected seconds from 0 to 86400");
	cfg->audit_checkpoint_interval_s = (int)v;
	if (!printable_token(raw[OPT_WAREHOUSE_NAME]))
		return BAD(OPT_WAREHOUSE_NAME,
			   "expected 1-255 printable characters without spaces");
	cfg->warehouse_name = raw[OPT_WAREHOUSE_NAME];
	if (!warehouses_finish(cfg, env, errbuf, errlen) || !s3_anywhere(cfg, errbuf, errlen))
		return false;
	if (!cors_origins_valid(raw[OPT_CORS_ORIGINS]))
		return BAD(
			OPT_CORS_ORIGINS,
			"expected * or comma-separated origins such as https://app.example.com:8443");
	cfg->cors_origins = raw[OPT_CORS_ORIGINS];
	return auth_finish(cfg, errbuf, errlen);
}

static int find_flag(const char *name, size_t len)
{
	for (int i = 0; i < OPT_COUNT; i++) {
		if (strlen(config_options[i].flag) == len &&
		    strncmp(config_options[i].flag, name, len) == 0)
			return i;
	}
	return -1;
}

static void config_forget(char *secret);

static bool set_raw(struct floe_config *cfg, int id, const char *value, char *errbuf, size_t errlen)
{
	char *copy = strdup(value);

	if (copy == NULL)
		return floe_errbuf(errbuf, errlen, "out of memory");
	/* Values may be secrets (--admin-credential, a password in a
	 * database URL): each is wiped before it is freed. */
	config_forget(cfg->raw[id]);
	cfg->raw[id] = copy;
	return true;
}

bool config_load(struct floe_config *cfg, int argc, char **argv, config_getenv_fn env, char *errbuf,
		 size_t errlen)
{
	bool from_flag[OPT_COUNT] = { false };

	memset(cfg, 0, sizeof(*cfg));
	if (env == NULL)
		env = process_getenv;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *name;
		const char *eq;
		const char *value;
		int id;

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			cfg->action = CONFIG_HELP;
			return true;
		}
		if (strcmp(arg, "--version") == 0) {
			cfg->action = CONFIG_VERSION;
			return true;
		}
		if (strcmp(arg, "--print-routes") == 0) {
			cfg->action = CONFIG_PRINT_ROUTES;
			continue;
		}
		if (strcmp(arg, "--print-routes=json") == 0) {
			cfg->action = CONFIG_PRINT_ROUTES_JSON;
			continue;
		}
		if (strcmp(arg, "--print-man") == 0) {
			cfg->action = CONFIG_PRINT_MAN;
			continue;
		}
		if (strncmp(arg, "--", 2) != 0)
			return floe_errbuf(errbuf, errlen,
					   "unexpected argument \"%s\" (see --help)", arg);
		name = arg + 2;
		eq = strchr(name, '=');
		id = find_flag(name, eq != NULL ? (size_t)(eq - name) : strlen(name));
		if (id < 0)
			return floe_errbuf(errbuf, errlen, "unknown option \"%s\" (see --help)",
					   arg);
		if (eq != NULL) {
			value = eq + 1;
		} else {
			if (i + 1 >= argc)
				return floe_errbuf(errbuf, errlen, "option --%s (%s) needs a value",
						   config_options[id].flag, config_options[id].env);
			value = argv[++i];
		}
		/* An empty environment variable means "unset"; an empty
		 * --threads= on the command line is a mistake. */
		if ((id == OPT_THREADS || id == OPT_COMMIT_THREADS) && value[0] == '\0')
			return floe_errbuf(
				errbuf, errlen,
				"invalid value \"\" for --%s (%s): expected an integer from 1 to 256",
				config_options[id].flag, config_options[id].env);
		if (!set_raw(cfg, id, value, errbuf, errlen))
			return false;
		from_flag[id] = true;
	}

	for (int id = 0; id < OPT_COUNT; id++) {
		const char *value;

		if (from_flag[id])
			continue;
		value = env(config_options[id].env);
		if (value == NULL)
			value = config_options[id].defval != NULL ? config_options[id].defval : "";
		if (!set_raw(cfg, id, value, errbuf, errlen))
			return false;
	}
	return config_finish(cfg, env, errbuf, errlen);
}

/* Frees a secret, overwritten first. */
static void config_forget(char *secret)
{
	if (secret != NULL) {
		OPENSSL_cleanse(secret, strlen(secret));
		free(secret);
	}
}

void config_free(struct floe_config *cfg)
{
	free(cfg->listen_host);
	config_forget(cfg->database_url); /* may hold a password */
	config_forget(cfg->owner_database_url);
	free(cfg->data_dir);
	free(cfg->warehouse);
	free(cfg->warehouse_path);
	free(cfg->pg_bin_dir);
	free(cfg->pg_user);
	free(cfg->hook_secrets_key);
	free(cfg->audit_signing_key);
	free(cfg->s3_profile);
	free(cfg->s3_credentials_file);
	config_forget(cfg->s3_access_key_id);
	config_forget(cfg->s3_secret_access_key);
	config_forget(cfg->s3_session_token);
	hook_policy_free(cfg->hook_policy);
	warehouses_free(&cfg->warehouses);
	for (size_t i = 0; i < sizeof(cfg->raw) / sizeof(cfg->raw[0]); i++)
		config_forget(cfg->raw[i]);
	memset(cfg, 0, sizeof(*cfg));
}
