/*
 * config.c - the option table and its parser. Adding an option is one row
 * in `options` plus its conversion in config_finish.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hooks.h"

enum opt_id {
	OPT_LISTEN,
	OPT_DATABASE,
	OPT_DATA_DIR,
	OPT_WAREHOUSE,
	OPT_THREADS,
	OPT_LOG_LEVEL,
	OPT_MAX_BODY,
	OPT_PG_BIN_DIR,
	OPT_PG_USER,
	OPT_COMMIT_THREADS,
	OPT_HOOK_ALLOW,
	OPT_COUNT
};

struct option_def {
	const char *flag;   /* without the leading "--" */
	const char *env;
	const char *defval; /* NULL: computed, see help */
	const char *help;
};

static const struct option_def options[OPT_COUNT] = {
	[OPT_LISTEN] = { "listen", "FLOE_LISTEN", "127.0.0.1:8181",
		"Address to serve HTTP on, host:port or [ipv6]:port (port 0: any free port)" },
	[OPT_DATABASE] = { "database", "FLOE_DATABASE_URL", "",
		"PostgreSQL connection string or postgresql:// URL; empty: run a private PostgreSQL under the data directory" },
	[OPT_DATA_DIR] = { "data-dir", "FLOE_DATA_DIR", "./floe-data",
		"Directory for the embedded PostgreSQL and the default warehouse" },
	[OPT_WAREHOUSE] = { "warehouse", "FLOE_WAREHOUSE", NULL,
		"Warehouse root URL where table files are written (default: file://<data dir>/warehouse)" },
	[OPT_THREADS] = { "threads", "FLOE_THREADS", NULL,
		"Worker threads, each with one PostgreSQL connection, 1-256 (default: number of cores)" },
	[OPT_LOG_LEVEL] = { "log-level", "FLOE_LOG_LEVEL", "info",
		"Log level: error, warn, info or debug" },
	[OPT_MAX_BODY] = { "max-body-bytes", "FLOE_MAX_BODY_BYTES", "8388608",
		"Largest request body accepted, in bytes (1024-1073741824); larger ones get 413" },
	[OPT_PG_BIN_DIR] = { "pg-bin-dir", "FLOE_PG_BIN_DIR", NULL,
		"Directory holding initdb and postgres for the embedded PostgreSQL (default: PATH, then /usr/lib/postgresql/<newest>/bin)" },
	[OPT_COMMIT_THREADS] = { "commit-threads", "FLOE_COMMIT_THREADS", NULL,
		"Threads that run commits, each with one PostgreSQL connection, 1-256 (default: 4 per core, at least 4)" },
	[OPT_PG_USER] = { "pg-user", "FLOE_PG_USER", NULL,
		"User the embedded PostgreSQL runs as when floe runs as root (default: postgres, else nobody)" },
	[OPT_HOOK_ALLOW] = { "hook-allow", "FLOE_HOOK_ALLOW", "",
		"Comma-separated hosts and networks (address or address/prefix) audit hooks may reach although they are loopback, private, link-local, CGNAT, unique-local or otherwise internal; empty: none" },
};

_Static_assert(OPT_COUNT <= sizeof(((struct floe_config *)0)->raw) /
		sizeof(char *), "raw[] too small for the option table");

static const char *process_getenv(const char *name)
{
	return getenv(name);
}

static bool fail(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static bool fail(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
	return false;
}

void config_print_help(FILE *out, const char *argv0)
{
	fprintf(out,
		"Usage: %s [OPTION...]\n"
		"floe: an Apache Iceberg REST catalog backed by PostgreSQL.\n\n"
		"Every option can be given as a flag (--name=value or --name value)\n"
		"or as an environment variable; a flag wins over the variable.\n\n",
		argv0);
	for (int i = 0; i < OPT_COUNT; i++) {
		const struct option_def *o = &options[i];
		fprintf(out, "  --%-16s %-20s %s\n", o->flag, o->env, o->help);
		if (o->defval != NULL)
			fprintf(out, "  %-38s default: \"%s\"\n", "", o->defval);
	}
	fprintf(out,
		"\n  --help               print this text and exit\n"
		"  --version            print the version and exit\n"
		"  --print-routes       print every route floe serves and exit\n");
}

static bool parse_int(const char *s, long long min, long long max,
		      long long *out)
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

static bool parse_listen(struct floe_config *cfg, const char *s,
			 char *errbuf, size_t errlen)
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
	return cfg->listen_host != NULL ||
	       fail(errbuf, errlen, "out of memory");
bad:
	return fail(errbuf, errlen,
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
			snprintf(abs, len, "%s/%s", cwd, strcmp(p, ".") == 0 ? "" : p);
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

/* Converts and checks each raw value; messages name flag and variable. */
static bool config_finish(struct floe_config *cfg, char *errbuf, size_t errlen)
{
	char **raw = cfg->raw;
	long long v;

#define BAD(id, why)                                                       \
	fail(errbuf, errlen, "invalid value \"%s\" for --%s (%s): %s",      \
	     raw[id], options[id].flag, options[id].env, why)

	if (!parse_listen(cfg, raw[OPT_LISTEN], errbuf, errlen))
		return false;

	if (raw[OPT_DATABASE][0] != '\0') {
		cfg->database_url = strdup(raw[OPT_DATABASE]);
		if (cfg->database_url == NULL)
			return fail(errbuf, errlen, "out of memory");
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
			return fail(errbuf, errlen, "out of memory");
		snprintf(cfg->warehouse, len, "file://%s/warehouse", cfg->data_dir);
	} else {
		const char *w = raw[OPT_WAREHOUSE];
		if (strncmp(w, "file://", 7) != 0)
			return BAD(OPT_WAREHOUSE,
				   "only file:// warehouses are supported");
		if (w[7] != '/')
			return BAD(OPT_WAREHOUSE,
				   "the path must be absolute (file:///...)");
		cfg->warehouse = strdup(w);
		if (cfg->warehouse == NULL)
			return fail(errbuf, errlen, "out of memory");
		size_t len = strlen(cfg->warehouse);
		while (len > 8 && cfg->warehouse[len - 1] == '/')
			cfg->warehouse[--len] = '\0';
	}
	cfg->warehouse_path = strdup(cfg->warehouse + 7);
	if (cfg->warehouse_path == NULL)
		return fail(errbuf, errlen, "out of memory");

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

	if (!log_level_parse(raw[OPT_LOG_LEVEL], &cfg->log_level))
		return BAD(OPT_LOG_LEVEL, "expected error, warn, info or debug");

	if (!parse_int(raw[OPT_MAX_BODY], 1024, 1073741824LL, &v))
		return BAD(OPT_MAX_BODY,
			   "expected a byte count from 1024 to 1073741824");
	cfg->max_body_bytes = v;

	if (raw[OPT_PG_BIN_DIR][0] != '\0') {
		cfg->pg_bin_dir = absolute_path(raw[OPT_PG_BIN_DIR]);
		if (cfg->pg_bin_dir == NULL)
			return BAD(OPT_PG_BIN_DIR, "cannot make it an absolute path");
	}
	if (raw[OPT_PG_USER][0] != '\0') {
		cfg->pg_user = strdup(raw[OPT_PG_USER]);
		if (cfg->pg_user == NULL)
			return fail(errbuf, errlen, "out of memory");
	}
	char hook_err[200];
	cfg->hook_policy = hook_policy_parse(raw[OPT_HOOK_ALLOW], hook_err, sizeof(hook_err));
	if (cfg->hook_policy == NULL)
		return BAD(OPT_HOOK_ALLOW, hook_err);
#undef BAD
	return true;
}

static int find_flag(const char *name, size_t len)
{
	for (int i = 0; i < OPT_COUNT; i++) {
		if (strlen(options[i].flag) == len &&
		    strncmp(options[i].flag, name, len) == 0)
			return i;
	}
	return -1;
}

static bool set_raw(struct floe_config *cfg, int id, const char *value,
		    char *errbuf, size_t errlen)
{
	char *copy = strdup(value);

	if (copy == NULL)
		return fail(errbuf, errlen, "out of memory");
	free(cfg->raw[id]);
	cfg->raw[id] = copy;
	return true;
}

bool config_load(struct floe_config *cfg, int argc, char **argv,
		 config_getenv_fn env, char *errbuf, size_t errlen)
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
		if (strncmp(arg, "--", 2) != 0)
			return fail(errbuf, errlen,
				    "unexpected argument \"%s\" (see --help)", arg);
		name = arg + 2;
		eq = strchr(name, '=');
		id = find_flag(name, eq != NULL ? (size_t)(eq - name) : strlen(name));
		if (id < 0)
			return fail(errbuf, errlen, "unknown option \"%s\" (see --help)",
				    arg);
		if (eq != NULL) {
			value = eq + 1;
		} else {
			if (i + 1 >= argc)
				return fail(errbuf, errlen,
					    "option --%s (%s) needs a value",
					    options[id].flag, options[id].env);
			value = argv[++i];
		}
		/* An empty environment variable means "unset"; an empty
		 * --threads= on the command line is a mistake. */
		if ((id == OPT_THREADS || id == OPT_COMMIT_THREADS) && value[0] == '\0')
			return fail(errbuf, errlen,
				    "invalid value \"\" for --%s (%s): expected an integer from 1 to 256",
				    options[id].flag, options[id].env);
		if (!set_raw(cfg, id, value, errbuf, errlen))
			return false;
		from_flag[id] = true;
	}

	for (int id = 0; id < OPT_COUNT; id++) {
		const char *value;

		if (from_flag[id])
			continue;
		value = env(options[id].env);
		if (value == NULL)
			value = options[id].defval != NULL ? options[id].defval : "";
		if (!set_raw(cfg, id, value, errbuf, errlen))
			return false;
	}
	return config_finish(cfg, errbuf, errlen);
}

void config_free(struct floe_config *cfg)
{
	free(cfg->listen_host);
	free(cfg->database_url);
	free(cfg->data_dir);
	free(cfg->warehouse);
	free(cfg->warehouse_path);
	free(cfg->pg_bin_dir);
	free(cfg->pg_user);
	hook_policy_free(cfg->hook_policy);
	for (size_t i = 0; i < sizeof(cfg->raw) / sizeof(cfg->raw[0]); i++)
		free(cfg->raw[i]);
	memset(cfg, 0, sizeof(*cfg));
}
