/*
 * hooks.h - audit webhook delivery: which addresses a hook may reach (the
 * target policy and its allowlist, policy.c), how a hook URL is read
 * (url.c), and calling every hook in scope of a publish in parallel
 * (libcurl multi, deliver.c), signed with HMAC-SHA256 (OpenSSL, sign.c)
 * over a timestamp and the body when the hook has a secret. What a valid
 * registration is belongs to the catalog (hookspec.h).
 */
#ifndef FLOE_HOOKS_H
#define FLOE_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <jansson.h>

#include "error.h"

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
struct hook_policy *hook_policy_parse(const char *allow, char *errbuf, size_t errlen) FLOE_WUR;

void hook_policy_free(struct hook_policy *p);

/* The rule that refuses a socket address ("loopback", "private (RFC 1918)",
 * ...) or NULL when the policy admits it. policy may be NULL (no
 * allowlist). */
const char *hook_policy_check_addr(const struct hook_policy *policy, const struct sockaddr *sa);

/* The rule that refuses an address literal (IPv4 in any inet_aton
 * spelling, IPv6 with or without brackets and zone), NULL when admitted
 * or when host is not an address literal. */
const char *hook_policy_check_literal(const struct hook_policy *policy, const char *host);

/* True when the allowlist names host (as written in a URL: brackets, zone
 * id, trailing dots and case do not matter). policy may be NULL (no
 * allowlist). */
bool hook_policy_admits_host(const struct hook_policy *policy, const char *host);

enum hook_url_result { HOOK_URL_OK, HOOK_URL_INVALID, HOOK_URL_NOMEM };

/* Reads a URL as delivery will (libcurl's parser). On HOOK_URL_OK fills
 * *scheme and *host with new strings (free both with free()); otherwise
 * both are NULL: HOOK_URL_INVALID when it is no URL with a host,
 * HOOK_URL_NOMEM when memory ran out. */
enum hook_url_result hook_url_split(const char *url, char **scheme, char **host) FLOE_WUR;

enum hook_verdict { HOOK_PASS, HOOK_REJECT, HOOK_ERROR };

struct hook_call {
	/* in */
	const char *url;
	const char *secret; /* NULL: no signature header */
	const char *delivery_id;
	const char *event; /* X-Floe-Event; NULL: "wap.audit" */
	const char *body;  /* the payload, as sent and signed; NULL: it
				   * could not be built, the call is an error
				   * without being sent */
	long timeout_ms;
	const struct hook_policy *policy; /* NULL: no allowlist */
	/* An event delivery (a subscription's), not an audit: any 2xx
	 * acknowledges it whatever the body, anything else is an error,
	 * and it is made once (the subscription retries it later). */
	bool notify;
	const char *content_type; /* NULL: application/json */
	const char *subscription; /* X-Floe-Subscription; NULL: none */
	/* The call cannot be made as it must be (its secret did not open):
	 * an error verdict with the reason already in reason, nothing sent. */
	bool refused;
	/* out */
	enum hook_verdict verdict;
	long http_status; /* 0: no answer */
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
void hooks_signature(const char *secret, long long timestamp, const char *body, char out[72]);

/* Sanitises a hook's reason into out (at most HOOK_REASON_MAX bytes and a
 * NUL): control characters dropped, cut at a UTF-8 character boundary,
 * invalid UTF-8 dropped. */
void hooks_clean_reason(const char *in, char *out, size_t outlen);

/* Initialises libcurl once for the process (before threads start). */
bool hooks_global_init(void);

#endif
