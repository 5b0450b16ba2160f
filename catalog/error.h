/*
 * error.h - the one error type of floe.
 *
 * Every fallible function fills a struct floe_error: the HTTP status, the
 * Iceberg error "type" and a short message fit for a client. Internal detail
 * (SQL text, errno) goes to the log, never into the message.
 */
#ifndef FLOE_ERROR_H
#define FLOE_ERROR_H

#include <stdbool.h>
#include <jansson.h>

#define FLOE_WUR __attribute__((warn_unused_result))
#define FLOE_PRINTF(a, b) __attribute__((format(printf, a, b)))

enum floe_errkind {
	FE_NONE = 0,
	FE_BAD_REQUEST,          /* 400 BadRequestException */
	FE_NOT_AUTHORIZED,       /* 401 NotAuthorizedException */
	FE_FORBIDDEN,            /* 403 ForbiddenException */
	FE_NOT_FOUND,            /* 404 NotFoundException: unknown route */
	FE_NO_SUCH_NAMESPACE,    /* 404 NoSuchNamespaceException */
	FE_NO_SUCH_TABLE,        /* 404 NoSuchTableException */
	FE_METHOD_NOT_ALLOWED,   /* 405 MethodNotAllowedException */
	FE_UNSUPPORTED,          /* 406 UnsupportedOperationException */
	FE_ALREADY_EXISTS,       /* 409 AlreadyExistsException */
	FE_NAMESPACE_NOT_EMPTY,  /* 409 NamespaceNotEmptyException */
	FE_COMMIT_FAILED,        /* 409 CommitFailedException */
	FE_TOO_LARGE,            /* 413 RequestEntityTooLargeException */
	FE_UNPROCESSABLE,        /* 422 UnprocessableEntityException */
	FE_INTERNAL,             /* 500 InternalServerError */
	FE_COMMIT_STATE_UNKNOWN, /* 500 CommitStateUnknownException */
	FE_UNAVAILABLE,          /* 503 ServiceUnavailableException */
	FE_NO_SUCH_REFERENCE,    /* 404 NoSuchReferenceException */
	FE_NO_SUCH_SNAPSHOT,     /* 404 NoSuchSnapshotException */
	FE_NOT_FAST_FORWARD,     /* 409 NotFastForwardException */
	FE_NO_SUCH_HOOK,         /* 404 NoSuchAuditHookException */
	FE_NO_SUCH_RUN,          /* 404 NoSuchWapRunException */
	FE_RUN_STATE,            /* 409 WapRunStateException */
	FE_NO_HOOK,              /* 412 NoAuditHookException */
	FE_AUDIT_REJECTED,       /* 422 AuditRejectedException */
	FE_AUDIT_UNAVAILABLE,    /* 503 AuditUnavailableException */
	FE_KIND_COUNT
};

#define FLOE_ERROR_MESSAGE_MAX 512

struct floe_error {
	enum floe_errkind kind;
	char message[FLOE_ERROR_MESSAGE_MAX];
};

/* Fills err (when not NULL) with kind and a printf-style message.
 * Always returns false, so a caller can write `return floe_err(...)`. */
bool floe_err(struct floe_error *err, enum floe_errkind kind,
	      const char *fmt, ...) FLOE_PRINTF(3, 4);

/* The HTTP status of a kind (500 for an unknown kind). */
int floe_errkind_status(enum floe_errkind kind);

/* The Iceberg error type of a kind, e.g. "NoSuchNamespaceException".
 * Returns a static string. */
const char *floe_errkind_type(enum floe_errkind kind);

/* Builds the Iceberg error body {"error": {"message", "type", "code"}}.
 * Returns a new reference, or NULL when out of memory. */
json_t *floe_error_to_json(const struct floe_error *err);

/* Resets err to "no error". */
void floe_error_clear(struct floe_error *err);

#endif
