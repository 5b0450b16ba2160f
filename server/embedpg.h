/*
 * embedpg.h - the embedded PostgreSQL: a private cluster under the data
 * directory, run as a child process that listens only on a Unix socket.
 *
 * Used when no database URL is configured. When floe runs as root the
 * cluster is owned by, and the server runs as, an unprivileged user,
 * because initdb and postgres refuse to run as root.
 */
#ifndef FLOE_EMBEDPG_H
#define FLOE_EMBEDPG_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"

struct embedpg {
	pid_t pid; /* the postgres child, 0 when not running */
	char *pgdata;
	char *sockdir;
	char *logfile;
	char *conninfo;       /* to the floe database, as floe_runtime */
	char *owner_conninfo; /* the same as floe_owner (migrations) */
};

/* Initialises the cluster if needed, stops a postgres left running on it
 * by an earlier floe, starts postgres, waits until it accepts connections
 * and creates the floe database and its roles (floe_owner owns the
 * objects, floe_runtime is floe's login). Logs and returns false on
 * failure (the child, if started, is stopped). Call from the main thread:
 * the child gets a fast shutdown when the thread that started it ends,
 * which must be when floe ends, SIGKILL included. */
bool embedpg_start(const struct floe_config *cfg, struct embedpg *pg)
	__attribute__((warn_unused_result));

/* True (and *status filled) when the child has exited; reaps it. */
bool embedpg_exited(struct embedpg *pg, int *status);

/* Stops the child (fast shutdown, then immediate after a grace period)
 * and frees pg's strings. Safe when never started. */
void embedpg_stop(struct embedpg *pg);

#endif
