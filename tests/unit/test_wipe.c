/*
 * test_wipe.c - secrets are overwritten before they are freed: a token
 * request's form values (client_secret, subject_token) and the
 * configuration's secrets (--admin-credential, a password in a database
 * URL). Linked with -Wl,--wrap=free, so each free of a watched buffer
 * looks at its bytes first.
 */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "form.h"

#define WATCH_MAX 4

static struct {
	const void *ptr;
	size_t len;
	bool freed;
	bool wiped;
} watched[WATCH_MAX];
static size_t nwatched;

void __real_free(void *p); /* NOLINT(bugprone-reserved-identifier) */
void __wrap_free(void *p); /* NOLINT(bugprone-reserved-identifier) */

void __wrap_free(void *p) /* NOLINT(bugprone-reserved-identifier) */
{
	for (size_t i = 0; p != NULL && i < nwatched; i++) {
		if (watched[i].ptr != p || watched[i].freed)
			continue;
		const unsigned char *b = p;
		watched[i].freed = true;
		watched[i].wiped = true;
		for (size_t k = 0; k < watched[i].len; k++)
			watched[i].wiped &= b[k] == 0;
	}
	__real_free(p);
}

static void watch(const void *p, size_t len)
{
	cr_assert_lt(nwatched, WATCH_MAX);
	watched[nwatched].ptr = p;
	watched[nwatched].len = len;
	watched[nwatched].freed = false;
	watched[nwatched].wiped = false;
	nwatched++;
}

static void expect_wiped(void)
{
	for (size_t i = 0; i < nwatched; i++) {
		cr_assert(watched[i].freed, "watched buffer %zu was not freed", i);
		cr_assert(watched[i].wiped, "watched buffer %zu was freed unwiped", i);
	}
	nwatched = 0;
}

Test(wipe, form_values_are_wiped_before_free)
{
	static const char body[] = "grant_type=client_credentials&client_id=etl"
				   "&client_secret=s3cr3t-s3cr3t-s3cr3t";
	struct form form;
	char why[256];

	cr_assert(form_parse(body, strlen(body), &form, why, sizeof(why)), "%s", why);
	const char *secret = form_get(&form, "client_secret");
	cr_assert_str_eq(secret, "s3cr3t-s3cr3t-s3cr3t");
	watch(secret, strlen(secret));
	form_free(&form);
	expect_wiped();
}

static const char *no_env(const char *name)
{
	(void)name;
	return NULL;
}

Test(wipe, config_secrets_are_wiped_before_free)
{
	struct floe_config cfg;
	char msg[256];
	const char *argv[] = {
		"floe", "--admin-credential=admin:0123456789abcdef-secret",
		"--database=postgresql://floe:db-password@db.internal/floe",
		"--owner-database=postgresql://owner:owner-password@db.internal/floe"
	};

	cr_assert(config_load(&cfg, 4, (char **)argv, no_env, msg, sizeof(msg)), "%s", msg);
	cr_assert_str_eq(cfg.admin_credential, "admin:0123456789abcdef-secret");
	watch(cfg.admin_credential, strlen(cfg.admin_credential));
	watch(cfg.database_url, strlen(cfg.database_url));
	watch(cfg.owner_database_url, strlen(cfg.owner_database_url));
	config_free(&cfg);
	expect_wiped();
}
