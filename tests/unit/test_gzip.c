/* gzip answers: a member wrapped around a part deflated beforehand is one
 * valid gzip member of exactly head + text + tail; Accept-Encoding. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "gzip.h"

/* Inflates one gzip member (zlib checks the CRC-32 and ISIZE) and
 * insists it is one member and nothing after. */
static char *gunzip(const unsigned char *data, size_t len, size_t *out_len)
{
	z_stream zs;
	size_t cap = 1 << 20;
	char *out = malloc(cap);

	memset(&zs, 0, sizeof(zs));
	cr_assert_eq(inflateInit2(&zs, MAX_WBITS + 16), Z_OK);
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (uInt)len;
	zs.next_out = (unsigned char *)out;
	zs.avail_out = (uInt)cap;
	int rc = inflate(&zs, Z_FINISH);
	cr_assert_eq(rc, Z_STREAM_END, "inflate: %d %s", rc, zs.msg ? zs.msg : "");
	cr_assert_eq(zs.avail_in, 0, "bytes after the gzip member");
	*out_len = cap - zs.avail_out;
	inflateEnd(&zs);
	return out;
}

/* A text that compresses: JSON-like and repetitive. */
static char *sample(size_t len)
{
	char *t = malloc(len + 1);

	for (size_t i = 0; i < len; i++)
		t[i] = "{\"snapshot-id\":12345,\"summary\":{\"operation\":\"append\"}},"[i % 56];
	t[len] = '\0';
	return t;
}

static void check_wrap(size_t head_len, size_t text_len, size_t tail_len)
{
	char *head = sample(head_len), *text = sample(text_len), *tail = sample(tail_len);
	struct gzip_part part;
	size_t len = 0, plain_len = 0;

	cr_assert(gzip_part_make(text, text_len, &part));
	cr_assert_eq(part.text_len, text_len);
	cr_assert_eq(part.crc, (uint32_t)crc32(0, (unsigned char *)text, (uInt)text_len));
	unsigned char *gz = gzip_wrap(head, head_len, &part, tail, tail_len, &len);
	cr_assert_not_null(gz);
	char *plain = gunzip(gz, len, &plain_len);
	cr_assert_eq(plain_len, head_len + text_len + tail_len);
	cr_assert(memcmp(plain, head, head_len) == 0);
	cr_assert(memcmp(plain + head_len, text, text_len) == 0);
	cr_assert(memcmp(plain + head_len + text_len, tail, tail_len) == 0);
	if (text_len > 10000)
		cr_assert_lt(part.len, text_len / 10, "the part is not compressed");
	free(plain);
	free(gz);
	gzip_part_clear(&part);
	free(head);
	free(text);
	free(tail);
}

Test(gzip, wrapped_member_is_head_text_tail)
{
	check_wrap(40, 300000, 13);
	check_wrap(0, 1, 0);
	check_wrap(1, 0, 1);
	/* Heads and tails longer than one stored block. */
	check_wrap(70000, 5000, 140000);
}

Test(gzip, compress_on_the_fly)
{
	char *text = sample(200000);
	size_t len = 0, plain_len = 0;
	unsigned char *gz = gzip_compress(text, 200000, &len);

	cr_assert_not_null(gz);
	cr_assert_lt(len, 20000);
	char *plain = gunzip(gz, len, &plain_len);
	cr_assert_eq(plain_len, 200000);
	cr_assert(memcmp(plain, text, plain_len) == 0);
	free(plain);
	free(gz);
	free(text);
}

Test(gzip, accept_encoding)
{
	static const char *const yes[] = {
		"gzip",
		"GZIP",
		"deflate, gzip",
		"gzip;q=0.5",
		"gzip ; q=1.0",
		"br;q=1, gzip;q=0.001",
		"x-gzip",
		"*",
		"identity, *;q=0.1",
		"gzip;level=1;q=0.2",
		"gzip, deflate, br",
	};
	static const char *const no[] = {
		"",           "identity", "deflate, br", "gzip;q=0",    "gzip;q=0.000",
		"GZip; Q=0",  "*;q=0",    "gzip;q=0, *", "*, gzip;q=0", "gzipx",
		"x-gzip;q=0", "gzip;q=2", "gzip;q=1.5",  "gzip;q=abc",  "agzip",
	};

	cr_assert_not(gzip_accepted(NULL));
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		cr_assert(gzip_accepted(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		cr_assert_not(gzip_accepted(no[i]), "%s", no[i]);
}
