/* test_err.c - fl_err_set, fl_err_prefix (truncation keeps the head),
 * fl_err_clear and the kind names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "err.h"

#define MSG_CAP (sizeof(((struct fl_err *)0)->msg))

static void test_set(void **state)
{
	struct fl_err err;

	memset(&err, 0x55, sizeof(err));
	assert_int_equal(fl_err_set(&err, FL_ERR_NO_SUCH_TABLE, "table %s.%s", "ns", "t"), -1);
	assert_int_equal(err.kind, FL_ERR_NO_SUCH_TABLE);
	assert_string_equal(err.msg, "table ns.t");
	/* A NULL err is allowed and still reports failure. */
	assert_int_equal(fl_err_set(NULL, FL_ERR_INTERNAL, "x"), -1);
	assert_int_equal(fl_err_prefix(NULL, "x"), -1);
	fl_err_clear(NULL);
}

static void test_set_truncates(void **state)
{
	struct fl_err err;
	char long_text[600];

	memset(long_text, 'q', sizeof(long_text) - 1);
	long_text[sizeof(long_text) - 1] = '\0';
	assert_int_equal(fl_err_set(&err, FL_ERR_BAD_REQUEST, "%s", long_text), -1);
	assert_int_equal(strlen(err.msg), MSG_CAP - 1);
}

static void test_prefix(void **state)
{
	struct fl_err err;

	(void)fl_err_set(&err, FL_ERR_COMMIT_FAILED, "main is 81, expected 80");
	assert_int_equal(fl_err_prefix(&err, "table %s", "ns.t"), -1);
	assert_int_equal(err.kind, FL_ERR_COMMIT_FAILED);
	assert_string_equal(err.msg, "table ns.t: main is 81, expected 80");
	assert_int_equal(fl_err_prefix(&err, "commit"), -1);
	assert_string_equal(err.msg, "commit: table ns.t: main is 81, expected 80");
	/* An empty old message still gets the separator. */
	fl_err_clear(&err);
	assert_int_equal(err.kind, FL_ERR_NONE);
	assert_string_equal(err.msg, "");
	(void)fl_err_prefix(&err, "head");
	assert_string_equal(err.msg, "head: ");
}

/* For every head length from short to longer than the message buffer, with
 * an old message that fills the buffer: the result starts with the head (as
 * much of it as fits), is NUL-terminated inside the buffer, and everything
 * after the head is ": " followed by a prefix of the old message — no byte
 * left over from the old buffer may leak in. */
static void test_prefix_truncation_keeps_head(void **state)
{
	for (size_t hl = 0; hl <= MSG_CAP + 10; hl++) {
		char head[MSG_CAP + 16];
		char old[MSG_CAP];
		char want[2 * MSG_CAP + 32];
		struct fl_err err;
		size_t keep_head = hl < MSG_CAP - 1 ? hl : MSG_CAP - 1;

		memset(head, 'H', hl);
		head[hl] = '\0';
		memset(old, 'Z', sizeof(old) - 1);
		old[sizeof(old) - 1] = '\0';
		(void)fl_err_set(&err, FL_ERR_IO, "%s", old);
		(void)fl_err_prefix(&err, "%s", head);

		assert_non_null(memchr(err.msg, '\0', MSG_CAP));
		assert_int_equal(err.kind, FL_ERR_IO);
		/* The full line that would have been written with room enough,
		 * cut to the buffer: a correct truncation is a prefix of it. */
		memcpy(want, head, keep_head);
		memcpy(want + keep_head, ": ", 2);
		memcpy(want + keep_head + 2, old, sizeof(old));
		if (strncmp(err.msg, want, strlen(err.msg)) != 0)
			fail_msg(
			        "head of %zu bytes: message is not a prefix of head + \": \" + old: "
			        "\"...%s\"",
			        hl, err.msg + (keep_head > 8 ? keep_head - 8 : 0));
		if (strlen(err.msg) < keep_head)
			fail_msg("head of %zu bytes: only %zu bytes of the head kept", hl,
			         strlen(err.msg));
	}
}

static void test_kind_names(void **state)
{
	/* Every kind has a distinct, non-empty name; out of range is "unknown". */
	for (int k = 0; k < FL_ERR_KIND_COUNT; k++) {
		const char *name = fl_err_kind_name((enum fl_err_kind)k);

		assert_non_null(name);
		assert_true(name[0] != '\0');
		assert_string_not_equal(name, "unknown");
		for (int j = 0; j < k; j++)
			assert_string_not_equal(name, fl_err_kind_name((enum fl_err_kind)j));
	}
	assert_string_equal(fl_err_kind_name(FL_ERR_COMMIT_FAILED), "commit-failed");
	assert_string_equal(fl_err_kind_name(FL_ERR_NONE), "none");
	assert_string_equal(fl_err_kind_name(FL_ERR_KIND_COUNT), "unknown");
	assert_string_equal(fl_err_kind_name((enum fl_err_kind) - 1), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_set),
	        cmocka_unit_test(test_set_truncates),
	        cmocka_unit_test(test_prefix),
	        cmocka_unit_test(test_prefix_truncation_keeps_head),
	        cmocka_unit_test(test_kind_names),
	};

	return cmocka_run_group_tests_name("common/err", tests, NULL, NULL);
}
