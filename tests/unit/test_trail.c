/*
 * test_trail.c - the audit chain's canonical form and hash (a known
 * answer computed outside floe from the documented form), the hex forms,
 * Ed25519 checkpoints, the key file rules, and the verifier's reports.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "audittrail.h"
#include "trail.h"

static struct trail_event sample(void)
{
	struct trail_event e = {
		.position = 1,
		.id = "7",
		.at = "2026-12-04T02:00:00.000000Z",
		.event = "wap.staged",
		.principal = "anonymous",
		.client_id = NULL,
		.request_id = "r1",
		.ns = "a\x1f"
		      "b",
		.table = "t",
		.run_id = NULL,
		.details = "{\"a\": 1, \"\xc3\xa9\": \"\xc3\xbc\"}",
	};
	return e;
}

Test(trail, the_hash_is_sha256_over_the_documented_canonical_form)
{
	unsigned char prev[TRAIL_HASH_LEN], out[TRAIL_HASH_LEN];
	char hex[TRAIL_HASH_HEX];
	struct trail_event e = sample();

	trail_genesis(prev);
	cr_assert(trail_event_hash(prev, &e, out));
	trail_hex(out, hex);
	/* hashlib.sha256(b"\0" * 32 + b"floe-audit-event/1\n1:1\n1:7\n..."). */
	cr_assert_str_eq(hex, "bf095d2a990026b68c097916fad8808a02a528c7709b97f87ae7d453808f39e5");
}

Test(trail, a_null_field_and_an_empty_one_hash_apart)
{
	unsigned char prev[TRAIL_HASH_LEN], a[TRAIL_HASH_LEN], b[TRAIL_HASH_LEN];
	struct trail_event e = sample();

	trail_genesis(prev);
	cr_assert(trail_event_hash(prev, &e, a));
	e.client_id = "";
	cr_assert(trail_event_hash(prev, &e, b));
	cr_assert_neq(memcmp(a, b, TRAIL_HASH_LEN), 0);
	/* Moving a byte from one field to the next changes the hash too. */
	e = sample();
	e.table = "tx";
	e.run_id = NULL;
	cr_assert(trail_event_hash(prev, &e, b));
	cr_assert_neq(memcmp(a, b, TRAIL_HASH_LEN), 0);
}

Test(trail, hex_round_trips_and_refuses_what_is_not_a_hash)
{
	unsigned char h[TRAIL_HASH_LEN], back[TRAIL_HASH_LEN];
	char hex[TRAIL_HASH_HEX];

	for (size_t i = 0; i < TRAIL_HASH_LEN; i++)
		h[i] = (unsigned char)(i * 37 + 1);
	trail_hex(h, hex);
	cr_assert(trail_unhex(hex, back));
	cr_assert_eq(memcmp(h, back, TRAIL_HASH_LEN), 0);
	hex[10] = 'g';
	cr_assert_not(trail_unhex(hex, back));
	cr_assert_not(trail_unhex("abcd", back));
	cr_assert_not(trail_unhex(NULL, back));
}

/* A fresh Ed25519 key written to a 0600 file; returns its path. */
static char *write_key(mode_t mode)
{
	char *path = strdup("/tmp/floe-trail-key-XXXXXX");
	int fd = mkstemp(path);
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	FILE *f = fdopen(fd, "w");

	cr_assert(k != NULL && f != NULL);
	cr_assert(PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) == 1);
	fclose(f);
	EVP_PKEY_free(k);
	chmod(path, mode);
	return path;
}

Test(trail, a_checkpoint_signed_verifies_and_nothing_else_does)
{
	struct floe_error err;
	char *path = write_key(0600);
	struct trail_key *k = trail_key_load(path, &err);
	unsigned char h[TRAIL_HASH_LEN], sig[TRAIL_SIG_MAX];
	size_t siglen = 0;

	cr_assert(k != NULL, "%s", err.message);
	cr_assert_eq(strlen(trail_key_id(k)), TRAIL_KEY_ID_LEN);
	memset(h, 0xab, sizeof(h));
	cr_assert(trail_checkpoint_sign(k, 42, h, "2026-12-04T02:00:00.000000Z", sig, &siglen));
	cr_assert_eq(siglen, 64);
	const char *id = trail_key_id(k);
	cr_assert(
		trail_checkpoint_verify(k, 42, h, "2026-12-04T02:00:00.000000Z", id, sig, siglen));
	cr_assert_not(
		trail_checkpoint_verify(k, 43, h, "2026-12-04T02:00:00.000000Z", id, sig, siglen));
	cr_assert_not(
		trail_checkpoint_verify(k, 42, h, "2026-12-04T02:00:01.000000Z", id, sig, siglen));
	h[0] ^= 1;
	cr_assert_not(
		trail_checkpoint_verify(k, 42, h, "2026-12-04T02:00:00.000000Z", id, sig, siglen));
	h[0] ^= 1;
	sig[5] ^= 1;
	cr_assert_not(
		trail_checkpoint_verify(k, 42, h, "2026-12-04T02:00:00.000000Z", id, sig, siglen));
	sig[5] ^= 1;
	cr_assert_not(trail_checkpoint_verify(k, 42, h, "2026-12-04T02:00:00.000000Z",
					      "0000000000000000000000000000000", sig, siglen));

	/* The public half alone verifies, and cannot sign. */
	char *pem = trail_key_public_pem(k);
	cr_assert(pem != NULL && strstr(pem, "BEGIN PUBLIC KEY") != NULL);
	struct trail_key *pub = trail_key_parse_public(pem, strlen(pem), &err);
	cr_assert(pub != NULL, "%s", err.message);
	cr_assert_str_eq(trail_key_id(pub), id);
	cr_assert(trail_checkpoint_verify(pub, 42, h, "2026-12-04T02:00:00.000000Z", id, sig,
					  siglen));
	cr_assert_not(trail_checkpoint_sign(pub, 42, h, "x", sig, &siglen));
	free(pem);
	trail_key_free(pub);
	trail_key_free(k);
	unlink(path);
	free(path);
}

Test(trail, a_key_file_others_may_read_is_refused)
{
	struct floe_error err;
	char *path = write_key(0644);

	cr_assert_null(trail_key_load(path, &err));
	cr_assert(strstr(err.message, "group- or world-accessible") != NULL, "%s", err.message);
	cr_assert_null(trail_key_load("/nonexistent/floe.key", &err));
	cr_assert(strstr(err.message, "no such file") != NULL, "%s", err.message);
	unlink(path);
	free(path);
}

/* A chain of n events built as the database would, into rows. */
static void build_chain(struct chain_row *rows, char ids[][8], int n)
{
	unsigned char prev[TRAIL_HASH_LEN], h[TRAIL_HASH_LEN];

	trail_genesis(prev);
	for (int i = 0; i < n; i++) {
		struct chain_row *r = &rows[i];
		memset(r, 0, sizeof(*r));
		(void)snprintf(ids[i], 8, "%d", 100 + i);
		r->position = i + 1;
		r->event_id = 100 + i;
		r->present = true;
		r->f[CHAIN_F_ID] = ids[i];
		r->f[CHAIN_F_AT] = "2026-12-04T02:00:00.000000Z";
		r->f[CHAIN_F_EVENT] = "wap.staged";
		r->f[CHAIN_F_PRINCIPAL] = "anonymous";
		r->f[CHAIN_F_DETAILS] = "{}";
		struct trail_event e = { .position = r->position,
					 .id = ids[i],
					 .at = r->f[CHAIN_F_AT],
					 .event = r->f[CHAIN_F_EVENT],
					 .principal = r->f[CHAIN_F_PRINCIPAL],
					 .details = r->f[CHAIN_F_DETAILS] };
		cr_assert(trail_event_hash(prev, &e, h));
		trail_hex(h, r->hash);
		memcpy(prev, h, sizeof(h));
	}
}

static json_t *run(struct chain_row *rows, int n, long long head)
{
	struct trail_verifier *v = trail_verifier_new(NULL);

	for (int i = 0; i < n; i++)
		trail_verifier_link(v, &rows[i]);
	return trail_verifier_finish(v, head, n ? rows[n - 1].hash : "");
}

static long long first_position(json_t *report)
{
	return json_integer_value(
		json_object_get(json_array_get(json_object_get(report, "problems"), 0),
				"position"));
}

Test(trail, the_verifier_names_the_position_of_each_kind_of_change)
{
	struct chain_row rows[6];
	char ids[6][8];

	build_chain(rows, ids, 6);
	json_t *ok = run(rows, 6, 6);
	cr_assert(json_is_true(json_object_get(ok, "valid")));
	json_decref(ok);

	rows[3].f[CHAIN_F_EVENT] = "wap.published";
	json_t *edited = run(rows, 6, 6);
	cr_assert(json_is_false(json_object_get(edited, "valid")));
	cr_assert_eq(json_array_size(json_object_get(edited, "problems")), 1);
	cr_assert_eq(first_position(edited), 4);
	json_decref(edited);
	rows[3].f[CHAIN_F_EVENT] = "wap.staged";

	/* Link 3 missing: positions jump from 2 to 4. */
	struct chain_row gap[5] = { rows[0], rows[1], rows[3], rows[4], rows[5] };
	json_t *cut = run(gap, 5, 6);
	cr_assert_eq(first_position(cut), 3);
	json_decref(cut);

	/* The head names a later position than the last link. */
	json_t *short_head = run(rows, 5, 6);
	cr_assert_eq(first_position(short_head), 6);
	json_decref(short_head);
}
