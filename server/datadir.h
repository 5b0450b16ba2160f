/*
 * datadir.h - the lock that makes a data directory one floe's: a record
 * lock on <data dir>/floe.pid, held for the daemon's life and released
 * by the kernel when the process ends, kill -9 included.
 *
 * A floe with an embedded PostgreSQL locks the directory exclusively:
 * the cluster in it has one owner. Replicas on --database share it (its
 * keys and warehouse) and refuse only an owner with an embedded one.
 * Not for `floe auth` and `floe audit`, which run beside a daemon.
 */
#ifndef FLOE_DATADIR_H
#define FLOE_DATADIR_H

#include <stdbool.h>
#include <stddef.h>

/* Locks dir's floe.pid, exclusively or shared, without waiting. The
 * exclusive owner writes its pid and process start time into the file
 * (for an operator; the lock itself is what counts). Returns the open
 * descriptor holding the lock (close it with datadir_unlock), or -1 with
 * msg filled: another floe holds the directory (its pid named), or the
 * file cannot be opened or locked. */
int datadir_lock(const char *dir, bool exclusive, char *msg, size_t msglen)
	__attribute__((warn_unused_result));

/* Empties the file if this floe wrote it, releases the lock and sets *fd
 * to -1. Safe when *fd is -1. */
void datadir_unlock(int *fd, bool exclusive);

#endif
