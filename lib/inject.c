/*
 * inject.c - the injection points of inject.h: a fixed table of armed
 * names, set once at start-up and read-only after; a wait meets its
 * test through two files in the injection directory.
 */
#include "inject.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#define INJECT_MAX 16
#define INJECT_NAME_MAX 64

enum inject_action { INJECT_WAIT, INJECT_CRASH };

struct inject_point {
	char name[INJECT_NAME_MAX];
	enum inject_action action;
	long reached; /* under mu */
};

atomic_bool inject_armed;

static struct inject_point points[INJECT_MAX];
static int npoints;
static char inject_dir[512];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

#ifdef NDEBUG
bool inject_init(const char *spec, const char *dir, struct floe_error *err)
{
	(void)dir;
	if (spec == NULL || spec[0] == '\0')
		return true;
	return floe_err(err, FE_BAD_REQUEST,
			"FLOE_INJECTION_POINTS is set, but this floe was built without injection "
			"points (NDEBUG)");
}
#else
static bool add_point(const char *item, size_t len, struct floe_error *err)
{
	const char *colon = memchr(item, ':', len);
	size_t name_len = colon != NULL ? (size_t)(colon - item) : 0;
	const char *action = colon != NULL ? colon + 1 : "";
	size_t action_len = colon != NULL ? len - name_len - 1 : 0;

	if (colon == NULL || name_len == 0 || name_len >= INJECT_NAME_MAX)
		return floe_err(err, FE_BAD_REQUEST,
				"FLOE_INJECTION_POINTS: '%.*s' is not name:action", (int)len, item);
	if (npoints == INJECT_MAX)
		return floe_err(err, FE_BAD_REQUEST, "FLOE_INJECTION_POINTS: more than %d points",
				INJECT_MAX);
	struct inject_point *p = &points[npoints];
	if (action_len == 4 && memcmp(action, "wait", 4) == 0)
		p->action = INJECT_WAIT;
	else if (action_len == 5 && memcmp(action, "crash", 5) == 0)
		p->action = INJECT_CRASH;
	else
		return floe_err(err, FE_BAD_REQUEST,
				"FLOE_INJECTION_POINTS: action '%.*s' of %.*s is not wait or crash",
				(int)action_len, action, (int)name_len, item);
	memcpy(p->name, item, name_len);
	p->name[name_len] = '\0';
	npoints++;
	return true;
}

bool inject_init(const char *spec, const char *dir, struct floe_error *err)
{
	if (spec == NULL || spec[0] == '\0')
		return true;
	bool waits = false;
	for (const char *at = spec; *at != '\0';) {
		size_t len = strcspn(at, ",");
		if (len > 0 && !add_point(at, len, err))
			return false;
		at += len;
		if (*at == ',')
			at++;
	}
	for (int i = 0; i < npoints; i++)
		waits |= points[i].action == INJECT_WAIT;
	if (waits && (dir == NULL || dir[0] == '\0' || strlen(dir) >= sizeof(inject_dir) - 80))
		return floe_err(
			err, FE_BAD_REQUEST,
			"FLOE_INJECTION_POINTS has a wait: FLOE_INJECTION_DIR must name its "
			"directory");
	if (dir != NULL)
		(void)snprintf(inject_dir, sizeof(inject_dir), "%s", dir);
	for (int i = 0; i < npoints; i++)
		log_warn("inject", "injection point %s armed: %s", points[i].name,
			 points[i].action == INJECT_WAIT ? "wait" : "crash");
	atomic_store(&inject_armed, npoints > 0);
	return true;
}
#endif

/* Writes <dir>/<name>.reached with the count, through a rename so that
 * a test never reads it half written. */
static void note_reached(const char *name, long count)
{
	char path[640];
	char tmp[660];

	(void)snprintf(path, sizeof(path), "%s/%s.reached", inject_dir, name);
	(void)snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (f == NULL) {
		log_error("inject", "cannot write %s: %s", tmp, log_strerror(errno));
		return;
	}
	(void)fprintf(f, "%ld\n", count);
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		log_error("inject", "cannot write %s: %s", path, log_strerror(errno));
}

/* How long a wait waits for its test at most: a test that never wakes
 * its point fails on its own deadline, and floe goes on after this. */
#define INJECT_WAIT_MAX_MS (120LL * 1000)

/* Waits until <dir>/<name>.wakeup exists, and removes it. */
static void wait_wakeup(const char *name)
{
	char path[640];
	int64_t start = clock_mono_ms();

	(void)snprintf(path, sizeof(path), "%s/%s.wakeup", inject_dir, name);
	while (unlink(path) != 0) {
		if (clock_mono_ms() - start > INJECT_WAIT_MAX_MS) {
			log_error("inject", "injection point %s: no %s within %lld s; going on",
				  name, path, INJECT_WAIT_MAX_MS / 1000);
			return;
		}
		clock_sleep_ms(5);
	}
}

void inject_reached(const char *name)
{
	struct inject_point *p = NULL;
	long count;

	for (int i = 0; i < npoints && p == NULL; i++)
		if (strcmp(points[i].name, name) == 0)
			p = &points[i];
	if (p == NULL)
		return;
	if (p->action == INJECT_CRASH) {
		log_warn("inject", "injection point %s reached: killing floe (SIGKILL)", name);
		(void)raise(SIGKILL);
		return;
	}
	pthread_mutex_lock(&mu);
	count = ++p->reached;
	note_reached(name, count);
	pthread_mutex_unlock(&mu);
	log_warn("inject", "injection point %s reached (%ld): waiting for %s/%s.wakeup", name,
		 count, inject_dir, name);
	wait_wakeup(name);
	log_info("inject", "injection point %s: woken, going on", name);
}
