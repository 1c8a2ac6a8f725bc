/* test_thrift.c - Thrift compact protocol bytes (storage/parquet/thrift.c),
 * checked against encodings worked out by hand from
 * thrift-compact-protocol.md. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "parquet/thrift.h"

static void test_struct_bytes(void **state)
{
	static const uint8_t want[] = {
	        0x15, 0x0a, /* 1: i32 5 (short header, zig-zag 10) */
	        0x16, 0x01, /* 2: i64 -1 (delta 1) */
	        0x28, 0x02, 'a',  'b', /* 4: binary "ab" (delta 2) */
	        0x01, 0x28, /* 20: bool true, long header: type 1, zig-zag id 40 */
	        0x1c, 0x12, 0x00, /* 21: struct { 1: bool false } */
	        0x19, 0x35, 0x02, 0x04, 0x06, /* 22: list<i32> [1, 2, 3] */
	        0x00, /* stop */
	};
	struct st_buf b;
	struct st_thrift t;

	(void)state;
	st_buf_init(&b, NULL);
	st_thrift_init(&t, &b);
	st_thrift_i32(&t, 1, 5);
	st_thrift_i64(&t, 2, -1);
	st_thrift_string(&t, 4, "ab");
	st_thrift_bool(&t, 20, true);
	st_thrift_struct_begin(&t, 21);
	st_thrift_bool(&t, 1, false);
	st_thrift_end(&t);
	st_thrift_list_begin(&t, 22, ST_THRIFT_I32, 3);
	st_thrift_elem_i32(&t, 1);
	st_thrift_elem_i32(&t, 2);
	st_thrift_elem_i32(&t, 3);
	st_thrift_end(&t);
	assert_false(t.failed);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.data, want, sizeof(want));
	st_buf_free(&b);
}

static void test_long_list_and_nesting(void **state)
{
	struct st_buf b;
	struct st_thrift t;
	size_t i;

	(void)state;
	st_buf_init(&b, NULL);
	st_thrift_init(&t, &b);
	st_thrift_list_begin(&t, 1, ST_THRIFT_STRUCT, 20);
	for (i = 0; i < 20; i++) {
		st_thrift_elem_struct_begin(&t);
		st_thrift_i64(&t, 3, (int64_t)i);
		st_thrift_end(&t);
	}
	st_thrift_i32(&t, 2, -3); /* delta 1 from field 1 of the outer struct */
	st_thrift_end(&t);
	assert_false(t.failed);
	/* 0x19 field header, 0xfc list header (size >= 15), varint 20 */
	assert_int_equal(b.data[0], 0x19);
	assert_int_equal(b.data[1], 0xfc);
	assert_int_equal(b.data[2], 20);
	/* first element: 0x36 (delta 3, i64), 0x00, stop */
	assert_int_equal(b.data[3], 0x36);
	assert_int_equal(b.data[4], 0x00);
	assert_int_equal(b.data[5], 0x00);
	/* after 20 elements of 3 bytes: field 2 i32 -3 -> 0x15 0x05, stop */
	assert_int_equal(b.len, 3 + 20 * 3 + 3);
	assert_int_equal(b.data[63], 0x15);
	assert_int_equal(b.data[64], 0x05);
	assert_int_equal(b.data[65], 0x00);
	st_buf_free(&b);
}

static void test_negative_delta_uses_long_form(void **state)
{
	static const uint8_t want[] = {0x55, 0x02, 0x05, 0x04, 0x04, 0x00};
	struct st_buf b;
	struct st_thrift t;

	(void)state;
	st_buf_init(&b, NULL);
	st_thrift_init(&t, &b);
	st_thrift_i32(&t, 5, 1);
	st_thrift_i32(&t, 2, 2); /* going backwards: type byte, then zig-zag id 4 */
	st_thrift_end(&t);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.data, want, sizeof(want));
	st_buf_free(&b);
}

static void test_depth_limit(void **state)
{
	struct st_buf b;
	struct st_thrift t;

	(void)state;
	st_buf_init(&b, NULL);
	st_thrift_init(&t, &b);
	for (int i = 0; i < ST_THRIFT_MAX_DEPTH + 2; i++)
		st_thrift_struct_begin(&t, 1);
	assert_true(t.failed);
	st_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_struct_bytes),
	        cmocka_unit_test(test_long_list_and_nesting),
	        cmocka_unit_test(test_negative_delta_uses_long_form),
	        cmocka_unit_test(test_depth_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
