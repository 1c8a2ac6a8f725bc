/* test_transform.c - partition transforms against the Iceberg spec's
 * reference values (Appendix B hashes; the transform table's examples). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "iceberg/transform.h"

static struct st_value lv(int64_t l)
{
	struct st_value v = {0};

	v.v.l = l;
	return v;
}

static struct st_value iv(int32_t i)
{
	struct st_value v = {0};

	v.v.i = i;
	return v;
}

static struct st_value bv(const void *p, size_t n)
{
	struct st_value v = {0};

	v.v.bin.p = p;
	v.v.bin.len = n;
	return v;
}

static int32_t hash_of(struct st_type t, struct st_value v)
{
	/* bucket[INT32_MAX]-free way to see the hash: bucket[2^31-1] of h&MAX
	 * is h&MAX itself unless it equals the modulus; compare the masks. */
	struct st_transform tr;
	struct st_type res;
	struct st_value out;
	struct fl_err err;

	assert_int_equal(st_transform_parse("bucket[2147483647]", &t, &tr, &res, &err), 0);
	st_transform_apply(&tr, &t, &v, &out);
	return out.v.i;
}

static void test_murmur3_spec_values(void **state)
{
	/* Appendix B: hash values for the reference inputs. */
	static const uint8_t uuid[16] = {0xf7, 0x9c, 0x3e, 0x09, 0x67, 0x7c, 0x4b, 0xbd,
	                                 0xa4, 0x79, 0x3f, 0x34, 0x9c, 0xb7, 0x85, 0xe7};
	static const uint8_t bytes[4] = {0, 1, 2, 3};
	struct st_type t_int = {.id = ST_TYPE_INT}, t_long = {.id = ST_TYPE_LONG},
	               t_date = {.id = ST_TYPE_DATE}, t_time = {.id = ST_TYPE_TIME},
	               t_ts = {.id = ST_TYPE_TIMESTAMP}, t_str = {.id = ST_TYPE_STRING},
	               t_uuid = {.id = ST_TYPE_UUID}, t_bin = {.id = ST_TYPE_BINARY},
	               t_dec = {.id = ST_TYPE_DECIMAL, .precision = 9, .scale = 2};
	struct st_value dec = {0};

	(void)state;
	assert_int_equal((int32_t)st_murmur3_32("iceberg", 7), 1210000089);
	assert_int_equal(hash_of(t_int, iv(34)), 2017239379 & INT32_MAX);
	assert_int_equal(hash_of(t_long, lv(34)), 2017239379 & INT32_MAX);
	assert_int_equal(hash_of(t_date, iv(17486)), (int32_t)(-653330422 & INT32_MAX));
	assert_int_equal(hash_of(t_time, lv(81068000000LL)), (int32_t)(-662762989 & INT32_MAX));
	assert_int_equal(hash_of(t_ts, lv(1510871468000000LL)), (int32_t)(-2047944441 & INT32_MAX));
	assert_int_equal(hash_of(t_str, bv("iceberg", 7)), 1210000089 & INT32_MAX);
	assert_int_equal(hash_of(t_uuid, bv(uuid, 16)), 1488055340 & INT32_MAX);
	assert_int_equal(hash_of(t_bin, bv(bytes, 4)), (int32_t)(-188683207 & INT32_MAX));
	/* 14.20 as decimal(9,2): unscaled 1420. */
	dec.v.dec[14] = 0x05;
	dec.v.dec[15] = 0x8c;
	assert_int_equal(hash_of(t_dec, dec), (int32_t)(-500754589 & INT32_MAX));
}

struct tcase {
	const char *transform;
	struct st_type src;
	int64_t in;
	int64_t want;
};

static void test_temporal_and_truncate(void **state)
{
	/* clang-format off */
	static const struct tcase cases[] = {
		{"year", {.id = ST_TYPE_DATE}, 17486, 47},           /* 2017-11-16 */
		{"month", {.id = ST_TYPE_DATE}, 17486, 574},         /* (2017-1970)*12 + 10 */
		{"day", {.id = ST_TYPE_DATE}, 17486, 17486},
		{"day", {.id = ST_TYPE_TIMESTAMP}, 1510871468000000LL, 17486},
		{"hour", {.id = ST_TYPE_TIMESTAMP}, 1510871468000000LL, 419686},
		{"day", {.id = ST_TYPE_TIMESTAMP}, -1, -1},          /* 1969-12-31T23:59:59.999999 */
		{"month", {.id = ST_TYPE_DATE}, -1, -1},             /* 1969-12 */
		{"year", {.id = ST_TYPE_DATE}, -1, -1},
		{"truncate[10]", {.id = ST_TYPE_INT}, 1, 0},
		{"truncate[10]", {.id = ST_TYPE_INT}, -1, -10},
		{"truncate[10]", {.id = ST_TYPE_LONG}, 1234, 1230},
	};
	/* clang-format on */
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct tcase *c = &cases[i];
		struct st_transform tr;
		struct st_type res;
		struct st_value in, out;
		struct fl_err err;
		bool small = c->src.id == ST_TYPE_DATE || c->src.id == ST_TYPE_INT;

		in = small ? iv((int32_t)c->in) : lv(c->in);
		assert_int_equal(st_transform_parse(c->transform, &c->src, &tr, &res, &err), 0);
		st_transform_apply(&tr, &c->src, &in, &out);
		if (res.id == ST_TYPE_LONG)
			assert_int_equal(out.v.l, c->want);
		else
			assert_int_equal(out.v.i, (int32_t)c->want);
	}
}

static void test_truncate_string_code_points(void **state)
{
	struct st_type t = {.id = ST_TYPE_STRING}, res;
	struct st_transform tr;
	struct st_value in = bv("h\xc3\xa9llo", 6), out;
	struct fl_err err;

	(void)state;
	assert_int_equal(st_transform_parse("truncate[2]", &t, &tr, &res, &err), 0);
	st_transform_apply(&tr, &t, &in, &out);
	assert_int_equal(out.v.bin.len, 3); /* "hé": two code points, three bytes */
}

static void test_rejections(void **state)
{
	struct st_type f = {.id = ST_TYPE_FLOAT}, s = {.id = ST_TYPE_STRING}, res;
	struct st_transform tr;
	struct fl_err err;

	(void)state;
	assert_int_equal(st_transform_parse("bucket[4]", &f, &tr, &res, &err), -1);
	assert_int_equal(st_transform_parse("day", &s, &tr, &res, &err), -1);
	assert_int_equal(st_transform_parse("bucket[0]", &s, &tr, &res, &err), -1);
	assert_int_equal(st_transform_parse("zorder", &s, &tr, &res, &err), -1);
	assert_int_equal(err.kind, FL_ERR_UNSUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_murmur3_spec_values),
	        cmocka_unit_test(test_temporal_and_truncate),
	        cmocka_unit_test(test_truncate_string_code_points),
	        cmocka_unit_test(test_rejections),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
