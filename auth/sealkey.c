/*
 * sealkey.c - reading, and on the first start making, the key file of
 * sealed secrets (sealkey.h). The file is checked as floe's signing keys
 * are (keys.c): ours, a regular file, no group or world permission.
 */
#include "sealkey.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "keyfile.h"
#include "log.h"

/* The directory part of path ("." when it has none) into dir. */
static void sealkey_dirname(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (slash == NULL)
		(void)snprintf(dir, len, ".");
	else if (slash == path)
		(void)snprintf(dir, len, "/");
	else
		(void)snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

/* Makes path with fresh random bytes unless it exists; see sealkey.h. */
static bool sealkey_make(const char *path, bool *created, struct floe_error *err)
{
	unsigned char raw[SEAL_KEY_LEN];
	unsigned char tag[8];
	char tmp[PATH_MAX];
	char dir[PATH_MAX];
	const char *why = NULL;
	int fd = -1;
	int dfd = -1;

	/* A random temporary name: floes in separate containers sharing a
	 * volume may well have the same process id. */
	if (RAND_bytes(raw, sizeof(raw)) != 1 || RAND_bytes(tag, sizeof(tag)) != 1)
		return floe_err(err, FE_INTERNAL, "hook secrets key '%s': no randomness to make it",
				path);
	if (snprintf(tmp, sizeof(tmp), "%s.%02x%02x%02x%02x%02x%02x%02x%02x.tmp", path, tag[0],
		     tag[1], tag[2], tag[3], tag[4], tag[5], tag[6], tag[7]) >= (int)sizeof(tmp)) {
		OPENSSL_cleanse(raw, sizeof(raw));
		return floe_err(err, FE_INTERNAL, "hook secrets key '%s': path too long", path);
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || fchmod(fd, 0600) != 0) {
		why = "cannot create it";
		goto fail;
	}
	if (write(fd, raw, sizeof(raw)) != (ssize_t)sizeof(raw) || fsync(fd) != 0) {
		why = "cannot write it";
		goto fail;
	}
	close(fd);
	fd = -1;
	/* link, unlike rename, refuses to replace: whoever links first made
	 * the key, and everyone reads that one. */
	if (link(tmp, path) == 0) {
		*created = true;
	} else if (errno != EEXIST) {
		why = "cannot put it in place";
		goto fail;
	}
	(void)unlink(tmp);
	sealkey_dirname(path, dir, sizeof(dir));
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) != 0) {
		why = "cannot sync its directory";
		goto fail;
	}
	close(dfd);
	OPENSSL_cleanse(raw, sizeof(raw));
	return true;
fail:
	log_error("auth", "hook secrets key %s: %s: %s", path, why, log_strerror(errno));
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	(void)unlink(tmp);
	OPENSSL_cleanse(raw, sizeof(raw));
	return floe_err(err, FE_INTERNAL, "hook secrets key '%s': %s", path, why);
}

bool sealkey_load(const char *path, bool create, struct seal_key *k, bool *created,
		  struct floe_error *err)
{
	unsigned char raw[SEAL_KEY_LEN + 1];
	struct stat st;
	const char *why = NULL;
	size_t len = 0;
	int fd = -1;

	*created = false;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && create) {
		if (!sealkey_make(path, created, err))
			return false;
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	}
	if (fd < 0) {
		why = errno == ELOOP    ? "it is a symbolic link"
		      : errno == ENOENT ? "it does not exist"
					: "it cannot be opened";
		goto fail;
	}
	why = keyfile_refusal(fd, &st);
	if (why != NULL)
		goto fail;
	if (!keyfile_read(fd, raw, sizeof(raw), &len)) {
		why = "it cannot be read";
		goto fail;
	}
	if (len != SEAL_KEY_LEN) {
		why = "it does not hold exactly 32 bytes";
		goto fail;
	}
	if (!seal_key_init(k, raw, len)) {
		why = "its key id cannot be computed";
		goto fail;
	}
	close(fd);
	OPENSSL_cleanse(raw, sizeof(raw));
	return true;
fail:
	if (fd >= 0)
		close(fd);
	OPENSSL_cleanse(raw, sizeof(raw));
	return floe_err(err, FE_INTERNAL, "hook secrets key '%s' refused: %s", path, why);
}
