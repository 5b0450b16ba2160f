/*
 * sealing.c - the hook secrets key (auth/sealkey.h) and the hook_sealer
 * port over it (auth/seal.h): a hook's id is the associated data, so a
 * sealed secret copied to another hook's row does not open.
 */
#include "sealing.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "seal.h"
#include "sealkey.h"

struct sealing {
	struct seal_key key;
	struct hook_sealer port;
};

static char *sealing_seal(void *ctx, const char *hook_id, const char *plain, struct floe_error *err)
{
	const struct sealing *sg = ctx;

	return seal_text(&sg->key, hook_id, strlen(hook_id), plain, strlen(plain), err);
}

static char *sealing_open_secret(void *ctx, const char *hook_id, const char *sealed, char *why,
				 size_t whylen)
{
	const struct sealing *sg = ctx;
	char other[SEAL_KEY_ID_LEN + 1];
	char *plain = NULL;
	size_t len = 0;

	switch (seal_open(&sg->key, hook_id, strlen(hook_id), sealed, &plain, &len, other)) {
	case SEAL_OK:
		return plain;
	case SEAL_OTHER_KEY:
		(void)snprintf(why, whylen,
			       "the hook's secret was sealed with key %s; this floe has key %s "
			       "(--hook-secrets-key)",
			       other, sg->key.id);
		break;
	case SEAL_FORGED:
		(void)snprintf(why, whylen,
			       "the hook's sealed secret does not open with key %s: it was changed "
			       "or copied from another hook",
			       sg->key.id);
		break;
	case SEAL_MALFORMED:
		(void)snprintf(why, whylen, "the hook's stored secret is not a sealed value");
		break;
	case SEAL_NOMEM:
		(void)snprintf(why, whylen, "out of memory");
		break;
	}
	return NULL;
}

/* Makes dir with mode unless it exists. */
static bool sealing_mkdir(const char *dir, mode_t mode, struct floe_error *err)
{
	if (mkdir(dir, mode) != 0 && errno != EEXIST)
		return floe_err(err, FE_INTERNAL, "cannot make %s: %s", dir, log_strerror(errno));
	return true;
}

struct sealing *sealing_open(const struct floe_config *cfg, struct floe_error *err)
{
	struct sealing *sg = calloc(1, sizeof(*sg));
	char dir[4096];
	bool created = false;

	if (sg == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	/* The data directory as embedpg.c (0755: an embedded PostgreSQL run
	 * as another user passes through it) or auth.c (0700) makes it; its
	 * auth/ is floe's alone. */
	(void)snprintf(dir, sizeof(dir), "%s/auth", cfg->data_dir);
	if (cfg->hook_secrets_key_default &&
	    (!sealing_mkdir(cfg->data_dir, cfg->database_url == NULL ? 0755 : 0700, err) ||
	     !sealing_mkdir(dir, 0700, err)))
		goto fail;
	if (!sealkey_load(cfg->hook_secrets_key, cfg->hook_secrets_key_default, &sg->key, &created,
			  err))
		goto fail;
	if (created)
		log_warn("main",
			 "made the hook secrets key %s (key id %s): back it up; without it every "
			 "audit hook's secret must be registered again, and every client secret "
			 "floe made (the admin's among them) is refused and must be rotated",
			 cfg->hook_secrets_key, sg->key.id);
	else
		log_info("main", "hook secrets are sealed with key %s from %s", sg->key.id,
			 cfg->hook_secrets_key);
	sg->port.ctx = sg;
	sg->port.seal = sealing_seal;
	sg->port.open = sealing_open_secret;
	return sg;
fail:
	sealing_close(sg);
	return NULL;
}

const struct hook_sealer *sealing_sealer(const struct sealing *sg)
{
	return &sg->port;
}

bool sealing_client_secret_key(const struct sealing *sg, struct secret_key *k)
{
	return secret_key_derive(sg->key.key, sizeof(sg->key.key), k);
}

void sealing_close(struct sealing *sg)
{
	if (sg == NULL)
		return;
	seal_key_clear(&sg->key);
	free(sg);
}
