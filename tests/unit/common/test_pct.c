/* test_pct.c - strict percent-decoding and the encoder, including a
 * round trip of every byte value. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pct.h"

struct decode_case {
	const char *in;
	bool plus_is_space;
	const char *want; /* NULL = rejected */
	size_t want_len;
};

#define OK(in, plus, out)                      \
	{                                      \
		in, plus, out, sizeof(out) - 1 \
	}
#define BAD(in, plus)             \
	{                         \
		in, plus, NULL, 0 \
	}

static const struct decode_case decode_cases[] = {
        OK("", false, ""),
        OK("plain", false, "plain"),
        OK("a%2Fb", false, "a/b"), /* %2F is data, not a separator */
        OK("a%2fb", false, "a/b"),
        OK("%1F", false, "\x1f"), /* the namespace level separator */
        OK("a%1Fb%1Fc", false,
           "a\x1f"
           "b\x1f"
           "c"),
        OK("%25", false, "%"),
        OK("%252F", false, "%2F"), /* decoded once, never twice */
        OK("%41%42%43", false, "ABC"),
        OK("%C3%A9", false, "\xc3\xa9"),
        OK("%ff%FF", false, "\xff\xff"),
        OK("a+b", false, "a+b"),
        OK("a+b", true, "a b"),
        OK("%2B", true, "+"), /* an encoded plus stays a plus */
        OK("+", true, " "),
        OK("%20", false, " "),
        OK("%7E~", false, "~~"),
        BAD("%zz", false),
        BAD("%g0", false),
        BAD("%0g", false),
        BAD("%2", false),
        BAD("ab%2", false),
        BAD("%", false),
        BAD("abc%", false),
        BAD("%%", false),
        BAD("%%41", false),
        BAD("%-1", false),
        BAD("% 1", false),
        BAD("%00", false),
        BAD("a%00b", true),
};

static void test_decode_table(void **state)
{
	for (size_t i = 0; i < sizeof(decode_cases) / sizeof(decode_cases[0]); i++) {
		const struct decode_case *c = &decode_cases[i];
		size_t len = strlen(c->in), out_len = 12345;
		char out[64];
		struct fl_err err = {0};
		int rc;

		memset(out, '#', sizeof(out));
		rc = fl_pct_decode(c->in, len, c->plus_is_space, out, &out_len, &err);
		if (c->want == NULL) {
			if (rc == 0)
				fail_msg("\"%s\" was accepted", c->in);
			assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
			assert_non_null(strstr(err.msg, "percent-encoding"));
			assert_int_equal(out_len, 12345);
			continue;
		}
		if (rc != 0)
			fail_msg("\"%s\" rejected: %s", c->in, err.msg);
		assert_int_equal(out_len, c->want_len);
		assert_memory_equal(out, c->want, c->want_len);
		assert_int_equal(out[out_len], '\0');
		/* Never more than len + 1 bytes written. */
		for (size_t k = len + 1; k < sizeof(out); k++)
			assert_int_equal(out[k], '#');
	}
}

static void test_decode_messages(void **state)
{
	struct fl_err err;
	size_t n;
	char out[16];

	assert_int_equal(fl_pct_decode("abc%zz", 6, false, out, &n, &err), -1);
	assert_string_equal(
	        err.msg,
	        "invalid percent-encoding: '%' at offset 3 is not followed by two hex digits");
	assert_int_equal(fl_pct_decode("%00", 3, false, out, &n, &err), -1);
	assert_string_equal(err.msg, "invalid percent-encoding: %00 is not allowed");
}

static void test_decode_respects_len(void **state)
{
	struct fl_err err;
	size_t n;
	char out[16];

	/* Only len bytes are read: "%2F" cut to two bytes is incomplete, and
	 * a valid escape after len is never seen. */
	assert_int_equal(fl_pct_decode("%2F", 2, false, out, &n, &err), -1);
	assert_int_equal(fl_pct_decode("ab%2F", 2, false, out, &n, &err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out, "ab");
}

static void test_encode(void **state)
{
	static const struct {
		const char *in;
		const char *want;
	} cases[] = {
	        {"", ""},
	        {"AZaz09-._~", "AZaz09-._~"},
	        {"a/b", "a%2Fb"},
	        {"a b+c", "a%20b%2Bc"},
	        {"\x1f", "%1F"},
	        {"%", "%25"},
	        {"\xc3\xa9", "%C3%A9"},
	        {"!*'();:@&=$,?#[]", "%21%2A%27%28%29%3B%3A%40%26%3D%24%2C%3F%23%5B%5D"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[128];
		long n = fl_pct_encode(cases[i].in, strlen(cases[i].in), out, sizeof(out));

		assert_int_equal(n, (long)strlen(cases[i].want));
		assert_string_equal(out, cases[i].want);
	}
}

static void test_encode_cap(void **state)
{
	char out[16];

	memset(out, '#', sizeof(out));
	/* cap counts the NUL: "ab" needs 3, "/" needs 4. */
	assert_int_equal(fl_pct_encode("ab", 2, out, 3), 2);
	assert_string_equal(out, "ab");
	assert_int_equal(fl_pct_encode("ab", 2, out, 2), -1);
	assert_int_equal(fl_pct_encode("/", 1, out, 4), 3);
	assert_string_equal(out, "%2F");
	memset(out, '#', sizeof(out));
	assert_int_equal(fl_pct_encode("/", 1, out, 3), -1);
	assert_int_equal(fl_pct_encode("", 0, out, 0), -1);
	assert_int_equal(fl_pct_encode("", 0, out, 1), 0);
	/* A refused encode writes nothing past cap. */
	memset(out, '#', sizeof(out));
	assert_int_equal(fl_pct_encode("a/b/c", 5, out, 6), -1);
	for (size_t k = 6; k < sizeof(out); k++)
		assert_int_equal(out[k], '#');
}

static void test_round_trip_all_bytes(void **state)
{
	char in[256], enc[256 * 3 + 1], dec[256 * 3 + 1];
	struct fl_err err;
	size_t n;
	long elen;

	/* Every byte 1..255 survives encode then decode, in either mode. */
	for (int i = 1; i < 256; i++)
		in[i - 1] = (char)i;
	elen = fl_pct_encode(in, 255, enc, sizeof(enc));
	assert_true(elen > 0);
	for (int plus = 0; plus <= 1; plus++) {
		assert_int_equal(fl_pct_decode(enc, (size_t)elen, plus, dec, &n, &err), 0);
		assert_int_equal(n, 255);
		assert_memory_equal(dec, in, 255);
	}
	/* Byte by byte too, checking each encodes to itself or to %XX. */
	for (int c = 0; c < 256; c++) {
		char one = (char)c, e[4];
		long el = fl_pct_encode(&one, 1, e, sizeof(e));

		assert_true(el == 1 || el == 3);
		if (c == 0) {
			/* NUL encodes, but the decoder refuses it by design. */
			assert_string_equal(e, "%00");
			assert_int_equal(fl_pct_decode(e, 3, false, dec, &n, &err), -1);
			continue;
		}
		assert_int_equal(fl_pct_decode(e, (size_t)el, false, dec, &n, &err), 0);
		assert_int_equal(n, 1);
		assert_int_equal((unsigned char)dec[0], c);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_decode_table),
	        cmocka_unit_test(test_decode_messages),
	        cmocka_unit_test(test_decode_respects_len),
	        cmocka_unit_test(test_encode),
	        cmocka_unit_test(test_encode_cap),
	        cmocka_unit_test(test_round_trip_all_bytes),
	};

	return cmocka_run_group_tests_name("common/pct", tests, NULL, NULL);
}
