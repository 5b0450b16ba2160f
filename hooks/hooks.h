/*
 * hooks.h - audit webhooks: what a valid registration is, which addresses
 * a hook may reach (the target policy and its allowlist), and calling
 * every hook in scope of a publish in parallel (libcurl multi), signed
 * with HMAC-SHA256 (OpenSSL) over a timestamp and the body when the hook
 * has a secret.
 */
#ifndef FLOE_HOOKS_H
#define FLOE_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <jansson.h>

#include "error.h"
#include "ident.h"

#define HOOK_TIMEOUT_DEFAULT_MS 10000
#define HOOK_TIMEOUT_MAX_MS 60000
#define HOOK_MAX_ATTEMPTS 3 /* the first call and at most two retries */
/* The longest reason kept of a hook's answer, in bytes (UTF-8, cut at a
 * character boundary, control characters removed). */
#define HOOK_REASON_MAX 256

/*
 * Which targets a hook may reach. By default no loopback, private,
 * link-local, CGNAT, unique-local, cloud-metadata, unspecified, multicast,
 * broadcast or reserved address, in any IPv4 or IPv6 spelling (IPv4-mapped,
 * IPv4-compatible, NAT64, 6to4, Teredo). The allowlist admits host names
 * (exact, case-insensitive: every address the name resolves to) and
 * networks (an address or address/prefix). Immutable once made.
 */
struct hook_policy;

/* Parses a comma-separated allowlist ("auditor,10.0.0.0/8,::1"; NULL or
 * empty: none). Returns a new policy (free with hook_policy_free), or NULL
 * with a message naming the bad entry in errbuf. */
struct hook_policy *hook_policy_parse(const char *allow, char *errbuf, size_t errlen)
	FLOE_WUR;

void hook_policy_free(struct hook_policy *p);

/* The rule that refuses a socket address ("loopback", "private (RFC 1918)",
 * ...) or NULL when the policy admits it. policy may be NULL (no
 * allowlist). */
const char *hook_policy_check_addr(const struct hook_policy *policy,
				   const struct sockaddr *sa);

/* The rule that refuses an address literal (IPv4 in any inet_aton
 * spelling, IPv6 with or without brackets and zone), NULL when admitted
 * or when host is not an address literal. */
const char *hook_policy_check_literal(const struct hook_policy *policy, const char *host);

/* A parsed registration body. */
struct hook_spec {
	const char *name;
	const char *url;
	const char *secret;      /* NULL: unsigned */
	struct ns_ident scope_ns;/* empty: every table */
	const char *scope_table; /* NULL unless one table */
	long timeout_ms;
};

/* Checks a registration body and fills spec (strings borrowed from body).
 * FE_BAD_REQUEST naming what is wrong: the URL must be http or https and
 * an address literal in it must pass policy (the rule is named); host
 * names are checked at connect time against every address they resolve
 * to. policy may be NULL (no allowlist). */
bool hook_spec_parse(const json_t *body, const struct hook_policy *policy,
		     struct hook_spec *spec, struct floe_error *err) FLOE_WUR;

void hook_spec_clear(struct hook_spec *spec);

/* True when a hook id (a path segment) has the form of a UUID. */
bool hook_id_valid(const char *id);

enum hook_verdict { HOOK_PASS, HOOK_REJECT, HOOK_ERROR };

struct hook_call {
	/* in */
	const char *url;
	const char *secret;       /* NULL: no signature header */
	const char *delivery_id;
	const char *body;         /* the payload, as sent and signed; NULL: it
				   * could not be built, the call is an error
				   * without being sent */
	long timeout_ms;
	const struct hook_policy *policy; /* NULL: no allowlist */
	/* out */
	enum hook_verdict verdict;
	long http_status;         /* 0: no answer */
	/* Never the raw answer or transport error text: the hook's own JSON
	 * "reason" (bounded and cleaned) for a reject, else one of a fixed
	 * vocabulary ("timeout", "connection refused", "not JSON", ...). */
	char reason[HOOK_REASON_MAX + 1];
	long latency_ms;
	int attempts;
};

/* Calls every hook at once; returns when each has a verdict (each within
 * its own timeout). Refused connections and 5xx answers are retried at
 * most twice, with backoff, inside the same budget. No proxy is used and
 * no redirect followed; every address connected to passes the call's
 * policy. */
void hooks_call_all(struct hook_call *calls, size_t n);

/* The value of X-Floe-Signature-256: "sha256=<hex HMAC-SHA256(secret,
 * "<timestamp>.<body>")>", where timestamp is the decimal X-Floe-Timestamp.
 * out must hold 72 bytes. */
void hooks_signature(const char *secret, long long timestamp, const char *body,
		     char out[72]);

/* Sanitises a hook's reason into out (at most HOOK_REASON_MAX bytes and a
 * NUL): control characters dropped, cut at a UTF-8 character boundary,
 * invalid UTF-8 dropped. */
void hooks_clean_reason(const char *in, char *out, size_t outlen);

/* Initialises libcurl once for the process (before threads start). */
bool hooks_global_init(void);

#endif
