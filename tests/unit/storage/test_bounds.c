/* test_bounds.c - single-value serialization (Iceberg spec Appendix D) and
 * truncate(16) bounds (storage/iceberg/types.c, bounds.c), including
 * multibyte UTF-8 and upper bounds that must be rounded up. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "iceberg/bounds.h"
#include "iceberg/types.h"

static void check_ser(const struct st_type *t, const struct st_value *v, const char *want_hex)
{
	struct st_buf b;
	char got[80];

	st_buf_init(&b, NULL);
	assert_int_equal(st_value_serialize(t, v, &b), 0);
	for (size_t i = 0; i < b.len; i++)
		snprintf(got + 2 * i, 3, "%02x", b.data[i]);
	got[2 * b.len] = '\0';
	assert_string_equal(got, want_hex);
	st_buf_free(&b);
}

static void test_serialize(void **state)
{
	struct st_type t = {0};
	struct st_value v = {0};
	static const uint8_t uuid[16] = {0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd,
	                                 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7};

	(void)state;
	t.id = ST_TYPE_BOOLEAN;
	v.v.b = true;
	check_ser(&t, &v, "01");
	t.id = ST_TYPE_INT;
	v.v.i = 1;
	check_ser(&t, &v, "01000000");
	v.v.i = -2;
	check_ser(&t, &v, "feffffff");
	t.id = ST_TYPE_DATE;
	v.v.i = 19000;
	check_ser(&t, &v, "384a0000");
	t.id = ST_TYPE_LONG;
	v.v.l = -1;
	check_ser(&t, &v, "ffffffffffffffff");
	t.id = ST_TYPE_TIMESTAMPTZ;
	v.v.l = 1700000000000000LL;
	check_ser(&t, &v, "00401e18240a0600");
	t.id = ST_TYPE_FLOAT;
	v.v.f = 1.0f;
	check_ser(&t, &v, "0000803f");
	t.id = ST_TYPE_DOUBLE;
	v.v.d = -0.0;
	check_ser(&t, &v, "0000000000000080");
	t.id = ST_TYPE_STRING;
	v.v.bin.p = (const uint8_t *)"abc";
	v.v.bin.len = 3;
	check_ser(&t, &v, "616263");
	t.id = ST_TYPE_UUID;
	v.v.bin.p = uuid;
	v.v.bin.len = 16;
	check_ser(&t, &v, "f79c3e09677c4bbda4793f349cb785e7");
	t.id = ST_TYPE_DECIMAL;
	t.precision = 38;
	t.scale = 2;
	st_value_set_decimal(&v, 1234);
	check_ser(&t, &v, "04d2");
	st_value_set_decimal(&v, 0);
	check_ser(&t, &v, "00");
	st_value_set_decimal(&v, -1);
	check_ser(&t, &v, "ff");
	st_value_set_decimal(&v, 127);
	check_ser(&t, &v, "7f");
	st_value_set_decimal(&v, 128);
	check_ser(&t, &v, "0080");
	st_value_set_decimal(&v, -128);
	check_ser(&t, &v, "80");
	st_value_set_decimal(&v, -129);
	check_ser(&t, &v, "ff7f");
	st_value_set_decimal(&v, INT64_MIN);
	check_ser(&t, &v, "8000000000000000");
}

static void test_compare(void **state)
{
	struct st_type t = {ST_TYPE_DOUBLE, 0, 0, 0};
	struct st_value a = {0}, b = {0};

	(void)state;
	a.v.d = -0.0;
	b.v.d = 0.0;
	assert_true(st_value_compare(&t, &a, &b) < 0);
	assert_true(st_value_compare(&t, &b, &a) > 0);
	t.id = ST_TYPE_DECIMAL;
	st_value_set_decimal(&a, -5);
	st_value_set_decimal(&b, 3);
	assert_true(st_value_compare(&t, &a, &b) < 0);
	t.id = ST_TYPE_STRING;
	a.v.bin.p = (const uint8_t *)"\xc3\xa9"; /* U+00E9 sorts after ASCII */
	a.v.bin.len = 2;
	b.v.bin.p = (const uint8_t *)"z";
	b.v.bin.len = 1;
	assert_true(st_value_compare(&t, &a, &b) > 0);
	b.v.bin.p = (const uint8_t *)"\xc3\xa9x";
	b.v.bin.len = 3;
	assert_true(st_value_compare(&t, &a, &b) < 0); /* a prefix sorts first */
}

struct tcase {
	enum st_type_id type;
	const char *in;
	size_t in_len;
	const char *lower;
	size_t lower_len;
	const char *upper; /* NULL: no upper bound */
	size_t upper_len;
};

#define S(x) x, sizeof(x) - 1

static const struct tcase tcases[] = {
        /* short values are kept whole */
        {ST_TYPE_STRING, S("abc"), S("abc"), S("abc")},
        {ST_TYPE_STRING, S(""), S(""), S("")},
        /* exactly 16 code points: untouched */
        {ST_TYPE_STRING, S("aaaaaaaaaaaaaaaa"), S("aaaaaaaaaaaaaaaa"), S("aaaaaaaaaaaaaaaa")},
        /* ASCII past 16: the last kept character goes up by one */
        {ST_TYPE_STRING, S("aaaaaaaaaaaaaaaaaaaa"), S("aaaaaaaaaaaaaaaa"), S("aaaaaaaaaaaaaaab")},
        /* 10 emoji are 40 bytes but 10 code points: untouched */
        {ST_TYPE_STRING,
         S("\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
           "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"),
         S("\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
           "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"),
         S("\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80"
           "\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80\xf0\x9f\x98\x80")},
        /* 17 x U+00E9 (2 bytes each): 16 kept; the upper bound ends in U+00EA */
        {ST_TYPE_STRING,
         S("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
           "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"),
         S("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
           "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"),
         S("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
           "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xaa")},
        /* 16th code point U+007F becomes U+0080: one byte grows to two */
        {ST_TYPE_STRING, S("aaaaaaaaaaaaaaa\x7fzz"), S("aaaaaaaaaaaaaaa\x7f"),
         S("aaaaaaaaaaaaaaa\xc2\x80")},
        /* 16th code point U+D7FF skips the surrogates to U+E000 */
        {ST_TYPE_STRING, S("aaaaaaaaaaaaaaa\xed\x9f\xbfz"), S("aaaaaaaaaaaaaaa\xed\x9f\xbf"),
         S("aaaaaaaaaaaaaaa\xee\x80\x80")},
        /* 16th code point U+FFFF becomes U+10000 (3 bytes to 4) */
        {ST_TYPE_STRING, S("aaaaaaaaaaaaaaa\xef\xbf\xbfz"), S("aaaaaaaaaaaaaaa\xef\xbf\xbf"),
         S("aaaaaaaaaaaaaaa\xf0\x90\x80\x80")},
        /* 16th is U+10FFFF, which cannot grow: the 15th goes up, the 16th is dropped */
        {ST_TYPE_STRING, S("aaaaaaaaaaaaaab\xf4\x8f\xbf\xbfz"),
         S("aaaaaaaaaaaaaab\xf4\x8f\xbf\xbf"), S("aaaaaaaaaaaaaac")},
        /* 17 x U+10FFFF: no upper bound exists */
        {ST_TYPE_STRING,
         S("\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f"
           "\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf"
           "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f"
           "\xbf\xbf"),
         S("\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f"
           "\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf"
           "\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf\xf4\x8f\xbf\xbf"),
         NULL, 0},
        /* binary: 16 bytes, last byte + 1 */
        {ST_TYPE_BINARY, S("0123456789abcdefXYZ"), S("0123456789abcdef"), S("0123456789abcdeg")},
        /* binary: trailing 0xff bytes are dropped and the byte before goes up */
        {ST_TYPE_BINARY, S("0123456789abcd\xff\xffXYZ"), S("0123456789abcd\xff\xff"),
         S("0123456789abce")},
        /* binary: all 0xff, no upper bound */
        {ST_TYPE_BINARY, S("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
         S("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"), NULL, 0},
        /* fixed is never truncated */
        {ST_TYPE_FIXED, S("0123456789abcdefghij"), S("0123456789abcdefghij"),
         S("0123456789abcdefghij")},
};

static void test_truncate(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(tcases) / sizeof(tcases[0]); i++) {
		const struct tcase *c = &tcases[i];
		struct st_type t = {c->type, 0, 0, (uint32_t)c->in_len};
		struct st_buf b;
		bool has;
		size_t lower;

		print_message("case %zu\n", i);
		lower = st_bound_lower_len(&t, (const uint8_t *)c->in, c->in_len, 16);
		assert_int_equal(lower, c->lower_len);
		assert_memory_equal(c->in, c->lower, lower);
		st_buf_init(&b, NULL);
		assert_int_equal(
		        st_bound_upper(&t, (const uint8_t *)c->in, c->in_len, 16, &b, &has), 0);
		if (c->upper == NULL) {
			assert_false(has);
		} else {
			assert_true(has);
			assert_int_equal(b.len, c->upper_len);
			assert_memory_equal(b.data, c->upper, b.len);
			/* An upper bound is >= the value it bounds. */
			if (c->in_len > 0) {
				size_t k = b.len < c->in_len ? b.len : c->in_len;

				assert_true(memcmp(b.data, c->in, k) > 0 ||
				            (b.len >= c->in_len &&
				             memcmp(b.data, c->in, c->in_len) == 0));
			}
		}
		if (c->type == ST_TYPE_STRING) {
			assert_true(st_utf8_valid((const uint8_t *)c->lower, c->lower_len));
			if (c->upper)
				assert_true(st_utf8_valid(b.data, b.len));
		}
		st_buf_free(&b);
	}
}

static void test_utf8_valid(void **state)
{
	static const struct {
		const char *s;
		size_t n;
		bool ok;
	} cases[] = {
	        {S("plain"), true},
	        {S("\xc3\xa9"), true},
	        {S("\xf0\x9f\x98\x80"), true},
	        {S("\xf4\x8f\xbf\xbf"), true},
	        {S("\xc3"), false}, /* truncated */
	        {S("\x80"), false}, /* lone continuation */
	        {S("\xc0\xaf"), false}, /* overlong */
	        {S("\xe0\x80\xaf"), false}, /* overlong, 3 bytes */
	        {S("\xed\xa0\x80"), false}, /* surrogate U+D800 */
	        {S("\xf4\x90\x80\x80"), false}, /* past U+10FFFF */
	        {S("\xff"), false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(st_utf8_valid((const uint8_t *)cases[i].s, cases[i].n),
		                 cases[i].ok);
}

static void test_type_parse(void **state)
{
	struct st_type t;
	struct fl_err err = {0};
	char name[32];

	(void)state;
	assert_int_equal(st_type_parse("decimal(38, 10)", &t, &err), 0);
	assert_int_equal(t.id, ST_TYPE_DECIMAL);
	assert_int_equal(t.precision, 38);
	assert_int_equal(t.scale, 10);
	st_type_format(&t, name, sizeof(name));
	assert_string_equal(name, "decimal(38, 10)");
	assert_int_equal(st_type_parse("fixed[16]", &t, &err), 0);
	assert_int_equal(t.length, 16);
	assert_int_equal(st_type_parse("timestamptz", &t, &err), 0);
	assert_int_equal(t.id, ST_TYPE_TIMESTAMPTZ);
	assert_int_equal(st_type_parse("timestamp_ns", &t, &err), 0);
	assert_int_equal(t.id, ST_TYPE_TIMESTAMP_NS);
	st_type_format(&t, name, sizeof(name));
	assert_string_equal(name, "timestamp_ns");
	assert_int_equal(st_type_parse("decimal(39, 1)", &t, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_int_equal(st_type_parse("decimal(5,6)", &t, &err), -1);
	assert_int_equal(st_type_parse("varchar", &t, &err), -1);
	assert_int_equal(st_decimal_bytes(9), 4);
	assert_int_equal(st_decimal_bytes(10), 5);
	assert_int_equal(st_decimal_bytes(18), 8);
	assert_int_equal(st_decimal_bytes(19), 9);
	assert_int_equal(st_decimal_bytes(38), 16);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_serialize),  cmocka_unit_test(test_compare),
	        cmocka_unit_test(test_truncate),   cmocka_unit_test(test_utf8_valid),
	        cmocka_unit_test(test_type_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
