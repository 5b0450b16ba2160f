/*
 * catalog/effective.c on the store's fakes: a table's effective control
 * read from its own properties, its namespace's and the hooks in scope;
 * what counts as weaker (a control property lost; for a protected table,
 * a hook no longer in scope, whatever others were added); the form kept
 * with a dropped table; the refusals' words; a store failure decides
 * nothing.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "effective.h"
#include "fakes.h"

static struct floe_error err;
static struct ns_ident ns;

static void setup(void)
{
	fake_reset();
	floe_error_clear(&err);
	memset(&ns, 0, sizeof(ns));
	ns.levels[0] = strdup("db");
	ns.nlevels = 1;
}

static void teardown(void)
{
	ident_ns_clear(&ns);
}

TestSuite(effective, .init = setup, .fini = teardown, .timeout = 30);

/* Sets the hooks every table has in scope: ids (and names) as given. */
static void hooks_in_scope(const char *a, const char *b)
{
	json_t *hooks = json_array();
	if (a != NULL)
		json_array_append_new(hooks, json_pack("{s:s, s:s}", "id", a, "name", "auditor"));
	if (b != NULL)
		json_array_append_new(hooks, json_pack("{s:s, s:s}", "id", b, "name", "stamp"));
	fake_store_set_hooks(hooks);
	json_decref(hooks);
}

static json_t *metadata_with(const char *property)
{
	if (property == NULL)
		return json_pack("{s:{}, s:I}", "properties", "current-snapshot-id",
				 (json_int_t)-1);
	return json_pack("{s:{s:s}, s:I}", "properties", property, "true", "current-snapshot-id",
			 (json_int_t)7);
}

static void of(const json_t *m, struct effective_control *e)
{
	cr_assert(effective_of(fake_store(), &ns, "t", m, e, &err), "%s", err.message);
}

Test(effective, read_from_the_table_its_namespaces_and_the_hooks_in_scope)
{
	struct effective_control e;
	json_t *own = metadata_with(POLICY_SOD_PROPERTY);

	of(NULL, &e);
	cr_assert_not(effective_protected(&e));
	cr_assert_eq(e.nhooks, 0);
	effective_clear(&e);

	fake_store_set_ns_property(POLICY_PROPERTY, "true");
	hooks_in_scope("bbbb", "aaaa");
	of(own, &e);
	cr_assert(effective_protected(&e));
	json_t *j = effective_to_json(&e);
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	cr_assert_str_eq(
		text,
		"{\"floe.wap.required\":\"namespace db\",\"floe.wap.separation-of-duties\":\"the table\","
		"\"hooks\":[{\"id\":\"aaaa\",\"name\":\"stamp\"},{\"id\":\"bbbb\",\"name\":\"auditor\"}]}");
	free(text);

	/* The form kept with a dropped table reads back as it was. */
	struct effective_control back;
	cr_assert(effective_from_json(j, &back));
	char what[256];
	cr_assert_not(effective_weakens(&e, &back, what, sizeof(what)));
	cr_assert_not(effective_weakens(&back, &e, what, sizeof(what)));
	effective_clear(&back);
	json_decref(j);
	effective_clear(&e);
	json_decref(own);
}

Test(effective, a_lost_property_or_a_lost_hook_of_a_protected_table_is_weaker)
{
	struct effective_control before, after;
	char what[256];

	fake_store_set_ns_property(POLICY_PROPERTY, "true");
	hooks_in_scope("aaaa", NULL);
	of(NULL, &before);

	/* A hook added next to the auditor: stronger. */
	hooks_in_scope("aaaa", "cccc");
	of(NULL, &after);
	cr_assert_not(effective_weakens(&before, &after, what, sizeof(what)));
	effective_clear(&before);
	before = after;

	/* Then the auditor gone, one hook still in scope: weaker. */
	hooks_in_scope("cccc", NULL);
	of(NULL, &after);
	cr_assert(effective_weakens(&before, &after, what, sizeof(what)));
	cr_assert_str_eq(what, "audit hook auditor (aaaa) would no longer be in scope");
	cr_assert_not(
		effective_check(&before, &after, "Renaming table db.t to db.u", "rename", &err));
	cr_assert_eq(err.kind, FE_FORBIDDEN);
	cr_assert_str_eq(
		err.message,
		"Renaming table db.t to db.u weakens its audited-publish control: audit hook auditor (aaaa) would no longer be in scope; only POST /v1/controls/rename with a reason may");
	effective_clear(&after);

	/* The property gone: weaker, whatever the hooks. */
	fake_store_set_ns_property(POLICY_PROPERTY, "false");
	hooks_in_scope("aaaa", "cccc");
	of(NULL, &after);
	cr_assert(effective_weakens(&before, &after, what, sizeof(what)));
	cr_assert_str_eq(what,
			 "floe.wap.required=true (set by namespace db) would no longer apply");
	effective_clear(&before);

	/* Without protection the hooks are no control: losing one is not
	 * weaker. */
	hooks_in_scope(NULL, NULL);
	struct effective_control none;
	of(NULL, &none);
	cr_assert_not(effective_weakens(&after, &none, what, sizeof(what)));
	floe_error_clear(&err);
	cr_assert(effective_check(&after, &none, "x", "rename", &err));
	effective_clear(&after);
	effective_clear(&none);
}

Test(effective, a_main_arriving_in_a_protected_scope_is_a_main_move)
{
	struct effective_control none, protected_;
	json_t *with_main = metadata_with("owner");
	json_t *without_main = metadata_with(NULL);

	memset(&none, 0, sizeof(none));
	fake_store_set_ns_property(POLICY_RELEASE_PROPERTY, "true");
	of(with_main, &protected_);
	cr_assert(effective_check_main_arrives(&none, &protected_, "t", without_main, "undrop",
					       &err));
	cr_assert(effective_check_main_arrives(&protected_, &protected_, "t", with_main, "undrop",
					       &err));
	cr_assert(effective_check_main_arrives(&protected_, &none, "t", with_main, "undrop", &err));
	cr_assert_not(
		effective_check_main_arrives(&none, &protected_, "t", with_main, "undrop", &err));
	cr_assert_eq(err.kind, FE_FORBIDDEN);
	cr_assert_str_eq(
		err.message,
		"Branch main of table t can only move through a write-audit-publish run: namespace db sets floe.wap.release-required=true; only POST /v1/controls/undrop with a reason may");
	effective_clear(&protected_);
	json_decref(with_main);
	json_decref(without_main);
}

Test(effective, a_form_that_is_not_the_kept_one_is_refused)
{
	struct effective_control e;
	const char *bad[] = {
		"null",
		"{}",
		"{\"hooks\": {}}",
		"{\"floe.wap.required\": true, \"hooks\": []}",
		"{\"floe.wap.required\": \"\", \"hooks\": []}",
		"{\"hooks\": [{\"name\": \"no id\"}]}",
		"{\"hooks\": [{\"id\": \"0123456789012345678901234567890123456789-too-long\"}]}",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		json_t *v = json_loads(bad[i], JSON_DECODE_ANY, NULL);
		cr_assert_not(effective_from_json(v, &e), "%s", bad[i]);
		cr_assert_eq(e.nhooks, 0);
		json_decref(v);
	}
	json_t *ok = json_loads("{\"floe.wap.release-required\": \"the table\", \"hooks\": []}", 0,
				NULL);
	cr_assert(effective_from_json(ok, &e));
	cr_assert(effective_protected(&e));
	effective_clear(&e);
	json_decref(ok);
}

Test(effective, a_store_failure_decides_nothing)
{
	struct effective_control e;

	fake_fail("store_hooks_in_scope", 1, fake_conn_lost(), false);
	cr_assert_not(effective_of(fake_store(), &ns, "t", NULL, &e, &err));
	cr_assert_eq(err.kind, fake_conn_lost().kind);
	cr_assert_eq(e.nhooks, 0);
	cr_assert_null(e.hooks);
	floe_error_clear(&err);
	fake_fail("store_ns_property_true", 2, fake_conn_lost(), false);
	cr_assert_not(effective_of(fake_store(), &ns, "t", NULL, &e, &err));
	cr_assert_eq(err.kind, fake_conn_lost().kind);
}
