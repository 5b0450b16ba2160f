/*
 * policy.c - which addresses an audit hook may reach: the address classes
 * refused in every IPv4 and IPv6 spelling, and the allowlist that admits
 * host names and networks. Pure address work: no name resolution and no
 * I/O (deliver.c applies the policy to every address libcurl connects to).
 */
#include "hooks.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HOOK_HOST_MAX 253

struct allow_net {
	int family; /* AF_INET or AF_INET6 */
	unsigned char addr[16];
	int prefix;
};

struct hook_policy {
	struct allow_net *nets;
	size_t n_nets;
	char **hosts; /* lower case, no trailing dot */
	size_t n_hosts;
};

/* The rule that refuses an IPv4 address (host order), NULL: public. */
static const char *classify_v4(uint32_t a)
{
	if ((a >> 24) == 0)
		return "unspecified";
	if ((a >> 24) == 10 || (a & 0xfff00000u) == 0xac100000u || (a & 0xffff0000u) == 0xc0a80000u)
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
	static const unsigned char ec2[16] = { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,    0,
					       0,    0,    0,    0,    0, 0, 0x02, 0x54 };
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

const char *hook_policy_check_addr(const struct hook_policy *policy, const struct sockaddr *sa)
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
		(void)snprintf(errbuf, errlen, "entry \"%.40s...\" is too long", entry);
		return false;
	}
	memcpy(raw, entry, alen);
	raw[alen] = '\0';
	if (!host_normalise(raw, h, sizeof(h))) {
		(void)snprintf(errbuf, errlen,
			       "entry \"%s\" is not a host, an address or a network", entry);
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
		(void)snprintf(errbuf, errlen,
			       "entry \"%s\" is not a host, an address or a network", entry);
		return false;
	}
	if (slash != NULL) {
		char *end = NULL;
		long bits = strtol(slash + 1, &end, 10);
		if (slash[1] == '\0' || *end != '\0' || bits < 0 || bits > net.prefix) {
			(void)snprintf(errbuf, errlen,
				       "entry \"%s\" has a bad prefix length (0-%d)", entry,
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

bool hook_policy_admits_host(const struct hook_policy *policy, const char *host)
{
	size_t n = strlen(host) + 1;
	char *normal = malloc(n);
	bool admitted = false;

	if (normal != NULL && host_normalise(host, normal, n))
		admitted = host_admitted(policy, normal);
	free(normal);
	return admitted;
}
