/*
 * sqlstate.c - what a failed statement means for the client: its SQLSTATE
 * class becomes a floe_error kind and an outcome (failed or unknown), so
 * "nothing happened" and "may have happened" never blur.
 *
 * Not for mapping constraint violations to a relation's answer (an
 * existing name, a dropped parent): the relation's file does that.
 */
#include "store_internal.h"

#include <stdio.h>
#include <string.h>

#include "log.h"
#include "metric.h"

void store_error_detail(struct floe_error *err, enum floe_outcome outcome, const char *sqlstate)
{
	/* Every failed statement passes here once. */
	metric_add(METRIC_PG_ERRORS, metric_sqlstate_slot(sqlstate), 1);
	if (err == NULL)
		return;
	err->outcome = outcome;
	(void)snprintf(err->sqlstate, sizeof(err->sqlstate), "%s", sqlstate);
}

void store_classify(const char *statement, PGresult *r, const char *sqlstate, PGconn *conn,
		    bool outcome_unknown, struct floe_error *err)
{
	const char *state = sqlstate[0] != '\0' ? sqlstate : NULL;

	if (PQstatus(conn) != CONNECTION_OK ||
	    (state != NULL && (strncmp(state, "08", 2) == 0 || strncmp(state, "57P0", 4) == 0))) {
		log_warn("store", "statement %s: connection lost%s: %s", statement,
			 outcome_unknown ? " (its outcome is unknown)" : "", PQerrorMessage(conn));
		floe_err(err, FE_UNAVAILABLE, "the catalog database is unavailable");
		store_error_detail(err, outcome_unknown ? FO_UNKNOWN : FO_FAILED,
				   state != NULL ? state : "08006");
		return;
	}
	if (state != NULL && strncmp(state, "40", 2) == 0) {
		/* Serialization failures and deadlocks roll the transaction
		 * back: a known failure that a retry can get past. */
		log_warn("store", "statement %s: %s", statement, PQresultErrorMessage(r));
		floe_err(err, FE_UNAVAILABLE,
			 "the catalog database aborted the change to resolve a conflict; retry");
	} else if (state != NULL &&
		   (strcmp(state, "57014") == 0 || strcmp(state, "55P03") == 0 ||
		    strncmp(state, "53", 2) == 0 || strncmp(state, "57P", 3) == 0)) {
		/* A statement or lock timeout, an exhausted server, a shutdown:
		 * nothing was done and a later retry may succeed. */
		log_warn("store", "statement %s: %s", statement, PQresultErrorMessage(r));
		floe_err(err, FE_UNAVAILABLE, "the catalog database is busy; retry");
	} else if (state != NULL &&
		   (strncmp(state, "23", 2) == 0 || strncmp(state, "22", 2) == 0)) {
		/* Integrity violations are conflicts the caller maps (an
		 * existing name, a dropped parent), and data exceptions come
		 * from client input the caller maps (a since that is no
		 * timestamp): not server faults. */
		log_debug("store", "statement %s: %s", statement, PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "internal database error");
	} else {
		log_error("store", "statement %s failed (%s): %s", statement,
			  state != NULL ? state : "?", PQresultErrorMessage(r));
		floe_err(err, FE_INTERNAL, "internal database error");
	}
	store_error_detail(err, FO_FAILED, sqlstate);
}
