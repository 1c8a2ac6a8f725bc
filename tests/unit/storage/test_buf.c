/* test_buf.c - varints and zig-zag (storage/base/buf.c), table-driven from
 * the encodings the Avro and Thrift specs define. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/buf.h"

static void test_uvarint(void **state)
{
	static const struct {
		uint64_t v;
		size_t n;
		uint8_t bytes[10];
	} cases[] = {
	        {0, 1, {0x00}},
	        {1, 1, {0x01}},
	        {127, 1, {0x7f}},
	        {128, 2, {0x80, 0x01}},
	        {300, 2, {0xac, 0x02}},
	        {16383, 2, {0xff, 0x7f}},
	        {16384, 3, {0x80, 0x80, 0x01}},
	        {UINT32_MAX, 5, {0xff, 0xff, 0xff, 0xff, 0x0f}},
	        {UINT64_MAX, 10, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct st_buf b;

		st_buf_init(&b, NULL);
		assert_int_equal(st_buf_put_uvarint(&b, cases[i].v), 0);
		assert_int_equal(b.len, cases[i].n);
		assert_int_equal(st_uvarint_len(cases[i].v), cases[i].n);
		assert_memory_equal(b.data, cases[i].bytes, cases[i].n);
		st_buf_free(&b);
	}
}

static void test_zigzag(void **state)
{
	static const struct {
		int64_t v;
		uint64_t z;
	} cases[] = {
	        {0, 0},
	        {-1, 1},
	        {1, 2},
	        {-2, 3},
	        {2, 4},
	        {-64, 127},
	        {64, 128},
	        {INT32_MAX, 4294967294ULL},
	        {INT32_MIN, 4294967295ULL},
	        {INT64_MAX, UINT64_MAX - 1},
	        {INT64_MIN, UINT64_MAX},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_true(st_zigzag_encode(cases[i].v) == cases[i].z);
		assert_true(st_zigzag_decode(cases[i].z) == cases[i].v);
	}
}

/* Avro's own examples ("Binary Encoding"): 0 -> 00, -1 -> 01, 1 -> 02,
 * -2 -> 03, 2 -> 04, -64 -> 7f, 64 -> 80 01. */
static void test_zigzag_varint_bytes(void **state)
{
	static const struct {
		int64_t v;
		size_t n;
		uint8_t bytes[3];
	} cases[] = {
	        {0, 1, {0x00}}, {-1, 1, {0x01}},  {1, 1, {0x02}},        {-2, 1, {0x03}},
	        {2, 1, {0x04}}, {-64, 1, {0x7f}}, {64, 2, {0x80, 0x01}},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct st_buf b;

		st_buf_init(&b, NULL);
		assert_int_equal(st_buf_put_zigzag(&b, cases[i].v), 0);
		assert_int_equal(b.len, cases[i].n);
		assert_memory_equal(b.data, cases[i].bytes, cases[i].n);
		st_buf_free(&b);
	}
}

static void test_le(void **state)
{
	static const uint8_t want[] = {0x04, 0x03, 0x02, 0x01, 0x08, 0x07,
	                               0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
	struct st_buf b;

	(void)state;
	st_buf_init(&b, NULL);
	assert_int_equal(st_buf_put_le32(&b, 0x01020304u), 0);
	assert_int_equal(st_buf_put_le64(&b, 0x0102030405060708ULL), 0);
	assert_int_equal(b.len, sizeof(want));
	assert_memory_equal(b.data, want, sizeof(want));
	st_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_uvarint),
	        cmocka_unit_test(test_zigzag),
	        cmocka_unit_test(test_zigzag_varint_bytes),
	        cmocka_unit_test(test_le),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
