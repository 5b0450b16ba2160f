/*
 * jsonmem.h - what jansson holds, counted per thread: jsonmem_install
 * routes jansson's allocations through malloc and free with a counter of
 * the bytes each thread has allocated and not freed, so a caller can
 * measure what one parse keeps (the difference across it). Not a limit
 * by itself, and not for memory other than jansson's.
 */
#ifndef FLOE_JSONMEM_H
#define FLOE_JSONMEM_H

/* Makes jansson allocate through the counting functions. Call once at
 * start-up, before any thread uses jansson. */
void jsonmem_install(void);

/* The bytes jansson allocated on this thread minus those it freed on this
 * thread, each counted as the allocator's usable size plus a header; only
 * a difference of two readings on one thread means anything. 0 when
 * jsonmem_install was not called. */
long long jsonmem_thread_bytes(void);

#endif
