/* test_random.c - getrandom-backed bytes and snapshot ids: filled, not
 * repeating, ids always in [1, INT64_MAX]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "random.h"

static void test_bytes_fill_and_differ(void **state)
{
	unsigned char a[300], b[300], zero[300] = {0};

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	assert_int_equal(fl_random_bytes(a, sizeof(a)), 0);
	assert_int_equal(fl_random_bytes(b, sizeof(b)), 0);
	/* 300 bytes all zero, or equal twice, is a 2^-2400 event: a bug. */
	assert_memory_not_equal(a, zero, sizeof(a));
	assert_memory_not_equal(a, b, sizeof(a));
	assert_int_equal(fl_random_bytes(a, 0), 0);
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

static void test_ids_positive_and_distinct(void **state)
{
	enum { N = 4096 };
	int64_t *ids = calloc(N, sizeof(*ids));
	int high = 0;

	assert_non_null(ids);
	for (int i = 0; i < N; i++) {
		ids[i] = fl_random_id();
		assert_true(ids[i] > 0);
		high += ids[i] > (INT64_MAX >> 1);
	}
	/* Uniform over 63 bits: about half have the top bit; never none or all. */
	assert_true(high > N / 4 && high < 3 * N / 4);
	qsort(ids, N, sizeof(*ids), cmp_i64);
	for (int i = 1; i < N; i++)
		assert_true(ids[i] != ids[i - 1]);
	free(ids);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_bytes_fill_and_differ),
	        cmocka_unit_test(test_ids_positive_and_distinct),
	};

	return cmocka_run_group_tests_name("common/random", tests, NULL, NULL);
}
