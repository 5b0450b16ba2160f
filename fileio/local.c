/*
 * local.c - the local-file backend of fileio (file:// locations): durable
 * metadata files (temporary file, fsync, rename, fsync of the directory),
 * reads that refuse anything but a regular file, and purges that follow
 * no symbolic link. Reached through fileio.c, which picks a backend by
 * the location's scheme.
 */
#include "backend.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "location.h"
#include "log.h"
#include "uuid.h"

char *fileio_local_path(const char *url, struct floe_error *err)
{
	char *canon = location_canonical(url, err);

	if (canon == NULL)
		return NULL;
	if (location_is_s3(canon)) {
		free(canon);
		floe_err(err, FE_BAD_REQUEST, "location %.200s is not on local storage", url);
		return NULL;
	}
	char *copy = strdup(location_path(canon));
	free(canon);
	if (copy == NULL)
		floe_err(err, FE_INTERNAL, "out of memory");
	return copy;
}

/* fsync of the directory holding path (path has at least one '/'):
 * a new entry in it is durable only then (PostgreSQL's
 * fsync_parent_path). */
static bool sync_parent(const char *path)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t len = slash == NULL ? 0 : (size_t)(slash - path);

	if (len >= sizeof(parent))
		return false;
	if (len == 0) {
		parent[0] = '/';
		len = 1;
	} else {
		memcpy(parent, path, len);
	}
	parent[len] = '\0';
	int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		log_error("fileio", "cannot sync directory %s: %s", parent, log_strerror(errno));
		if (fd >= 0)
			close(fd);
		return false;
	}
	close(fd);
	return true;
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
			return floe_err(
				err, FE_BAD_REQUEST,
				"table location has a path segment of %zu bytes (%.*s...); the limit is %d bytes, and a name's escaped form counts ('%%', '/' and '\\' take 3 bytes each)",
				seg, shown, p, NAME_MAX);
		}
		p += seg;
	}
	if (len + FILEIO_METADATA_SUFFIX_MAX >= PATH_MAX)
		return floe_err(
			err, FE_BAD_REQUEST,
			"table location is %zu bytes long; with its metadata file names it must stay under %d bytes",
			len, PATH_MAX - (int)FILEIO_METADATA_SUFFIX_MAX);
	return true;
}

/* mkdir -p; each directory created is made durable in its parent. */
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
		if (mkdir(buf, 0755) == 0) {
			if (!sync_parent(buf))
				return floe_err(err, FE_INTERNAL,
						"cannot create the table's metadata directory");
		} else if (errno != EEXIST) {
			log_error("fileio", "cannot create directory %s: %s", buf,
				  log_strerror(errno));
			return floe_err(err, FE_INTERNAL,
					"cannot create the table's metadata directory");
		}
		buf[i] = c;
	}
	return true;
}

static bool write_all(int fd, const void *data, size_t len)
{
	const char *text = data;

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

/* Writes data as a new file at path (never over another) and syncs it.
 * On failure nothing is left at path, the failure is logged, and false
 * is returned. */
static bool create_synced(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd >= 0 && write_all(fd, data, len) && fsync(fd) == 0) {
		close(fd);
		return true;
	}
	log_error("fileio", "cannot write %s: %s", path, log_strerror(errno));
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
	return false;
}

/* The file:// URL of a local path (caller frees), or NULL with
 * FE_INTERNAL. */
static char *path_url(const char *path, struct floe_error *err)
{
	size_t llen = strlen(path) + sizeof("file://");
	char *url = malloc(llen);

	if (url == NULL) {
		floe_err(err, FE_INTERNAL, "out of memory");
		return NULL;
	}
	(void)snprintf(url, llen, "file://%s", path);
	return url;
}

/* Makes <base>/metadata and answers its path (caller frees), or NULL. */
static char *metadata_dir(const char *base, struct floe_error *err)
{
	size_t dlen = strlen(base) + sizeof("/metadata");
	char *dir = malloc(dlen);

	if (dir == NULL)
		return floe_err(err, FE_INTERNAL, "out of memory"), NULL;
	(void)snprintf(dir, dlen, "%s/metadata", base);
	if (!make_dirs(dir, err)) {
		free(dir);
		return NULL;
	}
	return dir;
}

static bool local_make_metadata_dir(const char *table_location, struct floe_error *err)
{
	char *base = fileio_local_path(table_location, err);
	char *dir = base != NULL ? metadata_dir(base, err) : NULL;
	bool ok = dir != NULL;

	free(dir);
	free(base);
	return ok;
}

/* Writes metadata file number version into the existing directory dir:
 * a temporary file, fsync, rename, fsync of the directory. */
static bool write_metadata_into(const char *dir, long long version, const char *text, size_t len,
				char **location, struct floe_error *err)
{
	char uuid[UUID_STR_LEN];
	char path[PATH_MAX];
	char tmp[PATH_MAX + 16];

	*location = NULL;
	if (!uuid_v4(uuid))
		return floe_err(err, FE_INTERNAL, "no randomness for a file name");
	if (snprintf(path, sizeof(path), "%s/%05lld-%s.metadata.json", dir, version, uuid) >=
	    (int)sizeof(path)) {
		return floe_err(err, FE_BAD_REQUEST, "table location is too long");
	}
	(void)snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!create_synced(tmp, text, len))
		return floe_err(err, FE_INTERNAL, "cannot write the metadata file");
	if (rename(tmp, path) != 0) {
		log_error("fileio", "cannot rename %s: %s", tmp, log_strerror(errno));
		unlink(tmp);
		return floe_err(err, FE_INTERNAL, "cannot write the metadata file");
	}
	/* The rename is durable only once the directory is. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) != 0) {
		log_error("fileio", "cannot sync directory %s: %s", dir, log_strerror(errno));
		if (dfd >= 0)
			close(dfd);
		unlink(path);
		return floe_err(err, FE_INTERNAL, "cannot write the metadata file");
	}
	close(dfd);
	*location = path_url(path, err);
	return *location != NULL;
}

static bool local_write_metadata(const char *table_location, long long version, const char *text,
				 size_t len, char **location, struct floe_error *err)
{
	char *base = fileio_local_path(table_location, err);
	char *dir = base != NULL ? metadata_dir(base, err) : NULL;
	bool ok = dir != NULL && write_metadata_into(dir, version, text, len, location, err);

	if (dir == NULL)
		*location = NULL;
	free(dir);
	free(base);
	return ok;
}

/* The file is named as the directory was given (file:/a/b stays so), as
 * Iceberg names a file below write.metadata.path. */
static bool local_write_metadata_in(const char *dir_url, long long version, const char *text,
				    size_t len, char **location, struct floe_error *err)
{
	char *dir = fileio_local_path(dir_url, err);
	char *written = NULL;
	bool ok = dir != NULL && make_dirs(dir, err) &&
		  write_metadata_into(dir, version, text, len, &written, err);

	*location = NULL;
	if (ok) {
		const char *name = strrchr(written, '/') + 1;
		size_t dl = strlen(dir_url);
		while (dl > 0 && dir_url[dl - 1] == '/')
			dl--;
		size_t n = dl + strlen(name) + 2;
		*location = malloc(n);
		if (*location != NULL)
			(void)snprintf(*location, n, "%.*s/%s", (int)dl, dir_url, name);
		else
			ok = floe_err(err, FE_INTERNAL, "out of memory");
	}
	free(written);
	free(dir);
	return ok;
}

/* The part of path below root (a lexical prefix, checked by the caller),
 * without its leading '/'; NULL when path is not below root. */
static const char *below(const char *path, const char *root)
{
	size_t rl = strlen(root);

	while (rl > 1 && root[rl - 1] == '/')
		rl--;
	if (strncmp(path, root, rl) != 0 || path[rl] != '/' || path[rl + 1] == '\0')
		return NULL;
	return path + rl + 1;
}

static bool local_check_beneath(const char *url, const char *warehouse_path, struct floe_error *err)
{
	char *path = fileio_local_path(url, err);
	char cur[PATH_MAX];
	bool ok = false;
	struct stat st;

	if (path == NULL)
		return false;
	const char *rest = below(path, warehouse_path);
	if (rest == NULL) {
		floe_err(err, FE_BAD_REQUEST, "location %.200s is outside the warehouse", url);
		goto done;
	}
	size_t n = (size_t)(rest - path);
	if (strlen(path) >= sizeof(cur)) {
		floe_err(err, FE_BAD_REQUEST, "location %.200s is too long", url);
		goto done;
	}
	memcpy(cur, path, n);
	while (*rest != '\0') {
		const char *end = strchr(rest, '/');
		size_t len = end ? (size_t)(end - rest) : strlen(rest);
		memcpy(cur + n, rest, len);
		n += len;
		cur[n] = '\0';
		if (lstat(cur, &st) != 0) {
			if (errno == ENOENT)
				break; /* the rest is created by floe itself */
			if (errno == ENOTDIR) {
				floe_err(err, FE_BAD_REQUEST,
					 "location %.200s passes through a file", url);
				goto done;
			}
			log_warn("fileio", "cannot check %s: %s", cur, log_strerror(errno));
			floe_err(err, FE_BAD_REQUEST, "location %.200s cannot be checked", url);
			goto done;
		}
		if (S_ISLNK(st.st_mode)) {
			log_warn("fileio", "refused %s: %s is a symbolic link inside the warehouse",
				 path, cur);
			floe_err(
				err, FE_BAD_REQUEST,
				"location %.200s passes through a symbolic link inside the warehouse; floe follows none (it could lead outside the warehouse or into another table)",
				url);
			goto done;
		}
		rest += len;
		if (*rest == '/') {
			rest++;
			cur[n++] = '/';
		}
	}
	ok = true;
done:
	free(path);
	return ok;
}

static bool local_read(const char *url, size_t max, char **text, size_t *len,
		       struct floe_error *err)
{
	char *path = fileio_local_path(url, err);
	struct buf b;
	int fd = -1;
	bool ok = false;
	struct stat st;

	*text = NULL;
	*len = 0;
	/* Read one byte past the cap: a file growing meanwhile is caught. */
	buf_init(&b, max + 1);
	if (path == NULL)
		return false;
	/* A FIFO or a device would block a worker or do worse: look before
	 * opening, open without blocking or following, and look again. */
	if (lstat(path, &st) != 0) {
		floe_err(err, FE_BAD_REQUEST, "cannot read %.200s: %s", url, log_strerror(errno));
		goto done;
	}
	if (!S_ISREG(st.st_mode)) {
		floe_err(err, FE_BAD_REQUEST, "%.200s is not a regular file", url);
		goto done;
	}
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		floe_err(err, FE_BAD_REQUEST, "cannot read %.200s: %s", url, log_strerror(errno));
		goto done;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		floe_err(err, FE_BAD_REQUEST, "%.200s is not a regular file", url);
		goto done;
	}
	if ((unsigned long long)st.st_size > max) {
		floe_err(err, FE_BAD_REQUEST, "%.200s is larger than %zu bytes", url, max);
		goto done;
	}
	for (;;) {
		if (b.len == b.cap) {
			size_t want = b.cap > 0 ? b.cap : (size_t)st.st_size + 1;
			enum buf_status bs = buf_reserve(&b, want);
			if (bs == BUF_NOMEM) {
				floe_err(err, FE_INTERNAL, "out of memory");
				goto done;
			}
			if (bs == BUF_FULL)
				break;
		}
		ssize_t r = read(fd, b.data + b.len, b.cap - b.len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			floe_err(err, FE_BAD_REQUEST, "cannot read %.200s", url);
			goto done;
		}
		if (r == 0)
			break;
		buf_commit(&b, (size_t)r);
	}
	if (b.len > max) {
		floe_err(err, FE_BAD_REQUEST, "%.200s is larger than %zu bytes", url, max);
		goto done;
	}
	*text = buf_take(&b, len);
	ok = true;
done:
	if (fd >= 0)
		close(fd);
	buf_free(&b);
	free(path);
	return ok;
}

static void local_remove(const char *url)
{
	struct floe_error err;
	char *path = fileio_local_path(url, &err);

	if (path != NULL && unlink(path) != 0 && errno != ENOENT)
		log_warn("fileio", "cannot remove %s: %s", path, log_strerror(errno));
	free(path);
}

static bool local_write_new(const char *table_location, const char *name, const void *data,
			    size_t len, char **location, struct floe_error *err)
{
	char *base = fileio_local_path(table_location, err);
	char path[PATH_MAX];
	bool ok = false;

	*location = NULL;
	if (base == NULL)
		return false;
	if (snprintf(path, sizeof(path), "%s/metadata/%s", base, name) >= (int)sizeof(path)) {
		floe_err(err, FE_BAD_REQUEST, "table location is too long");
		goto done;
	}
	if (!create_synced(path, data, len)) {
		floe_err(err, FE_INTERNAL, "cannot write %s", name);
		goto done;
	}
	*location = path_url(path, err);
	if (*location == NULL)
		unlink(path);
	ok = *location != NULL;
done:
	free(base);
	return ok;
}

/* --- purge --- */

/* Deeper trees than this are not floe's. */
#define PURGE_MAX_DEPTH 64

struct purge_state {
	long removed;
	long failed;
	char first_error[FLOE_ERROR_MESSAGE_MAX / 2];
};

static void purge_failed(struct purge_state *ps, const char *name, int e)
{

	if (ps->failed++ == 0)
		(void)snprintf(ps->first_error, sizeof(ps->first_error), "cannot remove %s: %s",
			       name, log_strerror(e));
}

/* Removes entry name of directory pfd and, when it is a directory,
 * everything below it. Never follows a symbolic link: a link is removed
 * as a link. */
static void remove_tree_at(int pfd, const char *name, int depth, struct purge_state *ps)
{
	int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			return;
		if (errno != ENOTDIR && errno != ELOOP) {
			purge_failed(ps, name, errno);
			return;
		}
		if (unlinkat(pfd, name, 0) == 0)
			ps->removed++;
		else if (errno != ENOENT)
			purge_failed(ps, name, errno);
		return;
	}
	if (depth >= PURGE_MAX_DEPTH) {
		close(fd);
		purge_failed(ps, name, ELOOP);
		return;
	}
	DIR *d = fdopendir(fd);
	if (d == NULL) {
		purge_failed(ps, name, errno);
		close(fd);
		return;
	}
	struct dirent *e;
	for (;;) {
		errno = 0;
		e = readdir(d);
		if (e == NULL)
			break;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		remove_tree_at(fd, e->d_name, depth + 1, ps);
	}
	if (errno != 0)
		purge_failed(ps, name, errno);
	closedir(d);
	if (unlinkat(pfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		purge_failed(ps, name, errno);
}

/* Opens the directory that holds the table directory rel (below the
 * warehouse), following no symbolic link below the warehouse root.
 * Returns the descriptor and the table directory's name in *last, -1
 * with *missing when a component does not exist, or -1 with err. */
static int open_parent_beneath(const char *warehouse_path, const char *rel, char *last,
			       size_t lastlen, bool *missing, struct floe_error *err)
{
	int fd = open(warehouse_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	*missing = false;
	if (fd < 0) {
		if (errno == ENOENT) {
			*missing = true;
			return -1;
		}
		floe_err(err, FE_INTERNAL, "cannot open the warehouse: %s", log_strerror(errno));
		return -1;
	}
	for (;;) {
		const char *slash = strchr(rel, '/');
		size_t len = slash ? (size_t)(slash - rel) : strlen(rel);
		if (len == 0 || len >= lastlen) {
			close(fd);
			floe_err(err, FE_BAD_REQUEST, "location has an empty or overlong segment");
			return -1;
		}
		memcpy(last, rel, len);
		last[len] = '\0';
		if (slash == NULL)
			return fd;
		int nfd = openat(fd, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		if (nfd < 0) {
			if (e == ENOENT) {
				*missing = true;
				return -1;
			}
			if (e == ELOOP || e == ENOTDIR) {
				floe_err(
					err, FE_BAD_REQUEST,
					"the location passes through a symbolic link or a file (%s); floe follows none",
					last);
				return -1;
			}
			floe_err(err, FE_INTERNAL, "cannot open %s: %s", last, log_strerror(e));
			return -1;
		}
		fd = nfd;
		rel = slash + 1;
	}
}

static enum fileio_purge_result local_purge(const char *table_location, const char *warehouse_path,
					    long *removed, struct floe_error *err)
{
	char *path = fileio_local_path(table_location, err);
	char last[NAME_MAX + 1];
	struct purge_state ps = { 0 };
	enum fileio_purge_result res = FILEIO_PURGE_RETRY;
	bool missing = false;
	int pfd = -1;
	struct stat st;

	*removed = 0;
	if (path == NULL)
		return FILEIO_PURGE_REFUSED;
	const char *rel = below(path, warehouse_path);
	if (rel == NULL) {
		floe_err(err, FE_BAD_REQUEST, "the location is outside the warehouse %s",
			 warehouse_path);
		res = FILEIO_PURGE_REFUSED;
		goto done;
	}
	pfd = open_parent_beneath(warehouse_path, rel, last, sizeof(last), &missing, err);
	if (pfd < 0) {
		res = missing ? FILEIO_PURGE_DONE
			      : (err->kind == FE_BAD_REQUEST ? FILEIO_PURGE_REFUSED
							     : FILEIO_PURGE_RETRY);
		goto done;
	}
	if (fstatat(pfd, last, &st, AT_SYMLINK_NOFOLLOW) != 0) {
		res = errno == ENOENT ? FILEIO_PURGE_DONE : FILEIO_PURGE_RETRY;
		if (res == FILEIO_PURGE_RETRY)
			floe_err(err, FE_INTERNAL, "cannot look at the table directory");
		goto done;
	}
	if (!S_ISDIR(st.st_mode)) {
		/* A link or a file where the table directory was: not ours
		 * to follow, and removing a link is harmless but hides what
		 * someone did; leave it and say so. */
		floe_err(err, FE_BAD_REQUEST,
			 "the table directory is a %s, not a directory; floe follows none",
			 S_ISLNK(st.st_mode) ? "symbolic link" : "file");
		res = FILEIO_PURGE_REFUSED;
		goto done;
	}
	remove_tree_at(pfd, last, 0, &ps);
	*removed = ps.removed;
	if (ps.failed > 0) {
		floe_err(err, FE_INTERNAL, "%ld entries could not be removed; first: %s", ps.failed,
			 ps.first_error);
		res = FILEIO_PURGE_RETRY;
		goto done;
	}
	if (fsync(pfd) != 0)
		log_warn("fileio", "purge of %s: cannot sync its parent directory", path);
	res = FILEIO_PURGE_DONE;
done:
	if (pfd >= 0)
		close(pfd);
	free(path);
	return res;
}

static long local_remove_stale_tmp(const char *table_location, const char *warehouse_path,
				   int min_age_s)
{
	struct floe_error err;
	char *path = fileio_local_path(table_location, &err);
	char last[NAME_MAX + 1];
	bool missing = false;
	long removed = 0;
	int pfd = -1, tfd = -1, mfd = -1;
	DIR *d = NULL;
	static const char suffix[] = ".metadata.json.tmp";
	time_t now = time(NULL);

	if (path == NULL)
		return 0;
	const char *rel = below(path, warehouse_path);
	if (rel == NULL)
		goto done;
	pfd = open_parent_beneath(warehouse_path, rel, last, sizeof(last), &missing, &err);
	if (pfd < 0)
		goto done;
	tfd = openat(pfd, last, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (tfd < 0)
		goto done;
	mfd = openat(tfd, "metadata", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (mfd < 0)
		goto done;
	d = fdopendir(mfd);
	if (d == NULL)
		goto done;
	mfd = -1; /* owned by d now */
	for (;;) {
		struct dirent *e = readdir(d);
		if (e == NULL)
			break;
		size_t nl = strlen(e->d_name);
		struct stat st;
		if (nl <= sizeof(suffix) - 1 ||
		    strcmp(e->d_name + nl - (sizeof(suffix) - 1), suffix) != 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode) || now - st.st_mtime < min_age_s)
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
			removed++;
			log_info("fileio", "removed orphan %s/metadata/%s", path, e->d_name);
		}
	}
done:
	if (d != NULL)
		closedir(d);
	if (mfd >= 0)
		close(mfd);
	if (tfd >= 0)
		close(tfd);
	if (pfd >= 0)
		close(pfd);
	free(path);
	return removed;
}

const struct fileio_backend fileio_local = {
	.scheme = "file",
	.check_beneath = local_check_beneath,
	.write_metadata = local_write_metadata,
	.write_metadata_in = local_write_metadata_in,
	.make_metadata_dir = local_make_metadata_dir,
	.write_new = local_write_new,
	.read = local_read,
	.remove = local_remove,
	.purge = local_purge,
	.remove_stale_tmp = local_remove_stale_tmp,
};
