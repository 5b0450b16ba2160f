/*
 * clock.h - the one place floe reads the monotonic clock and sleeps, so
 * that a test can stand a virtual clock in for the real one.
 *
 * Code that waits (settling an unknown commit, backing off between
 * colliding writers or S3 retries) asks clock_mono_ms() for the time and
 * clock_sleep_ms() to wait. The daemon uses the real clock. A unit test
 * may install a virtual clock (clock_use_virtual()): sleeping then
 * advances the virtual time at once, so a wait of ten seconds costs
 * nothing and the code still sees ten seconds pass.
 */
#ifndef FLOE_CLOCK_H
#define FLOE_CLOCK_H

#include <stdint.h>

/* Milliseconds on the monotonic clock (or the virtual one). */
int64_t clock_mono_ms(void);

/* Waits ms milliseconds, or us microseconds (nothing when <= 0). A signal
 * does not cut the wait short. With the virtual clock: advances it by the
 * wait (rounded up to a millisecond) and returns at once. */
void clock_sleep_ms(int64_t ms);
void clock_sleep_us(int64_t us);

/* Tests only. Replaces the real clock by a virtual one that starts at
 * start_ms and moves only when something sleeps or clock_advance_ms() is
 * called; clock_use_real() puts the real clock back. The switch is not
 * meant to race with threads that read the clock. */
void clock_use_virtual(int64_t start_ms);
void clock_use_real(void);
void clock_advance_ms(int64_t ms);

/* Tests only: the milliseconds slept on the virtual clock since
 * clock_use_virtual(). */
int64_t clock_virtual_slept_ms(void);

#endif
