/*
 * hooksecrets.c - sealing a new hook's secret, opening the secrets of one
 * publish's calls, and sealing what older floes stored in plain text
 * (hooksecrets.h). The cryptography is behind the hook_sealer port.
 */
#include "hooksecrets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

char *hooksecrets_seal(const struct hook_sealer *sealer, const char *hook_id, const char *plain,
		       struct floe_error *err)
{
	if (sealer == NULL) {
		floe_err(err, FE_INTERNAL, "no key to seal the hook's secret with");
		return NULL;
	}
	return sealer->seal(sealer->ctx, hook_id, plain, err);
}

void hooksecrets_free(char *secret)
{
	if (secret == NULL)
		return;
	explicit_bzero(secret, strlen(secret));
	free(secret);
}

void hooksecrets_release(char **opened, size_t n)
{
	for (size_t i = 0; opened != NULL && i < n; i++)
		hooksecrets_free(opened[i]);
	free(opened);
}

bool hooksecrets_prepare(const struct hook_sealer *sealer, const struct hook_target *hooks,
			 size_t n, struct hook_call *calls, char ***opened)
{
	char **out = calloc(n > 0 ? n : 1, sizeof(*out));

	*opened = NULL;
	for (size_t i = 0; i < n; i++) {
		struct hook_call *c = &calls[i];
		const struct hook_target *h = &hooks[i];
		c->secret = NULL;
		c->refused = false;
		if (out == NULL) {
			c->refused = true;
			(void)snprintf(c->reason, sizeof(c->reason), "out of memory");
			continue;
		}
		if (h->secret == NULL)
			continue;
		if (!h->secret_sealed) {
			c->secret = h->secret;
			continue;
		}
		if (sealer == NULL) {
			c->refused = true;
			(void)snprintf(
				c->reason, sizeof(c->reason),
				"the hook's secret is sealed and this floe has no key to open it");
		} else {
			out[i] = sealer->open(sealer->ctx, h->id, h->secret, c->reason,
					      sizeof(c->reason));
			c->secret = out[i];
			c->refused = out[i] == NULL;
		}
		if (c->refused)
			log_error("hooks",
				  "hook %s (%s): %s; its call fails closed, nothing is sent",
				  h->name, h->id, c->reason);
	}
	*opened = out;
	return out != NULL;
}

bool hooksecrets_seal_legacy(struct store *s, const struct hook_sealer *sealer, size_t *sealed,
			     struct floe_error *err)
{
	struct hook_target *rows = NULL;
	size_t n = 0;
	bool ok;

	*sealed = 0;
	ok = store_hook_plain_secrets(s, &rows, &n, err);
	for (size_t i = 0; ok && i < n; i++) {
		bool done = false;
		char *text = hooksecrets_seal(sealer, rows[i].id, rows[i].secret, err);
		ok = text != NULL &&
		     store_hook_seal_secret(s, rows[i].id, rows[i].secret, text, &done, err);
		free(text);
		if (done)
			(*sealed)++;
	}
	for (size_t i = 0; i < n; i++) {
		if (rows[i].secret != NULL)
			explicit_bzero(rows[i].secret, strlen(rows[i].secret));
	}
	store_hook_targets_free(rows, n);
	return ok;
}
