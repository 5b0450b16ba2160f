/*
 * duties.c - separation of duties for write-audit-publish (duties.h): the
 * rule that keeps the principal who staged a run or wrote its branch from
 * publishing it, and the audit event of every publish it refuses.
 */
#include "duties.h"

#include <stdio.h>
#include <stdlib.h>

#include "auditlog.h"
#include "log.h"
#include "policy.h"
#include "ports.h"

/* rule: what puts separation of duties in force for the table, or "". */
static bool duties_rule(struct store *s, const struct ns_ident *ns, const json_t *m, char *rule,
			size_t len, struct floe_error *err)
{
	char *where = NULL;

	rule[0] = '\0';
	if (policy_sets(m, POLICY_SOD_PROPERTY)) {
		(void)snprintf(rule, len, "the table sets " POLICY_SOD_PROPERTY "=true");
		return true;
	}
	if (!store_ns_property_true(s, ns, POLICY_SOD_PROPERTY, &where, err))
		return false;
	if (where != NULL)
		(void)snprintf(rule, len, "namespace %s sets " POLICY_SOD_PROPERTY "=true", where);
	free(where);
	return true;
}

bool duties_check_publish(struct store *s, const struct table_env *env, const struct ns_ident *ns,
			  const char *table, const json_t *m, const json_t *run,
			  struct floe_error *err)
{
	const char *run_id = json_string_value(json_object_get(run, "id"));
	const char *branch = json_string_value(json_object_get(run, "branch"));
	const char *who = env->principal;
	const char *reason;
	bool staged = false, wrote = false;
	char rule[256];

	if (!duties_rule(s, ns, m, rule, sizeof(rule), err))
		return false;
	if (rule[0] == '\0')
		return true;
	/* Asked of the store, not read from the run's written-by: that list
	 * is cut for display, and a writer past the cut is still a writer. */
	if (who != NULL && !store_run_acted(s, run_id, who, &staged, &wrote, err))
		return false;
	if (who == NULL) {
		reason = "no authenticated principal";
		floe_err(
			err, FE_FORBIDDEN,
			"Separation of duties (%s): publishing run %s needs an authenticated principal, and authentication is required for it",
			rule, run_id);
	} else if (staged) {
		reason = "staged the run";
		floe_err(err, FE_FORBIDDEN,
			 "Separation of duties: %s staged run %s and may not publish it (%s)", who,
			 run_id, rule);
	} else if (wrote) {
		reason = "wrote to the run's branch";
		floe_err(
			err, FE_FORBIDDEN,
			"Separation of duties: %s wrote to branch %s of run %s and may not publish it (%s)",
			who, branch, run_id, rule);
	} else {
		return true;
	}
	log_info("wap", "run %s: publish by %s refused: %s (%s) rid=%s", run_id,
		 audit_principal(env), reason, rule, env->request_id);
	struct floe_error aerr;
	if (!audit_record(s, env, "wap.publish-refused", ns, table, run_id,
			  json_pack("{s:s, s:s, s:s, s:s}", "principal", audit_principal(env),
				    "reason", reason, "rule", rule, "branch", branch),
			  &aerr))
		*err = aerr;
	return false;
}
