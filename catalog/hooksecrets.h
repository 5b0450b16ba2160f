/*
 * hooksecrets.h - audit hook secrets sealed at rest. The catalog never
 * stores a plain secret: a new hook's secret is sealed through the
 * hook_sealer port before it reaches the store, and opened only to sign
 * one publish's calls. The daemon provides the port over auth/seal.h and
 * its key file (server/sealing.c); the unit tests provide a fake. The
 * key itself is never seen here.
 */
#ifndef FLOE_HOOKSECRETS_H
#define FLOE_HOOKSECRETS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "ports.h"

struct hook_sealer {
	void *ctx;
	/* The sealed text of plain for hook hook_id: a new string (free()),
	 * or NULL with FE_INTERNAL. */
	char *(*seal)(void *ctx, const char *hook_id, const char *plain, struct floe_error *err);
	/* The plain secret of sealed for hook hook_id: a new string (free
	 * with hooksecrets_free), or NULL with why (a sentence for the
	 * call's error verdict, naming the key when it is another one). */
	char *(*open)(void *ctx, const char *hook_id, const char *sealed, char *why, size_t whylen);
};

/* Seals a new hook's secret: a new string (free()), or NULL with
 * FE_INTERNAL (also when sealer is NULL: no key, no secret). */
char *hooksecrets_seal(const struct hook_sealer *sealer, const char *hook_id, const char *plain,
		       struct floe_error *err) FLOE_WUR;

/*
 * Gets each of n hook targets' calls ready to sign: calls[i].secret is
 * its opened secret (or NULL when the hook has none, or its plain text
 * when an older floe stored it so). A secret that cannot be opened makes
 * its call refused (calls[i].refused, the reason in calls[i].reason): an
 * error verdict, nothing sent, never an unsigned call. *opened is a new
 * array of the opened secrets, for hooksecrets_release after the calls.
 * False only when memory runs out (then every call is refused).
 */
bool hooksecrets_prepare(const struct hook_sealer *sealer, const struct hook_target *hooks,
			 size_t n, struct hook_call *calls, char ***opened) FLOE_WUR;

/* Zeroes and frees what hooksecrets_prepare opened; NULL is fine. */
void hooksecrets_release(char **opened, size_t n);

/* Zeroes and frees an opened secret; NULL is fine. */
void hooksecrets_free(char *secret);

/*
 * Seals every secret a floe from before migration 0010 stored in plain
 * text, each by compare-and-set, so floes starting at once on one
 * database seal each row once and nothing is lost. *sealed counts the
 * rows this call sealed. Run at start-up, outside a transaction. The
 * store's error, or FE_INTERNAL when a secret cannot be sealed.
 */
bool hooksecrets_seal_legacy(struct store *s, const struct hook_sealer *sealer, size_t *sealed,
			     struct floe_error *err) FLOE_WUR;

#endif
