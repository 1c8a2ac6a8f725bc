/* test_thrift.c - Thrift compact protocol bytes (storage/parquet/thrift.c),
 * checked against encodings worked out by hand from
 * thrift-compact-protocol.md, and the decoder on those bytes, on every
 * truncation of them and on malformed headers. */
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

/* The message of test_struct_bytes, read back field by field. */
static const uint8_t message[] = {
        0x15, 0x0a, 0x16, 0x01, 0x28, 0x02, 'a',  'b',  0x01, 0x28,
        0x1c, 0x12, 0x00, 0x19, 0x35, 0x02, 0x04, 0x06, 0x00,
};

/* Reads message[0..n): returns 1 when all of it decoded as written. */
static int read_message(size_t n)
{
	struct st_thrift_reader r;
	int16_t id, sid;
	uint8_t type, st, elem;
	const uint8_t *p;
	size_t len, count;
	int seen = 0;

	st_thrift_reader_init(&r, message, n);
	while (st_thrift_field(&r, &id, &type)) {
		switch (id) {
		case 1: seen += st_thrift_read_i32(&r, type) == 5; break;
		case 2: seen += st_thrift_read_i64(&r, type) == -1; break;
		case 4:
			st_thrift_read_binary(&r, type, &p, &len);
			seen += len == 2 && memcmp(p, "ab", 2) == 0;
			break;
		case 20: seen += st_thrift_read_bool(&r, type); break;
		case 21:
			st_thrift_enter(&r, type);
			while (st_thrift_field(&r, &sid, &st))
				seen += sid == 1 && !st_thrift_read_bool(&r, st);
			break;
		case 22:
			count = st_thrift_read_list(&r, type, &elem);
			for (size_t i = 0; i < count; i++)
				seen += st_thrift_read_i32(&r, elem) == (int32_t)i + 1;
			break;
		default: st_thrift_skip(&r, type); break;
		}
	}
	return r.why == NULL && seen == 8 && r.p == r.end;
}

static void test_decode(void **state)
{
	struct st_thrift_reader r;
	int16_t id;
	uint8_t type;

	(void)state;
	assert_int_equal(read_message(sizeof(message)), 1);
	/* Every truncation fails cleanly. */
	for (size_t n = 0; n < sizeof(message); n++)
		assert_int_equal(read_message(n), 0);
	/* Skipping the whole message as one struct consumes it exactly. */
	st_thrift_reader_init(&r, message, sizeof(message));
	while (st_thrift_field(&r, &id, &type))
		st_thrift_skip(&r, type);
	assert_null(r.why);
	assert_ptr_equal(r.p, r.end);
}

static void test_decode_malformed(void **state)
{
	/* A binary longer than the message, a list claiming 2^20 elements, a
	 * type nibble 15, a varint past 64 bits, and 20 nested structs. */
	static const uint8_t longbin[] = {0x18, 0x7f, 'a'};
	static const uint8_t biglist[] = {0x19, 0xf5, 0x80, 0x80, 0x40, 0x00};
	static const uint8_t badtype[] = {0x1f, 0x00};
	static const uint8_t endless[] = {0x16, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	                                  0xff, 0xff, 0xff, 0xff, 0x01, 0x00};
	uint8_t deep[40];
	const struct {
		const uint8_t *p;
		size_t n;
		const char *why;
	} cases[] = {
	        {longbin, sizeof(longbin), "binary length beyond the end"},
	        {biglist, sizeof(biglist), "list count beyond the end"},
	        {badtype, sizeof(badtype), "unknown value type"},
	        {endless, sizeof(endless), "varint overflows 64 bits"},
	        {deep, sizeof(deep), "structs nested too deep"},
	};

	(void)state;
	for (size_t i = 0; i < 20; i++) {
		deep[i] = 0x1c; /* field 1: struct */
		deep[20 + i] = 0x00;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct st_thrift_reader r;
		int16_t id;
		uint8_t type;

		st_thrift_reader_init(&r, cases[i].p, cases[i].n);
		while (st_thrift_field(&r, &id, &type))
			st_thrift_skip(&r, type);
		assert_non_null(r.why);
		assert_string_equal(r.why, cases[i].why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_struct_bytes),
	        cmocka_unit_test(test_long_list_and_nesting),
	        cmocka_unit_test(test_negative_delta_uses_long_form),
	        cmocka_unit_test(test_depth_limit),
	        cmocka_unit_test(test_decode),
	        cmocka_unit_test(test_decode_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
