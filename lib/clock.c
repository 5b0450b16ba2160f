/*
 * clock.c - the monotonic clock and sleeping, with a virtual stand-in for
 * tests (clock.h).
 */
#include "clock.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <time.h>

static atomic_bool virtual_on;
static _Atomic int64_t virtual_now;
static _Atomic int64_t virtual_slept;

int64_t clock_mono_ms(void)
{
	if (atomic_load(&virtual_on))
		return atomic_load(&virtual_now);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void clock_sleep_us(int64_t us)
{
	if (us <= 0)
		return;
	if (atomic_load(&virtual_on)) {
		int64_t ms = (us + 999) / 1000;
		atomic_fetch_add(&virtual_now, ms);
		atomic_fetch_add(&virtual_slept, ms);
		return;
	}
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void clock_sleep_ms(int64_t ms)
{
	if (ms > 0)
		clock_sleep_us(ms * 1000);
}

void clock_use_virtual(int64_t start_ms)
{
	atomic_store(&virtual_now, start_ms);
	atomic_store(&virtual_slept, 0);
	atomic_store(&virtual_on, true);
}

void clock_use_real(void)
{
	atomic_store(&virtual_on, false);
}

void clock_advance_ms(int64_t ms)
{
	if (ms > 0)
		atomic_fetch_add(&virtual_now, ms);
}

int64_t clock_virtual_slept_ms(void)
{
	return atomic_load(&virtual_slept);
}
