/*
 * deliver.c - calling every audit hook of a publish at once (libcurl
 * multi), with retries inside each hook's budget, and turning each answer
 * into a verdict. Delivery runs without touching the database: the caller
 * holds no row and no lock while hooks are called. What is kept of an
 * answer is a verdict, a status and the hook's own bounded reason, never
 * the raw answer or a transport error text.
 */
#include "hooks.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "buf.h"
#include "log.h"
#include "metric.h"
#include "txguard.h"

#define HOOK_BODY_MAX ((size_t)64 * 1024) /* the largest answer read from a hook */
#define HOOK_CONNECT_TIMEOUT_MS 3000

bool hooks_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
}

/* The length of the valid UTF-8 character at s (1-4), 0 when invalid. */
static size_t utf8_char(const unsigned char *s)
{
	size_t n;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* True for characters that control a terminal or the text's direction. */
static bool invisible_control(const unsigned char *s, size_t n)
{
	if (n == 1)
		return s[0] < 0x20 || s[0] == 0x7f;
	if (n == 2)
		return s[0] == 0xc2 && s[1] < 0xa0; /* C1: U+0080-U+009F */
	if (n == 3 && s[0] == 0xe2 && s[1] == 0x80)
		return s[2] >= 0xa8 && s[2] <= 0xae; /* U+2028-U+202E */
	if (n == 3 && s[0] == 0xe2 && s[1] == 0x81)
		return s[2] >= 0xa6 && s[2] <= 0xa9; /* U+2066-U+2069 */
	return false;
}

void hooks_clean_reason(const char *in, char *out, size_t outlen)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t max = outlen - 1 < HOOK_REASON_MAX ? outlen - 1 : HOOK_REASON_MAX;
	size_t o = 0;
	bool space = false;

	while (*s != '\0') {
		size_t n = utf8_char(s);
		if (n == 0) {
			s++;
			continue;
		}
		if (invisible_control(s, n)) {
			/* a line break or tab still separates words */
			space = space || (n == 1 && (*s == '\n' || *s == '\r' || *s == '\t'));
			s += n;
			continue;
		}
		size_t need = n + (space && o > 0 ? 1 : 0);
		if (o + need > max) {
			/* Cut: mark it when there is room for the mark. */
			while (o > 0 && o + 3 > max) {
				o--;
				while (o > 0 && ((unsigned char)out[o] & 0xc0) == 0x80)
					o--;
			}
			if (o + 3 <= max) {
				memcpy(out + o, "...", 3);
				o += 3;
			}
			break;
		}
		if (space && o > 0)
			out[o++] = ' ';
		space = false;
		memcpy(out + o, s, n);
		o += n;
		s += n;
	}
	out[o] = '\0';
}

/* --- delivery --- */

struct delivery {
	struct hook_call *call;
	CURL *easy;
	struct curl_slist *headers;
	struct buf answer;    /* at most HOOK_BODY_MAX */
	bool too_large;       /* the answer passed HOOK_BODY_MAX */
	const char *blocked;  /* the rule that refused an address */
	bool host_admitted;   /* the URL's host is on the allowlist */
	long long started_ms; /* first attempt */
	long long deadline_ms;
	long long retry_at_ms; /* > 0: waiting to retry */
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

	enum buf_status st = buf_append(&d->answer, data, n);

	if (st == BUF_FULL)
		d->too_large = true;
	/* Anything short of n ends the transfer: no verdict from a flood. */
	return st == BUF_OK ? n : 0;
}

/* Every address libcurl connects to comes through here, after name
 * resolution: a name that resolves (or is rebound) to a refused address
 * cannot be reached, whatever it resolved to at registration. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *addr)
{
	struct delivery *d = clientp;
	const char *rule = NULL;

	(void)purpose;
	if (!d->host_admitted)
		rule = hook_policy_check_addr(d->call->policy, &addr->addr);
	if (rule != NULL) {
		d->blocked = rule;
		return CURL_SOCKET_BAD;
	}
	return socket(addr->family, addr->socktype, addr->protocol);
}

/* The headers of one attempt: each is stamped and signed anew. */
static bool delivery_headers(struct delivery *d)
{
	struct hook_call *c = d->call;
	struct curl_slist *h = NULL;
	char line[160];
	long long ts = (long long)time(NULL);
	const char *fixed[] = { "Expect:", NULL };

	curl_slist_free_all(d->headers);
	d->headers = NULL;
	for (int i = 0; fixed[i] != NULL; i++) {
		struct curl_slist *nh = curl_slist_append(h, fixed[i]);
		if (nh == NULL)
			goto fail;
		h = nh;
	}
	(void)snprintf(line, sizeof(line), "Content-Type: %.64s",
		       c->content_type != NULL ? c->content_type : "application/json");
	struct curl_slist *nh = curl_slist_append(h, line);
	if (nh == NULL)
		goto fail;
	h = nh;
	(void)snprintf(line, sizeof(line), "X-Floe-Event: %.96s",
		       c->event != NULL ? c->event : "wap.audit");
	nh = curl_slist_append(h, line);
	if (nh == NULL)
		goto fail;
	h = nh;
	if (c->subscription != NULL) {
		(void)snprintf(line, sizeof(line), "X-Floe-Subscription: %.64s", c->subscription);
		nh = curl_slist_append(h, line);
		if (nh == NULL)
			goto fail;
		h = nh;
	}
	(void)snprintf(line, sizeof(line), "X-Floe-Delivery: %s", c->delivery_id);
	nh = curl_slist_append(h, line);
	if (nh == NULL)
		goto fail;
	h = nh;
	(void)snprintf(line, sizeof(line), "X-Floe-Timestamp: %lld", ts);
	nh = curl_slist_append(h, line);
	if (nh == NULL)
		goto fail;
	h = nh;
	if (c->secret != NULL) {
		char sig[72];
		hooks_signature(c->secret, ts, c->body, sig);
		(void)snprintf(line, sizeof(line), "X-Floe-Signature-256: %s", sig);
		nh = curl_slist_append(h, line);
		if (nh == NULL)
			goto fail;
		h = nh;
	}
	d->headers = h;
	return true;
fail:
	curl_slist_free_all(h);
	return false;
}

static bool delivery_start(struct delivery *d, CURLM *multi)
{
	long long left = d->deadline_ms - now_ms();

	if (left < 1)
		left = 1;
	buf_free(&d->answer);
	buf_init(&d->answer, HOOK_BODY_MAX);
	d->too_large = false;
	d->blocked = NULL;
	d->errbuf[0] = '\0';
	if (d->easy == NULL) {
		d->easy = curl_easy_init();
		if (d->easy == NULL)
			return false;
	}
	if (!delivery_headers(d))
		return false;
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
	/* Never through a proxy (http_proxy and friends included): the
	 * proxy would be the address connected to, and it would see the
	 * signed payload. */
	curl_easy_setopt(d->easy, CURLOPT_PROXY, "");
	curl_easy_setopt(d->easy, CURLOPT_NOPROXY, "*");
	/* Each attempt connects anew, so each connection is checked. */
	curl_easy_setopt(d->easy, CURLOPT_FRESH_CONNECT, 1L);
	curl_easy_setopt(d->easy, CURLOPT_FORBID_REUSE, 1L);
	curl_easy_setopt(d->easy, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(d->easy, CURLOPT_OPENSOCKETDATA, d);
	curl_easy_setopt(d->easy, CURLOPT_ERRORBUFFER, d->errbuf);
	curl_easy_setopt(d->easy, CURLOPT_USERAGENT,
			 d->call->notify ? "floe-events/1" : "floe-audit/1");
	curl_easy_setopt(d->easy, CURLOPT_PRIVATE, d);
	d->call->attempts++;
	return curl_multi_add_handle(multi, d->easy) == CURLM_OK;
}

/* The answer as JSON (new reference), NULL when it is not JSON. */
static json_t *answer_json(const struct delivery *d)
{
	json_error_t jerr;

	if (d->answer.data == NULL || d->answer.len == 0)
		return NULL;
	return json_loadb(d->answer.data, d->answer.len, 0, &jerr);
}

static bool answer_blank(const struct delivery *d)
{
	for (size_t i = 0; i < d->answer.len; i++)
		if (!isspace((unsigned char)d->answer.data[i]))
			return false;
	return true;
}

/* The hook's own reason from a JSON answer ("reason", else "message",
 * else "error.message"), cleaned; a fixed text when it gave none. */
static void reason_from(const json_t *j, char *out, size_t len)
{
	const char *r = json_string_value(json_object_get(j, "reason"));

	if (r == NULL)
		r = json_string_value(json_object_get(j, "message"));
	if (r == NULL)
		r = json_string_value(json_object_get(json_object_get(j, "error"), "message"));
	hooks_clean_reason(r != NULL ? r : "", out, len);
	if (out[0] == '\0')
		(void)snprintf(out, len, "%s", "no reason given");
}

/* A transport failure in a fixed vocabulary: what a hook URL could learn
 * of another server stays this coarse. */
static const char *transport_reason(const struct delivery *d, CURLcode code)
{
	if (d->blocked != NULL)
		return "address not allowed";
	if (d->too_large)
		return "answer too large";
	switch (code) {
	case CURLE_OPERATION_TIMEDOUT:
		return "timeout";
	case CURLE_COULDNT_CONNECT:
		return "connection refused";
	case CURLE_COULDNT_RESOLVE_HOST:
		return "name not resolved";
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_USE_SSL_FAILED:
		return "TLS error";
	case CURLE_GOT_NOTHING:
		return "empty answer";
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_PARTIAL_FILE:
		return "connection lost";
	case CURLE_WEIRD_SERVER_REPLY:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_BAD_CONTENT_ENCODING:
		return "not HTTP";
	case CURLE_URL_MALFORMAT:
		return "invalid URL";
	case CURLE_OUT_OF_MEMORY:
		return "out of memory";
	default:
		return "transport error";
	}
}

/* Decides a finished attempt; returns true when it should be retried. */
static bool delivery_finish(struct delivery *d, CURLcode code)
{
	struct hook_call *c = d->call;
	long status = 0;
	json_t *j = NULL;
	bool retry = false;

	curl_easy_getinfo(d->easy, CURLINFO_RESPONSE_CODE, &status);
	c->http_status = code == CURLE_OK || d->too_large ? status : 0;
	if (code != CURLE_OK) {
		c->verdict = HOOK_ERROR;
		(void)snprintf(c->reason, sizeof(c->reason), "%s", transport_reason(d, code));
		/* The detail is for the operator's log only. */
		log_warn("hooks", "delivery %s attempt %d: %s%s%s (%s)", c->delivery_id,
			 c->attempts, c->reason, d->blocked ? ": " : "",
			 d->blocked ? d->blocked : "",
			 d->errbuf[0] ? d->errbuf : curl_easy_strerror(code));
		return code == CURLE_COULDNT_CONNECT && d->blocked == NULL && !c->notify;
	}
	if (c->notify) {
		/* An acknowledgement: the body says nothing. */
		c->verdict = status >= 200 && status < 300 ? HOOK_PASS : HOOK_ERROR;
		if (c->verdict == HOOK_PASS)
			c->reason[0] = '\0';
		else
			(void)snprintf(c->reason, sizeof(c->reason),
				       "the receiver answered HTTP %ld", status);
		return false;
	}
	if (status >= 200 && status < 300) {
		if (answer_blank(d)) {
			c->verdict = HOOK_PASS;
			c->reason[0] = '\0';
			goto done;
		}
		j = answer_json(d);
		const json_t *passed = json_object_get(j, "passed");
		if (!json_is_object(j)) {
			c->verdict = HOOK_ERROR;
			(void)snprintf(c->reason, sizeof(c->reason), "%s", "not JSON");
		} else if (json_is_false(passed)) {
			c->verdict = HOOK_REJECT;
			reason_from(j, c->reason, sizeof(c->reason));
		} else if (passed == NULL || json_is_true(passed)) {
			c->verdict = HOOK_PASS;
			c->reason[0] = '\0';
		} else {
			c->verdict = HOOK_ERROR;
			(void)snprintf(c->reason, sizeof(c->reason), "%s",
				       "\"passed\" is not a boolean");
		}
		goto done;
	}
	if (status == 403 || status == 422) {
		c->verdict = HOOK_REJECT;
		j = answer_json(d);
		reason_from(j, c->reason, sizeof(c->reason));
		goto done;
	}
	c->verdict = HOOK_ERROR;
	(void)snprintf(c->reason, sizeof(c->reason), "the hook answered HTTP %ld", status);
	retry = status >= 500;
done:
	json_decref(j);
	return retry;
}

void hooks_call_all(struct hook_call *calls, size_t n)
{
	CURLM *multi = NULL;
	struct delivery *ds = NULL;
	size_t running = 0;

	TXGUARD_ASSERT_NONE();
	multi = curl_multi_init();
	if (calls == NULL)
		n = 0;
	if (n > 0)
		ds = calloc(n, sizeof(*ds));

	if (multi == NULL || (n > 0 && ds == NULL)) {
		for (size_t i = 0; i < n; i++) {
			calls[i].verdict = HOOK_ERROR;
			(void)snprintf(calls[i].reason, sizeof(calls[i].reason), "out of memory");
		}
		goto done;
	}
	long long start = now_ms();
	for (size_t i = 0; i < n; i++) {
		struct delivery *d = &ds[i];
		d->call = &calls[i];
		calls[i].attempts = 0;
		calls[i].verdict = HOOK_ERROR;
		calls[i].http_status = 0;
		calls[i].latency_ms = 0;
		d->started_ms = start;
		d->deadline_ms = start + calls[i].timeout_ms;
		d->done = true;
		if (calls[i].refused)
			continue; /* fail closed: never an unsigned call */
		if (calls[i].body == NULL) {
			/* Fail closed: an audit of nothing is no audit. */
			(void)snprintf(calls[i].reason, sizeof(calls[i].reason),
				       "payload not built");
			continue;
		}
		char *scheme = NULL;
		char *host = NULL;
		if (hook_url_split(calls[i].url, &scheme, &host) != HOOK_URL_OK) {
			(void)snprintf(calls[i].reason, sizeof(calls[i].reason), "invalid URL");
			continue;
		}
		d->host_admitted = hook_policy_admits_host(calls[i].policy, host);
		free(scheme);
		free(host);
		if (!delivery_start(d, multi)) {
			(void)snprintf(calls[i].reason, sizeof(calls[i].reason),
				       "cannot start the call");
			continue;
		}
		d->done = false;
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
	for (size_t i = 0; i < n; i++) {
		if (calls[i].notify)
			continue; /* counted by the subscriptions' own metrics */
		metric_add(METRIC_HOOK_CALLS, (size_t)calls[i].verdict, 1);
		metric_observe(METRIC_HOOK_DURATION, 0, calls[i].latency_ms * 1000);
	}
	for (size_t i = 0; ds != NULL && i < n; i++) {
		if (ds[i].easy != NULL)
			curl_easy_cleanup(ds[i].easy);
		curl_slist_free_all(ds[i].headers);
		buf_free(&ds[i].answer);
	}
	free(ds);
	if (multi != NULL)
		curl_multi_cleanup(multi);
}
