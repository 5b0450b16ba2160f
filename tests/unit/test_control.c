/* The audited-publish control's decisions that need no database: which
 * property changes weaken floe.wap.required, and the control route's
 * checks before it touches anything. */
#include <criterion/criterion.h>
#include <string.h>

#include "control.h"

static struct floe_error err;

static json_t *props(const char *value)
{
	return value ? json_pack("{s:{s:s}}", "properties", POLICY_PROPERTY, value)
		     : json_pack("{s:{}}", "properties");
}

Test(control, table_property_weakening)
{
	json_t *on = props("true"), *upper = props("TRUE"), *off = props("false"),
	       *none = props(NULL);

	cr_assert(policy_check_table_properties("t", on, upper, &err));
	cr_assert(policy_check_table_properties("t", none, on, &err));
	cr_assert(policy_check_table_properties("t", none, off, &err));
	cr_assert_not(policy_check_table_properties("t", on, off, &err));
	cr_assert_eq(err.kind, FE_FORBIDDEN);
	cr_assert(strstr(err.message, "/v1/controls/wap-required") != NULL, "%s", err.message);
	cr_assert_not(policy_check_table_properties("t", on, none, &err));
	json_decref(on);
	json_decref(upper);
	json_decref(off);
	json_decref(none);
}

Test(control, namespace_property_weakening)
{
	struct ns_ident ns = { 0 };
	json_t *old = json_pack("{s:s}", POLICY_PROPERTY, "true");
	json_t *none = json_array();
	json_t *removal = json_pack("[s]", POLICY_PROPERTY);
	json_t *other = json_pack("[s]", "owner");
	json_t *set_false = json_pack("{s:s}", POLICY_PROPERTY, "false");
	json_t *set_true = json_pack("{s:s}", POLICY_PROPERTY, "True");
	json_t *empty = json_object();

	cr_assert(ident_ns_parse("sales", 5, IDENT_PLUS_SPACE, &ns, &err));
	cr_assert(policy_check_ns_properties(&ns, old, other, empty, &err));
	cr_assert(policy_check_ns_properties(&ns, old, none, set_true, &err));
	cr_assert_not(policy_check_ns_properties(&ns, old, removal, empty, &err));
	cr_assert(strstr(err.message, "Namespace sales") != NULL, "%s", err.message);
	cr_assert_not(policy_check_ns_properties(&ns, old, none, set_false, &err));
	cr_assert(policy_check_ns_properties(&ns, empty, removal, empty, &err));
	ident_ns_clear(&ns);
	json_decref(old);
	json_decref(none);
	json_decref(removal);
	json_decref(other);
	json_decref(set_false);
	json_decref(set_true);
	json_decref(empty);
}

Test(control, the_route_needs_a_reason_and_a_known_action)
{
	json_t *body = json_pack("{s:[s], s:b}", "namespace", "sales", "required", 0);
	struct table_env env = { .request_id = "r" };

	cr_assert_null(control_apply(NULL, &env, "wap-required", body, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert(strstr(err.message, "reason") != NULL, "%s", err.message);
	json_object_set_new(body, "reason", json_string(""));
	cr_assert_null(control_apply(NULL, &env, "wap-required", body, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	cr_assert_null(control_apply(NULL, &env, "disable-everything", body, &err));
	cr_assert_eq(err.kind, FE_BAD_REQUEST);
	json_decref(body);
}
