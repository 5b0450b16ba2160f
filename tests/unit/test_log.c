/*
 * The principal on floe's log lines: a JSON line of a request names the
 * principal it acts as (anonymous when none, escaped as JSON needs), a new
 * request starts without one, and the text format is unchanged.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static void json_format(void)
{
	cr_redirect_stderr();
	log_set_format(LOG_FORMAT_JSON);
	log_set_level(LOG_LEVEL_INFO);
}

/* The lines written so far, read back (at most len - 1 bytes). */
static void written(char *out, size_t len)
{
	FILE *f = cr_get_redirected_stderr();
	size_t n;

	fflush(stderr);
	n = fread(out, 1, len - 1, f);
	out[n] = '\0';
}

Test(log, a_request_line_names_its_principal, .init = json_format)
{
	char out[4096];

	log_set_request("rid-1");
	log_set_principal("alice");
	log_info("access", "GET /v1/config 200");
	log_set_request(NULL);
	written(out, sizeof(out));
	cr_assert(strstr(out, "\"request_id\":\"rid-1\",\"principal\":\"alice\"}") != NULL, "%s",
		  out);
}

Test(log, without_a_principal_the_line_says_anonymous, .init = json_format)
{
	char out[4096];

	log_set_request("rid-1");
	log_set_principal("alice");
	/* the next request on the same thread starts without one */
	log_set_request("rid-2");
	cr_assert_null(log_principal());
	log_info("access", "GET /v1/config 200");
	log_set_request(NULL);
	written(out, sizeof(out));
	cr_assert(strstr(out, "\"request_id\":\"rid-2\",\"principal\":\"anonymous\"}") != NULL,
		  "%s", out);
}

Test(log, a_principal_cannot_break_the_line, .init = json_format)
{
	char out[4096];

	log_set_request("rid-3");
	log_set_principal("eve\",\"level\":\"error\n");
	log_info("access", "GET /v1/config 200");
	log_set_request(NULL);
	written(out, sizeof(out));
	cr_assert(strstr(out, "\"principal\":\"eve\\\",\\\"level\\\":\\\"error\\n\"}\n") != NULL,
		  "%s", out);
	cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "one line: %s", out);
}
