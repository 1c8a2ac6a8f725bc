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

/* The decoder as it was before it read four characters at a time: one
 * character, six bits, at a time; the reference for the one in b64.c. */
static int ref_decode(const char *s, size_t n, unsigned char *out, size_t cap, size_t *out_len)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	unsigned v = 0;
	size_t o = 0;
	int bits = 0;

	while (n > 0 && s[n - 1] == '=')
		n--;
	for (size_t i = 0; i < n; i++) {
		const char *p = s[i] != '\0' ? strchr(al, s[i]) : NULL;
		int d = p != NULL                    ? (int)(p - al)
		        : s[i] == '+' || s[i] == '-' ? 62
		        : s[i] == '/' || s[i] == '_' ? 63
		                                     : -1;

		if (d < 0)
			return -1;
		v = (v << 6) | (unsigned)d;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == cap)
				return -1;
			out[o++] = (unsigned char)(v >> bits);
		}
	}
	if (bits >= 6)
		return -1;
	*out_len = o;
	return 0;
}

/* Random strings over both alphabets, with some '=' and characters of
 * neither, into buffers of random size: the same verdict, length and bytes. */
static void test_decode_matches_reference(void **state)
{
	static const char chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	                            "+/-_=.@ \n";
	uint32_t x = 1;

	(void)state;
	for (int it = 0; it < 300000; it++) {
		char s[48];
		unsigned char a[40], b[40];
		size_t n, cap, la = 0, lb = 0;
		int ra, rb;

		x = x * 1103515245u + 12345u;
		n = (x >> 16) % sizeof(s);
		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			s[i] = (x >> 16) % 100 < 97 ? chars[(x >> 16) % 64]
			                            : chars[64 + ((x >> 16) / 7) % 8];
		}
		x = x * 1103515245u + 12345u;
		cap = (x >> 16) % sizeof(a);
		ra = ref_decode(s, n, a, cap, &la);
		rb = fl_b64_decode(s, n, b, cap, &lb);
		assert_int_equal(rb, ra);
		if (ra == 0) {
			assert_int_equal(lb, la);
			assert_memory_equal(b, a, la);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_decode_table),
	        cmocka_unit_test(test_decode_bound),
	        cmocka_unit_test(test_encode_roundtrip),
	        cmocka_unit_test(test_decode_matches_reference),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
