/*
 * error.c - kinds of error, their HTTP status and Iceberg type, and the
 * error body every non-2xx answer carries.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
	int status;
	const char *type;
} errkinds[FE_KIND_COUNT] = {
	[FE_NONE] = { 200, "" },
	[FE_BAD_REQUEST] = { 400, "BadRequestException" },
	[FE_NOT_AUTHORIZED] = { 401, "NotAuthorizedException" },
	[FE_FORBIDDEN] = { 403, "ForbiddenException" },
	[FE_NOT_FOUND] = { 404, "NotFoundException" },
	[FE_NO_SUCH_NAMESPACE] = { 404, "NoSuchNamespaceException" },
	[FE_NO_SUCH_TABLE] = { 404, "NoSuchTableException" },
	[FE_METHOD_NOT_ALLOWED] = { 405, "MethodNotAllowedException" },
	[FE_UNSUPPORTED] = { 406, "UnsupportedOperationException" },
	[FE_ALREADY_EXISTS] = { 409, "AlreadyExistsException" },
	[FE_NAMESPACE_NOT_EMPTY] = { 409, "NamespaceNotEmptyException" },
	[FE_COMMIT_FAILED] = { 409, "CommitFailedException" },
	[FE_TOO_LARGE] = { 413, "RequestEntityTooLargeException" },
	[FE_UNPROCESSABLE] = { 422, "UnprocessableEntityException" },
	[FE_INTERNAL] = { 500, "InternalServerError" },
	[FE_COMMIT_STATE_UNKNOWN] = { 500, "CommitStateUnknownException" },
	[FE_UNAVAILABLE] = { 503, "ServiceUnavailableException" },
	[FE_NO_SUCH_REFERENCE] = { 404, "NoSuchReferenceException" },
	[FE_NO_SUCH_SNAPSHOT] = { 404, "NoSuchSnapshotException" },
	[FE_NOT_FAST_FORWARD] = { 409, "NotFastForwardException" },
	[FE_NO_SUCH_HOOK] = { 404, "NoSuchAuditHookException" },
	[FE_NO_SUCH_RUN] = { 404, "NoSuchWapRunException" },
	[FE_RUN_STATE] = { 409, "WapRunStateException" },
	[FE_NO_HOOK] = { 412, "NoAuditHookException" },
	[FE_AUDIT_REJECTED] = { 422, "AuditRejectedException" },
	[FE_AUDIT_UNAVAILABLE] = { 503, "AuditUnavailableException" },
	[FE_NO_SUCH_WAREHOUSE] = { 404, "NoSuchWarehouseException" },
	[FE_TOO_MANY_REQUESTS] = { 429, "TooManyRequestsException" },
	[FE_NO_SUCH_PRINCIPAL] = { 404, "NoSuchPrincipalException" },
	[FE_NO_SUCH_ROLE] = { 404, "NoSuchRoleException" },
	[FE_NO_SUCH_VIEW] = { 404, "NoSuchViewException" },
	[FE_NO_SUCH_SUBSCRIPTION] = { 404, "NoSuchEventSubscriptionException" },
	[FE_SUBSCRIPTION_STATE] = { 409, "EventSubscriptionStateException" },
	[FE_ILLEGAL_ARGUMENT] = { 400, "IllegalArgumentException" },
};

/* Messages start with a capital letter, as Iceberg's do ("Namespace does
 * not exist: a"). The format's first word is looked at, not the message's:
 * a message that starts with a name (a field, an action such as add-spec,
 * pageToken, or a name the client sent, put in by %s) keeps its spelling,
 * and only a first word of plain lower-case letters is capitalised. */
static void message_capitalise(char *message, const char *fmt)
{
	size_t n = 0;

	/* A plain loop, not strcspn: with the sanitizers GCC would otherwise
	 * add a path on which fmt is NULL and warn at the vsnprintf. */
	for (; fmt[n] != '\0' && fmt[n] != ' ' && fmt[n] != ':' && fmt[n] != ';' && fmt[n] != ',';
	     n++) {
		if (fmt[n] < 'a' || fmt[n] > 'z')
			return;
	}
	if (n > 0 && message[0] == fmt[0])
		message[0] = (char)(message[0] - 'a' + 'A');
}

/* The parentheses keep error.h's analyzer macro out of the name. */
/* clang-format off */
bool (floe_err)(struct floe_error *err, enum floe_errkind kind, const char *fmt, ...)
/* clang-format on */
{
	va_list ap;

	if (err == NULL)
		return false;
	err->kind = kind;
	err->outcome = kind == FE_COMMIT_STATE_UNKNOWN ? FO_UNKNOWN : FO_NOT_ATTEMPTED;
	err->sqlstate[0] = '\0';
	va_start(ap, fmt);
	(void)vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	message_capitalise(err->message, fmt);
	return false;
}

int floe_errkind_status(enum floe_errkind kind)
{
	if (kind <= FE_NONE || kind >= FE_KIND_COUNT)
		return 500;
	return errkinds[kind].status;
}

const char *floe_errkind_type(enum floe_errkind kind)
{
	if (kind <= FE_NONE || kind >= FE_KIND_COUNT)
		return errkinds[FE_INTERNAL].type;
	return errkinds[kind].type;
}

json_t *floe_error_to_json(const struct floe_error *err)
{
	enum floe_errkind kind = err->kind;
	const char *message = err->message;

	if (kind <= FE_NONE || kind >= FE_KIND_COUNT) {
		kind = FE_INTERNAL;
		if (message[0] == '\0')
			message = "Internal error";
	}
	/* jansson refuses invalid UTF-8; a message quoting client input that
	 * is not UTF-8 must still produce a body, so fall back to the type. */
	json_t *msg = json_string(message);
	if (msg == NULL)
		msg = json_string(errkinds[kind].type);
	return json_pack("{s:{s:o, s:s, s:i}}", "error", "message", msg, "type",
			 errkinds[kind].type, "code", errkinds[kind].status);
}

bool(floe_errbuf)(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return false;
}

void floe_error_clear(struct floe_error *err)
{
	err->kind = FE_NONE;
	err->outcome = FO_NOT_ATTEMPTED;
	err->sqlstate[0] = '\0';
	err->message[0] = '\0';
}

void floe_error_set_outcome(struct floe_error *err, enum floe_outcome outcome)
{
	if (err != NULL)
		err->outcome = outcome;
}

bool floe_error_is_rollback(const struct floe_error *err)
{
	return err != NULL && err->sqlstate[0] == '4' && err->sqlstate[1] == '0';
}

enum floe_errkind floe_error_mutation_kind(const struct floe_error *err)
{
	if (err->outcome == FO_UNKNOWN)
		return FE_COMMIT_STATE_UNKNOWN;
	int status = floe_errkind_status(err->kind);
	if (status >= 500 && status != 503)
		return FE_UNAVAILABLE;
	return err->kind;
}
