/*
 * datadir.c - the data directory's lock (datadir.h). A POSIX record lock
 * rather than O_EXCL: the kernel drops it with its process, so a floe
 * killed with SIGKILL leaves nothing a later start must judge stale, and
 * F_GETLK names the live holder. Not inherited over fork, so the embedded
 * PostgreSQL never holds it.
 */
#include "datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

#define DATADIR_LOCK_FILE "floe.pid"

/* The start time of process pid, in clock ticks after boot (field 22 of
 * /proc/<pid>/stat), or 0 when it cannot be read: with the pid, it names
 * one process even after the pid is reused. */
static unsigned long long process_start(long pid)
{
	char path[64];
	char buf[1024];
	unsigned long long start = 0;
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	(void)fclose(f);
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces and parentheses: count
	 * from the last ')', after which field 3 begins. */
	char *p = strrchr(buf, ')');
	if (p == NULL)
		return 0;
	p++;
	for (int field = 3; field < 22 && p != NULL; field++) {
		p = strchr(p + 1, ' ');
	}
	if (p != NULL)
		start = strtoull(p + 1, NULL, 10);
	return start;
}

/* The pid the file names (its first line), or 0. */
static long recorded_pid(int fd)
{
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/* The message for a directory another floe holds: the holder's pid as
 * the kernel reports it (0 when it runs in another pid namespace: then
 * the one the file records). */
static void held_message(const char *dir, int fd, const struct flock *holder, bool exclusive,
			 char *msg, size_t msglen)
{
	long pid = holder->l_pid > 0 ? (long)holder->l_pid : recorded_pid(fd);
	char who[48] = "another floe";

	if (pid > 0)
		(void)snprintf(who, sizeof(who), "another floe (pid %ld)", pid);
	(void)snprintf(msg, msglen,
		       "the data directory %s is in use by %s%s; stop that floe first, or give "
		       "this one its own --data-dir",
		       dir, who,
		       holder->l_type == F_WRLCK ? ", which runs its embedded PostgreSQL there"
		       : exclusive               ? ", and an embedded PostgreSQL needs it alone"
						 : "");
}

static bool write_owner(int fd)
{
	char buf[96];
	long pid = (long)getpid();
	int n = snprintf(buf, sizeof(buf), "%ld\n%llu\n", pid, process_start(pid));

	if (ftruncate(fd, 0) != 0)
		return false;
	return n > 0 && pwrite(fd, buf, (size_t)n, 0) == (ssize_t)n;
}

int datadir_lock(const char *dir, bool exclusive, char *msg, size_t msglen)
{
	char path[4096];
	int fd = -1;

	if ((size_t)snprintf(path, sizeof(path), "%s/" DATADIR_LOCK_FILE, dir) >= sizeof(path)) {
		(void)snprintf(msg, msglen, "the data directory path %s is too long", dir);
		return -1;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		(void)snprintf(msg, msglen, "cannot open %s: %s", path, log_strerror(errno));
		return -1;
	}
	/* A holder may let go between the refused lock and the question who
	 * holds it: ask again, a few times. */
	for (int attempt = 0; attempt < 5; attempt++) {
		struct flock want = { .l_type = exclusive ? F_WRLCK : F_RDLCK,
				      .l_whence = SEEK_SET };
		if (fcntl(fd, F_SETLK, &want) == 0) {
			if (exclusive && !write_owner(fd))
				log_warn("main", "cannot record floe's pid in %s: %s", path,
					 log_strerror(errno));
			return fd;
		}
		if (errno != EACCES && errno != EAGAIN) {
			(void)snprintf(msg, msglen, "cannot lock %s: %s", path,
				       log_strerror(errno));
			goto fail;
		}
		struct flock holder = want;
		if (fcntl(fd, F_GETLK, &holder) != 0) {
			(void)snprintf(msg, msglen, "cannot lock %s: %s", path,
				       log_strerror(errno));
			goto fail;
		}
		if (holder.l_type != F_UNLCK) {
			held_message(dir, fd, &holder, exclusive, msg, msglen);
			goto fail;
		}
	}
	(void)snprintf(msg, msglen, "cannot lock %s: it is taken and released over and over", path);
fail:
	close(fd);
	return -1;
}

void datadir_unlock(int *fd, bool exclusive)
{
	if (*fd < 0)
		return;
	/* The lock is still held: no other floe can have written it. */
	if (exclusive && ftruncate(*fd, 0) != 0)
		log_warn("main", "cannot empty the data directory's lock file: %s",
			 log_strerror(errno));
	close(*fd);
	*fd = -1;
}
