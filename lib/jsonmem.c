/*
 * jsonmem.c - jansson's allocations counted per thread (jsonmem.h). The
 * counting uses glibc's malloc_usable_size, so no header is added to a
 * block and a block freed with plain free() (json_dumps' text) is fine.
 */
#include "jsonmem.h"

#include <malloc.h>
#include <stdlib.h>

#include <jansson.h>

/* What malloc keeps beside each block (glibc: one size word, rounded). */
#define JSONMEM_BLOCK_OVERHEAD 16

static _Thread_local long long thread_bytes;

static void *jsonmem_malloc(size_t n)
{
	void *p = malloc(n);

	if (p != NULL)
		thread_bytes += (long long)malloc_usable_size(p) + JSONMEM_BLOCK_OVERHEAD;
	return p;
}

static void jsonmem_free(void *p)
{
	if (p == NULL)
		return;
	thread_bytes -= (long long)malloc_usable_size(p) + JSONMEM_BLOCK_OVERHEAD;
	free(p);
}

void jsonmem_install(void)
{
	json_set_alloc_funcs(jsonmem_malloc, jsonmem_free);
}

long long jsonmem_thread_bytes(void)
{
	return thread_bytes;
}
