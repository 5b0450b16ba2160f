/*
 * handlers_control.c - POST /v1/{prefix}/controls/{action}: the single
 * entry point through which the audited-publish control may be weakened
 * (catalog/control.c decides what each action does).
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "control.h"

void handle_control(struct http_request *req)
{
	struct floe_error err;
	json_t *in = NULL;
	char *action = NULL;
	size_t len = 0;
	struct store *s;
	const char *raw = http_param(req, "action");

	floe_error_clear(&err);
	if (raw == NULL || !url_decode(raw, strlen(raw), true, &action, &len, &err) ||
	    !http_body_json(req, &in, &err)) {
		if (raw == NULL)
			floe_err(&err, FE_BAD_REQUEST, "no control action given");
		http_reply_error(req, &err);
		goto done;
	}
	s = handler_acquire(req);
	/* CONTROLS_MANAGE on the catalog: an action may move a table out of
	 * its namespace's control, so no narrower grant decides it. */
	if (s != NULL && handler_allowed(req, s, PRIV_CONTROLS_MANAGE, NULL, NULL)) {
		struct table_env env = handler_env(req);
		json_t *out = control_apply(s, &env, action, in, &err);
		handler_release(req, s);
		handler_answer(req, 200, out, &err);
	}
done:
	free(action);
	json_decref(in);
}
