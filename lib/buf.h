/*
 * buf.h - a growable byte buffer with a cap. What floe reads from a file
 * or a peer, or builds to write, never grows past the size its caller
 * allows, and a failed append is remembered, so a builder checks once at
 * the end.
 */
#ifndef FLOE_BUF_H
#define FLOE_BUF_H

#include <stddef.h>

enum buf_status { BUF_OK, BUF_FULL, BUF_NOMEM };

struct buf {
	char *data; /* len bytes and a NUL; NULL until room is made */
	size_t len;
	size_t cap;             /* the bytes data can hold, the NUL not counted */
	size_t max;             /* len never passes this */
	enum buf_status status; /* the first failure; appends after one do nothing */
};

/* An empty buffer that holds at most max bytes. */
void buf_init(struct buf *b, size_t max);

/* Makes room for want more bytes, or for as many as max still allows, so
 * that the bytes from data + len up to data + cap may be written (then
 * counted with buf_commit). BUF_FULL when len is max already, BUF_NOMEM
 * when memory ran out; b keeps what it holds either way. */
enum buf_status buf_reserve(struct buf *b, size_t want);

/* Counts n bytes written after buf_reserve (n <= cap - len) and ends the
 * data with a NUL. */
void buf_commit(struct buf *b, size_t n);

/* Appends n bytes, all or none: BUF_FULL when they would take len past
 * max, BUF_NOMEM when memory ran out. A failure stays in b->status and
 * makes later appends fail the same way. */
enum buf_status buf_append(struct buf *b, const void *p, size_t n);

/* Hands the data over (NUL-terminated, the caller frees; NULL when no
 * room was ever made), its length in *len, and empties b. */
char *buf_take(struct buf *b, size_t *len);

/* Frees the data and empties b. */
void buf_free(struct buf *b);

#endif
