/*
 * fileio.c - durable metadata files on local storage. This is the only
 * place floe writes or deletes table files; object stores would join it
 * behind the same calls.
 */
#include "fileio.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "uuid.h"

char *fileio_local_path(const char *url, struct floe_error *err)
{
	const char *p;

	if (url == NULL) {
		floe_err(err, FE_BAD_REQUEST, "no location");
		return NULL;
	}
	if (strncmp(url, "file://", 7) == 0)
		p = url + 7;
	else if (url[0] == '/')
		p = url;
	else {
		floe_err(err, FE_BAD_REQUEST,
			 "location %s is not supported: floe stores tables on local storage (file://)",
			 url);
		return NULL;
	}
	if (p[0] != '/' || strstr(p, "/../") != NULL ||
	    (strlen(p) >= 3 && strcmp(p + strlen(p) - 3, "/..") == 0)) {
		floe_err(err, FE_BAD_REQUEST,
			 "location %s must be an absolute path without '..'", url);
		return NULL;
	}
	char *copy = strdup(p);
	if (copy == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	return copy;
}

/* The longest name floe writes under a table location: the metadata
 * directory, a 19-digit version, a uuid and the temporary suffix. */
#define FILEIO_METADATA_SUFFIX_MAX \
	(sizeof("/metadata/") + 19 + 1 + UUID_STR_LEN + sizeof(".metadata.json.tmp"))

bool fileio_location_fits(const char *path, struct floe_error *err)
{
	size_t len = strlen(path);
	const char *p = path;

	while (*p != '\0') {
		size_t seg;
		while (*p == '/')
			p++;
		seg = strcspn(p, "/");
		if (seg > NAME_MAX) {
			/* Quote its start, cut on a UTF-8 character boundary. */
			int shown = 40;
			while (shown > 0 && ((unsigned char)p[shown] & 0xC0) == 0x80)
				shown--;
			return floe_err(err, FE_BAD_REQUEST,
					"table location has a path segment of %zu bytes (%.*s...); the limit is %d bytes, and a name's escaped form counts ('%%', '/' and '\\' take 3 bytes each)",
					seg, shown, p, NAME_MAX);
		}
		p += seg;
	}
	if (len + FILEIO_METADATA_SUFFIX_MAX >= PATH_MAX)
		return floe_err(err, FE_BAD_REQUEST,
				"table location is %zu bytes long; with its metadata file names it must stay under %d bytes",
				len, PATH_MAX - (int)FILEIO_METADATA_SUFFIX_MAX);
	return true;
}

/* mkdir -p */
static bool make_dirs(const char *path, struct floe_error *err)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return floe_err(err, FE_BAD_REQUEST, "path is too long");
	memcpy(buf, path, len + 1);
	for (size_t i = 1; i <= len; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		char c = buf[i];
		buf[i] = '\0';
		if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
			log_error("fileio", "cannot create directory %s: %s", buf,
				  strerror(errno));
			return floe_err(err, FE_INTERNAL,
					"cannot create the table's metadata directory");
		}
		buf[i] = c;
	}
	return true;
}

static bool write_all(int fd, const char *text, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, text, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return false;
		}
		text += n;
		len -= (size_t)n;
	}
	return true;
}

bool fileio_write_metadata(const char *table_location, long long version,
			   const char *text, size_t len, char **location,
			   struct floe_error *err)
{
	char *dir = NULL;
	char *base = fileio_local_path(table_location, err);
	char uuid[UUID_STR_LEN];
	char path[PATH_MAX];
	char tmp[PATH_MAX + 16];
	int fd = -1;
	bool ok = false;

	*location = NULL;
	if (base == NULL)
		return false;
	if (!uuid_v4(uuid)) {
		floe_err(err, FE_INTERNAL, "no randomness for a file name");
		goto done;
	}
	size_t dlen = strlen(base) + sizeof("/metadata");
	dir = malloc(dlen);
	if (dir == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	snprintf(dir, dlen, "%s/metadata", base);
	if (!make_dirs(dir, err))
		goto done;
	if (snprintf(path, sizeof(path), "%s/%05lld-%s.metadata.json", dir, version,
		     uuid) >= (int)sizeof(path)) {
		floe_err(err, FE_BAD_REQUEST, "table location is too long");
		goto done;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || !write_all(fd, text, len) || fsync(fd) != 0) {
		log_error("fileio", "cannot write %s: %s", tmp, strerror(errno));
		floe_err(err, FE_INTERNAL, "cannot write the metadata file");
		if (fd >= 0)
			unlink(tmp);
		goto done;
	}
	close(fd);
	fd = -1;
	if (rename(tmp, path) != 0) {
		log_error("fileio", "cannot rename %s: %s", tmp, strerror(errno));
		unlink(tmp);
		floe_err(err, FE_INTERNAL, "cannot write the metadata file");
		goto done;
	}
	/* The rename is durable only once the directory is. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) != 0) {
		log_error("fileio", "cannot sync directory %s: %s", dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		unlink(path);
		floe_err(err, FE_INTERNAL, "cannot write the metadata file");
		goto done;
	}
	close(dfd);
	size_t llen = strlen(path) + sizeof("file://");
	*location = malloc(llen);
	if (*location == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		goto done;
	}
	snprintf(*location, llen, "file://%s", path);
	ok = true;
done:
	if (fd >= 0)
		close(fd);
	free(dir);
	free(base);
	return ok;
}

bool fileio_read(const char *url, size_t max, char **text, size_t *len,
		 struct floe_error *err)
{
	char *path = fileio_local_path(url, err);
	FILE *f = NULL;
	char *buf = NULL;
	size_t n = 0, cap = 0;
	bool ok = false;

	*text = NULL;
	*len = 0;
	if (path == NULL)
		return false;
	f = fopen(path, "rb");
	if (f == NULL) {
		floe_err(err, FE_BAD_REQUEST, "cannot read %s: %s", url, strerror(errno));
		goto done;
	}
	for (;;) {
		if (n + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, cap);
			if (nb == NULL) {
				floe_err(err, FE_INTERNAL, "out of memory");
				goto done;
			}
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (n > max) {
			floe_err(err, FE_BAD_REQUEST, "%s is larger than %zu bytes", url, max);
			goto done;
		}
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		floe_err(err, FE_BAD_REQUEST, "cannot read %s", url);
		goto done;
	}
	buf[n] = '\0';
	*text = buf;
	*len = n;
	buf = NULL;
	ok = true;
done:
	if (f != NULL)
		fclose(f);
	free(buf);
	free(path);
	return ok;
}

void fileio_remove(const char *url)
{
	struct floe_error err;
	char *path = fileio_local_path(url, &err);

	if (path != NULL && unlink(path) != 0 && errno != ENOENT)
		log_warn("fileio", "cannot remove %s: %s", path, strerror(errno));
	free(path);
}

/* nftw keeps no user pointer: the count lives here for one purge at a
 * time per thread. */
static _Thread_local long purge_count;

static int purge_entry(const char *path, const struct stat *st, int type,
		       struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	int r = (type == FTW_DP) ? rmdir(path) : unlink(path);
	if (r != 0 && errno != ENOENT)
		log_warn("fileio", "purge: cannot remove %s: %s", path, strerror(errno));
	else if (type != FTW_DP)
		purge_count++;
	return 0;
}

bool fileio_purge(const char *table_location, const char *warehouse_path,
		  long *removed, struct floe_error *err)
{
	char *path = fileio_local_path(table_location, err);
	char real_wh[PATH_MAX];
	char real_tbl[PATH_MAX];
	bool ok = false;

	*removed = 0;
	if (path == NULL)
		return false;
	if (realpath(warehouse_path, real_wh) == NULL) {
		ok = true; /* no warehouse directory: nothing of ours to remove */
		goto done;
	}
	if (realpath(path, real_tbl) == NULL) {
		ok = true; /* already gone */
		goto done;
	}
	size_t wl = strlen(real_wh);
	if (strncmp(real_tbl, real_wh, wl) != 0 || real_tbl[wl] != '/' ||
	    real_tbl[wl + 1] == '\0') {
		log_warn("fileio", "purge: %s is outside the warehouse %s; its files are left alone",
			 real_tbl, real_wh);
		ok = true;
		goto done;
	}
	purge_count = 0;
	if (nftw(real_tbl, purge_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
		log_error("fileio", "purge of %s failed: %s", real_tbl, strerror(errno));
		floe_err(err, FE_INTERNAL, "purging the table's files failed");
		goto done;
	}
	*removed = purge_count;
	ok = true;
done:
	free(path);
	return ok;
}
