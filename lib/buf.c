/*
 * buf.c - the capped growable buffer (buf.h). Capacity doubles, so n
 * bytes appended one by one cost O(n) copies; it is allocated one byte
 * larger than cap for the NUL.
 */
#include "buf.h"

#include <stdlib.h>
#include <string.h>

void buf_init(struct buf *b, size_t max)
{
	memset(b, 0, sizeof(*b));
	b->max = max;
}

enum buf_status buf_reserve(struct buf *b, size_t want)
{
	if (b->len >= b->max)
		return BUF_FULL;
	if (want > b->max - b->len)
		want = b->max - b->len;
	if (b->cap - b->len >= want && b->data != NULL)
		return BUF_OK;
	size_t cap = b->cap > b->max / 2 ? b->max : b->cap * 2;
	if (cap < b->len + want)
		cap = b->len + want;
	char *nd = realloc(b->data, cap + 1);
	if (nd == NULL)
		return BUF_NOMEM;
	b->data = nd;
	b->cap = cap;
	b->data[b->len] = '\0';
	return BUF_OK;
}

void buf_commit(struct buf *b, size_t n)
{
	b->len += n;
	b->data[b->len] = '\0';
}

enum buf_status buf_append(struct buf *b, const void *p, size_t n)
{
	if (b->status != BUF_OK)
		return b->status;
	if (n > b->max - b->len) {
		b->status = BUF_FULL;
		return b->status;
	}
	if (n == 0)
		return BUF_OK;
	b->status = buf_reserve(b, n);
	if (b->status != BUF_OK)
		return b->status;
	memcpy(b->data + b->len, p, n);
	buf_commit(b, n);
	return BUF_OK;
}

char *buf_take(struct buf *b, size_t *len)
{
	char *data = b->data;

	*len = b->len;
	buf_init(b, b->max);
	return data;
}

void buf_free(struct buf *b)
{
	free(b->data);
	buf_init(b, b->max);
}
