/*
 * fake_hooks.c - webhook delivery without a network: every call gets the
 * verdict a test scripts (fakes.h), and a test can act while the hooks
 * "run" (take the lease over, move main).
 */
#include "fakes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "txguard.h"

static enum hook_verdict verdict;
static long status;
static char reason[HOOK_REASON_MAX + 1];
static void (*during)(void *arg);
static void *during_arg;
static json_t *last_body; /* the last body sent, parsed */

/* The secret the last call sent was signed with. */
static char last_secret[256];

void fake_hooks_reset(void)
{
	verdict = HOOK_PASS;
	status = 200;
	reason[0] = '\0';
	during = NULL;
	during_arg = NULL;
	json_decref(last_body);
	last_body = NULL;
	last_secret[0] = '\0';
}

const char *fake_hooks_last_secret(void)
{
	return last_secret;
}

json_t *fake_hooks_last_body(void)
{
	return json_incref(last_body);
}

void fake_hooks_answer(enum hook_verdict v, long http_status, const char *why)
{
	verdict = v;
	status = http_status;
	snprintf(reason, sizeof(reason), "%s", why ? why : "");
}

void fake_hooks_during(void (*fn)(void *arg), void *arg)
{
	during = fn;
	during_arg = arg;
}

void hooks_call_all(struct hook_call *calls, size_t n)
{
	TXGUARD_ASSERT_NONE(); /* as the real one asserts */
	(void)fake_fault_due("hooks_call_all", NULL, NULL);
	if (during != NULL)
		during(during_arg);
	for (size_t i = 0; i < n; i++) {
		if (calls[i].refused) {
			calls[i].verdict = HOOK_ERROR;
			continue;
		}
		(void)snprintf(last_secret, sizeof(last_secret), "%s",
			       calls[i].secret != NULL ? calls[i].secret : "");
		if (calls[i].body != NULL) {
			json_decref(last_body);
			last_body = json_loads(calls[i].body, 0, NULL);
		}
		calls[i].verdict = calls[i].body == NULL ? HOOK_ERROR : verdict;
		calls[i].http_status = status;
		snprintf(calls[i].reason, sizeof(calls[i].reason), "%s", reason);
		calls[i].latency_ms = 1;
		calls[i].attempts = 1;
	}
}

/* The registration rules (catalog/hookspec.c) come along with the code
 * under test; no test here registers a hook, so a URL never reaches
 * these. */
enum hook_url_result hook_url_split(const char *url, char **scheme, char **host)
{
	(void)url;
	*scheme = NULL;
	*host = NULL;
	return HOOK_URL_INVALID;
}

const char *hook_policy_check_literal(const struct hook_policy *policy, const char *host)
{
	(void)policy;
	(void)host;
	return "no hook address is admitted in the unit tests";
}
