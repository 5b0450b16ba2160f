/*
 * hooks.c - audit webhook registration rules and delivery. Delivery runs
 * without touching the database: the caller holds no row and no lock
 * while hooks are called.
 */
#include "hooks.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "log.h"

#define HOOK_BODY_MAX (64 * 1024)  /* kept of a hook's answer */
#define HOOK_CONNECT_TIMEOUT_MS 3000

bool hooks_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

bool hook_id_valid(const char *id)
{
	if (strlen(id) != 36)
		return false;
	for (int i = 0; i < 36; i++) {
		char c = id[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
					 (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

static bool ipv4_link_local(const struct in_addr *a)
{
	const unsigned char *b = (const unsigned char *)&a->s_addr;
	return b[0] == 169 && b[1] == 254;
}

static bool ipv6_link_local(const struct in6_addr *a)
{
	if (a->s6_addr[0] == 0xfe && (a->s6_addr[1] & 0xc0) == 0x80)
		return true;
	/* ::ffff:169.254.x.x reaches the same service. */
	static const unsigned char mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	return memcmp(a->s6_addr, mapped, 12) == 0 && a->s6_addr[12] == 169 &&
	       a->s6_addr[13] == 254;
}

/* True when the URL's host is a link-local address literal. */
static bool host_link_local(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	char buf[128];
	size_t n = strlen(host);

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, host, n + 1);
	if (buf[0] == '[' && n > 2 && buf[n - 1] == ']') {
		buf[n - 1] = '\0';
		memmove(buf, buf + 1, n - 1);
	}
	char *pct = strchr(buf, '%'); /* zone id */
	if (pct != NULL)
		*pct = '\0';
	/* "169.254.169.254." names the same host. */
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '.')
		buf[--n] = '\0';
	if (inet_pton(AF_INET, buf, &a4) == 1)
		return ipv4_link_local(&a4);
	if (inet_pton(AF_INET6, buf, &a6) == 1)
		return ipv6_link_local(&a6);
	/* Other spellings of an IPv4 address (169.254.169.254 as a number). */
	if (inet_aton(buf, &a4) != 0)
		return ipv4_link_local(&a4);
	return false;
}

static bool url_check(const char *url, struct floe_error *err)
{
	CURLU *u = curl_url();
	char *scheme = NULL;
	char *host = NULL;
	bool ok = false;

	if (u == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory");
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		floe_err(err, FE_BAD_REQUEST, "url is not a valid URL: %s", url);
		goto done;
	}
	if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
		floe_err(err, FE_BAD_REQUEST, "url must be http or https, not %s", scheme);
		goto done;
	}
	if (host_link_local(host)) {
		floe_err(err, FE_BAD_REQUEST,
			 "url targets the link-local address %s (cloud metadata services are refused)",
			 host);
		goto done;
	}
	ok = true;
done:
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ok;
}

bool hook_spec_parse(const json_t *body, struct hook_spec *spec,
		     struct floe_error *err)
{
	const json_t *name = json_object_get(body, "name");
	const json_t *url = json_object_get(body, "url");
	const json_t *secret = json_object_get(body, "secret");
	const json_t *scope = json_object_get(body, "scope");
	const json_t *tmo = json_object_get(body, "timeout-ms");

	memset(spec, 0, sizeof(*spec));
	spec->timeout_ms = HOOK_TIMEOUT_DEFAULT_MS;
	if (!json_is_string(name) || json_string_length(name) == 0)
		return floe_err(err, FE_BAD_REQUEST, "field 'name' must be a non-empty string");
	if (json_string_length(name) > 255)
		return floe_err(err, FE_BAD_REQUEST, "field 'name' is longer than 255 bytes");
	if (!json_is_string(url) || json_string_length(url) == 0)
		return floe_err(err, FE_BAD_REQUEST, "field 'url' must be a non-empty string");
	if (json_string_length(url) > 2048)
		return floe_err(err, FE_BAD_REQUEST, "field 'url' is longer than 2048 bytes");
	if (secret != NULL && !json_is_null(secret) &&
	    (!json_is_string(secret) || json_string_length(secret) == 0))
		return floe_err(err, FE_BAD_REQUEST, "field 'secret' must be a non-empty string");
	if (tmo != NULL && !json_is_null(tmo)) {
		if (!json_is_integer(tmo) || json_integer_value(tmo) < 1 ||
		    json_integer_value(tmo) > HOOK_TIMEOUT_MAX_MS)
			return floe_err(err, FE_BAD_REQUEST,
					"field 'timeout-ms' must be an integer from 1 to %d",
					HOOK_TIMEOUT_MAX_MS);
		spec->timeout_ms = (long)json_integer_value(tmo);
	}
	if (!url_check(json_string_value(url), err))
		return false;
	if (scope != NULL && !json_is_null(scope)) {
		const json_t *ns = json_object_get(scope, "namespace");
		const json_t *table = json_object_get(scope, "table");
		if (!json_is_object(scope))
			return floe_err(err, FE_BAD_REQUEST, "field 'scope' must be an object");
		if (table != NULL && !json_is_null(table)) {
			if (ns == NULL || json_is_null(ns))
				return floe_err(err, FE_BAD_REQUEST,
						"scope.table needs scope.namespace");
			if (!json_is_string(table) ||
			    !ident_name_check(json_string_value(table),
					      json_string_length(table), "scope.table", err))
				return err->kind != FE_NONE
					       ? false
					       : floe_err(err, FE_BAD_REQUEST,
							  "scope.table must be a string");
			spec->scope_table = json_string_value(table);
		}
		if (ns != NULL && !json_is_null(ns) &&
		    !ident_ns_from_json(ns, "scope.namespace", &spec->scope_ns, err))
			return false;
	}
	spec->name = json_string_value(name);
	spec->url = json_string_value(url);
	spec->secret = json_is_string(secret) ? json_string_value(secret) : NULL;
	return true;
}

void hook_spec_clear(struct hook_spec *spec)
{
	ident_ns_clear(&spec->scope_ns);
}

void hooks_signature(const char *secret, const char *body, char out[72])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	HMAC(EVP_sha256(), secret, (int)strlen(secret), (const unsigned char *)body,
	     strlen(body), mac, &len);
	memcpy(out, "sha256=", 7);
	for (unsigned int i = 0; i < len && i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", mac[i]);
	out[7 + 64] = '\0';
}

/* --- delivery --- */

struct delivery {
	struct hook_call *call;
	CURL *easy;
	struct curl_slist *headers;
	char *answer;
	size_t answer_len;
	long long started_ms;    /* first attempt */
	long long deadline_ms;
	long long retry_at_ms;   /* > 0: waiting to retry */
	bool done;
	char errbuf[CURL_ERROR_SIZE];
};

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static size_t on_answer(char *data, size_t size, size_t nmemb, void *userp)
{
	struct delivery *d = userp;
	size_t n = size * nmemb;
	size_t keep = n;

	if (d->answer_len + keep > HOOK_BODY_MAX)
		keep = HOOK_BODY_MAX - d->answer_len;
	if (keep > 0) {
		char *nb = realloc(d->answer, d->answer_len + keep + 1);
		if (nb == NULL)
			return 0;
		d->answer = nb;
		memcpy(d->answer + d->answer_len, data, keep);
		d->answer_len += keep;
		d->answer[d->answer_len] = '\0';
	}
	return n;
}

/* Refuses, at connect time, addresses that name resolution turned into a
 * link-local target. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose,
				 struct curl_sockaddr *addr)
{
	(void)clientp;
	(void)purpose;
	if (addr->family == AF_INET &&
	    ipv4_link_local(&((struct sockaddr_in *)(void *)&addr->addr)->sin_addr))
		return CURL_SOCKET_BAD;
	if (addr->family == AF_INET6 &&
	    ipv6_link_local(&((struct sockaddr_in6 *)(void *)&addr->addr)->sin6_addr))
		return CURL_SOCKET_BAD;
	return socket(addr->family, addr->socktype, addr->protocol);
}

static bool delivery_start(struct delivery *d, CURLM *multi)
{
	long long left = d->deadline_ms - now_ms();

	if (left < 1)
		left = 1;
	free(d->answer);
	d->answer = NULL;
	d->answer_len = 0;
	d->errbuf[0] = '\0';
	if (d->easy == NULL) {
		d->easy = curl_easy_init();
		if (d->easy == NULL)
			return false;
	}
	curl_easy_reset(d->easy);
	curl_easy_setopt(d->easy, CURLOPT_URL, d->call->url);
	curl_easy_setopt(d->easy, CURLOPT_POST, 1L);
	curl_easy_setopt(d->easy, CURLOPT_POSTFIELDS, d->call->body);
	curl_easy_setopt(d->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(d->call->body));
	curl_easy_setopt(d->easy, CURLOPT_HTTPHEADER, d->headers);
	curl_easy_setopt(d->easy, CURLOPT_WRITEFUNCTION, on_answer);
	curl_easy_setopt(d->easy, CURLOPT_WRITEDATA, d);
	curl_easy_setopt(d->easy, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(d->easy, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(left < HOOK_CONNECT_TIMEOUT_MS ? left : HOOK_CONNECT_TIMEOUT_MS));
	curl_easy_setopt(d->easy, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(d->easy, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(d->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(d->easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(d->easy, CURLOPT_ERRORBUFFER, d->errbuf);
	curl_easy_setopt(d->easy, CURLOPT_USERAGENT, "floe-audit/1");
	curl_easy_setopt(d->easy, CURLOPT_PRIVATE, d);
	d->call->attempts++;
	return curl_multi_add_handle(multi, d->easy) == CURLM_OK;
}

/* Reads a "reason" (or error message) from a JSON answer, else the text. */
static void reason_from(const char *answer, char *out, size_t len)
{
	json_error_t jerr;
	json_t *j = answer ? json_loads(answer, 0, &jerr) : NULL;
	const char *r = NULL;

	if (j != NULL) {
		r = json_string_value(json_object_get(j, "reason"));
		if (r == NULL)
			r = json_string_value(json_object_get(j, "message"));
		if (r == NULL)
			r = json_string_value(
				json_object_get(json_object_get(j, "error"), "message"));
	}
	snprintf(out, len, "%s", r ? r : (answer && *answer ? answer : "no reason given"));
	json_decref(j);
}

/* Decides a finished attempt; returns true when it should be retried. */
static bool delivery_finish(struct delivery *d, CURLcode code)
{
	struct hook_call *c = d->call;
	long status = 0;

	curl_easy_getinfo(d->easy, CURLINFO_RESPONSE_CODE, &status);
	c->http_status = code == CURLE_OK ? status : 0;
	if (code != CURLE_OK) {
		c->verdict = HOOK_ERROR;
		snprintf(c->reason, sizeof(c->reason), "%s",
			 code == CURLE_OPERATION_TIMEDOUT
				 ? "the hook did not answer within its timeout"
				 : (d->errbuf[0] ? d->errbuf : curl_easy_strerror(code)));
		return code == CURLE_COULDNT_CONNECT;
	}
	if (status >= 200 && status < 300) {
		json_error_t jerr;
		json_t *j = d->answer ? json_loads(d->answer, 0, &jerr) : NULL;
		json_t *passed = json_object_get(j, "passed");
		if (json_is_false(passed)) {
			c->verdict = HOOK_REJECT;
			reason_from(d->answer, c->reason, sizeof(c->reason));
		} else {
			c->verdict = HOOK_PASS;
			c->reason[0] = '\0';
		}
		json_decref(j);
		return false;
	}
	if (status == 403 || status == 422) {
		c->verdict = HOOK_REJECT;
		reason_from(d->answer, c->reason, sizeof(c->reason));
		return false;
	}
	c->verdict = HOOK_ERROR;
	snprintf(c->reason, sizeof(c->reason), "the hook answered HTTP %ld", status);
	return status >= 500;
}

void hooks_call_all(struct hook_call *calls, size_t n)
{
	CURLM *multi = curl_multi_init();
	struct delivery *ds = calls && n ? calloc(n, sizeof(*ds)) : NULL;
	size_t running = 0;

	if (multi == NULL || (n > 0 && ds == NULL)) {
		for (size_t i = 0; i < n; i++) {
			calls[i].verdict = HOOK_ERROR;
			snprintf(calls[i].reason, sizeof(calls[i].reason), "out of memory");
		}
		goto done;
	}
	long long start = now_ms();
	for (size_t i = 0; i < n; i++) {
		struct delivery *d = &ds[i];
		char h[128];
		d->call = &calls[i];
		calls[i].attempts = 0;
		calls[i].verdict = HOOK_ERROR;
		d->started_ms = start;
		d->deadline_ms = start + calls[i].timeout_ms;
		d->headers = curl_slist_append(NULL, "Content-Type: application/json");
		d->headers = curl_slist_append(d->headers, "X-Floe-Event: wap.audit");
		snprintf(h, sizeof(h), "X-Floe-Delivery: %s", calls[i].delivery_id);
		d->headers = curl_slist_append(d->headers, h);
		d->headers = curl_slist_append(d->headers, "Expect:");
		if (calls[i].secret != NULL) {
			char sig[72];
			hooks_signature(calls[i].secret, calls[i].body, sig);
			snprintf(h, sizeof(h), "X-Floe-Signature-256: %s", sig);
			d->headers = curl_slist_append(d->headers, h);
		}
		if (!delivery_start(d, multi)) {
			snprintf(calls[i].reason, sizeof(calls[i].reason), "cannot start the call");
			d->done = true;
			continue;
		}
		running++;
	}
	while (running > 0) {
		int still = 0;
		curl_multi_perform(multi, &still);
		CURLMsg *msg;
		int left;
		while ((msg = curl_multi_info_read(multi, &left)) != NULL) {
			if (msg->msg != CURLMSG_DONE)
				continue;
			struct delivery *d = NULL;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&d);
			CURLcode code = msg->data.result;
			curl_multi_remove_handle(multi, msg->easy_handle);
			bool retry = delivery_finish(d, code);
			/* Backoff 100 ms, then 200 ms, inside the hook's budget. */
			long long backoff = 100LL << (d->call->attempts - 1);
			if (retry && d->call->attempts < HOOK_MAX_ATTEMPTS &&
			    now_ms() + backoff < d->deadline_ms) {
				d->retry_at_ms = now_ms() + backoff;
			} else {
				d->done = true;
				d->call->latency_ms = now_ms() - d->started_ms;
				running--;
			}
		}
		long long t = now_ms();
		int wait_ms = 50;
		for (size_t i = 0; i < n; i++) {
			struct delivery *d = &ds[i];
			if (d->done || d->retry_at_ms == 0)
				continue;
			if (d->retry_at_ms <= t) {
				d->retry_at_ms = 0;
				if (!delivery_start(d, multi)) {
					d->done = true;
					d->call->latency_ms = t - d->started_ms;
					running--;
				}
			} else if (d->retry_at_ms - t < wait_ms) {
				wait_ms = (int)(d->retry_at_ms - t);
			}
		}
		if (running > 0)
			curl_multi_poll(multi, NULL, 0, wait_ms > 0 ? wait_ms : 1, NULL);
	}
done:
	for (size_t i = 0; ds != NULL && i < n; i++) {
		if (ds[i].easy != NULL)
			curl_easy_cleanup(ds[i].easy);
		curl_slist_free_all(ds[i].headers);
		free(ds[i].answer);
	}
	free(ds);
	if (multi != NULL)
		curl_multi_cleanup(multi);
}
