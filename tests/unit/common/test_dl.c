/* test_dl.c - loading an optional library into a table of function pointers:
 * success, a missing library, a missing symbol (the table stays untouched and
 * the error names the library and the reason), and the once-only load shared
 * by threads, with its outcome remembered.  The library is glibc's libm,
 * which every system has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <math.h>
#include <pthread.h>

#include "dl.h"

#define LIBM "libm.so.6"

struct mathlib {
	__typeof__(&cos) cos;
	__typeof__(&sqrt) sqrt;
};

static const struct fl_dl_sym math_syms[] = {
        {"cos", offsetof(struct mathlib, cos)},
        {"sqrt", offsetof(struct mathlib, sqrt)},
};

static void test_open_fills_the_table(void **state)
{
	struct mathlib m = {0};
	struct fl_err err = {0};

	assert_int_equal(fl_dl_open(LIBM, math_syms, 2, &m, &err), 0);
	assert_non_null(m.cos);
	assert_non_null(m.sqrt);
	assert_true(m.cos(0.0) == 1.0);
	assert_true(m.sqrt(16.0) == 4.0);
}

static void test_missing_library(void **state)
{
	struct mathlib m = {0};
	struct fl_err err = {0};

	assert_int_equal(fl_dl_open("libfloe-test-absent.so.9", math_syms, 2, &m, &err), -1);
	assert_int_equal(err.kind, FL_ERR_UNAVAILABLE);
	assert_non_null(strstr(err.msg, "cannot load libfloe-test-absent.so.9: "));
	assert_non_null(strstr(err.msg, "No such file"));
	assert_null(m.cos);
	assert_null(m.sqrt);
}

static void test_missing_symbol_leaves_the_table(void **state)
{
	static const struct fl_dl_sym syms[] = {
	        {"cos", offsetof(struct mathlib, cos)},
	        {"floe_test_absent_symbol", offsetof(struct mathlib, sqrt)},
	};
	struct mathlib m = {0};
	struct fl_err err = {0};

	assert_int_equal(fl_dl_open(LIBM, syms, 2, &m, &err), -1);
	assert_int_equal(err.kind, FL_ERR_UNAVAILABLE);
	assert_non_null(strstr(err.msg, LIBM));
	assert_non_null(strstr(err.msg, "floe_test_absent_symbol"));
	assert_null(m.cos);
	assert_null(m.sqrt);
}

static struct mathlib shared_math;
static int inits; /* atomic */

static int count_init(const void *table, struct fl_err *err)
{
	const struct mathlib *m = table;

	__atomic_add_fetch(&inits, 1, __ATOMIC_RELAXED);
	return m->cos(0.0) == 1.0 ? 0 : fl_err_set(err, FL_ERR_INTERNAL, "bad table");
}

static struct fl_dl_lib math_lib = FL_DL_LIB(LIBM, math_syms, &shared_math, count_init);

static void *load_one(void *arg)
{
	struct fl_err err = {0};

	*(int *)arg = fl_dl_lib_load(&math_lib, &err);
	return NULL;
}

static void test_lib_loads_once_across_threads(void **state)
{
	pthread_t t[8];
	int rc[8];

	for (int i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, load_one, &rc[i]), 0);
	for (int i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		assert_int_equal(rc[i], 0);
	}
	assert_int_equal(__atomic_load_n(&inits, __ATOMIC_RELAXED), 1);
	assert_true(shared_math.sqrt(9.0) == 3.0);
}

static int refuse_init(const void *table, struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_UNAVAILABLE, "init refused");
}

static struct mathlib absent_math, refused_math;
static struct fl_dl_lib absent_lib =
        FL_DL_LIB("libfloe-test-absent.so.9", math_syms, &absent_math, count_init);
static struct fl_dl_lib refused_lib = FL_DL_LIB(LIBM, math_syms, &refused_math, refuse_init);

static void test_lib_failure_is_remembered(void **state)
{
	struct fl_err a = {0}, b = {0};
	int before = __atomic_load_n(&inits, __ATOMIC_RELAXED);

	assert_int_equal(fl_dl_lib_load(&absent_lib, &a), -1);
	assert_int_equal(fl_dl_lib_load(&absent_lib, &b), -1);
	assert_int_equal(a.kind, FL_ERR_UNAVAILABLE);
	assert_string_equal(a.msg, b.msg);
	assert_non_null(strstr(a.msg, "libfloe-test-absent.so.9"));
	assert_int_equal(__atomic_load_n(&inits, __ATOMIC_RELAXED), before);
	assert_int_equal(fl_dl_lib_load(&absent_lib, NULL), -1);

	assert_int_equal(fl_dl_lib_load(&refused_lib, &a), -1);
	assert_string_equal(a.msg, "init refused");
	assert_int_equal(fl_dl_lib_load(&refused_lib, &b), -1);
	assert_string_equal(b.msg, "init refused");
}

/* A library declared after another loads that one first, and fails with
 * its error when it cannot be loaded (nothing of its own is tried). */
static int first_inits;
static int note_first(const void *table, struct fl_err *err)
{
	(void)table;
	(void)err;
	first_inits++;
	return 0;
}
static int check_first_loaded(const void *table, struct fl_err *err);
static struct mathlib base_math, after_math, orphan_math;
static struct fl_dl_lib base_lib = FL_DL_LIB(LIBM, math_syms, &base_math, note_first);
static struct fl_dl_lib after_lib =
        FL_DL_LIB_AFTER(&base_lib, LIBM, math_syms, &after_math, check_first_loaded);
static struct fl_dl_lib orphan_lib =
        FL_DL_LIB_AFTER(&absent_lib, LIBM, math_syms, &orphan_math, check_first_loaded);

static int check_first_loaded(const void *table, struct fl_err *err)
{
	(void)table;
	return first_inits == 1 ? 0 : fl_err_set(err, FL_ERR_INTERNAL, "loaded before its first");
}

static void test_lib_after_another(void **state)
{
	struct fl_err err = {0};

	assert_int_equal(fl_dl_lib_load(&after_lib, &err), 0);
	assert_int_equal(first_inits, 1);
	assert_true(base_math.sqrt(4.0) == 2.0);
	assert_int_equal(fl_dl_lib_load(&base_lib, &err), 0);
	assert_int_equal(first_inits, 1);

	assert_int_equal(fl_dl_lib_load(&orphan_lib, &err), -1);
	assert_non_null(strstr(err.msg, "libfloe-test-absent.so.9"));
	assert_int_equal(__atomic_load_n(&orphan_lib.state, __ATOMIC_RELAXED), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_open_fills_the_table),
	        cmocka_unit_test(test_missing_library),
	        cmocka_unit_test(test_missing_symbol_leaves_the_table),
	        cmocka_unit_test(test_lib_loads_once_across_threads),
	        cmocka_unit_test(test_lib_failure_is_remembered),
	        cmocka_unit_test(test_lib_after_another),
	};

	return cmocka_run_group_tests_name("common/dl", tests, NULL, NULL);
}
