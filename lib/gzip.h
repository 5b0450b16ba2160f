/*
 * gzip.h - gzip answers without compressing at answer time. A large text
 * (a table's metadata) is deflated once, when it is written, into a
 * "part": raw deflate ended by a sync flush, so it stops on a byte
 * boundary without a final block. An answer that wraps the text in a
 * small envelope is then one gzip member made of the envelope's head in
 * stored (uncompressed) deflate blocks, the part as it is, the tail in a
 * final stored block, and the CRC-32 of the whole joined with
 * crc32_combine(). Also: which encodings a client accepts, and whole
 * answers compressed on the fly.
 *
 * Not a zlib wrapper for anything else; no I/O.
 */
#ifndef FLOE_GZIP_H
#define FLOE_GZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A text deflated on its own (see above). */
struct gzip_part {
	unsigned char *data; /* raw deflate, ended by a sync flush */
	size_t len;          /* bytes of data */
	uint32_t crc;        /* CRC-32 of the text */
	size_t text_len;     /* bytes of the text */
};

/* Deflates len bytes of text into part (part->data is new, the caller
 * frees it with gzip_part_clear). False when out of memory. */
bool gzip_part_make(const char *text, size_t len, struct gzip_part *part);

/* Frees part->data and empties part. */
void gzip_part_clear(struct gzip_part *part);

/*
 * One gzip member whose content is head, then the text of part, then
 * tail (new, *len bytes; the caller frees). No compression happens: head
 * and tail are stored as they are (they are small), part is copied. NULL
 * when out of memory.
 */
unsigned char *gzip_wrap(const char *head, size_t head_len, const struct gzip_part *part,
			 const char *tail, size_t tail_len, size_t *len);

/* len bytes of data as one gzip member, compressed now at a fast level
 * (new, *out_len bytes; the caller frees). NULL when out of memory. */
unsigned char *gzip_compress(const char *data, size_t len, size_t *out_len);

/*
 * Whether an Accept-Encoding header value admits gzip (RFC 9110 section
 * 12.5.3): "gzip" or "x-gzip" with a q-value above 0, or "*" above 0 when
 * gzip is not named. Case-insensitive; NULL (no header) admits none.
 */
bool gzip_accepted(const char *accept_encoding);

#endif
