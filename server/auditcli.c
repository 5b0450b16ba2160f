/*
 * auditcli.c - `floe audit verify` and `floe audit export` (auditcli.h).
 * Both read the database floe uses (--database, else FLOE_DATABASE_URL,
 * else the embedded PostgreSQL of --data-dir while that floe runs);
 * verify also reads an export instead (--file), so a copy kept elsewhere
 * can be checked with no database at all.
 */
#include "auditcli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "audittrail.h"
#include "cliargs.h"
#include "log.h"
#include "store_admin.h"
#include "system.h"
#include "trail.h"

/* An export line holds one event: its details are bounded by the
 * request body limit, far below this. */
#define EXPORT_LINE_MAX (64L << 20)

static void auditcli_usage(FILE *out)
{
	(void)fputs(
		"Usage: floe audit verify [--database=URL | --data-dir=DIR] [--public-key=FILE]\n"
		"       floe audit verify --file=EXPORT [--public-key=FILE]\n"
		"       floe audit export [--database=URL | --data-dir=DIR] [--public-key=FILE]\n"
		"\n"
		"verify recomputes the audit log's hash chain, from the database or from an\n"
		"export, and checks it against the signed checkpoints. It prints a JSON\n"
		"report: \"valid\", and each problem with its position in the chain and the\n"
		"event's id (an event changed, deleted, moved or written around floe's\n"
		"trigger; links removed; the chain rewritten since a checkpoint).\n"
		"\n"
		"export writes the audit log to standard output as JSON Lines: a header,\n"
		"the signed checkpoints, every link of the chain with its event, and any\n"
		"event missing from the chain. `floe audit verify --file` checks it offline.\n"
		"\n"
		"  --database=URL     the PostgreSQL floe uses (default: FLOE_DATABASE_URL)\n"
		"  --data-dir=DIR     else the embedded PostgreSQL of the floe running with\n"
		"                     this data directory, relative to the current one\n"
		"                     (default: FLOE_DATA_DIR, else ./floe-data)\n"
		"  --public-key=FILE  the checkpoint key, PEM (the public key, or the\n"
		"                     signing key itself); without it, verify uses the\n"
		"                     export's own and says that signatures were checked\n"
		"                     only against it, and with a database checks none\n"
		"  --file=EXPORT      verify this export instead of the database\n"
		"  --help             this text\n"
		"\n"
		"Exit status: 0 the chain verified (or was exported), 1 a problem was\n"
		"found or the log could not be read, 2 a usage error.\n",
		out);
}

struct cli_args {
	const char *database;
	const char *data_dir;
	const char *public_key;
	const char *file;
};

static bool parse_args(const char *cmd, int argc, char **argv, struct cli_args *a)
{
	static const char *const names[] = { "--database", "--data-dir", "--public-key", "--file" };

	for (int i = 1; i < argc; i++) {
		bool missing = false;
		const char *v = NULL;
		size_t k = 0;
		for (; k < sizeof(names) / sizeof(names[0]); k++) {
			v = cli_option(argc, argv, &i, names[k], &missing);
			if (v != NULL || missing)
				break;
		}
		if (v == NULL) {
			(void)fprintf(stderr, "floe audit %s: %s %s\n", cmd, argv[i],
				      missing ? "needs a value" : "is not an option");
			return false;
		}
		const char **slot[] = { &a->database, &a->data_dir, &a->public_key, &a->file };
		*slot[k] = v;
	}
	return true;
}

/* Why a file could not be opened, in a word or three. */
static const char *open_failure(int e)
{
	switch (e) {
	case ENOENT:
		return "no such file";
	case EACCES:
		return "permission denied";
	case EISDIR:
		return "it is a directory";
	default:
		return "it cannot be opened";
	}
}

/* Reads a whole small file (a PEM key) into a new string. */
static char *read_small(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;

	*len = 0;
	if (f == NULL)
		return NULL;
	buf = malloc(16385);
	if (buf != NULL) {
		*len = fread(buf, 1, 16384, f);
		buf[*len] = '\0';
	}
	(void)fclose(f);
	return buf;
}

static struct trail_key *load_public(const char *cmd, const char *path)
{
	struct floe_error err;
	size_t len = 0;
	char *pem = read_small(path, &len);

	if (pem == NULL) {
		(void)fprintf(stderr, "floe audit %s: cannot read %s: %s\n", cmd, path,
			      open_failure(errno));
		return NULL;
	}
	struct trail_key *k = trail_key_parse_public(pem, len, &err);
	free(pem);
	if (k == NULL)
		(void)fprintf(stderr, "floe audit %s: %s: %s\n", cmd, path, err.message);
	return k;
}

/* The conninfo of the database the arguments name (new, caller frees),
 * or NULL with the reason printed. A data directory is made absolute
 * first: libpq takes a host that does not begin with '/' for a host
 * name, not a socket directory. */
static char *database_conninfo(const char *cmd, const struct cli_args *a)
{
	const char *url = a->database ? a->database : getenv("FLOE_DATABASE_URL");
	char *abs = NULL;
	char *conninfo = NULL;

	if (url != NULL && url[0] != '\0') {
		conninfo = strdup(url);
		goto done;
	}
	const char *dir = a->data_dir ? a->data_dir : getenv("FLOE_DATA_DIR");
	if (dir == NULL || dir[0] == '\0')
		dir = "./floe-data";
	abs = realpath(dir, NULL);
	if (abs == NULL) {
		(void)fprintf(stderr, "floe audit %s: cannot use the data directory %s: %s\n", cmd,
			      dir, log_strerror(errno));
		return NULL;
	}
	/* host='<abs>/run', quoted as libpq reads a value. */
	size_t len = strlen(abs) * 2 + 96;
	conninfo = malloc(len);
	if (conninfo == NULL)
		goto done;
	size_t n = 0;
	const char *head = "host='";
	memcpy(conninfo, head, strlen(head));
	n += strlen(head);
	for (const char *p = abs; *p != '\0'; p++) {
		if (*p == '\'' || *p == '\\')
			conninfo[n++] = '\\';
		conninfo[n++] = *p;
	}
	(void)snprintf(conninfo + n, len - n, "/run' port=5432 user=floe_runtime dbname=floe");
done:
	if (conninfo == NULL)
		(void)fprintf(stderr, "floe audit %s: out of memory\n", cmd);
	free(abs);
	return conninfo;
}
static int print_report(json_t *report)
{
	bool valid = json_is_true(json_object_get(report, "valid"));

	(void)json_dumpf(report, stdout, JSON_INDENT(2));
	(void)fputc('\n', stdout);
	json_decref(report);
	return valid ? 0 : 1;
}

/* An export being read, a line at a time. */
struct export_reader {
	FILE *f;
	char *line;
	size_t cap;
	long long lineno;
};

static json_t *next_line(void *ctx, struct floe_error *err)
{
	struct export_reader *r = ctx;
	json_error_t jerr;

	ssize_t n = getline(&r->line, &r->cap, r->f);
	if (n < 0) {
		if (ferror(r->f))
			floe_err(err, FE_INTERNAL, "the export cannot be read");
		return NULL;
	}
	r->lineno++;
	if (n > EXPORT_LINE_MAX) {
		floe_err(err, FE_BAD_REQUEST, "line %lld is too long", r->lineno);
		return NULL;
	}
	json_t *o = json_loadb(r->line, (size_t)n, 0, &jerr);
	if (o == NULL)
		floe_err(err, FE_BAD_REQUEST, "line %lld is no JSON: %s", r->lineno, jerr.text);
	return o;
}

/* Verifies the export at path. */
static int verify_file(const struct cli_args *a, const struct trail_key *pinned)
{
	struct export_reader r = { .f = fopen(a->file, "re") };
	struct floe_error err;

	if (r.f == NULL) {
		(void)fprintf(stderr, "floe audit verify: cannot read %s: %s\n", a->file,
			      open_failure(errno));
		return 1;
	}
	json_t *report = audittrail_verify_export(next_line, &r, pinned, &err);
	free(r.line);
	(void)fclose(r.f);
	if (report == NULL) {
		(void)fprintf(stderr, "floe audit verify: %s: %s\n", a->file, err.message);
		return 1;
	}
	return print_report(report);
}

static bool emit_line(void *ctx, const json_t *line)
{
	FILE *out = ctx;

	return json_dumpf(line, out, JSON_COMPACT) == 0 && fputc('\n', out) != EOF;
}

static int from_database(const char *cmd, const struct cli_args *a, struct trail_key *key)
{
	struct floe_error err;
	char *conninfo = database_conninfo(cmd, a);
	struct store_pool *pool = NULL;
	struct store *s = NULL;
	int rc = 1;

	if (conninfo == NULL)
		return 1;
	floe_error_clear(&err);
	/* First on its own, for libpq's reason: the pool words a failure for
	 * a client of the daemon, who is told no more than "unavailable". */
	if (!store_try_connect(conninfo, &err)) {
		(void)fprintf(stderr, "floe audit %s: cannot reach the database: %s\n", cmd,
			      err.message);
		free(conninfo);
		return 1;
	}
	pool = store_pool_new(conninfo, 1, "cli");
	free(conninfo);
	s = pool ? system_acquire(pool, &err) : NULL;
	if (s == NULL) {
		(void)fprintf(stderr, "floe audit %s: cannot reach the database: %s\n", cmd,
			      pool ? err.message : "out of memory");
		store_pool_free(&pool);
		return 1;
	}
	if (strcmp(cmd, "verify") == 0) {
		json_t *report = audittrail_verify(s, key, &err);
		if (report != NULL)
			rc = print_report(report);
		else
			(void)fprintf(stderr, "floe audit verify: %s\n", err.message);
	} else {
		if (audittrail_export(s, key, emit_line, stdout, &err) && fflush(stdout) == 0)
			rc = 0;
		else
			(void)fprintf(stderr, "floe audit export: %s\n", err.message);
	}
	system_release(pool, s);
	store_pool_free(&pool);
	return rc;
}

int auditcli_main(int argc, char **argv)
{
	struct cli_args a = { 0 };
	struct trail_key *key = NULL;
	int rc;

	log_set_level(LOG_LEVEL_ERROR);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		auditcli_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "verify") != 0 && strcmp(cmd, "export") != 0) {
		(void)fprintf(stderr,
			      "floe audit: unknown command '%s' (verify, export); see --help\n",
			      cmd);
		return 2;
	}
	if (!parse_args(cmd, argc - 1, argv + 1, &a))
		return 2;
	if (a.file != NULL && (strcmp(cmd, "export") == 0 || a.database || a.data_dir)) {
		(void)fprintf(stderr,
			      "floe audit %s: --file verifies an export, without a "
			      "database\n",
			      cmd);
		return 2;
	}
	if (a.public_key != NULL) {
		key = load_public(cmd, a.public_key);
		if (key == NULL)
			return 1;
	}
	rc = a.file ? verify_file(&a, key) : from_database(cmd, &a, key);
	trail_key_free(key);
	return rc;
}
