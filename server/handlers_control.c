/*
 * handlers_control.c - POST /v1/{prefix}/controls/{action}: the single
 * entry point through which the audited-publish control may be weakened
 * (catalog/control.c decides what each action does). The route table
 * asks CONTROLS_MANAGE on the catalog: an action may move a table out of
 * its namespace's control, so no narrower grant decides it.
 */
#include "handlers.h"

#include <stdlib.h>
#include <string.h>

#include "control.h"

void handle_control(struct call *c)
{
	struct floe_error err;
	struct store *s = call_store(c);

	if (s != NULL)
		handler_answer(c->req, 200, control_apply(s, &c->env, c->arg, c->body, &err), &err);
}
