/* test_cast.c - the cast rules of storage/feed/cast.c, one table row per
 * accepted or refused value: each type's edges (integer limits, -0.0, NaN,
 * 38-digit decimals, leap days, 0001-01-01 and 9999-12-31T23:59:59.999999,
 * zone offsets, the nanosecond range) for text and for JSON.  Accepted
 * values are rendered back to text and compared; refusals are compared with
 * the message the user will read. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cast.h"

/* Signed 16-byte big-endian to decimal text. */
static void dec_text(const uint8_t dec[16], char *out, size_t cap)
{
	__extension__ typedef unsigned __int128 u128;
	u128 u = 0;
	bool neg = dec[0] & 0x80;
	char tmp[48];
	size_t n = 0, o = 0;

	for (int i = 0; i < 16; i++)
		u = u << 8 | dec[i];
	if (neg)
		u = ~u + 1;
	do {
		tmp[n++] = (char)('0' + (int)(u % 10));
		u /= 10;
	} while (u != 0);
	if (neg)
		out[o++] = '-';
	while (n > 0 && o + 1 < cap)
		out[o++] = tmp[--n];
	out[o] = '\0';
}

static void render(const struct st_type *t, const struct st_value *v, char *out, size_t cap)
{
	size_t o = 0;

	if (v->null) {
		snprintf(out, cap, "null");
		return;
	}
	switch (t->id) {
	case ST_TYPE_BOOLEAN: snprintf(out, cap, "%s", v->v.b ? "true" : "false"); break;
	case ST_TYPE_INT:
	case ST_TYPE_DATE: snprintf(out, cap, "%d", v->v.i); break;
	case ST_TYPE_FLOAT: snprintf(out, cap, "%.9g", (double)v->v.f); break;
	case ST_TYPE_DOUBLE: snprintf(out, cap, "%.17g", v->v.d); break;
	case ST_TYPE_DECIMAL: dec_text(v->v.dec, out, cap); break;
	case ST_TYPE_STRING: snprintf(out, cap, "%.*s", (int)v->v.bin.len, v->v.bin.p); break;
	case ST_TYPE_UUID:
	case ST_TYPE_FIXED:
	case ST_TYPE_BINARY:
		out[0] = '\0';
		for (size_t i = 0; i < v->v.bin.len && o + 3 < cap; i++)
			o += (size_t)snprintf(out + o, cap - o, "%02x", v->v.bin.p[i]);
		break;
	default: snprintf(out, cap, "%lld", (long long)v->v.l); break;
	}
}

struct cast_case {
	const char *type;
	const char *in;
	bool ok;
	const char *want; /* the rendered value, or a substring of the message */
};

/* A type written "utc:timestamptz" runs with tz_assume_utc. */
static const char *case_type(const struct cast_case *c, struct st_cast_opts *o)
{
	o->tz_assume_utc = strncmp(c->type, "utc:", 4) == 0;
	return o->tz_assume_utc ? c->type + 4 : c->type;
}

static const struct cast_case text_cases[] = {
        /* boolean */
        {"boolean", "true", true, "true"},
        {"boolean", "TRUE", true, "true"},
        {"boolean", "False", true, "false"},
        {"boolean", "1", true, "true"},
        {"boolean", "0", true, "false"},
        {"boolean", "yes", false,
         "value \"yes\" is not a valid boolean: expected true, false, 1 or 0"},
        {"boolean", " true", false, "is not a valid boolean"},
        {"boolean", "", false, "value \"\" is not a valid boolean"},
        {"boolean", "01", false, "is not a valid boolean"},
        {"boolean", "t", false, "is not a valid boolean"},
        /* int, long */
        {"int", "0", true, "0"},
        {"int", "-0", true, "0"},
        {"int", "+7", true, "7"},
        {"int", "007", true, "7"},
        {"int", "2147483647", true, "2147483647"},
        {"int", "-2147483648", true, "-2147483648"},
        {"int", "2147483648", false, "value \"2147483648\" does not fit int: out of range"},
        {"int", "-2147483649", false, "does not fit int: out of range"},
        {"int", "1.0", false, "value \"1.0\" is not a valid int: expected an integer"},
        {"int", "1e3", false, "is not a valid int"},
        {"int", " 1", false, "is not a valid int"},
        {"int", "1 ", false, "is not a valid int"},
        {"int", "", false, "is not a valid int"},
        {"int", "-", false, "is not a valid int"},
        {"int", "0x10", false, "is not a valid int"},
        {"long", "9223372036854775807", true, "9223372036854775807"},
        {"long", "-9223372036854775808", true, "-9223372036854775808"},
        {"long", "9223372036854775808", false, "does not fit long: out of range"},
        {"long", "-9223372036854775809", false, "does not fit long: out of range"},
        {"long", "99999999999999999999999999", false, "does not fit long: out of range"},
        {"long", "99999999999999999999999999x", false, "is not a valid long"},
        /* float, double */
        {"float", "1.5", true, "1.5"},
        {"float", "-0.0", true, "-0"},
        {"float", "3.4028235e38", true, "3.40282347e+38"},
        {"float", "1e39", false, "value \"1e39\" does not fit float: out of range"},
        {"float", "1e-50", true, "0"},
        {"float", "NaN", true, "nan"},
        {"float", "Infinity", true, "inf"},
        {"float", "-inf", true, "-inf"},
        {"float", "1.5x", false, "is not a valid float"},
        {"float", "0x1p3", false, "is not a valid float"},
        {"double", "1.7976931348623157e308", true, "1.7976931348623157e+308"},
        {"double", "1e309", false, "does not fit double: out of range"},
        {"double", "-1e309", false, "does not fit double: out of range"},
        {"double", "-0.0", true, "-0"},
        {"double", ".5", true, "0.5"},
        {"double", "5.", true, "5"},
        {"double", "+2E+2", true, "200"},
        {"double", "1e-400", true, "0"},
        {"double", "4.9e-324", true, "4.9406564584124654e-324"},
        {"double", "0.1", true, "0.10000000000000001"},
        {"double", "nan", true, "nan"},
        {"double", "+Infinity", true, "inf"},
        {"double", "-Infinity", true, "-inf"},
        {"double", "1,5", false,
         "value \"1,5\" is not a valid double: expected a decimal number, NaN or Infinity"},
        {"double", "", false, "is not a valid double"},
        {"double", " 1", false, "is not a valid double"},
        {"double", "e5", false, "is not a valid double"},
        {"double", "1e", false, "is not a valid double"},
        {"double", "--1", false, "is not a valid double"},
        {"double", "NaNx", false, "is not a valid double"},
        {"double", ".", false, "is not a valid double"},
        /* decimal */
        {"decimal(5, 2)", "123.45", true, "12345"},
        {"decimal(5, 2)", "-123.45", true, "-12345"},
        {"decimal(5, 2)", "12.345", false,
         "value \"12.345\" does not fit decimal(5, 2): too many fractional digits"},
        {"decimal(5, 2)", "12.340", true, "1234"},
        {"decimal(5, 2)", "1234.5", false,
         "value \"1234.5\" does not fit decimal(5, 2): too many digits before the decimal point"},
        {"decimal(5, 2)", "999.99", true, "99999"},
        {"decimal(5, 2)", "-999.99", true, "-99999"},
        {"decimal(5, 2)", "0.01", true, "1"},
        {"decimal(5, 2)", ".5", true, "50"},
        {"decimal(5, 2)", "5.", true, "500"},
        {"decimal(5, 2)", "1.5e2", true, "15000"},
        {"decimal(5, 2)", "1E-2", true, "1"},
        {"decimal(5, 2)", "100e-2", true, "100"},
        {"decimal(5, 2)", "1e-3", false, "too many fractional digits"},
        {"decimal(5, 2)", "1e3", false, "too many digits before the decimal point"},
        {"decimal(5, 2)", "-0", true, "0"},
        {"decimal(5, 2)", "-0.00", true, "0"},
        {"decimal(5, 2)", "+1", true, "100"},
        {"decimal(5, 2)", "00001.50", true, "150"},
        {"decimal(5, 2)", "0e99999", true, "0"},
        {"decimal(5, 2)", "1e99999", false, "too many digits before the decimal point"},
        {"decimal(5, 2)", "1e100000", false, "exponent out of range"},
        {"decimal(5, 2)", "1.2.3", false, "is not a valid decimal(5, 2)"},
        {"decimal(5, 2)", "abc", false, "is not a valid decimal(5, 2)"},
        {"decimal(5, 2)", "", false, "is not a valid decimal(5, 2)"},
        {"decimal(5, 2)", ".", false, "is not a valid decimal(5, 2)"},
        {"decimal(5, 2)", "1e", false, "expected digits after the exponent"},
        {"decimal(5, 2)", " 1", false, "is not a valid decimal(5, 2)"},
        {"decimal(5, 2)", "NaN", false, "is not a valid decimal(5, 2)"},
        {"decimal(38, 0)", "99999999999999999999999999999999999999", true,
         "99999999999999999999999999999999999999"},
        {"decimal(38, 0)", "-99999999999999999999999999999999999999", true,
         "-99999999999999999999999999999999999999"},
        {"decimal(38, 0)", "999999999999999999999999999999999999999", false,
         "too many digits before the decimal point"},
        {"decimal(38, 10)", "1234567890123456789012345678.0123456789", true,
         "12345678901234567890123456780123456789"},
        {"decimal(38, 38)", "0.12345678901234567890123456789012345678", true,
         "12345678901234567890123456789012345678"},
        {"decimal(38, 38)", "-.99999999999999999999999999999999999999", true,
         "-99999999999999999999999999999999999999"},
        {"decimal(38, 38)", "1.0", false, "too many digits before the decimal point"},
        {"decimal(1, 0)", "9", true, "9"},
        {"decimal(1, 0)", "10", false, "too many digits before the decimal point"},
        {"decimal(1, 0)", "0.5", false, "too many fractional digits"},
        /* date */
        {"date", "1970-01-01", true, "0"},
        {"date", "1969-12-31", true, "-1"},
        {"date", "2000-02-29", true, "11016"},
        {"date", "2024-02-29", true, "19782"},
        {"date", "1900-03-01", true, "-25508"},
        {"date", "0001-01-01", true, "-719162"},
        {"date", "9999-12-31", true, "2932896"},
        {"date", "1900-02-29", false,
         "value \"1900-02-29\" does not fit date: no such day in that month"},
        {"date", "2023-02-29", false, "no such day in that month"},
        {"date", "2020-04-31", false, "no such day in that month"},
        {"date", "2020-00-10", false, "month out of range"},
        {"date", "2020-13-01", false, "month out of range"},
        {"date", "0000-01-01", false, "year 0000 is outside 0001..9999"},
        {"date", "10000-01-01", false, "is not a valid date: expected YYYY-MM-DD"},
        {"date", "2020-1-01", false, "is not a valid date"},
        {"date", "2020/01/01", false, "is not a valid date"},
        {"date", "2020-01-01T00:00:00", false, "is not a valid date"},
        {"date", "", false, "is not a valid date"},
        /* time */
        {"time", "00:00:00", true, "0"},
        {"time", "23:59:59.999999", true, "86399999999"},
        {"time", "12:34:56.5", true, "45296500000"},
        {"time", "12:00:00.123456000", true, "43200123456"},
        {"time", "24:00:00", false,
         "value \"24:00:00\" does not fit time: hour, minute or second out of range"},
        {"time", "23:60:00", false, "out of range"},
        {"time", "23:59:60", false, "out of range"},
        {"time", "12:00", false, "is not a valid time"},
        {"time", "1:00:00", false, "is not a valid time"},
        {"time", "12:00:00.", false, "expected digits after the point"},
        {"time", "12:00:00.1234567", false, "nonzero digits below a microsecond"},
        {"time", "12:00:00.1234567890", false, "more than 9 fractional digits"},
        {"time", "12:00:00Z", false, "unexpected text after the time"},
        /* timestamp */
        {"timestamp", "1970-01-01T00:00:00", true, "0"},
        {"timestamp", "1970-01-01 00:00:01", true, "1000000"},
        {"timestamp", "2000-02-29t12:00:00.5", true, "951825600500000"},
        {"timestamp", "1969-12-31T23:59:59.999999", true, "-1"},
        {"timestamp", "9999-12-31T23:59:59.999999", true, "253402300799999999"},
        {"timestamp", "0001-01-01T00:00:00", true, "-62135596800000000"},
        {"timestamp", "2020-01-01T00:00:00.123456000", true, "1577836800123456"},
        {"timestamp", "2020-01-01T00:00:00Z", false,
         "value \"2020-01-01T00:00:00Z\" is not a valid timestamp: a zone is not allowed (use timestamptz)"},
        {"timestamp", "2020-01-01T00:00:00+01:00", false, "a zone is not allowed"},
        {"timestamp", "2020-01-01", false, "expected a time after the date"},
        {"timestamp", "2020-01-01X00:00:00", false, "expected T or a space"},
        {"timestamp", "2020-01-01T00:00:00.123456789", false, "nonzero digits below a microsecond"},
        {"timestamp", "2020-01-01T00:00:00 ", false, "unexpected text after the time"},
        {"timestamp", "2020-02-30T00:00:00", false, "no such day in that month"},
        {"timestamp", "2020-01-01T25:00:00", false, "out of range"},
        /* timestamptz */
        {"timestamptz", "1970-01-01T00:00:00Z", true, "0"},
        {"timestamptz", "1970-01-01T00:00:00z", true, "0"},
        {"timestamptz", "1970-01-01T01:00:00+01:00", true, "0"},
        {"timestamptz", "1970-01-01T01:00:00+0100", true, "0"},
        {"timestamptz", "1969-12-31T19:00:00-05:00", true, "0"},
        {"timestamptz", "1970-01-01T05:30:00+05:30", true, "0"},
        {"timestamptz", "1970-01-01T00:00:00-00:00", true, "0"},
        {"timestamptz", "2020-01-01T00:00:00.5Z", true, "1577836800500000"},
        {"timestamptz", "9999-12-31T23:59:59.999999-01:00", true, "253402304399999999"},
        {"timestamptz", "0001-01-01T00:00:00+01:00", true, "-62135600400000000"},
        {"timestamptz", "1970-01-01T00:00:00", false,
         "value \"1970-01-01T00:00:00\" is not a valid timestamptz: a zone (Z or +HH:MM) is required"},
        {"utc:timestamptz", "1970-01-01T00:00:00", true, "0"},
        {"utc:timestamptz", "1970-01-01T00:00:00+01:00", true, "-3600000000"},
        {"timestamptz", "1970-01-01T00:00:00+01", false, "expected a zone"},
        {"timestamptz", "1970-01-01T00:00:00+1:00", false, "expected a zone"},
        {"timestamptz", "1970-01-01T00:00:00+01:00:00", false, "expected a zone"},
        {"timestamptz", "1970-01-01T00:00:00+24:00", false, "zone offset out of range"},
        {"timestamptz", "1970-01-01T00:00:00+01:60", false, "zone offset out of range"},
        {"timestamptz", "1970-01-01T00:00:00UTC", false, "unexpected text after the time"},
        /* nanosecond timestamps */
        {"timestamp_ns", "1970-01-01T00:00:00.000000001", true, "1"},
        {"timestamp_ns", "2262-04-11T23:47:16.854775807", true, "9223372036854775807"},
        {"timestamp_ns", "2262-04-11T23:47:16.854775808", false, "outside the nanosecond range"},
        {"timestamp_ns", "1677-09-21T00:12:43.145224192", true, "-9223372036854775808"},
        {"timestamp_ns", "1677-09-21T00:12:43.145224191", false, "outside the nanosecond range"},
        {"timestamp_ns", "9999-12-31T00:00:00", false, "outside the nanosecond range"},
        {"timestamptz_ns", "1970-01-01T00:00:00.5+00:00", true, "500000000"},
        {"timestamptz_ns", "1970-01-01T00:00:00.5", false, "a zone (Z or +HH:MM) is required"},
        /* uuid */
        {"uuid", "123e4567-e89b-12d3-a456-426614174000", true, "123e4567e89b12d3a456426614174000"},
        {"uuid", "123E4567-E89B-12D3-A456-426614174000", true, "123e4567e89b12d3a456426614174000"},
        {"uuid", "123e4567e89b12d3a456426614174000", false,
         "is not a valid uuid: expected 8-4-4-4-12 hex digits"},
        {"uuid", "{123e4567-e89b-12d3-a456-426614174000}", false, "is not a valid uuid"},
        {"uuid", "123e4567-e89b-12d3-a456-42661417400g", false, "is not a valid uuid"},
        {"uuid", "123e4567-e89b-12d3a-456-426614174000", false, "is not a valid uuid"},
        {"uuid", "", false, "is not a valid uuid"},
        /* binary, fixed */
        {"binary", "\\x0aff", true, "0aff"},
        {"binary", "0AFF", true, "0aff"},
        {"binary", "", true, ""},
        {"binary", "\\x", true, ""},
        {"binary", "abc", false,
         "value \"abc\" is not a valid binary: expected an even number of hex digits"},
        {"binary", "zz", false, "expected hex digits"},
        {"binary", "AAE=", false, "expected hex digits"},
        {"fixed[2]", "0aff", true, "0aff"},
        {"fixed[2]", "\\x0aff", true, "0aff"},
        {"fixed[2]", "0a", false,
         "value \"0a\" does not fit fixed[2]: wrong number of bytes for the fixed length"},
        {"fixed[2]", "0aff00", false, "wrong number of bytes"},
        /* string */
        {"string", "h\xc3\xa9llo", true, "h\xc3\xa9llo"},
        {"string", "", true, ""},
        {"string", "a\xff", false, "value \"a\\xff\" is not a valid string: not valid UTF-8"},
        {"string", "\xed\xa0\x80", false, "not valid UTF-8"},
        {"string", "\xc0\xaf", false, "not valid UTF-8"},
        /* Long and odd values are cut and escaped in messages. */
        {"int", "1234567890123456789012345678901234567890123456789012345678901234567890", false,
         "value \"1234567890123456789012345678901234567890123456789012345678901234...\" does not fit int"},
        {"int", "a\"b\\c\n", false, "value \"a\\\"b\\\\c\\x0a\" is not a valid int"},
};

static void test_text(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]); i++) {
		const struct cast_case *c = &text_cases[i];
		struct st_type t;
		struct st_value v;
		struct fl_err err = {0};
		uint8_t room[64];
		struct st_cast_scratch sc = {room, sizeof(room), 0};
		struct st_cast_opts o = {0};
		char got[128];
		int rc;

		assert_int_equal(st_type_parse(case_type(c, &o), &t, &err), 0);
		memset(&v, 0xa5, sizeof(v));
		rc = st_cast_text(&t, c->in, strlen(c->in), &o, &sc, &v, &err);
		if (c->ok) {
			if (rc != 0)
				fail_msg("case %zu (%s \"%s\"): refused: %s", i, c->type, c->in,
				         err.msg);
			assert_false(v.null);
			render(&t, &v, got, sizeof(got));
			if (strcmp(got, c->want) != 0)
				fail_msg("case %zu (%s \"%s\"): got %s, want %s", i, c->type, c->in,
				         got, c->want);
		} else {
			uint8_t untouched[sizeof(v)];

			memset(untouched, 0xa5, sizeof(untouched));
			if (rc == 0)
				fail_msg("case %zu (%s \"%s\"): accepted", i, c->type, c->in);
			assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
			if (strstr(err.msg, c->want) == NULL)
				fail_msg("case %zu: message\n  %s\nlacks\n  %s", i, err.msg,
				         c->want);
			assert_memory_equal(&v, untouched, sizeof(v));
		}
	}
}

static void test_nan_and_negative_zero_bits(void **state)
{
	struct st_type d = {.id = ST_TYPE_DOUBLE}, f = {.id = ST_TYPE_FLOAT};
	struct st_value v;
	struct fl_err err;

	(void)state;
	assert_int_equal(st_cast_text(&d, "-0.0", 4, NULL, NULL, &v, &err), 0);
	assert_true(v.v.d == 0.0 && signbit(v.v.d));
	assert_int_equal(st_cast_text(&d, "NaN", 3, NULL, NULL, &v, &err), 0);
	assert_true(isnan(v.v.d));
	assert_int_equal(st_cast_text(&f, "-0", 2, NULL, NULL, &v, &err), 0);
	assert_true(v.v.f == 0.0f && signbit(v.v.f));
	/* A float is rounded once, from the text, not via a double. */
	assert_int_equal(
	        st_cast_text(&f, "1.00000005960464477539062500000001", 34, NULL, NULL, &v, &err),
	        0);
	assert_true(v.v.f == 1.00000011920928955078125f);
}

/* The exact fast path for short decimals (up to 15 significant digits)
 * must give the very bits strtod gives, and leave everything else to it:
 * random digit strings of every length and decimal point position, signs,
 * leading zeros, and the 15/16-digit border. */
static void test_double_fast_path_matches_strtod(void **state)
{
	static const char *const edge[] = {"999999999999999",
	                                   "9999999999999999",
	                                   "0.000000000000001",
	                                   "0.0000000000000001",
	                                   "123456789012345.",
	                                   ".123456789012345",
	                                   "-0",
	                                   "+0.5",
	                                   "000000000000000001",
	                                   "9007199254740993",
	                                   "0.1",
	                                   "-3.14159265358979"};
	struct st_type d = {.id = ST_TYPE_DOUBLE};
	uint64_t x = 0x9e3779b97f4a7c15u;
	struct st_value v;
	struct fl_err err;
	char text[40];

	(void)state;
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++) {
		double want = strtod(edge[i], NULL);

		assert_int_equal(st_cast_text(&d, edge[i], strlen(edge[i]), NULL, NULL, &v, &err),
		                 0);
		assert_memory_equal(&v.v.d, &want, sizeof(want));
	}
	for (int i = 0; i < 200000; i++) {
		size_t n = 0, digits, dot;
		double want;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		digits = 1 + x % 17;
		dot = (x >> 8) % (digits + 2);
		if ((x >> 16) & 1)
			text[n++] = '-';
		for (size_t k = 0; k < digits; k++) {
			if (k == dot)
				text[n++] = '.';
			text[n++] = (char)('0' + (x >> (20 + 2 * k % 40)) % 10);
		}
		text[n] = '\0';
		want = strtod(text, NULL);
		assert_int_equal(st_cast_text(&d, text, n, NULL, NULL, &v, &err), 0);
		assert_memory_equal(&v.v.d, &want, sizeof(want));
	}
}

/* Decimals in plain notation are read by a one-pass fast path; the same
 * text with "e0" appended means the same number but takes the general
 * path.  Both must agree - the same 16 bytes, or both refused - over random
 * texts: signs, leading zeros, a point with and without digits, more
 * fraction digits than the scale, values at and over the precision. */
static void test_decimal_fast_path_matches_general(void **state)
{
	static const struct st_type types[] = {
	        {ST_TYPE_DECIMAL, 9, 2, 0},   {ST_TYPE_DECIMAL, 18, 4, 0},
	        {ST_TYPE_DECIMAL, 18, 0, 0},  {ST_TYPE_DECIMAL, 5, 3, 0},
	        {ST_TYPE_DECIMAL, 38, 10, 0}, {ST_TYPE_DECIMAL, 1, 0, 0},
	        {ST_TYPE_DECIMAL, 10, 2, 0},
	};
	uint64_t x = 0x2545f4914f6cdd1dULL;
	int ok = 0, refused = 0;

	(void)state;
	for (int i = 0; i < 300000; i++) {
		const struct st_type *t = &types[i % 7];
		char text[64], general[70];
		struct st_value a, b;
		struct fl_err ea, eb;
		size_t n = 0, ints, fracs;
		int ra, rb;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		ints = x % 21;
		fracs = (x >> 8) % 8;
		if ((x >> 12) % 3 == 0)
			text[n++] = (x >> 14) & 1 ? '-' : '+';
		for (size_t k = 0; k < ints; k++)
			text[n++] =
			        (char)('0' + (k < 2 && (x >> 16) & 1 ? 0 : (x >> (18 + k)) % 10));
		if ((x >> 40) % 4 != 0) {
			text[n++] = '.';
			for (size_t k = 0; k < fracs; k++)
				text[n++] =
				        (char)('0' + ((x >> 44) & 1 ? 0 : (x >> (30 + k)) % 10));
		}
		text[n] = '\0';
		snprintf(general, sizeof(general), "%se0", text);
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		ra = st_cast_text(t, text, n, NULL, NULL, &a, &ea);
		rb = st_cast_text(t, general, strlen(general), NULL, NULL, &b, &eb);
		if (ra != rb)
			fail_msg("decimal(%d,%d) '%s': %d, '%s': %d", t->precision, t->scale, text,
			         ra, general, rb);
		if (ra == 0) {
			assert_memory_equal(a.v.dec, b.v.dec, 16);
			ok++;
		} else {
			assert_int_equal(ea.kind, eb.kind);
			refused++;
		}
	}
	/* both outcomes were exercised */
	assert_true(ok > 10000 && refused > 10000);
}

static void test_scratch(void **state)
{
	struct st_type u = {.id = ST_TYPE_UUID}, b = {.id = ST_TYPE_BINARY};
	const char *id = "00112233-4455-6677-8899-aabbccddeeff";
	uint8_t room[20];
	struct st_cast_scratch sc = {room, sizeof(room), 0};
	struct st_value v1, v2;
	struct fl_err err;

	(void)state;
	assert_int_equal(st_cast_text(&u, id, 36, NULL, NULL, &v1, &err), -1);
	assert_int_equal(err.kind, FL_ERR_INTERNAL);
	assert_int_equal(st_cast_text(&u, id, 36, NULL, &sc, &v1, &err), 0);
	assert_int_equal(st_cast_text(&b, "0102", 4, NULL, &sc, &v2, &err), 0);
	/* Both values stay valid: the scratch hands out, it does not move. */
	assert_ptr_equal(v1.v.bin.p, room);
	assert_int_equal(v1.v.bin.p[15], 0xff);
	assert_ptr_equal(v2.v.bin.p, room + 16);
	assert_int_equal(v2.v.bin.p[1], 0x02);
	assert_int_equal(sc.used, 18);
	assert_int_equal(st_cast_text(&b, "010203", 6, NULL, &sc, &v2, &err), -1);
	assert_int_equal(err.kind, FL_ERR_INTERNAL);
	assert_int_equal(sc.used, 18);
	/* A refused value takes no room. */
	assert_int_equal(st_cast_text(&b, "0", 1, NULL, &sc, &v2, &err), -1);
	assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
	assert_int_equal(sc.used, 18);
}

static const struct cast_case json_cases[] = {
        {"boolean", "true", true, "true"},
        {"boolean", "false", true, "false"},
        {"boolean", "null", true, "null"},
        {"boolean", "\"true\"", false,
         "value \"true\" is not a valid boolean: expected a JSON boolean"},
        {"boolean", "1", false, "value 1 is not a valid boolean: expected a JSON boolean"},
        {"int", "5", true, "5"},
        {"int", "-2147483648", true, "-2147483648"},
        {"int", "2147483648", false, "value 2147483648 does not fit int: out of range"},
        {"int", "1.0", false, "value 1.0 is not a valid int: expected a JSON integer"},
        {"int", "\"5\"", false, "value \"5\" is not a valid int: expected a JSON integer"},
        {"long", "9223372036854775807", true, "9223372036854775807"},
        {"long", "-9223372036854775808", true, "-9223372036854775808"},
        {"long", "1e3", false, "value 1000.0 is not a valid long: expected a JSON integer"},
        {"long", "[1]", false, "value [...] is not a valid long"},
        {"double", "1", true, "1"},
        {"double", "1.5", true, "1.5"},
        {"double", "-0.0", true, "-0"},
        {"double", "9007199254740993", true, "9007199254740992"},
        {"double", "\"NaN\"", true, "nan"},
        {"double", "\"-Infinity\"", true, "-inf"},
        {"double", "\"Infinity\"", true, "inf"},
        {"double", "\"1.5\"", false, "value \"1.5\" is not a valid double: expected a JSON number"},
        {"double", "true", false, "value true is not a valid double: expected a JSON number"},
        {"float", "3.5", true, "3.5"},
        {"float", "1e39", false, "value 1e+39 does not fit float: out of range"},
        {"decimal(5, 2)", "12.34", true, "1234"},
        {"decimal(5, 2)", "12", true, "1200"},
        {"decimal(5, 2)", "0.1", true, "10"},
        {"decimal(5, 2)", "-999.99", true, "-99999"},
        {"decimal(5, 2)", "12.345", false,
         "value 12.345 does not fit decimal(5, 2): too many fractional digits"},
        {"decimal(5, 2)", "1e-7", false, "too many fractional digits"},
        {"decimal(5, 2)", "1234", false,
         "value 1234 does not fit decimal(5, 2): too many digits before the decimal point"},
        {"decimal(5, 2)", "\"123.45\"", true, "12345"},
        {"decimal(5, 2)", "\"12.345\"", false,
         "value \"12.345\" does not fit decimal(5, 2): too many fractional digits"},
        {"decimal(5, 2)", "true", false,
         "value true is not a valid decimal(5, 2): expected a JSON number or string"},
        {"decimal(38, 2)", "9223372036854775807", true, "922337203685477580700"},
        {"decimal(38, 0)", "\"-99999999999999999999999999999999999999\"", true,
         "-99999999999999999999999999999999999999"},
        {"date", "\"2020-01-01\"", true, "18262"},
        {"date", "20200101", false, "value 20200101 is not a valid date: expected a JSON string"},
        {"date", "\"2020-02-30\"", false,
         "value \"2020-02-30\" does not fit date: no such day in that month"},
        {"time", "\"23:59:59.999999\"", true, "86399999999"},
        {"timestamp", "\"9999-12-31T23:59:59.999999\"", true, "253402300799999999"},
        {"timestamptz", "\"2020-01-01T00:00:00Z\"", true, "1577836800000000"},
        {"timestamptz", "\"2020-01-01T00:00:00\"", false, "a zone (Z or +HH:MM) is required"},
        {"utc:timestamptz", "\"2020-01-01T00:00:00\"", true, "1577836800000000"},
        {"timestamptz", "1577836800", false, "expected a JSON string"},
        {"string", "\"h\\u00e9llo\"", true, "h\xc3\xa9llo"},
        {"string", "\"\"", true, ""},
        /* Numbers and booleans are taken as their JSON text (inference widens
         * mixed JSON kinds to string); objects and arrays are not. */
        {"string", "5", true, "5"},
        {"string", "2.5", true, "2.5"},
        {"string", "true", true, "true"},
        {"string", "{}", false, "value {...} is not a valid string"},
        {"uuid", "\"123e4567-e89b-12d3-a456-426614174000\"", true,
         "123e4567e89b12d3a456426614174000"},
        {"uuid", "\"123e4567\"", false, "is not a valid uuid"},
        {"binary", "\"AAEC\"", true, "000102"},
        {"binary", "\"AAE=\"", true, "0001"},
        {"binary", "\"AAE\"", true, "0001"},
        {"binary", "\"AA==\"", true, "00"},
        {"binary", "\"/+8=\"", true, "ffef"},
        {"binary", "\"\"", true, ""},
        {"binary", "\"\\\\x0001\"", true, "0001"},
        {"binary", "\"AB==\"", false, "base64 with nonzero padding bits"},
        {"binary", "\"A\"", false, "value \"A\" is not a valid binary: expected base64"},
        {"binary", "\"AA=A\"", false, "expected base64"},
        {"binary", "\"AA AA\"", false, "expected base64"},
        {"fixed[3]", "\"AAEC\"", true, "000102"},
        {"fixed[3]", "\"AAE=\"", false, "wrong number of bytes"},
        {"string", "null", true, "null"},
        {"decimal(5, 2)", "null", true, "null"},
};

static void test_json(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(json_cases) / sizeof(json_cases[0]); i++) {
		const struct cast_case *c = &json_cases[i];
		struct st_type t;
		struct st_value v;
		struct fl_err err = {0};
		uint8_t room[64];
		struct st_cast_scratch sc = {room, sizeof(room), 0};
		struct st_cast_opts o = {0};
		json_error_t je;
		json_t *j = json_loads(c->in, JSON_DECODE_ANY, &je);
		char got[128];
		int rc;

		if (j == NULL)
			fail_msg("case %zu: bad JSON %s: %s", i, c->in, je.text);
		assert_int_equal(st_type_parse(case_type(c, &o), &t, &err), 0);
		rc = st_cast_json(&t, j, &o, &sc, &v, &err);
		if (c->ok) {
			if (rc != 0)
				fail_msg("case %zu (%s %s): refused: %s", i, c->type, c->in,
				         err.msg);
			render(&t, &v, got, sizeof(got));
			if (strcmp(got, c->want) != 0)
				fail_msg("case %zu (%s %s): got %s, want %s", i, c->type, c->in,
				         got, c->want);
		} else {
			if (rc == 0)
				fail_msg("case %zu (%s %s): accepted", i, c->type, c->in);
			assert_int_equal(err.kind, FL_ERR_BAD_REQUEST);
			if (strstr(err.msg, c->want) == NULL)
				fail_msg("case %zu: message\n  %s\nlacks\n  %s", i, err.msg,
				         c->want);
		}
		json_decref(j);
	}
}

static void test_json_missing_is_null(void **state)
{
	struct st_type t = {.id = ST_TYPE_LONG};
	struct st_value v = {0};
	struct fl_err err;

	(void)state;
	assert_int_equal(st_cast_json(&t, NULL, NULL, NULL, &v, &err), 0);
	assert_true(v.null);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_text),
	        cmocka_unit_test(test_nan_and_negative_zero_bits),
	        cmocka_unit_test(test_double_fast_path_matches_strtod),
	        cmocka_unit_test(test_decimal_fast_path_matches_general),
	        cmocka_unit_test(test_scratch),
	        cmocka_unit_test(test_json),
	        cmocka_unit_test(test_json_missing_is_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
