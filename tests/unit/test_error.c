/* Error kinds map to the Iceberg status and type, and the body has the
 * shape every client parses. */
#include <criterion/criterion.h>
#include <string.h>

#include "error.h"

Test(error, kinds_map_to_iceberg_status_and_type)
{
	static const struct {
		enum floe_errkind kind;
		int status;
		const char *type;
	} cases[] = {
		{ FE_BAD_REQUEST, 400, "BadRequestException" },
		{ FE_NO_SUCH_NAMESPACE, 404, "NoSuchNamespaceException" },
		{ FE_NO_SUCH_TABLE, 404, "NoSuchTableException" },
		{ FE_NOT_FOUND, 404, "NotFoundException" },
		{ FE_METHOD_NOT_ALLOWED, 405, "MethodNotAllowedException" },
		{ FE_ALREADY_EXISTS, 409, "AlreadyExistsException" },
		{ FE_NAMESPACE_NOT_EMPTY, 409, "NamespaceNotEmptyException" },
		{ FE_COMMIT_FAILED, 409, "CommitFailedException" },
		{ FE_TOO_LARGE, 413, "RequestEntityTooLargeException" },
		{ FE_UNPROCESSABLE, 422, "UnprocessableEntityException" },
		{ FE_INTERNAL, 500, "InternalServerError" },
		{ FE_UNAVAILABLE, 503, "ServiceUnavailableException" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(floe_errkind_status(cases[i].kind), cases[i].status);
		cr_assert_str_eq(floe_errkind_type(cases[i].kind), cases[i].type);
	}
	cr_assert_eq(floe_errkind_status((enum floe_errkind)999), 500);
}

Test(error, body_has_message_type_and_code_only)
{
	struct floe_error err;
	bool r = floe_err(&err, FE_NO_SUCH_NAMESPACE, "namespace does not exist: %s", "a.b");
	cr_assert_not(r);
	json_t *body = floe_error_to_json(&err);
	cr_assert_eq(json_object_size(body), 1);
	json_t *e = json_object_get(body, "error");
	cr_assert_eq(json_object_size(e), 3);
	cr_assert_str_eq(json_string_value(json_object_get(e, "message")),
			 "Namespace does not exist: a.b");
	cr_assert_str_eq(json_string_value(json_object_get(e, "type")), "NoSuchNamespaceException");
	cr_assert_eq(json_integer_value(json_object_get(e, "code")), 404);
	json_decref(body);
}

Test(error, body_survives_a_message_that_is_not_utf8)
{
	struct floe_error err;
	floe_err(&err, FE_BAD_REQUEST, "bad name \xff");
	json_t *body = floe_error_to_json(&err);
	cr_assert_not_null(body);
	json_t *e = json_object_get(body, "error");
	cr_assert_str_eq(json_string_value(json_object_get(e, "type")), "BadRequestException");
	cr_assert_not_null(json_string_value(json_object_get(e, "message")));
	json_decref(body);
}

Test(error, unset_error_renders_as_internal)
{
	struct floe_error err;
	floe_error_clear(&err);
	json_t *body = floe_error_to_json(&err);
	json_t *e = json_object_get(body, "error");
	cr_assert_eq(json_integer_value(json_object_get(e, "code")), 500);
	cr_assert(strlen(json_string_value(json_object_get(e, "message"))) > 0);
	json_decref(body);
}

Test(error, message_starts_with_a_capital_unless_it_starts_with_a_name)
{
	struct floe_error err;

	floe_err(&err, FE_BAD_REQUEST, "field '%s' must be a string", "x");
	cr_assert_str_eq(err.message, "Field 'x' must be a string");
	floe_err(&err, FE_BAD_REQUEST, "schema: field %d is missing", 3);
	cr_assert_str_eq(err.message, "Schema: field 3 is missing");
	/* A name keeps its spelling: an action, a parameter, a client's name. */
	floe_err(&err, FE_BAD_REQUEST, "add-spec: the table has no current schema");
	cr_assert_str_eq(err.message, "add-spec: the table has no current schema");
	floe_err(&err, FE_BAD_REQUEST, "pageToken is not a token this server issued");
	cr_assert_str_eq(err.message, "pageToken is not a token this server issued");
	floe_err(&err, FE_BAD_REQUEST, "%s is a tag; only a branch can be adopted", "dev");
	cr_assert_str_eq(err.message, "dev is a tag; only a branch can be adopted");
	floe_err(&err, FE_BAD_REQUEST, "%s", "file:///x is not metadata");
	cr_assert_str_eq(err.message, "file:///x is not metadata");
}
