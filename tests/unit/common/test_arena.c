/* test_arena.c - the region allocator: alignment, zeroing, big blocks,
 * overflow guards, string helpers and deferred destructors.
 *
 * Runs under ASan in CI, so a destructor that ran after the blocks were
 * released, or a block that was never released, fails the run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return false;
	return true;
}

static void test_alloc_aligned_and_zeroed(void **state)
{
	/* Sizes around the alignment unit, the quarter-block threshold (2048)
	 * and the block size (8192), so every path of fl_arena_alloc is taken. */
	static const size_t sizes[] = {0,    1,    2,    7,     15,   16,   17,    31,
	                               33,   100,  255,  1000,  2047, 2048, 2049,  4096,
	                               8191, 8192, 8193, 20000, 1,    3,    65536, 5};
	struct fl_arena *a = fl_arena_new();

	assert_non_null(a);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned char *p = fl_arena_alloc(a, sizes[i]);

		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		assert_true(all_zero(p, sizes[i]));
		/* Dirty the memory so a later allocation that overlapped it would
		 * show up as non-zero (and ASan would see any overrun). */
		memset(p, 0xA5, sizes[i]);
	}
	fl_arena_free(a);
}

static void test_alloc_distinct_and_used(void **state)
{
	struct fl_arena *a = fl_arena_new();
	unsigned char *p[64];

	assert_non_null(a);
	assert_int_equal(fl_arena_used(a), 0);
	for (int i = 0; i < 64; i++) {
		p[i] = fl_arena_alloc(a, 24);
		assert_non_null(p[i]);
		memset(p[i], i, 24);
	}
	for (int i = 0; i < 64; i++)
		for (int k = 0; k < 24; k++)
			assert_int_equal(p[i][k], i);
	/* 24 rounds up to 32. */
	assert_int_equal(fl_arena_used(a), 64 * 32);
	/* A zero-byte request still gets its own (aligned) slot. */
	unsigned char *z1 = fl_arena_alloc(a, 0), *z2 = fl_arena_alloc(a, 0);

	assert_non_null(z1);
	assert_non_null(z2);
	assert_ptr_not_equal(z1, z2);
	fl_arena_free(a);
}

static void test_big_alloc_keeps_head_serving(void **state)
{
	struct fl_arena *a = fl_arena_new();
	unsigned char *s1, *big, *s2, *huge;

	assert_non_null(a);
	s1 = fl_arena_alloc(a, 16);
	/* Fill most of the head so the big request cannot fit in it. */
	assert_non_null(fl_arena_alloc(a, 8192 - 64));
	big = fl_arena_alloc(a, 4000);
	assert_non_null(big);
	memset(big, 1, 4000);
	/* The head still has 48 bytes: a small request is served from it. */
	s2 = fl_arena_alloc(a, 16);
	assert_non_null(s2);
	assert_ptr_equal(s2, s1 + 16 + (8192 - 64));
	huge = fl_arena_alloc(a, (size_t)4 << 20);
	assert_non_null(huge);
	assert_true(all_zero(huge, (size_t)4 << 20));
	huge[((size_t)4 << 20) - 1] = 7;
	assert_true(fl_arena_used(a) >= ((size_t)4 << 20) + 8192);
	fl_arena_free(a);
}

static void test_big_alloc_first(void **state)
{
	/* A big request on an empty arena becomes the head; small requests
	 * after it must still work. */
	struct fl_arena *a = fl_arena_new();
	unsigned char *big, *s;

	assert_non_null(a);
	big = fl_arena_alloc(a, 3000);
	assert_non_null(big);
	memset(big, 0xff, 3000);
	s = fl_arena_alloc(a, 100);
	assert_non_null(s);
	assert_true(all_zero(s, 100));
	fl_arena_free(a);
}

static void test_alloc_overflow(void **state)
{
	struct fl_arena *a = fl_arena_new();

	assert_non_null(a);
	assert_null(fl_arena_alloc(a, SIZE_MAX));
	assert_null(fl_arena_alloc(a, SIZE_MAX - 8));
	assert_null(fl_arena_alloc(a, SIZE_MAX - 16));
	assert_null(fl_arena_alloc(a, SIZE_MAX - 40));
	assert_null(fl_arena_strndup(a, "x", SIZE_MAX));
	/* The arena is still usable after refusing. */
	assert_non_null(fl_arena_alloc(a, 10));
	fl_arena_free(a);
}

static void test_strdup_strndup(void **state)
{
	struct fl_arena *a = fl_arena_new();
	char big[10000];
	char *s;

	assert_non_null(a);
	s = fl_arena_strdup(a, "hello");
	assert_string_equal(s, "hello");
	s = fl_arena_strdup(a, "");
	assert_string_equal(s, "");
	/* strndup copies exactly n bytes, even from a buffer with no NUL. */
	s = fl_arena_strndup(a, "abcdef", 3);
	assert_string_equal(s, "abc");
	s = fl_arena_strndup(a, "a\0b", 3);
	assert_memory_equal(s, "a\0b\0", 4);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	s = fl_arena_strdup(a, big);
	assert_string_equal(s, big);
	fl_arena_free(a);
}

static void test_printf(void **state)
{
	struct fl_arena *a = fl_arena_new();
	char *s;

	assert_non_null(a);
	s = fl_arena_printf(a, "%s=%d", "n", 42);
	assert_string_equal(s, "n=42");
	s = fl_arena_printf(a, "%s", "");
	assert_string_equal(s, "");
	/* Output longer than one block. */
	s = fl_arena_printf(a, "<%*d>", 9000, 7);
	assert_non_null(s);
	assert_int_equal(strlen(s), 9002);
	assert_int_equal(s[0], '<');
	assert_int_equal(s[9000], '7');
	assert_int_equal(s[9001], '>');
	fl_arena_free(a);
}

/* Destructor log shared by the defer tests (reset by each). */
static int defer_log[8];
static int defer_n;

static void record(void *p)
{
	/* p points into arena memory: destructors must run before the blocks
	 * are released (ASan reports a use-after-free otherwise). */
	int *v = p;

	defer_log[defer_n++] = *v;
}

static void test_defer_reverse_order(void **state)
{
	struct fl_arena *a = fl_arena_new();

	assert_non_null(a);
	defer_n = 0;
	for (int i = 1; i <= 5; i++) {
		int *v = fl_arena_alloc(a, sizeof(*v));

		assert_non_null(v);
		*v = i;
		assert_int_equal(fl_arena_defer(a, record, v), 0);
	}
	assert_int_equal(defer_n, 0);
	fl_arena_free(a);
	assert_int_equal(defer_n, 5);
	for (int i = 0; i < 5; i++)
		assert_int_equal(defer_log[i], 5 - i);
}

static void free_counted(void *p)
{
	(*(int *)p)++;
}

static void test_defer_runs_once(void **state)
{
	struct fl_arena *a = fl_arena_new();
	int count = 0;

	assert_non_null(a);
	assert_int_equal(fl_arena_defer(a, free_counted, &count), 0);
	assert_int_equal(fl_arena_defer(a, free_counted, &count), 0);
	fl_arena_free(a);
	assert_int_equal(count, 2);
}

static void test_free_null(void **state)
{
	fl_arena_free(NULL);
	/* An arena that was never used. */
	fl_arena_free(fl_arena_new());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_alloc_aligned_and_zeroed),
	        cmocka_unit_test(test_alloc_distinct_and_used),
	        cmocka_unit_test(test_big_alloc_keeps_head_serving),
	        cmocka_unit_test(test_big_alloc_first),
	        cmocka_unit_test(test_alloc_overflow),
	        cmocka_unit_test(test_strdup_strndup),
	        cmocka_unit_test(test_printf),
	        cmocka_unit_test(test_defer_reverse_order),
	        cmocka_unit_test(test_defer_runs_once),
	        cmocka_unit_test(test_free_null),
	};

	return cmocka_run_group_tests_name("common/arena", tests, NULL, NULL);
}
