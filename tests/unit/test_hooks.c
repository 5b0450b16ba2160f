/* The hook target policy (address classes in every spelling, the
 * allowlist), the signature over timestamp and body, and the cleaning of
 * a hook's reason. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <string.h>

#include "hooks.h"

static const char *check(const struct hook_policy *p, const char *addr)
{
	struct sockaddr_in in4 = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };

	if (inet_pton(AF_INET, addr, &in4.sin_addr) == 1)
		return hook_policy_check_addr(p, (struct sockaddr *)&in4);
	cr_assert_eq(inet_pton(AF_INET6, addr, &in6.sin6_addr), 1, "%s", addr);
	return hook_policy_check_addr(p, (struct sockaddr *)&in6);
}

Test(hooks, address_classes_in_every_form)
{
	static const struct {
		const char *addr;
		const char *rule; /* NULL: admitted */
	} cases[] = {
		{ "127.0.0.1", "loopback" },
		{ "::1", "loopback" },
		{ "::ffff:127.0.0.1", "loopback" },
		{ "::127.0.0.1", "loopback" },
		{ "64:ff9b::7f00:1", "loopback" },
		{ "64:ff9b:1::7f00:1", "loopback" },
		{ "2002:7f00:1::", "loopback" },
		{ "::ffff:0:127.0.0.1", "loopback" },
		{ "10.0.0.1", "private (RFC 1918)" },
		{ "172.16.0.1", "private (RFC 1918)" },
		{ "172.31.255.255", "private (RFC 1918)" },
		{ "192.168.0.1", "private (RFC 1918)" },
		{ "100.64.0.0", "CGNAT (100.64.0.0/10)" },
		{ "100.127.255.255", "CGNAT (100.64.0.0/10)" },
		{ "169.254.169.254", "cloud metadata" },
		{ "fd00:ec2::254", "cloud metadata" },
		{ "::ffff:169.254.169.254", "cloud metadata" },
		{ "169.254.0.1", "link-local" },
		{ "fe80::1", "link-local" },
		{ "febf::1", "link-local" },
		{ "fec0::1", "site-local" },
		{ "fc00::1", "unique-local (fc00::/7)" },
		{ "fdff::1", "unique-local (fc00::/7)" },
		{ "0.0.0.0", "unspecified" },
		{ "::", "unspecified" },
		{ "224.0.0.1", "multicast" },
		{ "ff02::1", "multicast" },
		{ "255.255.255.255", "broadcast" },
		{ "240.0.0.1", "reserved" },
		{ "192.0.0.170", "reserved" },
		{ "2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback" }, /* Teredo, 127.0.0.1 */
		{ "8.8.8.8", NULL },
		{ "172.32.0.1", NULL },
		{ "100.128.0.1", NULL },
		{ "2001:4860:4860::8888", NULL },
		{ "::ffff:8.8.8.8", NULL },
		{ "64:ff9b::808:808", NULL },
		{ "fe00::1", NULL },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *got = check(NULL, cases[i].addr);
		if (cases[i].rule == NULL)
			cr_assert_null(got, "%s refused as %s", cases[i].addr, got);
		else
			cr_assert(got != NULL && strcmp(got, cases[i].rule) == 0, "%s: %s, not %s",
				  cases[i].addr, got ? got : "admitted", cases[i].rule);
	}
}

Test(hooks, allowlist_admits_networks_hosts_and_mapped_forms)
{
	char err[200];
	struct hook_policy *p = hook_policy_parse(" 10.0.0.0/8, [fd00::]/8 ,Auditor.,127.0.0.1,",
						  err, sizeof(err));

	cr_assert_not_null(p, "%s", err);
	cr_assert_null(check(p, "10.20.30.40"));
	cr_assert_null(check(p, "::ffff:10.1.1.1"));
	cr_assert_null(check(p, "fd12::1"));
	cr_assert_null(check(p, "127.0.0.1"));
	cr_assert_null(check(p, "::ffff:127.0.0.1"));
	cr_assert_str_eq(check(p, "127.0.0.2"), "loopback");
	cr_assert_str_eq(check(p, "::1"), "loopback");
	cr_assert_str_eq(check(p, "192.168.1.1"), "private (RFC 1918)");
	cr_assert_str_eq(check(p, "fc00::1"), "unique-local (fc00::/7)");
	/* literals in URLs; a host entry admits the name whatever it is */
	cr_assert_null(hook_policy_check_literal(p, "auditor"));
	cr_assert_null(hook_policy_check_literal(p, "[fd00::5%eth0]"));
	cr_assert_str_eq(hook_policy_check_literal(p, "0x7f.2"), "loopback");
	cr_assert_str_eq(hook_policy_check_literal(NULL, "2130706433"), "loopback");
	cr_assert_str_eq(hook_policy_check_literal(NULL, "169.254.169.254."), "cloud metadata");
	cr_assert_null(hook_policy_check_literal(NULL, "example.com"));
	hook_policy_free(p);

	const char *bad[] = { "10.0.0.0/33", "::/129", "1.2.3.4/", "a b", "x/8", "1.2.3.4/-1" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_null(hook_policy_parse(bad[i], err, sizeof(err)), "%s accepted", bad[i]);
		cr_assert(strlen(err) > 0);
	}
	p = hook_policy_parse("", err, sizeof(err));
	cr_assert_not_null(p);
	cr_assert_str_eq(check(p, "127.0.0.1"), "loopback");
	hook_policy_free(p);
}

Test(hooks, signature_covers_timestamp_and_body)
{
	char sig[72];

	hooks_signature("key", 1700000000LL, "{\"a\":1}", sig);
	cr_assert_str_eq(sig,
			 "sha256=a438e398bfafc57e4396bb7fc2304422f0f768e965d073ca313cb52e22e6ad03");
	char other[72];
	hooks_signature("key", 1700000001LL, "{\"a\":1}", other);
	cr_assert_str_neq(sig, other);
}

Test(hooks, reason_is_cleaned_and_bounded)
{
	char out[HOOK_REASON_MAX + 1];
	char big[2000];

	hooks_clean_reason("a\x1b[1mb\r\nc\t\x7f"
			   "d\xc2\x85"
			   "e\xe2\x80\xae"
			   "f\xff"
			   "g",
			   out, sizeof(out));
	cr_assert_str_eq(out, "a[1mb c d"
			      "efg");
	memset(big, 0, sizeof(big));
	for (size_t i = 0; i + 2 < 1500; i += 2)
		memcpy(big + i, "\xc3\xa9", 2); /* é */
	hooks_clean_reason(big, out, sizeof(out));
	size_t n = strlen(out);
	cr_assert_leq(n, HOOK_REASON_MAX);
	cr_assert_str_eq(out + n - 3, "...");
	cr_assert_eq((n - 3) % 2, 0, "cut inside a character");
	hooks_clean_reason("", out, sizeof(out));
	cr_assert_str_eq(out, "");
}
