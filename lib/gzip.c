/*
 * gzip.c - deflated parts, gzip members around them, on-the-fly gzip and
 * Accept-Encoding (gzip.h). zlib does the compressing and the CRC-32
 * arithmetic; the stored blocks and the member's frame are written here
 * (RFC 1951 section 3.2.4, RFC 1952 section 2.3).
 */
#include "gzip.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* The most bytes one stored deflate block holds. */
#define STORED_MAX 65535u
/* A stored block's header: the block type byte, LEN and NLEN. */
#define STORED_HEADER 5u
/* The gzip header and trailer (RFC 1952). */
#define GZIP_HEADER 10u
#define GZIP_TRAILER 8u
/* The most bytes handed to zlib at once (its counts are unsigned int). */
#define ZLIB_CHUNK (1u << 30)

static const unsigned char gzip_header[GZIP_HEADER] = {
	0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, /* deflate, no name, no time, OS unknown */
};

/* Deflates len bytes of data (at most ZLIB_CHUNK) into a new buffer
 * (*out, *out_len) with the given window bits (negative: raw deflate) and
 * level, ending the stream with flush (Z_SYNC_FLUSH: byte-aligned and
 * open; Z_FINISH: final). */
static bool deflate_all(const char *data, size_t len, int window_bits, int level, int flush,
			unsigned char **out, size_t *out_len)
{
	z_stream zs;
	unsigned char *buf = NULL;
	bool ok = false;

	*out = NULL;
	*out_len = 0;
	if (len > ZLIB_CHUNK)
		return false;
	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, level, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return false;
	/* deflateBound covers a finished stream; a sync flush adds at most
	 * one empty stored block, a gzip frame its 18 bytes. */
	size_t cap = (size_t)deflateBound(&zs, (uLong)len) + 64;
	buf = malloc(cap);
	if (buf == NULL || cap > ZLIB_CHUNK)
		goto done;
	zs.next_in = (unsigned char *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	zs.next_out = buf;
	zs.avail_out = (uInt)cap;
	int rc = deflate(&zs, flush);
	/* All input taken and, for a sync flush, room left over: nothing is
	 * still pending inside zlib. */
	if (zs.avail_in != 0 || (flush == Z_FINISH ? rc != Z_STREAM_END : zs.avail_out == 0))
		goto done;
	*out_len = cap - zs.avail_out;
	*out = buf;
	buf = NULL;
	ok = true;
done:
	deflateEnd(&zs);
	free(buf);
	return ok;
}

/* The CRC-32 of len bytes continuing crc, in chunks zlib can count. */
static uint32_t crc_of(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;
	uLong c = crc;

	while (len > 0) {
		uInt n = len > ZLIB_CHUNK ? ZLIB_CHUNK : (uInt)len;
		c = crc32(c, p, n);
		p += n;
		len -= n;
	}
	return (uint32_t)c;
}

bool gzip_part_make(const char *text, size_t len, struct gzip_part *part)
{
	memset(part, 0, sizeof(*part));
	if (!deflate_all(text, len, -MAX_WBITS, Z_DEFAULT_COMPRESSION, Z_SYNC_FLUSH, &part->data,
			 &part->len))
		return false;
	part->crc = crc_of(0, text, len);
	part->text_len = len;
	return true;
}

void gzip_part_clear(struct gzip_part *part)
{
	free(part->data);
	memset(part, 0, sizeof(*part));
}

/* The bytes len bytes take as stored blocks (at least one block). */
static size_t stored_size(size_t len)
{
	size_t blocks = len == 0 ? 1 : (len + STORED_MAX - 1) / STORED_MAX;
	return blocks * STORED_HEADER + len;
}

/* Writes len bytes of data at p as stored blocks, the last one final when
 * final is set; returns the end. A stored block starts on a byte
 * boundary, which the gzip header and a sync-flushed part both leave. */
static unsigned char *put_stored(unsigned char *p, const char *data, size_t len, bool final)
{
	do {
		size_t n = len > STORED_MAX ? STORED_MAX : len;
		bool last = n == len;

		*p++ = final && last ? 1 : 0; /* BFINAL, BTYPE 00, padding */
		*p++ = (unsigned char)(n & 0xff);
		*p++ = (unsigned char)(n >> 8);
		*p++ = (unsigned char)(~n & 0xff);
		*p++ = (unsigned char)((~n >> 8) & 0xff);
		memcpy(p, data, n);
		p += n;
		data += n;
		len -= n;
	} while (len > 0);
	return p;
}

static unsigned char *put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		*p++ = (unsigned char)(v >> (8 * i));
	return p;
}

unsigned char *gzip_wrap(const char *head, size_t head_len, const struct gzip_part *part,
			 const char *tail, size_t tail_len, size_t *len)
{
	size_t total = GZIP_HEADER + stored_size(head_len) + part->len + stored_size(tail_len) +
		       GZIP_TRAILER;
	unsigned char *out = malloc(total);
	unsigned char *p = out;

	*len = 0;
	if (out == NULL)
		return NULL;
	memcpy(p, gzip_header, GZIP_HEADER);
	p += GZIP_HEADER;
	p = put_stored(p, head, head_len, false);
	memcpy(p, part->data, part->len);
	p += part->len;
	p = put_stored(p, tail, tail_len, true);
	uint32_t crc = crc_of(0, head, head_len);
	crc = (uint32_t)crc32_combine(crc, part->crc, (z_off_t)part->text_len);
	crc = crc_of(crc, tail, tail_len);
	p = put_le32(p, crc);
	/* ISIZE is the length modulo 2^32. */
	p = put_le32(p, (uint32_t)(head_len + part->text_len + tail_len));
	*len = (size_t)(p - out);
	return out;
}

unsigned char *gzip_compress(const char *data, size_t len, size_t *out_len)
{
	unsigned char *out = NULL;

	/* Window bits 15 + 16: zlib writes the gzip frame itself. */
	if (!deflate_all(data, len, MAX_WBITS + 16, 1, Z_FINISH, &out, out_len))
		return NULL;
	return out;
}

/* Skips optional whitespace. */
static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* The q-value of the element whose parameters start at p (just after its
 * coding), in thousandths; *end: the element's end (',' or NUL). A
 * malformed q counts as 0: the client did not clearly ask for it. */
static int element_q(const char *p, const char **end)
{
	int q = 1000;

	for (;;) {
		p = skip_ows(p);
		if (*p != ';')
			break;
		p = skip_ows(p + 1);
		size_t n = strcspn(p, "=;,");
		bool is_q = n > 0 && strncasecmp(p, "q", 1) == 0 &&
			    (n == 1 || strspn(p + 1, " \t") == n - 1);
		p += n;
		if (*p != '=')
			continue;
		p = skip_ows(p + 1);
		size_t vlen = strcspn(p, ";, \t");
		if (is_q) {
			/* qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ) */
			int v = -1;
			if (vlen >= 1 && (p[0] == '0' || p[0] == '1') &&
			    (vlen == 1 || (p[1] == '.' && vlen <= 5))) {
				v = (p[0] - '0') * 1000;
				int scale = 100;
				for (size_t i = 2; i < vlen && v >= 0; i++, scale /= 10) {
					if (p[i] < '0' || p[i] > '9')
						v = -1;
					else
						v += (p[i] - '0') * scale;
				}
			}
			q = v < 0 || v > 1000 ? 0 : v;
		}
		p += vlen;
	}
	while (*p != '\0' && *p != ',')
		p++;
	*end = p;
	return q;
}

bool gzip_accepted(const char *accept_encoding)
{
	int gzip_q = -1; /* -1: not named */
	int star_q = -1;

	if (accept_encoding == NULL)
		return false;
	for (const char *p = accept_encoding; *p != '\0';) {
		p = skip_ows(p);
		if (*p == ',') {
			p++;
			continue;
		}
		size_t n = strcspn(p, ";, \t");
		const char *end = p;
		bool gz = (n == 4 && strncasecmp(p, "gzip", 4) == 0) ||
			  (n == 6 && strncasecmp(p, "x-gzip", 6) == 0);
		bool star = n == 1 && *p == '*';
		int q = element_q(p + n, &end);
		if (gz && q > gzip_q)
			gzip_q = q;
		if (star && q > star_q)
			star_q = q;
		p = end;
	}
	if (gzip_q >= 0)
		return gzip_q > 0;
	return star_q > 0;
}
