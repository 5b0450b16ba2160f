/*
 * authcli.c - `floe auth ...` (authcli.h). `verify-token` checks tokens
 * of an external OpenID issuer as the daemon would, and says whom each
 * stands for or why it is refused: for an operator setting the issuer
 * up, and for the tests. `rotate-key` writes a new signing key for the
 * daemon to pick up. Each parses its own arguments; the daemon's
 * configuration is not involved.
 */
#include "authcli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cliargs.h"
#include "jwk.h"
#include "jwt.h"
#include "keys.h"
#include "log.h"
#include "oidc.h"

#define AUTHCLI_LEEWAY_DEFAULT 60

static void authcli_usage(FILE *out)
{
	(void)fputs(
		"Usage: floe auth rotate-key [--data-dir=DIR]\n"
		"       floe auth verify-token --oidc-issuer=URL --oidc-audience=AUD [OPTION...] TOKEN\n"
		"       floe auth verify-token --oidc-issuer=URL --oidc-audience=AUD [OPTION...] -\n"
		"\n"
		"rotate-key writes a new signing key into DIR/auth/signing (DIR: --data-dir,\n"
		"else FLOE_DATA_DIR, else ./floe-data) and prints its key id. A running\n"
		"floe signs with it within a minute, or at once on SIGHUP; the older key\n"
		"keeps verifying the tokens it signed until they have expired, and is then\n"
		"deleted.\n"
		"\n"
		"verify-token verifies tokens of an external OpenID issuer as floe does: fetches the\n"
		"issuer's discovery document and key set, checks each token's signature\n"
		"(RS256, ES256), iss, aud, exp and nbf, and prints one JSON line per token:\n"
		"{\"principal\": NAME, \"roles\": [...]} when it is accepted, or\n"
		"{\"refused\": REASON} when not. With '-' the tokens are read from standard\n"
		"input, one a line, and the key set is fetched again for a key it lacks (at\n"
		"most every 30 s), as in the daemon.\n"
		"\n"
		"  --oidc-issuer=URL            the issuer, exactly as its discovery document\n"
		"                               names it; https, or http on a loopback host\n"
		"  --oidc-audience=AUD          the audience the tokens must name (aud)\n"
		"  --oidc-principal-claim=NAME  the claim naming the principal (default sub)\n"
		"  --oidc-roles-claim=NAME      the claim naming floe roles: an array of\n"
		"                               strings or one space-separated string\n"
		"                               (default: none)\n"
		"  --auth-leeway=SECONDS        clock skew allowed on exp and nbf (default 60)\n"
		"  --help                       this text\n"
		"\n"
		"Exit status: 0 every token accepted, 1 a token refused or the issuer not\n"
		"usable, 2 a usage error.\n",
		out);
}

/* Prints one JSON line for the token of len bytes; true when accepted. */
static bool authcli_verify_one(struct oidc *o, const char *token, size_t len)
{
	struct floe_error err;
	json_t *claims = NULL;
	json_t *line = NULL;
	json_t *list = NULL;
	char name[OIDC_NAME_MAX + 1];
	char **roles = NULL;
	size_t nroles = 0;
	char *text = NULL;
	const char *why = NULL;
	enum jwt_status st;

	floe_error_clear(&err);
	st = oidc_verify(o, token, len, (long long)time(NULL), &claims, &err);
	if (st != JWT_OK)
		why = jwt_status_message(st);
	else if (claims == NULL ||
		 !oidc_principal(o, claims, name, sizeof(name), &roles, &nroles, &err))
		why = err.message; /* the fetch failure, or the claims not usable */

	if (why != NULL) {
		line = json_pack("{s:s}", "refused", why);
	} else {
		list = json_array();
		for (size_t i = 0; list != NULL && i < nroles; i++)
			(void)json_array_append_new(list, json_string(roles[i]));
		line = json_pack("{s:s,s:o}", "principal", name, "roles", list);
	}
	text = line != NULL ? json_dumps(line, JSON_COMPACT) : NULL;
	if (text != NULL)
		printf("%s\n", text);
	else
		printf("{\"refused\":\"Out of memory\"}\n");
	(void)fflush(stdout);
	free(text);
	json_decref(line);
	json_decref(claims);
	oidc_roles_free(roles, nroles);
	return why == NULL && text != NULL;
}

/* Verifies the tokens on standard input, one a line. */
static bool authcli_verify_stdin(struct oidc *o)
{
	/* A token of JWT_MAX_LEN bytes, a CR, the newline and the NUL. */
	char line[JWT_MAX_LEN + 4];
	bool all = true;

	while (fgets(line, sizeof(line), stdin) != NULL) {
		size_t len = strlen(line);
		bool whole = len > 0 && line[len - 1] == '\n';

		if (!whole && !feof(stdin)) {
			int c;

			do {
				c = getchar();
			} while (c != '\n' && c != EOF);
			printf("{\"refused\":\"%s\"}\n", jwt_status_message(JWT_TOO_LARGE));
			(void)fflush(stdout);
			all = false;
			continue;
		}
		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			line[--len] = '\0';
		if (len == 0)
			continue;
		if (!authcli_verify_one(o, line, len))
			all = false;
	}
	return all;
}

static int authcli_verify_token(int argc, char **argv)
{
	struct oidc_config cfg = { .timeout_ms = 0, .leeway = AUTHCLI_LEEWAY_DEFAULT };
	struct floe_error err;
	struct oidc *o = NULL;
	const char *token = NULL;
	int status = 2;

	const char *leeway = NULL;
	const struct {
		const char *name;
		const char **value;
	} options[] = {
		{ "--oidc-issuer", &cfg.issuer },
		{ "--oidc-audience", &cfg.audience },
		{ "--oidc-principal-claim", &cfg.principal_claim },
		{ "--oidc-roles-claim", &cfg.roles_claim },
		{ "--auth-leeway", &leeway },
	};

	for (int i = 1; i < argc; i++) {
		bool missing = false;
		bool matched = false;

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			authcli_usage(stdout);
			return 0;
		}
		for (size_t k = 0; k < sizeof(options) / sizeof(options[0]) && !matched; k++) {
			const char *v = cli_option(argc, argv, &i, options[k].name, &missing);

			if (v != NULL) {
				*options[k].value = v;
				matched = true;
			}
		}
		if (matched)
			continue;
		if (missing) {
			(void)fprintf(stderr, "floe auth verify-token: %s needs a value\n",
				      argv[i]);
			return 2;
		}
		if (argv[i][0] == '-' && argv[i][1] != '\0') {
			(void)fprintf(stderr, "floe auth verify-token: unknown option %s\n",
				      argv[i]);
			return 2;
		}
		if (token != NULL) {
			(void)fprintf(stderr, "floe auth verify-token: one TOKEN (or -) only\n");
			return 2;
		}
		token = argv[i];
	}
	if (leeway != NULL) {
		char *end = NULL;

		errno = 0;
		cfg.leeway = strtoll(leeway, &end, 10);
		if (errno != 0 || end == leeway || *end != '\0' || cfg.leeway < 0 ||
		    cfg.leeway > 86400) {
			(void)fprintf(stderr,
				      "floe auth verify-token: --auth-leeway takes 0 to 86400 "
				      "seconds, not '%s'\n",
				      leeway);
			return 2;
		}
	}
	if (cfg.issuer == NULL || cfg.audience == NULL || token == NULL) {
		(void)fprintf(stderr, "floe auth verify-token: --oidc-issuer, --oidc-audience and "
				      "TOKEN (or -) are required; see --help\n");
		return 2;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		(void)fprintf(stderr, "floe auth verify-token: cannot initialise libcurl\n");
		return 1;
	}
	floe_error_clear(&err);
	o = oidc_new(&cfg, &err);
	if (o == NULL) {
		(void)fprintf(stderr, "floe auth verify-token: %s\n", err.message);
		status = 1;
		goto done;
	}
	if (strcmp(token, "-") == 0)
		status = authcli_verify_stdin(o) ? 0 : 1;
	else
		status = authcli_verify_one(o, token, strlen(token)) ? 0 : 1;
done:
	oidc_free(o);
	curl_global_cleanup();
	return status;
}

/* floe auth rotate-key [--data-dir=DIR] */
static int authcli_rotate_key(int argc, char **argv)
{
	const char *data_dir = getenv("FLOE_DATA_DIR");
	char dir[4096];
	char kid[JWK_THUMBPRINT_LEN + 1];
	struct floe_error err;

	for (int i = 1; i < argc; i++) {
		bool missing = false;
		const char *v = cli_option(argc, argv, &i, "--data-dir", &missing);
		if (v == NULL) {
			(void)fprintf(stderr, "floe auth rotate-key: %s %s\n", argv[i],
				      missing ? "needs a value" : "is not an option");
			return 2;
		}
		data_dir = v;
	}
	if (data_dir == NULL || data_dir[0] == '\0')
		data_dir = "./floe-data";
	(void)snprintf(dir, sizeof(dir), "%s/auth/signing", data_dir);
	if (!keyring_rotate_dir(dir, kid, &err)) {
		(void)fprintf(stderr, "floe auth rotate-key: %s\n", err.message);
		return 1;
	}
	printf("%s\n", kid);
	return 0;
}

int authcli_main(int argc, char **argv)
{
	/* Each failure is printed once, on standard error, by the command. */
	log_set_level(LOG_LEVEL_ERROR);
	if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		authcli_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (strcmp(argv[1], "verify-token") == 0)
		return authcli_verify_token(argc - 1, argv + 1);
	if (strcmp(argv[1], "rotate-key") == 0)
		return authcli_rotate_key(argc - 1, argv + 1);
	(void)fprintf(stderr,
		      "floe auth: unknown command '%s' (rotate-key, verify-token); see --help\n",
		      argv[1]);
	return 2;
}
