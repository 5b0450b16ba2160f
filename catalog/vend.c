/*
 * vend.c - what an engine is given to reach a table's objects: the access
 * level decided by the principal's privileges, the credentials from
 * fileio (ports.h), kept in a direct-mapped cache bounded in entries and
 * by the credentials' own lifetime. Secrets are never logged and are
 * wiped when an entry goes.
 */
#include "vend.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "location.h"
#include "ports.h"
#include "route.h"
#include "wording.h"

/* An entry is used until this long before its credentials expire, or
 * half their lifetime when that is shorter. */
#define VEND_MARGIN_MS (5LL * 60 * 1000)

struct vend_entry {
	char *key; /* location \x1f principal id \x1f access; NULL: empty */
	struct fileio_vended cred;
	long long got_ms;
};

struct vend {
	pthread_mutex_t lock;
	size_t mask;
	struct vend_entry *slots;
};

static void wipe(void *p, size_t n)
{
	volatile unsigned char *b = p;

	while (n-- > 0)
		*b++ = 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct vend *vend_new(size_t slots)
{
	size_t n = 16;

	while (n < slots && n < ((size_t)1 << 20))
		n <<= 1;
	struct vend *v = calloc(1, sizeof(*v));
	if (v == NULL)
		return NULL;
	v->slots = calloc(n, sizeof(*v->slots));
	if (v->slots == NULL || pthread_mutex_init(&v->lock, NULL) != 0) {
		free(v->slots);
		free(v);
		return NULL;
	}
	v->mask = n - 1;
	return v;
}

static void entry_clear(struct vend_entry *e)
{
	free(e->key);
	e->key = NULL;
	wipe(&e->cred, sizeof(e->cred));
	e->got_ms = 0;
}

void vend_forget(struct vend *v)
{
	if (v == NULL)
		return;
	(void)pthread_mutex_lock(&v->lock);
	for (size_t i = 0; i <= v->mask; i++)
		entry_clear(&v->slots[i]);
	(void)pthread_mutex_unlock(&v->lock);
}

void vend_free(struct vend **v)
{
	if (*v == NULL)
		return;
	vend_forget(*v);
	(void)pthread_mutex_destroy(&(*v)->lock);
	free((*v)->slots);
	free(*v);
	*v = NULL;
}

static size_t slot_of(const struct vend *v, const char *key)
{
	uint64_t h = 1469598103934665603ULL;

	for (const unsigned char *p = (const unsigned char *)key; *p != '\0'; p++) {
		h ^= *p;
		h *= 1099511628211ULL;
	}
	return (size_t)(h & v->mask);
}

/* Whether an entry's credentials are still good to hand out at now. */
static bool entry_fresh(const struct vend_entry *e, long long now)
{
	long long life = e->cred.expires_at_ms - e->got_ms;
	long long margin = VEND_MARGIN_MS < life / 2 ? VEND_MARGIN_MS : life / 2;

	return now < e->cred.expires_at_ms - margin;
}

/* The credentials for key, from the cache or fileio_vend (then kept when
 * they expire). */
static bool credentials_for(struct vend *v, const char *key, const char *location, bool write,
			    const char *session, struct fileio_vended *out, struct floe_error *err)
{
	size_t i = slot_of(v, key);
	long long now = now_ms();

	(void)pthread_mutex_lock(&v->lock);
	struct vend_entry *e = &v->slots[i];
	bool hit = e->key != NULL && strcmp(e->key, key) == 0 && entry_fresh(e, now);
	if (hit)
		*out = e->cred;
	(void)pthread_mutex_unlock(&v->lock);
	if (hit)
		return true;
	/* STS is asked outside the lock: one slow call holds up no other
	 * table. Two requests for the same key may both ask; the later
	 * answer stays. */
	if (!fileio_vend(location, write, session, out, err))
		return false;
	if (out->expires_at_ms == 0)
		return true; /* floe's own: nothing to keep */
	char *copy = strdup(key);
	if (copy == NULL)
		return true;
	(void)pthread_mutex_lock(&v->lock);
	e = &v->slots[i];
	entry_clear(e);
	e->key = copy;
	e->cred = *out;
	e->got_ms = now;
	(void)pthread_mutex_unlock(&v->lock);
	return true;
}

/* The config keys engines read, from the credentials and the client
 * settings (new object). */
static json_t *config_of(const struct fileio_vended *c, const struct fileio_vend_client *cl)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s}", "s3.access-key-id", c->access_key_id,
			      "s3.secret-access-key", c->secret_access_key, "s3.path-style-access",
			      cl->path_style ? "true" : "false", "client.region", cl->region,
			      "s3.region", cl->region);
	bool ok = o != NULL;

	if (ok && c->session_token[0] != '\0')
		ok = json_object_set_new(o, "s3.session-token", json_string(c->session_token)) == 0;
	if (ok && c->expires_at_ms != 0) {
		char ms[24];
		(void)snprintf(ms, sizeof(ms), "%lld", c->expires_at_ms);
		ok = json_object_set_new(o, "s3.session-token-expires-at-ms", json_string(ms)) == 0;
	}
	if (ok && cl->endpoint[0] != '\0')
		ok = json_object_set_new(o, "s3.endpoint", json_string(cl->endpoint)) == 0;
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *vend_table(struct vend *v, struct store *s, const struct principal *p,
		   const struct ns_ident *ns, const char *name, const char *location,
		   struct floe_error *err)
{
	struct fileio_vend_client client;
	struct fileio_vended cred;
	char *looked_up = NULL;
	char *canon = NULL;
	char *key = NULL;
	json_t *out = NULL;

	if (fileio_vend_mode() == FILEIO_VEND_OFF)
		return json_pack("{s:{}}", "config");
	if (location == NULL) {
		if (!store_table_location(s, ns, name, &looked_up, err)) {
			if (err->kind == FE_NO_SUCH_TABLE)
				(void)tables_word_error(s, ns, name, NULL, false, err);
			return NULL;
		}
		location = looked_up;
	}
	canon = location_canonical(location, err);
	if (canon == NULL)
		goto done;
	if (strncmp(canon, "s3://", 5) != 0) {
		out = json_pack("{s:{}}", "config"); /* local files need no credentials */
		goto done;
	}
	/* Where engines reach the table: its own warehouse's storage. */
	if (!fileio_vend_client(canon, &client)) {
		floe_err(
			err, FE_BAD_REQUEST,
			"location %.200s lies in no s3:// warehouse of floe's: there are no credentials to vend for it",
			canon);
		goto done;
	}
	/* Read-write with a write privilege on the table, else read-only. */
	bool write = true;
	if (p != NULL) {
		struct authz_object obj = { .kind = AUTHZ_TABLE, .ns = ns, .table = name };
		struct floe_error denied;
		floe_error_clear(&denied);
		if (!authz_check(s, p, PRIV_TABLE_WRITE, &obj, &denied)) {
			if (denied.kind != FE_FORBIDDEN) {
				*err = denied;
				goto done;
			}
			write = false;
		}
	}
	size_t klen = strlen(canon) + 48;
	key = malloc(klen);
	if (key == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	(void)snprintf(key, klen, "%s\x1f%lld\x1f%s", canon, p != NULL ? p->id : -1LL,
		       write ? "rw" : "r");
	if (!credentials_for(v, key, canon, write, p != NULL ? p->name : NULL, &cred, err))
		goto done;
	json_t *config = config_of(&cred, &client);
	wipe(&cred, sizeof(cred));
	json_t *shared = config != NULL ? json_deep_copy(config) : NULL;
	out = json_pack("{s:o, s:[{s:s, s:o}]}", "config", config, "storage-credentials", "prefix",
			canon, "config", shared);
	if (out == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
done:
	free(key);
	free(canon);
	free(looked_up);
	return out;
}

/* Sets the refresh endpoint in config when its credentials expire. */
static bool refresh_into(json_t *config, const char *endpoint)
{
	if (!json_is_object(config) ||
	    json_object_get(config, "s3.session-token-expires-at-ms") == NULL)
		return true;
	return json_object_set_new(config, "client.refresh-credentials-endpoint",
				   json_string(endpoint)) == 0;
}

bool vend_refresh_config(json_t *vended, const char *prefix, const struct ns_ident *ns,
			 const char *name, struct floe_error *err)
{
	json_t *config = json_object_get(vended, "config");
	json_t *list = json_object_get(vended, "storage-credentials");
	char *endpoint = NULL;
	size_t i;
	json_t *cred;
	bool ok = false;

	if (json_object_get(config, "s3.session-token-expires-at-ms") == NULL && list == NULL) {
		ok = true; /* nothing vended that expires */
		goto done;
	}
	endpoint = route_table(prefix, ns, name, "credentials");
	if (endpoint == NULL || !refresh_into(config, endpoint))
		goto done;
	json_array_foreach(list, i, cred) {
		if (!refresh_into(json_object_get(cred, "config"), endpoint))
			goto done;
	}
	ok = true;
done:
	free(endpoint);
	return ok || floe_err(err, FE_INTERNAL, "out of memory");
}
