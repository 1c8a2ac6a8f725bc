/* test_uuid.c - v4 and v7 generation and the validators. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "clock.h"
#include "uuid.h"

static bool lower_hex_form(const char *s)
{
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23)
			continue;
		if (strchr("0123456789abcdef", s[i]) == NULL)
			return false;
	}
	return true;
}

static void test_v4(void **state)
{
	char a[FL_UUID_STR], b[FL_UUID_STR];

	for (int i = 0; i < 100; i++) {
		fl_uuid_v4(a);
		assert_int_equal(strlen(a), 36);
		assert_true(fl_uuid_valid(a));
		assert_true(lower_hex_form(a));
		assert_int_equal(a[14], '4');
		assert_non_null(strchr("89ab", a[19]));
		assert_false(fl_uuid_is_v7(a));
	}
	fl_uuid_v4(b);
	assert_string_not_equal(a, b);
}

/* The 48-bit millisecond timestamp at the front of a v7 UUID. */
static int64_t v7_ms(const char *u)
{
	char hex[13];

	memcpy(hex, u, 8);
	memcpy(hex + 8, u + 9, 4);
	hex[12] = '\0';
	return (int64_t)strtoll(hex, NULL, 16);
}

static void test_v7(void **state)
{
	char a[FL_UUID_STR], b[FL_UUID_STR];
	int64_t before = fl_now_ms(), after;
	struct timespec pause = {0, 3000000};

	fl_uuid_v7(a);
	after = fl_now_ms();
	assert_true(fl_uuid_valid(a));
	assert_true(lower_hex_form(a));
	assert_true(fl_uuid_is_v7(a));
	assert_int_equal(a[14], '7');
	assert_non_null(strchr("89ab", a[19]));
	assert_in_range(v7_ms(a), before, after);
	/* Later UUIDs sort later once the millisecond has moved on. */
	nanosleep(&pause, NULL);
	fl_uuid_v7(b);
	assert_true(strcmp(a, b) < 0);
	/* The random part differs within the same millisecond too. */
	for (int i = 0; i < 50; i++) {
		fl_uuid_v7(a);
		fl_uuid_v7(b);
		assert_string_not_equal(a, b);
	}
}

static void test_valid_table(void **state)
{
	static const struct {
		const char *s;
		bool valid, v7;
	} cases[] = {
	        {"01890a5d-ac96-774b-bcce-b302099a8057", true, true},
	        {"01890A5D-AC96-774B-BCCE-B302099A8057", true, true},
	        {"01890a5d-ac96-774b-8cce-b302099a8057", true, true},
	        {"01890a5d-ac96-774b-acce-b302099a8057", true, true},
	        {"01890a5d-ac96-774b-ccce-b302099a8057", true, false}, /* variant 110 */
	        {"01890a5d-ac96-774b-7cce-b302099a8057", true, false}, /* variant 0 */
	        {"f47ac10b-58cc-4372-a567-0e02b2c3d479", true, false}, /* v4 */
	        {"00000000-0000-0000-0000-000000000000", true, false},
	        {"", false, false},
	        {"01890a5d-ac96-774b-bcce-b302099a805", false, false}, /* short */
	        {"01890a5d-ac96-774b-bcce-b302099a80577", false, false}, /* long */
	        {"01890a5dac96-774b-bcce-b302099a80577", false, false}, /* hyphen moved */
	        {"01890a5d_ac96-774b-bcce-b302099a8057", false, false},
	        {"01890a5d-ac96-774b-bcce-b302099a805g", false, false},
	        {"{01890a5d-ac96-774b-bcce-b302099a8057}", false, false},
	        {" 01890a5d-ac96-774b-bcce-b302099a8057", false, false},
	        {"01890a5d-ac96-774b-bcce-b302099a8057\n", false, false},
	        {"01890a5dac96774bbcceb302099a8057", false, false}, /* no hyphens */
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (fl_uuid_valid(cases[i].s) != cases[i].valid)
			fail_msg("fl_uuid_valid(\"%s\") should be %d", cases[i].s, cases[i].valid);
		if (fl_uuid_is_v7(cases[i].s) != cases[i].v7)
			fail_msg("fl_uuid_is_v7(\"%s\") should be %d", cases[i].s, cases[i].v7);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_v4),
	        cmocka_unit_test(test_v7),
	        cmocka_unit_test(test_valid_table),
	};

	return cmocka_run_group_tests_name("common/uuid", tests, NULL, NULL);
}
