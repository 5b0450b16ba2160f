/*
 * fault.c - the scripted faults and call counts every fake shares.
 */
#include "fakes.h"

#include <stdio.h>
#include <string.h>

#define FAKE_FAULTS_MAX 32
#define FAKE_FNS_MAX 64

struct fault {
	char fn[48];
	int at; /* the call count at which it fires */
	struct floe_error err;
	bool landed;
};

static struct fault faults[FAKE_FAULTS_MAX];
static int nfaults;

static struct {
	char fn[48];
	int calls;
} counts[FAKE_FNS_MAX];
static int ncounts;

void fake_forget_calls(void)
{
	nfaults = 0;
	ncounts = 0;
}

void fake_reset(void)
{
	fake_forget_calls();
	fake_store_reset();
	fake_fileio_reset();
	fake_hooks_reset();
}

struct floe_error fake_error(enum floe_errkind kind, enum floe_outcome outcome,
			     const char *sqlstate, const char *message)
{
	struct floe_error e;

	floe_err(&e, kind, "%s", message);
	e.outcome = outcome;
	snprintf(e.sqlstate, sizeof(e.sqlstate), "%s", sqlstate);
	return e;
}

struct floe_error fake_conn_lost(void)
{
	return fake_error(FE_UNAVAILABLE, FO_FAILED, "08006",
			  "The catalog database is unavailable");
}

struct floe_error fake_commit_unknown(void)
{
	return fake_error(
		FE_COMMIT_STATE_UNKNOWN, FO_UNKNOWN, "",
		"The database connection broke during the commit; its outcome is unknown");
}

struct floe_error fake_serialization(void)
{
	return fake_error(FE_UNAVAILABLE, FO_FAILED, "40001",
			  "The catalog database aborted the change to resolve a conflict; retry");
}

static int *count_of(const char *fn)
{
	for (int i = 0; i < ncounts; i++) {
		if (strcmp(counts[i].fn, fn) == 0)
			return &counts[i].calls;
	}
	if (ncounts == FAKE_FNS_MAX)
		return NULL;
	snprintf(counts[ncounts].fn, sizeof(counts[ncounts].fn), "%s", fn);
	counts[ncounts].calls = 0;
	return &counts[ncounts++].calls;
}

int fake_calls(const char *fn)
{
	int *c = count_of(fn);
	return c ? *c : 0;
}

void fake_fail(const char *fn, int nth, struct floe_error e, bool landed)
{
	if (nfaults == FAKE_FAULTS_MAX)
		return;
	snprintf(faults[nfaults].fn, sizeof(faults[nfaults].fn), "%s", fn);
	faults[nfaults].at = fake_calls(fn) + nth;
	faults[nfaults].err = e;
	faults[nfaults].landed = landed;
	nfaults++;
}

bool fake_fault_due(const char *fn, struct floe_error *err, bool *landed)
{
	int *c = count_of(fn);

	if (c == NULL)
		return false;
	(*c)++;
	if (landed != NULL)
		*landed = false;
	for (int i = 0; i < nfaults; i++) {
		if (faults[i].at == *c && strcmp(faults[i].fn, fn) == 0) {
			if (err != NULL)
				*err = faults[i].err;
			if (landed != NULL)
				*landed = faults[i].landed;
			return true;
		}
	}
	return false;
}
