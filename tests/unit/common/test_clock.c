/* test_clock.c - durations (parse and format) and the two clocks. */
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

struct parse_case {
	const char *in;
	int64_t want; /* -1 = rejected */
};

static const struct parse_case parse_cases[] = {
        /* Plain seconds and short units. */
        {"0", 0},
        {"90", 90},
        {"1800", 1800},
        {"30s", 30},
        {"30m", 1800},
        {"30M", 1800},
        {"2h", 7200},
        {"1d", 86400},
        {"1D", 86400},
        {"1h30m", 5400},
        {"1d2h", 93600},
        {"1h30m15s", 5415},
        /* ISO-8601. */
        {"PT30M", 1800},
        {"pt30m", 1800},
        {"PT0S", 0},
        {"PT1H", 3600},
        {"PT1M", 60},
        {"PT45S", 45},
        {"PT1H1M1S", 3661},
        {"P1D", 86400},
        {"P1DT2H", 93600},
        {"P2DT3H4M5S", 2 * 86400 + 3 * 3600 + 4 * 60 + 5},
        /* Garbage. */
        {"", -1},
        {"garbage", -1},
        {"P", -1},
        {"PT", -1},
        {"T30M", -1},
        {"30x", -1},
        {"-5", -1},
        {"+5", -1},
        {" 5", -1},
        {"5 ", -1},
        {"m", -1},
        {"1.5h", -1},
        {"PT30", -1}, /* an ISO number needs a unit */
        {"P1M", -1}, /* months have no fixed length: refused */
        {"P1W", -1},
        {"P1Y", -1},
        {"PT1X", -1},
        /* Overflow is refused rather than wrapped. */
        {"99999999999999999999", -1},
        {"9999999999999999999s", -1},
        {"106751991167301d", -1},
        {"P106751991167301D", -1},
        {"9223372036854775000s1d", -1},
};

static void test_duration_parse_table(void **state)
{
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		int64_t got = fl_duration_parse(parse_cases[i].in);

		if (got != parse_cases[i].want)
			fail_msg("fl_duration_parse(\"%s\") = %lld, want %lld", parse_cases[i].in,
			         (long long)got, (long long)parse_cases[i].want);
	}
}

struct format_case {
	int64_t in;
	const char *want;
};

static const struct format_case format_cases[] = {
        {0, "PT0S"},        {1, "PT1S"},
        {59, "PT59S"},      {60, "PT1M"},
        {1800, "PT30M"},    {3600, "PT1H"},
        {3661, "PT1H1M1S"}, {5400, "PT1H30M"},
        {93600, "PT26H"},   {86400 * 365, "PT8760H"},
};

static void test_duration_format_table(void **state)
{
	for (size_t i = 0; i < sizeof(format_cases) / sizeof(format_cases[0]); i++) {
		char out[64];

		fl_duration_format(format_cases[i].in, out, sizeof(out));
		if (strcmp(out, format_cases[i].want) != 0)
			fail_msg("fl_duration_format(%lld) = \"%s\", want \"%s\"",
			         (long long)format_cases[i].in, out, format_cases[i].want);
	}
}

static void test_duration_round_trip(void **state)
{
	/* Every value up to two days, then a sparse sweep to large values. */
	for (int64_t s = 0; s <= 2 * 86400; s++) {
		char out[64];

		fl_duration_format(s, out, sizeof(out));
		assert_int_equal(fl_duration_parse(out), s);
	}
	for (int64_t s = 1; s < INT64_MAX / 3; s = s * 3 + 1) {
		char out[64];

		fl_duration_format(s, out, sizeof(out));
		if (fl_duration_parse(out) != s)
			fail_msg("round trip of %lld via \"%s\" failed", (long long)s, out);
	}
}

/* The output of fl_duration_format must stay within cap bytes, NUL included,
 * whatever the value: callers size their buffers and rely on that. */
static void test_duration_format_respects_cap(void **state)
{
	static const int64_t values[] = {3661, 93600, 5400, 86400 * 365 + 61, 45};

	for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
		for (unsigned cap = 1; cap <= 12; cap++) {
			char buf[64];

			memset(buf, '#', sizeof(buf));
			fl_duration_format(values[v], buf, cap);
			for (size_t i = cap; i < sizeof(buf); i++)
				if (buf[i] != '#')
					fail_msg("fl_duration_format(%lld, cap %u) wrote byte %zu "
					         "(beyond cap): \"%.20s\"",
					         (long long)values[v], cap, i, buf);
			assert_non_null(memchr(buf, '\0', cap));
		}
	}
}

static void test_clocks(void **state)
{
	int64_t wall = fl_now_ms(), t0 = fl_mono_ns(), t1;
	struct timespec pause = {0, 2000000};

	/* After 2020-01-01 and before 2100-01-01. */
	assert_true(wall > 1577836800000LL);
	assert_true(wall < 4102444800000LL);
	assert_true(llabs((long long)time(NULL) - (long long)(wall / 1000)) <= 2);
	nanosleep(&pause, NULL);
	t1 = fl_mono_ns();
	assert_true(t1 - t0 >= 2000000);
	assert_true(fl_now_ms() >= wall);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_duration_parse_table),
	        cmocka_unit_test(test_duration_format_table),
	        cmocka_unit_test(test_duration_round_trip),
	        cmocka_unit_test(test_duration_format_respects_cap),
	        cmocka_unit_test(test_clocks),
	};

	return cmocka_run_group_tests_name("common/clock", tests, NULL, NULL);
}
