/*
 * fake_hooks.c - webhook delivery without a network: every call gets the
 * verdict a test scripts (fakes.h), and a test can act while the hooks
 * "run" (take the lease over, move main).
 */
#include "fakes.h"

#include <stdio.h>
#include <string.h>

static enum hook_verdict verdict;
static long status;
static char reason[HOOK_REASON_MAX + 1];
static void (*during)(void *arg);
static void *during_arg;

void fake_hooks_reset(void)
{
	verdict = HOOK_PASS;
	status = 200;
	reason[0] = '\0';
	during = NULL;
	during_arg = NULL;
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

/* The ids the fakes hand out are UUIDs; only their length is checked. */
bool hook_id_valid(const char *id)
{
	return strlen(id) == 36;
}

void hooks_call_all(struct hook_call *calls, size_t n)
{
	(void)fake_fault_due("hooks_call_all", NULL, NULL);
	if (during != NULL)
		during(during_arg);
	for (size_t i = 0; i < n; i++) {
		calls[i].verdict = calls[i].body == NULL ? HOOK_ERROR : verdict;
		calls[i].http_status = status;
		snprintf(calls[i].reason, sizeof(calls[i].reason), "%s", reason);
		calls[i].latency_ms = 1;
		calls[i].attempts = 1;
	}
}
