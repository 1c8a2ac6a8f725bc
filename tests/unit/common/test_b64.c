/* Unit tests of common/b64.c: both alphabets, padding, bounds, bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "b64.h"

static void test_decode_table(void **state)
{
	static const struct {
		const char *in;
		const char *out; /* NULL = must fail */
		size_t n;
	} cases[] = {
	        {"YTpi", "a:b", 3},     {"YTpiYw==", "a:bc", 4}, {"YTpiYw", "a:bc", 4},
	        {"-_8", "\xfb\xff", 2}, {"+/8=", "\xfb\xff", 2}, {"", "", 0},
	        {"a", NULL, 0},         {"a*b", NULL, 0},        {"YT pi", NULL, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char out[16];
		size_t n = 99;
		int rc = fl_b64_decode(cases[i].in, strlen(cases[i].in), out, sizeof(out), &n);

		if (cases[i].out == NULL) {
			assert_int_equal(rc, -1);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(n, cases[i].n);
		assert_memory_equal(out, cases[i].out, n);
	}
}

static void test_decode_bound(void **state)
{
	unsigned char out[4];
	size_t n;

	(void)state;
	assert_int_equal(fl_b64_decode("AAAAAAAA", 8, out, 4, &n), -1); /* 6 bytes */
	assert_int_equal(fl_b64_decode("AAAAA", 5, out, 4, &n), -1); /* 3 bytes + a dangling char */
	assert_int_equal(fl_b64_decode("AAAAAw", 6, out, sizeof(out), &n), 0);
	assert_int_equal(n, 4);
}

static void test_encode_roundtrip(void **state)
{
	unsigned char in[64], back[64];
	char text[100];
	size_t n;

	(void)state;
	for (size_t len = 0; len < sizeof(in); len++) {
		for (size_t i = 0; i < len; i++)
			in[i] = (unsigned char)(i * 37 + len);
		fl_b64url_encode(in, len, text);
		assert_int_equal(strlen(text), (4 * len + 2) / 3);
		assert_null(strpbrk(text, "+/="));
		assert_int_equal(fl_b64_decode(text, strlen(text), back, sizeof(back), &n), 0);
		assert_int_equal(n, len);
		assert_memory_equal(back, in, len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_decode_table),
	        cmocka_unit_test(test_decode_bound),
	        cmocka_unit_test(test_encode_roundtrip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
