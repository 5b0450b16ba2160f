/*
 * hooks.c - audit webhook registration rules, the target policy and
 * delivery. Delivery runs without touching the database: the caller holds
 * no row and no lock while hooks are called. What is kept of an answer is
 * a verdict, a status and the hook's own bounded reason, never the raw
 * answer or a transport error text.
 */
#include "hooks.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdint.h>
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

#define HOOK_BODY_MAX (64 * 1024)  /* the largest answer read from a hook */
#define HOOK_CONNECT_TIMEOUT_MS 3000
#define HOOK_HOST_MAX 253

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

/* --- the target policy --- */

struct allow_net {
	int family;              /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	int prefix;
};

struct hook_policy {
	struct allow_net *nets;
	size_t n_nets;
	char **hosts;            /* lower case, no trailing dot */
	size_t n_hosts;
};

/* The rule that refuses an IPv4 address (host order), NULL: public. */
static const char *classify_v4(uint32_t a)
{
	if ((a >> 24) == 0)
		return "unspecified";
	if ((a >> 24) == 10 || (a & 0xfff00000u) == 0xac100000u ||
	    (a & 0xffff0000u) == 0xc0a80000u)
		return "private (RFC 1918)";
	if ((a & 0xffc00000u) == 0x64400000u)
		return "CGNAT (100.64.0.0/10)";
	if ((a >> 24) == 127)
		return "loopback";
	if (a == 0xa9fea9feu)
		return "cloud metadata";
	if ((a & 0xffff0000u) == 0xa9fe0000u)
		return "link-local";
	if ((a & 0xffffff00u) == 0xc0000000u || (a & 0xfffe0000u) == 0xc6120000u)
		return "reserved";
	if ((a & 0xf0000000u) == 0xe0000000u)
		return "multicast";
	if (a == 0xffffffffu)
		return "broadcast";
	if ((a & 0xf0000000u) == 0xf0000000u)
		return "reserved";
	return NULL;
}

static uint32_t be32(const unsigned char *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static bool all_zero(const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

/* The IPv4 address an IPv6 address stands for (mapped, compatible,
 * translated, NAT64, 6to4, Teredo), in *v4; false when none. */
static bool embedded_v4(const unsigned char *b, uint32_t *v4)
{
	static const unsigned char nat64[12] = { 0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const unsigned char nat64_local[6] = { 0, 0x64, 0xff, 0x9b, 0, 0x01 };

	if (all_zero(b, 10) && ((b[10] == 0xff && b[11] == 0xff) || (b[10] == 0 && b[11] == 0))) {
		*v4 = be32(b + 12); /* ::ffff:a.b.c.d and ::a.b.c.d */
		return true;
	}
	if (all_zero(b, 8) && b[8] == 0xff && b[9] == 0xff && b[10] == 0 && b[11] == 0) {
		*v4 = be32(b + 12); /* ::ffff:0:a.b.c.d */
		return true;
	}
	if (memcmp(b, nat64, 12) == 0 || memcmp(b, nat64_local, 6) == 0) {
		*v4 = be32(b + 12);
		return true;
	}
	if (b[0] == 0x20 && b[1] == 0x02) { /* 6to4 */
		*v4 = be32(b + 2);
		return true;
	}
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) { /* Teredo */
		*v4 = ~be32(b + 12);
		return true;
	}
	return false;
}

static const char *classify_v6(const unsigned char *b)
{
	static const unsigned char ec2[16] = { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
					       0, 0, 0, 0, 0, 0, 0x02, 0x54 };
	uint32_t v4;

	if (all_zero(b, 16))
		return "unspecified";
	if (all_zero(b, 15) && b[15] == 1)
		return "loopback";
	if (embedded_v4(b, &v4))
		return classify_v4(v4);
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		return "site-local";
	if (memcmp(b, ec2, 16) == 0)
		return "cloud metadata";
	if ((b[0] & 0xfe) == 0xfc)
		return "unique-local (fc00::/7)";
	if (b[0] == 0xff)
		return "multicast";
	if (b[0] == 0x01 && b[1] == 0 && all_zero(b + 2, 6))
		return "reserved";
	return NULL;
}

static bool net_contains(const struct allow_net *net, int family, const unsigned char *a)
{
	int bits = net->prefix;

	if (net->family != family)
		return false;
	for (int i = 0; bits > 0; i++, bits -= 8) {
		unsigned char mask = bits >= 8 ? 0xff : (unsigned char)(0xff << (8 - bits));
		if ((a[i] & mask) != (net->addr[i] & mask))
			return false;
	}
	return true;
}

/* True when the allowlist admits the address; an IPv4-mapped IPv6
 * address is also matched as its IPv4 address. */
static bool policy_admits(const struct hook_policy *p, int family, const unsigned char *a)
{
	if (p == NULL)
		return false;
	for (size_t i = 0; i < p->n_nets; i++) {
		if (net_contains(&p->nets[i], family, a))
			return true;
		if (family == AF_INET6 && all_zero(a, 10) && a[10] == 0xff && a[11] == 0xff &&
		    net_contains(&p->nets[i], AF_INET, a + 12))
			return true;
	}
	return false;
}

static const char *check_bytes(const struct hook_policy *p, int family, const unsigned char *a)
{
	const char *rule = family == AF_INET ? classify_v4(be32(a)) : classify_v6(a);

	if (rule == NULL || policy_admits(p, family, a))
		return NULL;
	return rule;
}

const char *hook_policy_check_addr(const struct hook_policy *policy,
				   const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)(const void *)sa;
		return check_bytes(policy, AF_INET, (const unsigned char *)&in->sin_addr);
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)(const void *)sa;
		return check_bytes(policy, AF_INET6, in6->sin6_addr.s6_addr);
	}
	return "not an IP address";
}

/* A host as written in a URL or an allowlist: brackets, a zone id and
 * trailing dots removed, lower case. False when it does not fit. */
static bool host_normalise(const char *host, char *out, size_t outlen)
{
	size_t n = strlen(host);

	if (n > 2 && host[0] == '[' && host[n - 1] == ']') {
		host++;
		n -= 2;
	}
	if (n >= outlen)
		return false;
	memcpy(out, host, n);
	out[n] = '\0';
	char *pct = strchr(out, '%'); /* zone id */
	if (pct != NULL)
		*pct = '\0';
	n = strlen(out);
	while (n > 0 && out[n - 1] == '.')
		out[--n] = '\0';
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)out[i]);
	return true;
}

/* Parses an address literal into family and bytes. Every spelling the
 * resolver accepts counts (127.1, 0x7f000001, 2130706433). */
static bool parse_literal(const char *h, int *family, unsigned char a[16])
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET6, h, &a6) == 1) {
		*family = AF_INET6;
		memcpy(a, a6.s6_addr, 16);
		return true;
	}
	if (inet_aton(h, &a4) != 0) {
		*family = AF_INET;
		memcpy(a, &a4.s_addr, 4);
		return true;
	}
	return false;
}

static bool host_admitted(const struct hook_policy *p, const char *normal)
{
	for (size_t i = 0; p != NULL && i < p->n_hosts; i++)
		if (strcmp(p->hosts[i], normal) == 0)
			return true;
	return false;
}

const char *hook_policy_check_literal(const struct hook_policy *policy, const char *host)
{
	char h[HOOK_HOST_MAX + 3];
	unsigned char a[16];
	int family;

	if (!host_normalise(host, h, sizeof(h)))
		return NULL;
	if (host_admitted(policy, h) || !parse_literal(h, &family, a))
		return NULL;
	return check_bytes(policy, family, a);
}

static bool host_name_valid(const char *h)
{
	size_t n = strlen(h);

	if (n == 0 || n > HOOK_HOST_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)h[i];
		if (!isalnum(c) && c != '-' && c != '.' && c != '_')
			return false;
	}
	return true;
}

void hook_policy_free(struct hook_policy *p)
{
	if (p == NULL)
		return;
	for (size_t i = 0; i < p->n_hosts; i++)
		free(p->hosts[i]);
	free(p->hosts);
	free(p->nets);
	free(p);
}

/* Adds one trimmed allowlist entry. */
static bool policy_add(struct hook_policy *p, const char *entry, char *errbuf, size_t errlen)
{
	char raw[HOOK_HOST_MAX + 3];
	char h[HOOK_HOST_MAX + 3];
	const char *slash = strchr(entry, '/');
	size_t alen = slash ? (size_t)(slash - entry) : strlen(entry);
	struct allow_net net = { 0 };

	if (alen >= sizeof(raw)) {
		snprintf(errbuf, errlen, "entry \"%.40s...\" is too long", entry);
		return false;
	}
	memcpy(raw, entry, alen);
	raw[alen] = '\0';
	if (!host_normalise(raw, h, sizeof(h))) {
		snprintf(errbuf, errlen, "entry \"%s\" is not a host, an address or a network", entry);
		return false;
	}
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, h, &a4) == 1) {
		net.family = AF_INET;
		memcpy(net.addr, &a4.s_addr, 4);
		net.prefix = 32;
	} else if (inet_pton(AF_INET6, h, &a6) == 1) {
		net.family = AF_INET6;
		memcpy(net.addr, a6.s6_addr, 16);
		net.prefix = 128;
	} else if (slash == NULL && host_name_valid(h)) {
		char **nh = realloc(p->hosts, (p->n_hosts + 1) * sizeof(*nh));
		if (nh == NULL)
			goto oom;
		p->hosts = nh;
		p->hosts[p->n_hosts] = strdup(h);
		if (p->hosts[p->n_hosts] == NULL)
			goto oom;
		p->n_hosts++;
		return true;
	} else {
		snprintf(errbuf, errlen, "entry \"%s\" is not a host, an address or a network", entry);
		return false;
	}
	if (slash != NULL) {
		char *end = NULL;
		long bits = strtol(slash + 1, &end, 10);
		if (slash[1] == '\0' || *end != '\0' || bits < 0 || bits > net.prefix) {
			snprintf(errbuf, errlen, "entry \"%s\" has a bad prefix length (0-%d)", entry,
				 net.prefix);
			return false;
		}
		net.prefix = (int)bits;
	}
	struct allow_net *nn = realloc(p->nets, (p->n_nets + 1) * sizeof(*nn));
	if (nn == NULL)
		goto oom;
	p->nets = nn;
	p->nets[p->n_nets++] = net;
	return true;
oom:
	snprintf(errbuf, errlen, "out of memory");
	return false;
}

struct hook_policy *hook_policy_parse(const char *allow, char *errbuf, size_t errlen)
{
	struct hook_policy *p = calloc(1, sizeof(*p));
	char *copy = NULL;

	if (p == NULL)
		goto oom;
	if (allow == NULL || *allow == '\0')
		return p;
	copy = strdup(allow);
	if (copy == NULL)
		goto oom;
	for (char *tok = copy; tok != NULL;) {
		char *comma = strchr(tok, ',');
		if (comma != NULL)
			*comma = '\0';
		while (isspace((unsigned char)*tok))
			tok++;
		size_t n = strlen(tok);
		while (n > 0 && isspace((unsigned char)tok[n - 1]))
			tok[--n] = '\0';
		if (n > 0 && !policy_add(p, tok, errbuf, errlen))
			goto fail;
		tok = comma != NULL ? comma + 1 : NULL;
	}
	free(copy);
	return p;
oom:
	snprintf(errbuf, errlen, "out of memory");
fail:
	free(copy);
	hook_policy_free(p);
	return NULL;
}

/* --- registration --- */

static bool url_check(const char *url, const struct hook_policy *policy,
		      struct floe_error *err)
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
		floe_err(err, FE_BAD_REQUEST, "url is not a valid URL: %.200s", url);
		goto done;
	}
	if (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0) {
		floe_err(err, FE_BAD_REQUEST, "url must be http or https, not %.20s", scheme);
		goto done;
	}
	const char *rule = hook_policy_check_literal(policy, host);
	if (rule != NULL) {
		floe_err(err, FE_BAD_REQUEST,
			 "url targets %.100s, a %s address: hooks may not reach %s addresses unless the hook allowlist (--hook-allow) admits them",
			 host, rule, rule);
		goto done;
	}
	ok = true;
done:
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ok;
}

bool hook_spec_parse(const json_t *body, const struct hook_policy *policy,
		     struct hook_spec *spec, struct floe_error *err)
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
	if (strlen(json_string_value(url)) != json_string_length(url))
		return floe_err(err, FE_BAD_REQUEST, "field 'url' must not contain NUL");
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
	if (!url_check(json_string_value(url), policy, err))
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

void hooks_signature(const char *secret, long long timestamp, const char *body,
		     char out[72])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char ts[32];
	int tlen = snprintf(ts, sizeof(ts), "%lld.", timestamp);
	size_t blen = strlen(body);
	unsigned char *msg = malloc((size_t)tlen + blen + 1);

	/* Without memory the signature is all zeros, which no receiver
	 * accepts: the call fails closed. */
	if (msg != NULL) {
		memcpy(msg, ts, (size_t)tlen);
		memcpy(msg + tlen, body, blen);
		if (HMAC(EVP_sha256(), secret, (int)strlen(secret), msg, (size_t)tlen + blen, mac,
			 &len) == NULL)
			len = 0;
	}
	free(msg);
	memcpy(out, "sha256=", 7);
	for (unsigned int i = 0; i < 32; i++)
		snprintf(out + 7 + 2 * i, 3, "%02x", i < len ? mac[i] : 0);
	out[7 + 64] = '\0';
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
	char *answer;
	size_t answer_len;
	bool too_large;          /* the answer passed HOOK_BODY_MAX */
	const char *blocked;     /* the rule that refused an address */
	bool host_admitted;      /* the URL's host is on the allowlist */
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

	if (n > HOOK_BODY_MAX - d->answer_len) {
		d->too_large = true;
		return 0; /* ends the transfer: no verdict from a flood */
	}
	char *nb = realloc(d->answer, d->answer_len + n + 1);
	if (nb == NULL)
		return 0;
	d->answer = nb;
	memcpy(d->answer + d->answer_len, data, n);
	d->answer_len += n;
	d->answer[d->answer_len] = '\0';
	return n;
}

/* Every address libcurl connects to comes through here, after name
 * resolution: a name that resolves (or is rebound) to a refused address
 * cannot be reached, whatever it resolved to at registration. */
static curl_socket_t open_socket(void *clientp, curlsocktype purpose,
				 struct curl_sockaddr *addr)
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
	const char *fixed[] = { "Content-Type: application/json", "X-Floe-Event: wap.audit",
				"Expect:", NULL };

	curl_slist_free_all(d->headers);
	d->headers = NULL;
	for (int i = 0; fixed[i] != NULL; i++) {
		struct curl_slist *nh = curl_slist_append(h, fixed[i]);
		if (nh == NULL)
			goto fail;
		h = nh;
	}
	snprintf(line, sizeof(line), "X-Floe-Delivery: %s", c->delivery_id);
	struct curl_slist *nh = curl_slist_append(h, line);
	if (nh == NULL)
		goto fail;
	h = nh;
	snprintf(line, sizeof(line), "X-Floe-Timestamp: %lld", ts);
	nh = curl_slist_append(h, line);
	if (nh == NULL)
		goto fail;
	h = nh;
	if (c->secret != NULL) {
		char sig[72];
		hooks_signature(c->secret, ts, c->body, sig);
		snprintf(line, sizeof(line), "X-Floe-Signature-256: %s", sig);
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
	free(d->answer);
	d->answer = NULL;
	d->answer_len = 0;
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
	curl_easy_setopt(d->easy, CURLOPT_USERAGENT, "floe-audit/1");
	curl_easy_setopt(d->easy, CURLOPT_PRIVATE, d);
	d->call->attempts++;
	return curl_multi_add_handle(multi, d->easy) == CURLM_OK;
}

/* The answer as JSON (new reference), NULL when it is not JSON. */
static json_t *answer_json(const struct delivery *d)
{
	json_error_t jerr;

	if (d->answer == NULL || d->answer_len == 0)
		return NULL;
	return json_loadb(d->answer, d->answer_len, 0, &jerr);
}

static bool answer_blank(const struct delivery *d)
{
	for (size_t i = 0; i < d->answer_len; i++)
		if (!isspace((unsigned char)d->answer[i]))
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
		snprintf(out, len, "%s", "no reason given");
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
		snprintf(c->reason, sizeof(c->reason), "%s", transport_reason(d, code));
		/* The detail is for the operator's log only. */
		log_warn("hooks", "delivery %s attempt %d: %s%s%s (%s)", c->delivery_id,
			 c->attempts, c->reason, d->blocked ? ": " : "",
			 d->blocked ? d->blocked : "",
			 d->errbuf[0] ? d->errbuf : curl_easy_strerror(code));
		return code == CURLE_COULDNT_CONNECT && d->blocked == NULL;
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
			snprintf(c->reason, sizeof(c->reason), "%s", "not JSON");
		} else if (json_is_false(passed)) {
			c->verdict = HOOK_REJECT;
			reason_from(j, c->reason, sizeof(c->reason));
		} else if (passed == NULL || json_is_true(passed)) {
			c->verdict = HOOK_PASS;
			c->reason[0] = '\0';
		} else {
			c->verdict = HOOK_ERROR;
			snprintf(c->reason, sizeof(c->reason), "%s", "\"passed\" is not a boolean");
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
	snprintf(c->reason, sizeof(c->reason), "the hook answered HTTP %ld", status);
	retry = status >= 500;
done:
	json_decref(j);
	return retry;
}

/* The host of a URL, normalised (caller frees), NULL when it has none. */
static char *url_host(const char *url)
{
	CURLU *u = curl_url();
	char *host = NULL;
	char *out = NULL;

	if (u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK) {
		size_t n = strlen(host) + 1;
		out = malloc(n);
		if (out != NULL && !host_normalise(host, out, n)) {
			free(out);
			out = NULL;
		}
	}
	curl_free(host);
	curl_url_cleanup(u);
	return out;
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
		d->call = &calls[i];
		calls[i].attempts = 0;
		calls[i].verdict = HOOK_ERROR;
		calls[i].http_status = 0;
		calls[i].latency_ms = 0;
		d->started_ms = start;
		d->deadline_ms = start + calls[i].timeout_ms;
		d->done = true;
		if (calls[i].body == NULL) {
			/* Fail closed: an audit of nothing is no audit. */
			snprintf(calls[i].reason, sizeof(calls[i].reason), "payload not built");
			continue;
		}
		char *host = url_host(calls[i].url);
		if (host == NULL) {
			snprintf(calls[i].reason, sizeof(calls[i].reason), "invalid URL");
			continue;
		}
		d->host_admitted = host_admitted(calls[i].policy, host);
		free(host);
		if (!delivery_start(d, multi)) {
			snprintf(calls[i].reason, sizeof(calls[i].reason), "cannot start the call");
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
