/* test_coding.c - Accept-Encoding negotiation, and gzip and zstd bodies
 * decoded by zlib and libzstd themselves back to the input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>
#include <zstd.h>

#include "coding.h"

static void test_accepted(void **state)
{
	static const struct {
		const char *ae;
		enum fl_coding want;
	} cases[] = {
	        {NULL, FL_CODING_IDENTITY},
	        {"", FL_CODING_IDENTITY},
	        {"gzip", FL_CODING_GZIP},
	        {"GZip", FL_CODING_GZIP},
	        {"x-gzip", FL_CODING_GZIP},
	        {"zstd", FL_CODING_ZSTD},
	        {"gzip, deflate", FL_CODING_GZIP}, /* requests without zstandard */
	        {"gzip, deflate, zstd", FL_CODING_ZSTD}, /* … with it: a tie goes to zstd */
	        {"deflate, gzip, br, zstd", FL_CODING_ZSTD}, /* curl --compressed */
	        {"gzip, deflate, br", FL_CODING_GZIP}, /* node's fetch */
	        {"gzip,x-gzip,deflate", FL_CODING_GZIP}, /* Apache HttpClient 5 */
	        {"gzip;q=0.9, zstd;q=0.5", FL_CODING_GZIP},
	        {"gzip;q=0.5,zstd;q=0.9", FL_CODING_ZSTD},
	        {"gzip ; q=0.5 , zstd ; Q=1.000", FL_CODING_ZSTD},
	        {"zstd;q=0, gzip", FL_CODING_GZIP},
	        {"gzip;q=0, zstd;q=0", FL_CODING_IDENTITY},
	        {"gzip;q=0.000", FL_CODING_IDENTITY},
	        {"*", FL_CODING_ZSTD},
	        {"*;q=0", FL_CODING_IDENTITY},
	        {"zstd;q=0, *", FL_CODING_GZIP},
	        {"gzip;q=0.2, *;q=0.5", FL_CODING_ZSTD}, /* * covers only what is not listed */
	        {"identity", FL_CODING_IDENTITY},
	        {"br, deflate, compress", FL_CODING_IDENTITY},
	        /* malformed elements count for nothing; the others still do */
	        {"gzip;q=2", FL_CODING_IDENTITY},
	        {"gzip;q=1.5", FL_CODING_IDENTITY},
	        {"gzip;q=0.0001", FL_CODING_IDENTITY},
	        {"gzip;q=", FL_CODING_IDENTITY},
	        {"gzip;q=abc", FL_CODING_IDENTITY},
	        {"gzip;level=9", FL_CODING_IDENTITY},
	        {"gzip;q=0.5;q=0.7", FL_CODING_GZIP},
	        {"gzipx, zstdy, gzi", FL_CODING_IDENTITY},
	        {"zstd;q=oops, gzip", FL_CODING_GZIP},
	        {",,, ,gzip,,", FL_CODING_GZIP},
	        {";q=1", FL_CODING_IDENTITY},
	        {"gzip\tzstd", FL_CODING_IDENTITY},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum fl_coding got = fl_coding_accepted(cases[i].ae);

		if (got != cases[i].want)
			fail_msg("Accept-Encoding '%s': %s, want %s",
			         cases[i].ae ? cases[i].ae : "(none)", fl_coding_name(got),
			         fl_coding_name(cases[i].want));
	}
}

/* Only the first 64 elements are read: a header of a million commas is
 * read in bounded time and a coding named past them is not seen. */
static void test_bounded(void **state)
{
	size_t n = 65 * 6 + 8;
	char *ae = malloc(n);
	size_t off = 0;

	assert_non_null(ae);
	for (int i = 0; i < 65; i++)
		off += (size_t)snprintf(ae + off, n - off, "br,   ");
	snprintf(ae + off, n - off, "gzip");
	assert_int_equal(fl_coding_accepted(ae), FL_CODING_IDENTITY);
	memcpy(ae, "gzip, ", 6);
	assert_int_equal(fl_coding_accepted(ae), FL_CODING_GZIP);
	free(ae);
}

static char *sample(size_t n)
{
	char *p = malloc(n ? n : 1);

	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = "{\"snapshot-id\":12345,\"summary\":{\"operation\":\"append\"}}"[i % 55];
	return p;
}

static void round_trip(enum fl_coding c, const char *in, size_t n)
{
	char *z = NULL, *back = malloc(n ? n : 1);
	size_t zn = 0;

	assert_non_null(back);
	assert_int_equal(fl_coding_encode(c, in, n, &z, &zn), 0);
	assert_non_null(z);
	if (c == FL_CODING_GZIP) {
		z_stream zs = {0};

		assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK); /* gzip framing only */
		zs.next_in = (Bytef *)z;
		zs.avail_in = (uInt)zn;
		zs.next_out = (Bytef *)back;
		zs.avail_out = (uInt)(n ? n : 1);
		assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
		assert_int_equal(zs.total_out, n);
		assert_int_equal(zs.avail_in, 0);
		inflateEnd(&zs);
	} else {
		assert_int_equal(ZSTD_getFrameContentSize(z, zn), n);
		assert_int_equal(ZSTD_decompress(back, n ? n : 1, z, zn), n);
	}
	assert_memory_equal(back, in, n);
	free(z);
	free(back);
}

static void test_round_trip(void **state)
{
	static const size_t sizes[] = {0, 1, 1024, 65536, 3 * 1024 * 1024 + 7};

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *in = sample(sizes[i]);

		round_trip(FL_CODING_GZIP, in, sizes[i]);
		round_trip(FL_CODING_ZSTD, in, sizes[i]);
		free(in);
	}
}

/* Metadata-like text shrinks; random bytes are still coded correctly. */
static void test_ratio_and_random(void **state)
{
	size_t n = 200000, zn = 0;
	char *in = sample(n), *z = NULL;

	assert_int_equal(fl_coding_encode(FL_CODING_ZSTD, in, n, &z, &zn), 0);
	assert_true(zn * 20 < n);
	free(z);
	for (size_t i = 0; i < n; i++)
		in[i] = (char)(rand() & 0xff);
	round_trip(FL_CODING_GZIP, in, n);
	round_trip(FL_CODING_ZSTD, in, n);
	free(in);
	assert_int_equal(fl_coding_encode(FL_CODING_IDENTITY, "x", 1, &z, &zn), -1);
	assert_string_equal(fl_coding_name(FL_CODING_GZIP), "gzip");
	assert_string_equal(fl_coding_name(FL_CODING_ZSTD), "zstd");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_accepted),
	        cmocka_unit_test(test_bounded),
	        cmocka_unit_test(test_round_trip),
	        cmocka_unit_test(test_ratio_and_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
