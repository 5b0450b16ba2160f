/*
 * embedpg.c - runs initdb and postgres as children of floe. What this file
 * is not: a PostgreSQL manager; it knows one layout and one way to run:
 *   <data dir>/pg       the cluster
 *   <data dir>/run      the Unix socket (no TCP listener)
 *   <data dir>/postgres.log
 */
#include "embedpg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "log.h"
#include "store_admin.h"

#define PG_PORT "5432"

struct runas {
	bool drop;
	uid_t uid;
	gid_t gid;
	char name[64];
};

static char *path_join(const char *a, const char *b)
{
	size_t len = strlen(a) + strlen(b) + 2;
	char *p = malloc(len);

	if (p != NULL)
		(void)snprintf(p, len, "%s/%s", a, b);
	return p;
}

/* src as a single-quoted libpq conninfo value (caller frees). */
static char *conninfo_quote(const char *src)
{
	char *q = malloc(strlen(src) * 2 + 3);
	size_t n = 0;

	if (q == NULL)
		return NULL;
	q[n++] = '\'';
	for (const char *p = src; *p; p++) {
		if (*p == '\'' || *p == '\\')
			q[n++] = '\\';
		q[n++] = *p;
	}
	q[n++] = '\'';
	q[n] = '\0';
	return q;
}

static bool is_executable(const char *dir, const char *name)
{
	char path[4096];

	(void)snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, X_OK) == 0;
}

/* The directory holding initdb and postgres: the configured one, else the
 * first PATH entry with both, else the newest /usr/lib/postgresql/N/bin. */
static char *find_bindir(const struct floe_config *cfg)
{
	if (cfg->pg_bin_dir != NULL)
		return strdup(cfg->pg_bin_dir);

	const char *path = getenv("PATH");
	if (path != NULL) {
		char *copy = strdup(path);
		char *next = copy;
		while (next != NULL) {
			char *dir = next;
			char *colon = strchr(dir, ':');
			next = colon != NULL ? colon + 1 : NULL;
			if (colon != NULL)
				*colon = '\0';
			if (dir[0] == '\0')
				continue;
			if (is_executable(dir, "initdb") && is_executable(dir, "postgres")) {
				char *found = strdup(dir);
				free(copy);
				return found;
			}
		}
		free(copy);
	}

	DIR *d = opendir("/usr/lib/postgresql");
	long best = -1;
	if (d != NULL) {
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			char *end = NULL;
			long v = strtol(e->d_name, &end, 10);
			char bin[512];
			if (end == e->d_name || *end != '\0')
				continue;
			(void)snprintf(bin, sizeof(bin), "/usr/lib/postgresql/%s/bin", e->d_name);
			if (v > best && is_executable(bin, "initdb") &&
			    is_executable(bin, "postgres"))
				best = v;
		}
		closedir(d);
	}
	if (best < 0)
		return NULL;
	char bin[512];
	(void)snprintf(bin, sizeof(bin), "/usr/lib/postgresql/%ld/bin", best);
	return strdup(bin);
}

static bool resolve_runas(const struct floe_config *cfg, struct runas *ra)
{
	memset(ra, 0, sizeof(*ra));
	if (geteuid() != 0)
		return true;
	const char *candidates[2] = { cfg->pg_user ? cfg->pg_user : "postgres",
				      cfg->pg_user ? NULL : "nobody" };
	for (int i = 0; i < 2 && candidates[i] != NULL; i++) {
		struct passwd entry;
		struct passwd *pw = NULL;
		char buf[4096]; /* the strings of one passwd entry */
		if (getpwnam_r(candidates[i], &entry, buf, sizeof(buf), &pw) != 0 || pw == NULL ||
		    pw->pw_uid == 0)
			continue;
		ra->drop = true;
		ra->uid = pw->pw_uid;
		ra->gid = pw->pw_gid;
		(void)snprintf(ra->name, sizeof(ra->name), "%s", pw->pw_name);
		return true;
	}
	log_error(
		"pg",
		"floe runs as root and PostgreSQL refuses to: no unprivileged user %s to run it as (set --pg-user)",
		cfg->pg_user ? cfg->pg_user : "postgres or nobody");
	return false;
}

static bool make_dir(const char *path, mode_t mode, const struct runas *ra)
{
	if (mkdir(path, mode) != 0 && errno != EEXIST) {
		log_error("pg", "cannot create %s: %s", path, log_strerror(errno));
		return false;
	}
	if (ra->drop && chown(path, ra->uid, ra->gid) != 0) {
		log_error("pg", "cannot give %s to user %s: %s", path, ra->name,
			  log_strerror(errno));
		return false;
	}
	return true;
}

/*
 * Forks and execs argv as the run-as user with stdout and stderr appended
 * to logfd. The child gets an empty signal mask (floe blocks the signals
 * it waits for) and its own process group, so a terminal's Ctrl-C reaches
 * floe only and floe decides when PostgreSQL stops. It gets deathsig when
 * floe dies, even by SIGKILL: the kernel sends it when the forking thread
 * ends, so call this from the main thread only.
 */
static pid_t spawn(char *const argv[], const struct runas *ra, int logfd, const char *cwd,
		   int deathsig)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	sigset_t none;
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	(void)signal(SIGPIPE, SIG_DFL);
	setpgid(0, 0);
	if (ra->drop) {
		if (setgroups(0, NULL) != 0 || setgid(ra->gid) != 0 || setuid(ra->uid) != 0) {
			dprintf(logfd, "floe: cannot switch to user %s: %s\n", ra->name,
				log_strerror(errno));
			_exit(126);
		}
	}
	/* After the switch of user, which clears the setting. If floe died
	 * before it was set, nobody would send it: exit now. */
	if (prctl(PR_SET_PDEATHSIG, deathsig) != 0 || getppid() != parent) {
		dprintf(logfd, "floe: floe is gone; not starting %s\n", argv[0]);
		_exit(125);
	}
	if (chdir(cwd) != 0)
		dprintf(logfd, "floe: cannot enter %s: %s\n", cwd, log_strerror(errno));
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull >= 0)
		dup2(devnull, STDIN_FILENO);
	dup2(logfd, STDOUT_FILENO);
	dup2(logfd, STDERR_FILENO);
	execv(argv[0], argv);
	dprintf(logfd, "floe: cannot run %s: %s\n", argv[0], log_strerror(errno));
	_exit(127);
}

static bool run_initdb(const char *bindir, const char *pgdata, const struct runas *ra, int logfd,
		       const char *logfile)
{
	char *initdb = path_join(bindir, "initdb");
	char *argv[] = { initdb,         "-D", (char *)pgdata, "-U",          "floe",
			 "--auth=trust", "-E", "UTF8",         "--no-locale", NULL };
	int status = 0;
	pid_t pid;

	if (initdb == NULL)
		return false;
	log_info("pg", "initialising a new PostgreSQL cluster in %s", pgdata);
	pid = spawn(argv, ra, logfd, pgdata, SIGKILL);
	free(initdb);
	if (pid < 0) {
		log_error("pg", "cannot start initdb: %s", log_strerror(errno));
		return false;
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		log_error("pg", "initdb failed (status %d); see %s", status, logfile);
		return false;
	}
	return true;
}

static bool pid_gone(pid_t pid)
{
	char path[64];
	char line[256];
	FILE *f;
	bool zombie = false;

	if (kill(pid, 0) != 0 && errno == ESRCH)
		return true;
	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		return true;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "State:", 6) == 0) {
			zombie = strchr(line + 6, 'Z') != NULL;
			break;
		}
	}
	(void)fclose(f);
	return zombie;
}

/* Waits up to seconds for pid to end. */
static bool wait_gone(pid_t pid, int seconds)
{
	for (int i = 0; i < seconds * 20; i++) {
		if (pid_gone(pid))
			return true;
		struct timespec ts = { 0, 50L * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return pid_gone(pid);
}

/* The parent of process pid, or 0 when it cannot be read. */
static long parent_of(long pid)
{
	char path[64];
	char line[256];
	long parent = 0;
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "PPid:", 5) == 0) {
			parent = strtol(line + 5, NULL, 10);
			break;
		}
	}
	(void)fclose(f);
	return parent;
}

/* True when process pid is a floe (its command name). */
static bool is_floe(long pid)
{
	char path[64];
	char comm[64] = "";
	FILE *f;

	(void)snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
	f = fopen(path, "re");
	if (f == NULL)
		return false;
	if (fgets(comm, sizeof(comm), f) == NULL)
		comm[0] = '\0';
	(void)fclose(f);
	return strcmp(comm, "floe\n") == 0;
}

/*
 * A PostgreSQL left running on pgdata by an earlier floe (one that
 * crashed before it could stop it) keeps the next one from starting: when
 * postmaster.pid names a live process whose working directory is pgdata
 * (a postmaster runs in its data directory), stop it (immediate shutdown,
 * then SIGKILL) and wait until it is gone. The caller holds the data
 * directory's lock (datadir.h), so no live floe serves it; one that is
 * still the child of a live floe (a floe from before the lock) is left
 * alone. False when it would not go or is not left over.
 */
static bool stop_leftover(const char *pgdata)
{
	char path[4096];
	char cwd_link[64];
	char cwd[4096];
	char *want = NULL;
	char line[64];
	FILE *f;
	long pid = 0;
	bool ok = true;

	(void)snprintf(path, sizeof(path), "%s/postmaster.pid", pgdata);
	f = fopen(path, "r");
	if (f == NULL)
		return true;
	if (fgets(line, sizeof(line), f) != NULL)
		pid = strtol(line, NULL, 10);
	(void)fclose(f);
	if (pid <= 1 || pid == (long)getpid() || pid_gone((pid_t)pid))
		return true; /* stale: PostgreSQL itself replaces the file */
	(void)snprintf(cwd_link, sizeof(cwd_link), "/proc/%ld/cwd", pid);
	ssize_t n = readlink(cwd_link, cwd, sizeof(cwd) - 1);
	want = realpath(pgdata, NULL);
	if (n <= 0 || want == NULL) {
		log_warn("pg", "%s names process %ld, which cannot be inspected; starting anyway",
			 path, pid);
		goto done;
	}
	cwd[n] = '\0';
	if (strcmp(cwd, want) != 0)
		goto done; /* another process reuses the pid: the file is stale */
	long parent = parent_of(pid);
	if (parent > 1 && parent != (long)getpid() && is_floe(parent)) {
		log_error(
			"pg",
			"the PostgreSQL (pid %ld) on %s is run by another floe (pid %ld), which still runs; stop that floe first, or give this one its own --data-dir",
			pid, pgdata, parent);
		ok = false;
		goto done;
	}
	log_warn(
		"pg",
		"a PostgreSQL (pid %ld) left over from an earlier run still serves %s; stopping it (immediate shutdown)",
		pid, pgdata);
	kill((pid_t)pid, SIGQUIT);
	kill((pid_t)pid, SIGCONT);
	if (!wait_gone((pid_t)pid, 15)) {
		log_warn("pg",
			 "the left-over PostgreSQL (pid %ld) did not stop in 15 s; killing it",
			 pid);
		kill((pid_t)pid, SIGKILL);
		if (!wait_gone((pid_t)pid, 10)) {
			log_error(
				"pg",
				"the left-over PostgreSQL (pid %ld) on %s will not stop; stop it by hand",
				pid, pgdata);
			ok = false;
			goto done;
		}
	}
	log_info("pg", "the left-over PostgreSQL (pid %ld) has stopped", pid);
done:
	free(want);
	return ok;
}

bool embedpg_start(const struct floe_config *cfg, struct embedpg *pg)
{
	struct runas ra;
	char *bindir = NULL;
	char *postgres = NULL;
	char *version_file = NULL;
	int logfd = -1;
	bool ok = false;
	char sockopt[64];

	memset(pg, 0, sizeof(*pg));
	if (!resolve_runas(cfg, &ra))
		return false;
	bindir = find_bindir(cfg);
	if (bindir == NULL) {
		log_error(
			"pg",
			"no PostgreSQL server binaries (initdb, postgres) found in PATH or /usr/lib/postgresql/*/bin; install postgresql or set --pg-bin-dir");
		return false;
	}
	pg->pgdata = path_join(cfg->data_dir, "pg");
	pg->sockdir = path_join(cfg->data_dir, "run");
	pg->logfile = path_join(cfg->data_dir, "postgres.log");
	version_file = path_join(cfg->data_dir, "pg/PG_VERSION");
	postgres = path_join(bindir, "postgres");
	if (!pg->pgdata || !pg->sockdir || !pg->logfile || !version_file || !postgres)
		goto done;

	/* The socket path must fit sun_path. */
	if (strlen(pg->sockdir) + sizeof("/.s.PGSQL." PG_PORT) >
	    sizeof(((struct sockaddr_un *)0)->sun_path)) {
		log_error(
			"pg",
			"data directory path %s is too long for a Unix socket; use a shorter --data-dir",
			cfg->data_dir);
		goto done;
	}
	if (mkdir(cfg->data_dir, 0755) != 0 && errno != EEXIST) {
		log_error("pg", "cannot create data directory %s: %s", cfg->data_dir,
			  log_strerror(errno));
		goto done;
	}
	if (!make_dir(pg->pgdata, 0700, &ra) || !make_dir(pg->sockdir, 0700, &ra))
		goto done;
	logfd = open(pg->logfile, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (logfd < 0) {
		log_error("pg", "cannot open %s: %s", pg->logfile, log_strerror(errno));
		goto done;
	}
	if (access(version_file, F_OK) != 0 &&
	    !run_initdb(bindir, pg->pgdata, &ra, logfd, pg->logfile))
		goto done;

	(void)snprintf(sockopt, sizeof(sockopt), "unix_socket_permissions=0700");
	char *argv[] = { postgres, "-D", pg->pgdata,          "-k", pg->sockdir, "-p",
			 PG_PORT,  "-c", "listen_addresses=", "-c", sockopt,     NULL };
	if (!stop_leftover(pg->pgdata))
		goto done;
	/* SIGINT: PostgreSQL's fast shutdown, should floe die. */
	pg->pid = spawn(argv, &ra, logfd, pg->pgdata, SIGINT);
	if (pg->pid < 0) {
		log_error("pg", "cannot start postgres: %s", log_strerror(errno));
		pg->pid = 0;
		goto done;
	}
	log_info("pg", "started PostgreSQL (pid %d%s%s), log in %s", (int)pg->pid,
		 ra.drop ? ", as user " : "", ra.drop ? ra.name : "", pg->logfile);

	/* Wait until it accepts connections, or dies. */
	char *host = conninfo_quote(pg->sockdir);
	size_t clen = (host ? strlen(host) : 0) + 96;
	char *admin = malloc(clen);
	char *super = malloc(clen);
	pg->conninfo = malloc(clen);
	pg->owner_conninfo = malloc(clen);
	if (host == NULL || admin == NULL || super == NULL || pg->conninfo == NULL ||
	    pg->owner_conninfo == NULL) {
		free(host);
		free(admin);
		free(super);
		goto done;
	}
	/* The cluster's superuser (floe, from initdb) only sets up; floe
	 * serves as floe_runtime, which may not change the audit log. */
	(void)snprintf(admin, clen, "host=%s port=" PG_PORT " user=floe dbname=postgres", host);
	(void)snprintf(super, clen, "host=%s port=" PG_PORT " user=floe dbname=floe", host);
	(void)snprintf(pg->conninfo, clen, "host=%s port=" PG_PORT " user=floe_runtime dbname=floe",
		       host);
	(void)snprintf(pg->owner_conninfo, clen,
		       "host=%s port=" PG_PORT " user=floe_owner dbname=floe", host);
	free(host);
	bool up = false;
	for (int i = 0; i < 1200; i++) {
		int status;
		if (embedpg_exited(pg, &status)) {
			log_error("pg", "PostgreSQL exited during start-up (status %d); see %s",
				  status, pg->logfile);
			break;
		}
		if (PQping(admin) == PQPING_OK) {
			up = true;
			break;
		}
		struct timespec ts = { 0, 100L * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (!up) {
		if (pg->pid != 0)
			log_error("pg",
				  "PostgreSQL did not accept connections within 120 s; see %s",
				  pg->logfile);
		free(admin);
		free(super);
		goto done;
	}
	struct floe_error err;
	ok = store_ensure_database(admin, "floe", &err);
	free(admin);
	if (!ok)
		log_error("pg", "cannot create the floe database: %s", err.message);
	if (ok && !store_embedded_roles(super, &err)) {
		log_error("pg", "cannot set up the database roles: %s", err.message);
		ok = false;
	}
	free(super);
done:
	if (logfd >= 0)
		close(logfd);
	free(bindir);
	free(postgres);
	free(version_file);
	if (!ok)
		embedpg_stop(pg);
	return ok;
}

bool embedpg_exited(struct embedpg *pg, int *status)
{
	if (pg->pid <= 0)
		return false;
	pid_t r = waitpid(pg->pid, status, WNOHANG);
	if (r == pg->pid) {
		pg->pid = 0;
		return true;
	}
	return false;
}

void embedpg_stop(struct embedpg *pg)
{
	if (pg->pid > 0) {
		int status = 0;
		/* SIGINT: fast shutdown, clients disconnected, checkpoint. */
		kill(pg->pid, SIGINT);
		for (int i = 0; i < 600 && pg->pid > 0; i++) {
			if (embedpg_exited(pg, &status))
				break;
			struct timespec ts = { 0, 50L * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		if (pg->pid > 0) {
			log_warn("pg", "PostgreSQL did not stop in 30 s; sending SIGQUIT");
			kill(pg->pid, SIGQUIT);
			while (waitpid(pg->pid, &status, 0) < 0 && errno == EINTR)
				;
			pg->pid = 0;
		}
		log_info("pg", "PostgreSQL stopped");
	}
	free(pg->pgdata);
	free(pg->sockdir);
	free(pg->logfile);
	free(pg->conninfo);
	free(pg->owner_conninfo);
	memset(pg, 0, sizeof(*pg));
}
