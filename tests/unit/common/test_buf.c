/* test_buf.c - the growable buffer: appends, growth, NUL termination,
 * reset/steal/free, and refusal of sizes that would overflow. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"

static void test_append_and_terminate(void **state)
{
	struct fl_buf b = FL_BUF_INIT;

	assert_int_equal(fl_buf_append(&b, "abc", 3), 0);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.data, "abc");
	assert_int_equal(fl_buf_puts(&b, "def"), 0);
	assert_string_equal(b.data, "abcdef");
	assert_int_equal(fl_buf_printf(&b, "-%d-%s", 12, "x"), 0);
	assert_string_equal(b.data, "abcdef-12-x");
	assert_int_equal(b.len, strlen("abcdef-12-x"));
	/* Binary data with NUL bytes keeps its length. */
	assert_int_equal(fl_buf_append(&b, "\0z", 2), 0);
	assert_int_equal(b.len, 13);
	assert_memory_equal(b.data + 11, "\0z\0", 3);
	fl_buf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
}

static void test_empty_append_allocates_terminated(void **state)
{
	struct fl_buf b = FL_BUF_INIT;

	assert_int_equal(fl_buf_append(&b, NULL, 0), 0);
	assert_non_null(b.data);
	assert_string_equal(b.data, "");
	assert_int_equal(fl_buf_printf(&b, "%s", ""), 0);
	assert_string_equal(b.data, "");
	fl_buf_free(&b);
}

static void test_growth(void **state)
{
	struct fl_buf b = FL_BUF_INIT;
	char chunk[1000];

	/* Appends in uneven sizes across many doublings; the contents must be
	 * the concatenation at every step. */
	for (size_t i = 0; i < sizeof(chunk); i++)
		chunk[i] = (char)('a' + i % 26);
	for (int i = 0; i < 300; i++) {
		size_t n = (size_t)(i * 7) % sizeof(chunk);
		size_t before = b.len;

		assert_int_equal(fl_buf_append(&b, chunk, n), 0);
		assert_int_equal(b.len, before + n);
		assert_true(b.cap > b.len);
		assert_int_equal(b.data[b.len], '\0');
		assert_memory_equal(b.data + before, chunk, n);
	}
	/* printf output larger than the current capacity. */
	size_t before = b.len;

	assert_int_equal(fl_buf_printf(&b, "%*s", 100000, "!"), 0);
	assert_int_equal(b.len, before + 100000);
	assert_int_equal(b.data[b.len - 1], '!');
	assert_int_equal(b.data[b.len], '\0');
	fl_buf_free(&b);
}

static void test_reset_keeps_memory(void **state)
{
	struct fl_buf b = FL_BUF_INIT;
	size_t cap;
	char *data;

	assert_int_equal(fl_buf_puts(&b, "some text"), 0);
	cap = b.cap;
	data = b.data;
	fl_buf_reset(&b);
	assert_int_equal(b.len, 0);
	assert_string_equal(b.data, "");
	assert_ptr_equal(b.data, data);
	assert_int_equal(b.cap, cap);
	assert_int_equal(fl_buf_puts(&b, "x"), 0);
	assert_string_equal(b.data, "x");
	fl_buf_free(&b);
	/* Reset and free of a zeroed buffer are harmless. */
	fl_buf_reset(&b);
	fl_buf_free(&b);
}

static void test_steal(void **state)
{
	struct fl_buf b = FL_BUF_INIT;
	char *s;

	assert_int_equal(fl_buf_puts(&b, "owned"), 0);
	s = fl_buf_steal(&b);
	assert_string_equal(s, "owned");
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 0);
	free(s);
	/* The emptied buffer is reusable. */
	assert_int_equal(fl_buf_puts(&b, "again"), 0);
	assert_string_equal(b.data, "again");
	fl_buf_free(&b);
}

static void test_overflow_refused_contents_kept(void **state)
{
	struct fl_buf b = FL_BUF_INIT;

	assert_int_equal(fl_buf_puts(&b, "keep"), 0);
	assert_int_equal(fl_buf_reserve(&b, SIZE_MAX), -1);
	assert_int_equal(fl_buf_reserve(&b, SIZE_MAX - 4), -1);
	assert_int_equal(fl_buf_append(&b, "x", SIZE_MAX - 2), -1);
	assert_string_equal(b.data, "keep");
	assert_int_equal(b.len, 4);
	fl_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_append_and_terminate),
	        cmocka_unit_test(test_empty_append_allocates_terminated),
	        cmocka_unit_test(test_growth),
	        cmocka_unit_test(test_reset_keeps_memory),
	        cmocka_unit_test(test_steal),
	        cmocka_unit_test(test_overflow_refused_contents_kept),
	};

	return cmocka_run_group_tests_name("common/buf", tests, NULL, NULL);
}
