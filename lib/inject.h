/*
 * inject.h - injection points: named lines where a test makes floe stop
 * and wait for it, or die as kill -9 would, so that a test waits on the
 * exact event instead of a margin of time (PostgreSQL's INJECTION_POINT
 * is the model).
 *
 * Compiled in only where assertions are (without NDEBUG: the test and
 * sanitizer builds; the container image has none), and armed only by
 * FLOE_INJECTION_POINTS at start-up, "name:action[,name:action...]":
 *   wait   each time the point is reached, floe writes <dir>/<name>.reached
 *          (the times reached so far) and waits until <dir>/<name>.wakeup
 *          exists, which it removes before it goes on;
 *   crash  floe logs the point and kills itself with SIGKILL.
 * <dir> is FLOE_INJECTION_DIR. Unarmed, a point costs one load.
 * The points: docs/architecture.md, "Injection points".
 */
#ifndef FLOE_INJECT_H
#define FLOE_INJECT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "error.h"

/* Arms the points spec names; dir is where waits meet their test. False
 * with err set on a malformed spec, or in a build without points. */
bool inject_init(const char *spec, const char *dir, struct floe_error *err) FLOE_WUR;

/* True once inject_init armed a point. */
extern atomic_bool inject_armed;

/* The point name was reached: what it is armed for, if anything. */
void inject_reached(const char *name);

#ifdef NDEBUG
#define INJECTION_POINT(name) ((void)0)
#else
#define INJECTION_POINT(name) \
	(atomic_load_explicit(&inject_armed, memory_order_relaxed) ? inject_reached(name) : (void)0)
#endif

#endif
