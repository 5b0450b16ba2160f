/*
 * test_buf.c - the capped growable buffer: it grows to what is appended,
 * never past its cap, keeps its first failure, and reads into reserved
 * room.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "buf.h"

Test(buf, appends_grow_and_stay_nul_terminated)
{
	struct buf b;
	char chunk[100];

	buf_init(&b, 1 << 20);
	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < 1000; i++)
		cr_assert_eq(buf_append(&b, chunk, sizeof(chunk)), BUF_OK);
	cr_assert_eq(b.len, 100000);
	cr_assert_geq(b.cap, b.len);
	cr_assert_eq(b.data[b.len], '\0');
	cr_assert_eq(strspn(b.data, "x"), 100000);
	buf_free(&b);
	cr_assert_null(b.data);
	cr_assert_eq(b.len, 0);
}

Test(buf, the_cap_is_exact_and_a_refused_append_adds_nothing)
{
	struct buf b;

	buf_init(&b, 10);
	cr_assert_eq(buf_append(&b, "0123456789", 10), BUF_OK);
	cr_assert_eq(buf_append(&b, "a", 1), BUF_FULL);
	cr_assert_eq(b.len, 10);
	cr_assert_str_eq(b.data, "0123456789");
	buf_free(&b);

	buf_init(&b, 10);
	cr_assert_eq(buf_append(&b, "01234", 5), BUF_OK);
	cr_assert_eq(buf_append(&b, "567890", 6), BUF_FULL);
	cr_assert_str_eq(b.data, "01234");
	buf_free(&b);
}

Test(buf, a_failure_is_sticky)
{
	struct buf b;

	buf_init(&b, 4);
	cr_assert_eq(buf_append(&b, "abcde", 5), BUF_FULL);
	cr_assert_eq(buf_append(&b, "a", 1), BUF_FULL);
	cr_assert_eq(b.status, BUF_FULL);
	cr_assert_eq(b.len, 0);
	buf_free(&b);
}

Test(buf, reserve_gives_room_up_to_the_cap)
{
	struct buf b;
	size_t len = 0;

	buf_init(&b, 8);
	cr_assert_eq(buf_reserve(&b, 5), BUF_OK);
	cr_assert_geq(b.cap - b.len, 5);
	memcpy(b.data, "hello", 5);
	buf_commit(&b, 5);
	cr_assert_eq(buf_reserve(&b, 100), BUF_OK);
	cr_assert_eq(b.cap, 8);
	memcpy(b.data + b.len, "!!!", 3);
	buf_commit(&b, 3);
	cr_assert_eq(buf_reserve(&b, 1), BUF_FULL);
	char *data = buf_take(&b, &len);
	cr_assert_eq(len, 8);
	cr_assert_str_eq(data, "hello!!!");
	cr_assert_null(b.data);
	free(data);
}

Test(buf, an_empty_reserve_still_makes_a_string)
{
	struct buf b;

	buf_init(&b, 16);
	cr_assert_eq(buf_reserve(&b, 1), BUF_OK);
	cr_assert_not_null(b.data);
	cr_assert_str_eq(b.data, "");
	buf_free(&b);
}
