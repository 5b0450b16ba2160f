/* The option table: defaults, environment, flags, precedence and the
 * messages a bad value produces. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

static const char *const *fake_env;

static const char *lookup(const char *name)
{
	size_t n = strlen(name);
	for (const char *const *e = fake_env; e && *e; e++) {
		if (strncmp(*e, name, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	}
	return NULL;
}

static bool load(struct floe_config *cfg, const char *const *env, int argc, const char **argv,
		 char *msg, size_t len)
{
	fake_env = env;
	return config_load(cfg, argc, (char **)argv, lookup, msg, len);
}

Test(config, defaults)
{
	struct floe_config cfg;
	char msg[256];
	const char *argv[] = { "floe" };
	const char *env[] = { NULL };
	char cwd[1024];

	cr_assert(load(&cfg, env, 1, argv, msg, sizeof(msg)), "%s", msg);
	cr_assert_str_eq(cfg.listen_host, "127.0.0.1");
	cr_assert_eq(cfg.listen_port, 8181);
	cr_assert_null(cfg.database_url);
	cr_assert(getcwd(cwd, sizeof(cwd)) != NULL);
	char want[1200];
	snprintf(want, sizeof(want), "%s/floe-data", cwd);
	cr_assert_str_eq(cfg.data_dir, want);
	snprintf(want, sizeof(want), "file://%s/floe-data/warehouse", cwd);
	cr_assert_str_eq(cfg.warehouse, want);
	cr_assert_geq(cfg.threads, 1);
	cr_assert_geq(cfg.commit_threads, 4);
	cr_assert_eq(cfg.log_level, LOG_LEVEL_INFO);
	cr_assert_eq(cfg.max_body_bytes, 8388608);
	cr_assert_eq(cfg.action, CONFIG_RUN);
	cr_assert_str_eq(cfg.warehouse_name, "warehouse");
	cr_assert_str_eq(cfg.cors_origins, "");
	config_free(&cfg);
}

Test(config, cors_origins_and_warehouse_name)
{
	struct floe_config cfg;
	char msg[256];
	const char *env[] = { "FLOE_CORS_ORIGINS=https://app.example.com, http://localhost:5173",
			      NULL };
	const char *argv[] = { "floe", "--warehouse-name=lake" };

	cr_assert(load(&cfg, env, 2, argv, msg, sizeof(msg)), "%s", msg);
	cr_assert_str_eq(cfg.cors_origins, "https://app.example.com, http://localhost:5173");
	cr_assert_str_eq(cfg.warehouse_name, "lake");
	config_free(&cfg);
	const char *any[] = { "FLOE_CORS_ORIGINS=*", NULL };
	cr_assert(load(&cfg, any, 1, argv, msg, sizeof(msg)), "%s", msg);
	cr_assert_str_eq(cfg.cors_origins, "*");
	config_free(&cfg);
}

Test(config, environment_then_flags_win)
{
	struct floe_config cfg;
	char msg[256];
	const char *env[] = {
		"FLOE_LISTEN=0.0.0.0:9000", "FLOE_THREADS=3",
		"FLOE_DATA_DIR=/srv/floe",  "FLOE_DATABASE_URL=postgresql://u@db/floe",
		"FLOE_LOG_LEVEL=debug",     NULL
	};
	const char *argv[] = { "floe",
			       "--threads=5",
			       "--listen",
			       "[::1]:7000",
			       "--warehouse=file:///data/wh/",
			       "--commit-threads=12" };

	cr_assert(load(&cfg, env, 6, argv, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(cfg.threads, 5);
	cr_assert_eq(cfg.commit_threads, 12);
	cr_assert_str_eq(cfg.listen_host, "::1");
	cr_assert_eq(cfg.listen_port, 7000);
	cr_assert_str_eq(cfg.data_dir, "/srv/floe");
	cr_assert_str_eq(cfg.database_url, "postgresql://u@db/floe");
	cr_assert_str_eq(cfg.warehouse, "file:///data/wh");
	cr_assert_str_eq(cfg.warehouse_path, "/data/wh");
	cr_assert_eq(cfg.log_level, LOG_LEVEL_DEBUG);
	config_free(&cfg);
}

Test(config, warehouse_is_canonical_and_janitor_options)
{
	struct floe_config cfg;
	char msg[256];
	const char *env[] = { "FLOE_JANITOR_INTERVAL_SECONDS=1", NULL };
	const char *argv[] = { "floe", "--warehouse=file:///data//./wh/x/../",
			       "--purge-max-attempts=3" };

	cr_assert(load(&cfg, env, 3, argv, msg, sizeof(msg)), "%s", msg);
	cr_assert_str_eq(cfg.warehouse, "file:///data/wh");
	cr_assert_str_eq(cfg.warehouse_path, "/data/wh");
	cr_assert_eq(cfg.janitor_interval_s, 1);
	cr_assert_eq(cfg.metrics_retention_days, 7);
	cr_assert_eq(cfg.purge_max_attempts, 3);
	config_free(&cfg);

	const char *none[] = { NULL };
	const char *argv1[] = { "floe" };
	cr_assert(load(&cfg, none, 1, argv1, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(cfg.janitor_interval_s, 30);
	cr_assert_eq(cfg.purge_max_attempts, 10);
	config_free(&cfg);
}

/* Days of retention in 64-bit seconds: 36,500 days (the maximum) is
 * 3,153,600,000 s, which an int multiplication overflowed, and the
 * janitor then removed every event of the change feed. */
Test(config, events_retention_days_in_64_bit_seconds)
{
	struct floe_config cfg;
	char msg[256];
	const char *none[] = { NULL };
	const char *argv[] = { "floe", "--events-retention-days=36500" };

	cr_assert(load(&cfg, none, 2, argv, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(cfg.events_retention_s, 3153600000LL);
	config_free(&cfg);

	const char *argv1[] = { "floe", "--events-retention-days=24856" };
	cr_assert(load(&cfg, none, 2, argv1, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(cfg.events_retention_s, 24856LL * 86400);
	config_free(&cfg);

	const char *argv2[] = { "floe" };
	cr_assert(load(&cfg, none, 1, argv2, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(cfg.events_retention_s, 30LL * 86400);
	config_free(&cfg);
}

Test(config, bad_values_name_the_option)
{
	static const struct {
		const char *env;
		const char *arg;
		const char *names;
	} cases[] = {
		{ NULL, "--threads=0", "FLOE_THREADS" },
		{ NULL, "--threads=abc", "--threads" },
		{ "FLOE_THREADS=300", NULL, "FLOE_THREADS" },
		{ NULL, "--listen=nonsense", "FLOE_LISTEN" },
		{ NULL, "--listen=host:99999", "--listen" },
		{ NULL, "--listen=::1:80", "FLOE_LISTEN" },
		{ NULL, "--log-level=loud", "FLOE_LOG_LEVEL" },
		{ NULL, "--max-body-bytes=10", "FLOE_MAX_BODY_BYTES" },
		{ "FLOE_MAX_BODY_BYTES=12k", NULL, "FLOE_MAX_BODY_BYTES" },
		{ NULL, "--warehouse=gs://bucket/wh", "FLOE_WAREHOUSE" },
		{ NULL, "--warehouse=s3://B_ucket/wh", "FLOE_WAREHOUSE" },
		{ NULL, "--warehouse=s3://bucket/../..", "FLOE_WAREHOUSE" },
		{ NULL, "--warehouse=file://relative", "FLOE_WAREHOUSE" },
		{ NULL, "--data-dir=", "FLOE_DATA_DIR" },
		{ NULL, "--no-such-option=1", "--no-such-option" },
		{ NULL, "--threads", "--threads" },
		{ NULL, "--commit-threads=0", "FLOE_COMMIT_THREADS" },
		{ NULL, "--commit-threads=", "--commit-threads" },
		{ "FLOE_COMMIT_THREADS=many", NULL, "FLOE_COMMIT_THREADS" },
		{ NULL, "--warehouse=file:///a/../..", "FLOE_WAREHOUSE" },
		{ NULL, "--warehouse=file:///", "FLOE_WAREHOUSE" },
		{ NULL, "--janitor-interval-seconds=0", "FLOE_JANITOR_INTERVAL_SECONDS" },
		{ NULL, "--metrics-retention-days=0", "FLOE_METRICS_RETENTION_DAYS" },
		{ "FLOE_PURGE_MAX_ATTEMPTS=none", NULL, "FLOE_PURGE_MAX_ATTEMPTS" },
		{ NULL, "--warehouse-name=", "FLOE_WAREHOUSE_NAME" },
		{ NULL, "--warehouse-name=my lake", "--warehouse-name" },
		{ NULL, "--cors-origins=app.example.com", "FLOE_CORS_ORIGINS" },
		{ NULL, "--cors-origins=https://app.example.com/", "--cors-origins" },
		{ NULL, "--cors-origins=https://", "FLOE_CORS_ORIGINS" },
		{ NULL, "--cors-origins=ftp://x", "FLOE_CORS_ORIGINS" },
		{ "FLOE_CORS_ORIGINS=*,https://a.example", NULL, "FLOE_CORS_ORIGINS" },
		{ NULL, "--cors-origins=https://*.example", "FLOE_CORS_ORIGINS" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct floe_config cfg;
		char msg[256] = "";
		const char *env[] = { cases[i].env, NULL };
		const char *argv[] = { "floe", cases[i].arg };
		bool ok = load(&cfg, env, cases[i].arg ? 2 : 1, argv, msg, sizeof(msg));
		cr_assert_not(ok, "case %zu accepted", i);
		cr_assert(strstr(msg, cases[i].names) != NULL, "case %zu: \"%s\" does not name %s",
			  i, msg, cases[i].names);
		config_free(&cfg);
	}
}

Test(config, s3_warehouse_and_its_credentials)
{
	struct floe_config cfg;
	char msg[256] = "";
	const char *env[] = { "AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=sekrit",
			      "HOME=/home/someone", NULL };
	const char *argv[] = { "floe", "--warehouse=S3://lake-1/wh//x/../", "--s3-path-style=true",
			       "--s3-endpoint=http://127.0.0.1:9000", "--s3-region=eu-west-3" };

	cr_assert(load(&cfg, env, 5, argv, msg, sizeof(msg)), "%s", msg);
	cr_assert(cfg.s3);
	cr_assert_str_eq(cfg.warehouse, "s3://lake-1/wh");
	cr_assert_str_eq(cfg.warehouse_path, "s3://lake-1/wh");
	cr_assert(cfg.s3_path_style);
	cr_assert_str_eq(cfg.s3_endpoint, "http://127.0.0.1:9000");
	cr_assert_str_eq(cfg.s3_region, "eu-west-3");
	cr_assert_str_eq(cfg.s3_access_key_id, "AKID");
	cr_assert_str_eq(cfg.s3_secret_access_key, "sekrit");
	cr_assert_null(cfg.s3_session_token);
	cr_assert_str_eq(cfg.s3_profile, "default");
	cr_assert_str_eq(cfg.s3_credentials_file, "/home/someone/.aws/credentials");
	config_free(&cfg);

	/* A profile named on the command line wins over the keys. */
	const char *env2[] = { "AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=sekrit",
			       "AWS_SHARED_CREDENTIALS_FILE=/etc/floe/creds", NULL };
	const char *argv2[] = { "floe", "--warehouse=s3://lake-1", "--s3-profile=floe" };
	cr_assert(load(&cfg, env2, 3, argv2, msg, sizeof(msg)), "%s", msg);
	cr_assert_str_eq(cfg.warehouse, "s3://lake-1");
	cr_assert_null(cfg.s3_access_key_id);
	cr_assert_str_eq(cfg.s3_profile, "floe");
	cr_assert_str_eq(cfg.s3_credentials_file, "/etc/floe/creds");
	cr_assert_not(cfg.s3_path_style);
	cr_assert_str_eq(cfg.s3_region, "us-east-1");
	config_free(&cfg);

	static const char *const bad[][2] = {
		{ "--s3-path-style=yes", "--s3-path-style" },
		{ "--s3-endpoint=ftp://h", "--s3-endpoint" },
		{ "--s3-endpoint=http://h/p", "--s3-endpoint" },
		{ "--s3-endpoint=https://", "--s3-endpoint" },
		{ "--s3-region=", "--s3-region" },
		{ "--s3-region=EU West", "--s3-region" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[] = { "floe", "--warehouse=s3://lake-1/wh", bad[i][0] };
		cr_assert_not(load(&cfg, env, 3, a, msg, sizeof(msg)), "%s accepted", bad[i][0]);
		cr_assert(strstr(msg, bad[i][1]) != NULL, "%s: %s", bad[i][0], msg);
		config_free(&cfg);
	}
}

Test(config, actions)
{
	struct floe_config cfg;
	char msg[256];
	const char *env[] = { NULL };
	const char *help[] = { "floe", "--help" };
	const char *routes[] = { "floe", "--print-routes" };

	cr_assert(load(&cfg, env, 2, help, msg, sizeof(msg)));
	cr_assert_eq(cfg.action, CONFIG_HELP);
	config_free(&cfg);
	cr_assert(load(&cfg, env, 2, routes, msg, sizeof(msg)));
	cr_assert_eq(cfg.action, CONFIG_PRINT_ROUTES);
	config_free(&cfg);
}

Test(config, help_lists_every_variable)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	config_print_help(f, "floe");
	fclose(f);
	const char *vars[] = { "FLOE_LISTEN",         "FLOE_DATABASE_URL", "FLOE_DATA_DIR",
			       "FLOE_WAREHOUSE",      "FLOE_THREADS",      "FLOE_LOG_LEVEL",
			       "FLOE_MAX_BODY_BYTES", "FLOE_PG_BIN_DIR",   "FLOE_PG_USER",
			       "FLOE_COMMIT_THREADS" };
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		cr_assert(strstr(text, vars[i]) != NULL, "%s missing", vars[i]);
	free(text);
}

Test(config, vended_credentials_are_off_unless_configured)
{
	struct floe_config cfg;
	char msg[256] = "";
	const char *env[] = { "AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=sekrit", NULL };
	const char *plain[] = { "floe", "--warehouse=s3://lake-1/wh" };

	cr_assert(load(&cfg, env, 2, plain, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(cfg.s3_vend, CONFIG_VEND_OFF);
	cr_assert_eq(cfg.s3_sts_duration_s, 900);
	config_free(&cfg);

	const char *sts[] = { "floe",
			      "--warehouse=s3://lake-1/wh",
			      "--s3-vended-credentials=sts",
			      "--s3-sts-endpoint=http://127.0.0.1:5000",
			      "--s3-sts-role-arn=arn:aws:iam::1:role/w",
			      "--s3-sts-read-role-arn=arn:aws:iam::1:role/r",
			      "--s3-sts-duration=3600",
			      "--s3-client-endpoint=http://s3:9000" };
	cr_assert(load(&cfg, env, 8, sts, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(cfg.s3_vend, CONFIG_VEND_STS);
	cr_assert_str_eq(cfg.s3_sts_endpoint, "http://127.0.0.1:5000");
	cr_assert_str_eq(cfg.s3_sts_role_arn, "arn:aws:iam::1:role/w");
	cr_assert_str_eq(cfg.s3_sts_read_role_arn, "arn:aws:iam::1:role/r");
	cr_assert_eq(cfg.s3_sts_duration_s, 3600);
	cr_assert_str_eq(cfg.s3_client_endpoint, "http://s3:9000");
	config_free(&cfg);

	static const char *const bad[][2] = {
		{ "--s3-vended-credentials=on", "--s3-vended-credentials" },
		{ "--s3-vended-credentials=sts", "--s3-sts-role-arn" },
		{ "--s3-sts-role-arn=role/w", "--s3-sts-role-arn" },
		{ "--s3-sts-read-role-arn=arn:a b", "--s3-sts-read-role-arn" },
		{ "--s3-sts-duration=60", "--s3-sts-duration" },
		{ "--s3-sts-duration=50000", "--s3-sts-duration" },
		{ "--s3-sts-endpoint=sts.example", "--s3-sts-endpoint" },
		{ "--s3-client-endpoint=http://h/p", "--s3-client-endpoint" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *a[] = { "floe", "--warehouse=s3://lake-1/wh", bad[i][0] };
		cr_assert_not(load(&cfg, env, 3, a, msg, sizeof(msg)), "%s accepted", bad[i][0]);
		cr_assert(strstr(msg, bad[i][1]) != NULL, "%s: %s", bad[i][0], msg);
		config_free(&cfg);
	}
	/* A file:// warehouse has nothing to vend. */
	const char *local[] = { "floe", "--warehouse=file:///srv/wh",
				"--s3-vended-credentials=static" };
	cr_assert_not(load(&cfg, env, 3, local, msg, sizeof(msg)));
	cr_assert(strstr(msg, "need an s3:// warehouse") != NULL, "%s", msg);
	config_free(&cfg);
}

/* --- --warehouses: the file of further warehouses --- */

static const char *const DEFAULT_WH = "file:///srv/floe/warehouse";

/* Parses text against a default warehouse "warehouse" at DEFAULT_WH. */
static bool parse_wh(const char *text, struct warehouse_list *l, char *msg, size_t len)
{
	return warehouses_parse(text, strlen(text), "warehouse", DEFAULT_WH, l, msg, len);
}

Test(config, warehouses_file_is_parsed_and_canonical)
{
	struct warehouse_list l;
	char msg[512];
	const char *text =
		"{\"warehouses\": ["
		"{\"name\": \"lake\", \"location\": \"file:/srv/lake//x/../\"},"
		"{\"name\": \"s3-lake.1\", \"location\": \"S3://bucket-1/wh/\","
		" \"s3\": {\"endpoint\": \"http://127.0.0.1:9000\", \"region\": \"eu-west-3\","
		" \"path-style\": true, \"profile\": \"lake\"}},"
		"{\"name\": \"aws\", \"location\": \"s3://bucket-2\", \"s3\": {\"profile\": \"p\"}}"
		"]}";

	cr_assert(parse_wh(text, &l, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(l.count, 3);
	cr_assert_str_eq(l.items[0].name, "lake");
	cr_assert_str_eq(l.items[0].location, "file:///srv/lake");
	cr_assert_str_eq(l.items[0].path, "/srv/lake");
	cr_assert_not(l.items[0].s3);
	cr_assert(l.items[1].s3);
	cr_assert_str_eq(l.items[1].location, "s3://bucket-1/wh");
	cr_assert_str_eq(l.items[1].s3_endpoint, "http://127.0.0.1:9000");
	cr_assert_str_eq(l.items[1].s3_region, "eu-west-3");
	cr_assert(l.items[1].s3_path_style);
	cr_assert_str_eq(l.items[1].s3_profile, "lake");
	/* Defaults: AWS's endpoint, us-east-1, virtual-hosted addressing. */
	cr_assert_str_eq(l.items[2].s3_endpoint, "");
	cr_assert_str_eq(l.items[2].s3_region, "us-east-1");
	cr_assert_not(l.items[2].s3_path_style);

	/* Looked up by name or by URL in any spelling; 0 is the default. */
	cr_assert_eq(warehouses_find(&l, "warehouse", DEFAULT_WH, "warehouse"), 0);
	cr_assert_eq(warehouses_find(&l, "warehouse", DEFAULT_WH, "file:/srv/floe/warehouse/"), 0);
	cr_assert_eq(warehouses_find(&l, "warehouse", DEFAULT_WH, "lake"), 1);
	cr_assert_eq(warehouses_find(&l, "warehouse", DEFAULT_WH, "file:///srv/lake/"), 1);
	cr_assert_eq(warehouses_find(&l, "warehouse", DEFAULT_WH, "s3://bucket-2"), 3);
	cr_assert_eq(warehouses_find(&l, "warehouse", DEFAULT_WH, "Lake"), -1);
	cr_assert_eq(warehouses_find(&l, "warehouse", DEFAULT_WH, "file:///srv/lake/x"), -1);
	warehouses_free(&l);
	warehouses_free(&l);
}

Test(config, bad_warehouses_files_say_what_is_wrong)
{
	static const struct {
		const char *text;
		const char *says;
	} cases[] = {
		{ "[", "not JSON" },
		{ "[]", "expected an object" },
		{ "{\"warehouse\": []}", "unknown key \"warehouse\"" },
		{ "{\"warehouses\": {}}", "must be an array" },
		{ "{\"warehouses\": [1]}", "warehouse 1: expected an object" },
		{ "{\"warehouses\": [{\"location\": \"file:///a\"}]}", "\"name\" is missing" },
		{ "{\"warehouses\": [{\"name\": 7, \"location\": \"file:///a\"}]}",
		  "\"name\" must be a string" },
		{ "{\"warehouses\": [{\"name\": \"a b\", \"location\": \"file:///a\"}]}",
		  "invalid name \"a b\"" },
		{ "{\"warehouses\": [{\"name\": \"a/b\", \"location\": \"file:///a\"}]}",
		  "invalid name" },
		{ "{\"warehouses\": [{\"name\": \"namespaces\", \"location\": \"file:///a\"}]}",
		  "invalid name \"namespaces\"" },
		{ "{\"warehouses\": [{\"name\": \"..\", \"location\": \"file:///a\"}]}",
		  "invalid name" },
		{ "{\"warehouses\": [{\"name\": \"warehouse\", \"location\": \"file:///a\"}]}",
		  "the name is the default warehouse's" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"file:///a\"},"
		  "{\"name\": \"a\", \"location\": \"file:///b\"}]}",
		  "warehouse \"a\" is named twice" },
		{ "{\"warehouses\": [{\"name\": \"a\"}]}",
		  "warehouse \"a\": \"location\" is missing" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"gs://b/x\"}]}",
		  "only file:// and s3:// warehouses" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"file:relative\"}]}",
		  "invalid location" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"file:///\"}]}",
		  "cannot be the root directory" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"file:///srv/floe\"}]}",
		  "overlaps the default warehouse's" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"file:///srv/floe/warehouse/a\"}]}",
		  "overlaps the default warehouse's" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"s3://bkt/x\", \"s3\": {\"profile\": \"p\"}},"
		  "{\"name\": \"b\", \"location\": \"s3://bkt/x/y\", \"s3\": {\"profile\": \"p\"}}]}",
		  "overlaps warehouse \"a\"'s s3://bkt/x" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"file:///a\", \"s3\": {}}]}",
		  "\"s3\" options need an s3:// location" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"s3://bucket\"}]}",
		  "needs \"s3\" options" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"s3://bucket\", \"s3\": {}}]}",
		  "\"profile\" is missing" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"s3://bucket\", \"s3\": "
		  "{\"profile\": \"p\", \"secret-access-key\": \"x\"}}]}",
		  "unknown s3 option \"secret-access-key\"" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"s3://bucket\", \"s3\": "
		  "{\"profile\": \"p\", \"endpoint\": \"ftp://x\"}}]}",
		  "invalid s3 endpoint" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"s3://bucket\", \"s3\": "
		  "{\"profile\": \"p\", \"region\": \"EU\"}}]}",
		  "invalid s3 region" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"s3://bucket\", \"s3\": "
		  "{\"profile\": \"p\", \"path-style\": \"yes\"}}]}",
		  "\"path-style\" must be true or false" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"s3://bucket\", \"s3\": "
		  "{\"profile\": \"p q\"}}]}",
		  "invalid s3 profile" },
		{ "{\"warehouses\": [{\"name\": \"a\", \"location\": \"file:///a\", \"extra\": 1}]}",
		  "unknown key \"extra\"" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct warehouse_list l;
		char msg[512] = "";
		cr_assert_not(parse_wh(cases[i].text, &l, msg, sizeof(msg)), "%s", cases[i].text);
		cr_assert(strstr(msg, cases[i].says) != NULL, "%s: got \"%s\"", cases[i].text, msg);
		warehouses_free(&l);
	}
}

Test(config, warehouses_option_reads_the_file)
{
	struct floe_config cfg;
	char msg[512];
	char path[] = "/tmp/floe-test-warehouses-XXXXXX";
	int fd = mkstemp(path);
	const char *text = "{\"warehouses\": [{\"name\": \"lake\", \"location\": \"s3://lake/wh\","
			   " \"s3\": {\"profile\": \"lake\"}}]}";
	char flag[128];

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	(void)snprintf(flag, sizeof(flag), "--warehouses=%s", path);
	const char *argv[] = { "floe", flag, "--warehouse=file:///srv/floe/wh" };
	const char *env[] = { "HOME=/home/floe", NULL };
	cr_assert(load(&cfg, env, 3, argv, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(cfg.warehouses.count, 1);
	cr_assert_str_eq(cfg.warehouses.items[0].name, "lake");
	/* The default warehouse is on file://, yet the profile needs the
	 * shared credentials file. */
	cr_assert_not(cfg.s3);
	cr_assert_str_eq(cfg.s3_credentials_file, "/home/floe/.aws/credentials");
	config_free(&cfg);

	/* The file's own error is prefixed with the option and the file. */
	const char *argv2[] = { "floe", flag, "--warehouse=file:///srv/floe/wh",
				"--warehouse-name=lake" };
	cr_assert_not(load(&cfg, env, 4, argv2, msg, sizeof(msg)));
	cr_assert(strstr(msg, "--warehouses (FLOE_WAREHOUSES): the warehouses file ") == msg, "%s",
		  msg);
	cr_assert(strstr(msg, "the name is the default warehouse's") != NULL, "%s", msg);
	config_free(&cfg);
	unlink(path);

	const char *argv3[] = { "floe", "--warehouses=/nonexistent/warehouses.json" };
	cr_assert_not(load(&cfg, env, 2, argv3, msg, sizeof(msg)));
	cr_assert(strstr(msg, "cannot open the warehouses file /nonexistent/warehouses.json") !=
			  NULL,
		  "%s", msg);
	config_free(&cfg);

	/* Without the option there are none. */
	const char *argv4[] = { "floe" };
	cr_assert(load(&cfg, env, 1, argv4, msg, sizeof(msg)), "%s", msg);
	cr_assert_eq(cfg.warehouses.count, 0);
	config_free(&cfg);
}
