/* cast.c - feed text and JSON values to Iceberg values (the rules are in
 * cast.h; value encodings follow the Iceberg spec's "Primitive Types":
 * date = days from 1970-01-01, time = microseconds from midnight,
 * timestamp(tz) = microseconds (the _ns types nanoseconds) from
 * 1970-01-01T00:00:00 UTC, decimal = unscaled integer).
 *
 * Each parser returns OK, INVALID (the text is not of the type's form) or
 * RANGE (well-formed but the value does not fit), with a reason; one
 * function turns that into the message, so every failure reads the same.
 *
 * Decimals are parsed digit by digit into a 128-bit integer: the text is
 * never converted to binary floating point, so nothing is rounded.  Dates
 * use Howard Hinnant's days_from_civil (proleptic Gregorian, exact for any
 * year).  Nothing here allocates; decoded bytes go to the caller's
 * scratch. */
#include "cast.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"

enum verdict { OK = 0, INVALID, RANGE };

/* Unscaled decimals of up to 38 digits need 127 bits. */
__extension__ typedef unsigned __int128 u128;

struct why {
	enum verdict v;
	const char *reason;
};

static enum verdict bad(struct why *w, enum verdict v, const char *reason)
{
	w->v = v;
	w->reason = reason;
	return v;
}

/* Writes at most 64 bytes of s, escaped, into out (cap >= 280). */
static void show_text(const char *s, size_t n, char *out, size_t cap)
{
	size_t o = 0, lim = n > 64 ? 64 : n;

	for (size_t i = 0; i < lim && o + 8 < cap; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			out[o++] = '\\';
			out[o++] = (char)c;
		} else if (c >= 0x20 && c < 0x7f) {
			out[o++] = (char)c;
		} else {
			o += (size_t)snprintf(out + o, cap - o, "\\x%02x", c);
		}
	}
	if (lim < n && o + 4 < cap) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
}

static int fail_msg(const struct st_type *t, const char *shown, bool quoted, const struct why *w,
                    struct fl_err *err)
{
	char tn[48];

	st_type_format(t, tn, sizeof(tn));
	return fl_err_set(err, FL_ERR_BAD_REQUEST, "value %s%s%s %s %s: %s", quoted ? "\"" : "",
	                  shown, quoted ? "\"" : "",
	                  w->v == RANGE ? "does not fit" : "is not a valid", tn, w->reason);
}

static int fail_text(const struct st_type *t, const char *s, size_t n, const struct why *w,
                     struct fl_err *err)
{
	char shown[300];

	show_text(s, n, shown, sizeof(shown));
	return fail_msg(t, shown, true, w, err);
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int hex_val(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool eq_nocase(const char *s, size_t n, const char *word)
{
	return strlen(word) == n && strncasecmp(s, word, n) == 0;
}

/* ---- boolean, integers ---------------------------------------------- */

static enum verdict parse_bool(const char *s, size_t n, bool *out, struct why *w)
{
	if (eq_nocase(s, n, "true") || (n == 1 && s[0] == '1')) {
		*out = true;
		return OK;
	}
	if (eq_nocase(s, n, "false") || (n == 1 && s[0] == '0')) {
		*out = false;
		return OK;
	}
	return bad(w, INVALID, "expected true, false, 1 or 0");
}

static enum verdict parse_int(const char *s, size_t n, int64_t min, int64_t max, int64_t *out,
                              struct why *w)
{
	size_t i = 0;
	bool neg = false;
	uint64_t mag = 0, lim;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (i == n)
		return bad(w, INVALID, "expected an integer");
	lim = neg ? (uint64_t)(-(min + 1)) + 1 : (uint64_t)max;
	for (; i < n; i++) {
		if (!is_digit(s[i]))
			return bad(w, INVALID,
			           "expected an integer (digits with an optional sign)");
		if (mag > (UINT64_MAX - 9) / 10)
			mag = UINT64_MAX; /* saturate; still checking the syntax */
		else
			mag = mag * 10 + (uint64_t)(s[i] - '0');
	}
	if (mag > lim)
		return bad(w, RANGE, "out of range");
	*out = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
	return OK;
}

/* ---- float, double ---------------------------------------------------- */

/* Matches [+-](digits[.digits]|.digits)[(e|E)[+-]digits] exactly. */
static bool float_syntax(const char *s, size_t n)
{
	size_t i = 0, d = 0;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	while (i < n && is_digit(s[i]))
		i++, d++;
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && is_digit(s[i]))
			i++, d++;
	}
	if (d == 0)
		return false;
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		size_t e = 0;

		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		while (i < n && is_digit(s[i]))
			i++, e++;
		if (e == 0)
			return false;
	}
	return i == n;
}

static bool float_special(const char *s, size_t n, double *out)
{
	bool neg = false;

	if (n > 0 && (s[0] == '+' || s[0] == '-')) {
		neg = s[0] == '-';
		if (eq_nocase(s + 1, n - 1, "infinity") || eq_nocase(s + 1, n - 1, "inf")) {
			*out = neg ? -INFINITY : INFINITY;
			return true;
		}
		return false;
	}
	if (eq_nocase(s, n, "nan")) {
		*out = NAN;
		return true;
	}
	if (eq_nocase(s, n, "infinity") || eq_nocase(s, n, "inf")) {
		*out = INFINITY;
		return true;
	}
	return false;
}

/* The exact fast path for the common [+-]digits[.digits] with at most 15
 * significant digits: the mantissa m < 10^15 < 2^53 and 10^k (k <= 15) are
 * both exact doubles, so m / 10^k is one correctly rounded IEEE division,
 * the same double strtod returns (Clinger's fast path).  False when the
 * text is of another form; the caller then takes strtod. */
static bool simple_double(const char *s, size_t n, double *out)
{
	static const double p10[] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
	                             1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
	size_t i = 0, digits = 0, frac = 0;
	uint64_t m = 0;
	bool neg = false, dot = false;
	double x;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	for (; i < n; i++) {
		if (is_digit(s[i])) {
			if (++digits > 15)
				return false;
			m = m * 10 + (uint64_t)(s[i] - '0');
			frac += dot;
		} else if (s[i] == '.' && !dot) {
			dot = true;
		} else {
			return false;
		}
	}
	if (digits == 0)
		return false;
	x = (double)m / p10[frac];
	*out = neg ? -x : x;
	return true;
}

static enum verdict parse_double(const char *s, size_t n, bool single, double *d, float *f,
                                 struct why *w)
{
	char buf[400];
	char *end;
	double x;

	if (!single && simple_double(s, n, &x)) {
		*d = x;
		*f = (float)x;
		return OK;
	}
	if (float_special(s, n, &x)) {
		*d = x;
		*f = (float)x;
		return OK;
	}
	if (!float_syntax(s, n))
		return bad(w, INVALID, "expected a decimal number, NaN or Infinity");
	if (n >= sizeof(buf))
		return bad(w, INVALID, "number text is longer than 399 bytes");
	memcpy(buf, s, n);
	buf[n] = '\0';
	errno = 0;
	if (single) {
		float y = strtof(buf, &end);

		if (errno == ERANGE && isinf(y))
			return bad(w, RANGE, "out of range");
		*f = y;
		*d = y;
	} else {
		x = strtod(buf, &end);
		if (errno == ERANGE && isinf(x))
			return bad(w, RANGE, "out of range");
		*d = x;
		*f = (float)x;
	}
	if (end != buf + n)
		return bad(w, INVALID, "expected a decimal number");
	return OK;
}

/* ---- decimal ------------------------------------------------------------ */

static void dec_store(uint8_t out[16], u128 mag, bool neg)
{
	u128 u = neg ? ~mag + 1 : mag;

	for (int i = 15; i >= 0; i--) {
		out[i] = (uint8_t)u;
		u >>= 8;
	}
}

/* The common text of a decimal - an optional sign, digits, optionally a
 * point and digits, no more fraction digits than the scale, at most 18
 * digits once scaled - read in one pass.  False for anything else
 * (exponents, a bare point, rounding, out of range), which parse_decimal's
 * general path then reads or refuses; when true, out is what it would
 * store. */
static bool decimal_fast(const char *s, size_t n, int precision, int scale, uint8_t out[16])
{
	static const uint64_t pow10[19] = {1,
	                                   10,
	                                   100,
	                                   1000,
	                                   10000,
	                                   100000,
	                                   1000000,
	                                   10000000,
	                                   100000000,
	                                   1000000000,
	                                   10000000000ULL,
	                                   100000000000ULL,
	                                   1000000000000ULL,
	                                   10000000000000ULL,
	                                   100000000000000ULL,
	                                   1000000000000000ULL,
	                                   10000000000000000ULL,
	                                   100000000000000000ULL,
	                                   1000000000000000000ULL};
	size_t i = 0, digits = 0, frac = 0;
	bool neg = false, point = false;
	uint64_t mag = 0;

	if (n > 0 && (s[0] == '+' || s[0] == '-'))
		neg = s[i++] == '-';
	for (; i < n; i++) {
		if (is_digit(s[i])) {
			mag = mag * 10 + (uint64_t)(s[i] - '0');
			digits++;
			frac += point;
		} else if (s[i] == '.' && !point && digits > 0) {
			point = true;
		} else {
			return false;
		}
		if (digits > 18)
			return false;
	}
	if (digits == 0 || (point && frac == 0) || scale < 0 || scale > 18 ||
	    frac > (size_t)scale || digits + (size_t)scale - frac > 18 || precision > 18)
		return false;
	mag *= pow10[(size_t)scale - frac];
	if (mag >= pow10[precision])
		return false;
	dec_store(out, mag, neg && mag != 0);
	return true;
}

static enum verdict parse_decimal(const char *s, size_t n, int precision, int scale,
                                  uint8_t out[16], struct why *w)
{
	size_t i = 0, int_start, int_end, frac_start = 0, frac_end = 0;
	bool neg = false;
	long exp = 0;
	long shift; /* decimal places to move the digit string left (+) or right (-) */
	size_t n_digits, first, last; /* the digit string, as positions 0..n_digits-1 */
	u128 mag = 0;
	size_t kept;

	if (decimal_fast(s, n, precision, scale, out))
		return OK;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	int_start = i;
	while (i < n && is_digit(s[i]))
		i++;
	int_end = i;
	if (i < n && s[i] == '.') {
		frac_start = ++i;
		while (i < n && is_digit(s[i]))
			i++;
		frac_end = i;
	}
	if (int_end == int_start && frac_end == frac_start)
		return bad(w, INVALID, "expected a decimal number");
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		bool eneg = false;
		size_t e0;

		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			eneg = s[i++] == '-';
		e0 = i;
		while (i < n && is_digit(s[i])) {
			if (exp < 100000)
				exp = exp * 10 + (s[i] - '0');
			i++;
		}
		if (i == e0)
			return bad(w, INVALID, "expected digits after the exponent");
		if (exp >= 100000)
			return bad(w, RANGE, "exponent out of range");
		if (eneg)
			exp = -exp;
	}
	if (i != n)
		return bad(w, INVALID, "expected a decimal number (digits, sign, point, exponent)");

	/* Digits D = int part then fraction; value = D * 10^(exp - frac_len),
	 * unscaled = D * 10^(scale + exp - frac_len). */
	n_digits = (int_end - int_start) + (frac_end - frac_start);
	if (n_digits > 1000000)
		return bad(w, RANGE, "too many digits");
	shift = (long)scale + exp - (long)(frac_end - frac_start);

#define DIGIT(k)                                              \
	((k) < int_end - int_start ? s[int_start + (k)] - '0' \
	                           : s[frac_start + (k) - (int_end - int_start)] - '0')

	/* Digits shifted past the point must all be zero. */
	last = n_digits; /* exclusive end of the digits that stay */
	if (shift < 0) {
		size_t drop = (size_t)-shift;

		if (drop > n_digits)
			drop = n_digits;
		for (size_t k = n_digits - drop; k < n_digits; k++)
			if (DIGIT(k) != 0)
				return bad(w, RANGE, "too many fractional digits");
		last = n_digits - drop;
		shift = 0;
	}
	first = 0;
	while (first < last && DIGIT(first) == 0)
		first++;
	kept = last - first;
	if (kept > 0 && kept + (size_t)shift > (size_t)precision)
		return bad(w, RANGE, "too many digits before the decimal point");
	for (size_t k = first; k < last; k++)
		mag = mag * 10 + (unsigned)DIGIT(k);
	if (kept > 0)
		for (long k = 0; k < shift; k++)
			mag *= 10;
#undef DIGIT
	dec_store(out, mag, neg && mag != 0);
	return OK;
}

/* ---- dates and times ------------------------------------------------ */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool digits_at(const char *s, size_t n, size_t at, size_t count, int *out)
{
	int v = 0;

	if (at + count > n)
		return false;
	for (size_t i = at; i < at + count; i++) {
		if (!is_digit(s[i]))
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* YYYY-MM-DD at s (exactly 10 bytes consumed). */
static enum verdict parse_date_at(const char *s, size_t n, int64_t *days, struct why *w)
{
	static const int mdays[12] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, m, d;

	if (!digits_at(s, n, 0, 4, &y) || n < 10 || s[4] != '-' || !digits_at(s, n, 5, 2, &m) ||
	    s[7] != '-' || !digits_at(s, n, 8, 2, &d))
		return bad(w, INVALID, "expected YYYY-MM-DD");
	if (y < 1)
		return bad(w, RANGE, "year 0000 is outside 0001..9999");
	if (m < 1 || m > 12)
		return bad(w, RANGE, "month out of range");
	if (d < 1 || d > mdays[m - 1] ||
	    (m == 2 && d == 29 && !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0)))
		return bad(w, RANGE, "no such day in that month");
	*days = days_from_civil(y, (unsigned)m, (unsigned)d);
	return OK;
}

/* HH:MM:SS[.f{1,9}] at s; *used = bytes consumed. */
static enum verdict parse_time_at(const char *s, size_t n, int64_t *secs, int64_t *nanos,
                                  size_t *used, struct why *w)
{
	int h, m, sec;
	size_t i = 8;
	int64_t f = 0;
	int nd = 0;

	if (!digits_at(s, n, 0, 2, &h) || n < 8 || s[2] != ':' || !digits_at(s, n, 3, 2, &m) ||
	    s[5] != ':' || !digits_at(s, n, 6, 2, &sec))
		return bad(w, INVALID, "expected HH:MM:SS[.fraction]");
	if (h > 23 || m > 59 || sec > 59)
		return bad(w, RANGE, "hour, minute or second out of range");
	if (i < n && s[i] == '.') {
		i++;
		while (i < n && is_digit(s[i])) {
			if (nd == 9)
				return bad(w, INVALID, "more than 9 fractional digits of a second");
			f = f * 10 + (s[i] - '0');
			nd++;
			i++;
		}
		if (nd == 0)
			return bad(w, INVALID, "expected digits after the point");
	}
	for (; nd < 9; nd++)
		f *= 10;
	*secs = (int64_t)h * 3600 + m * 60 + sec;
	*nanos = f;
	*used = i;
	return OK;
}

/* Z | [+-]HH:MM | [+-]HHMM, the whole rest of the text. */
static enum verdict parse_zone(const char *s, size_t n, int64_t *offset_secs, struct why *w)
{
	int h, m;
	int sign;

	if (n == 1 && (s[0] == 'Z' || s[0] == 'z')) {
		*offset_secs = 0;
		return OK;
	}
	if (n < 5 || (s[0] != '+' && s[0] != '-'))
		return bad(w, INVALID, "expected a zone: Z, +HH:MM or +HHMM");
	sign = s[0] == '-' ? -1 : 1;
	if (!digits_at(s, n, 1, 2, &h) || !(n == 6 ? s[3] == ':' && digits_at(s, n, 4, 2, &m)
	                                           : n == 5 && digits_at(s, n, 3, 2, &m)))
		return bad(w, INVALID, "expected a zone: Z, +HH:MM or +HHMM");
	if (h > 23 || m > 59)
		return bad(w, RANGE, "zone offset out of range");
	*offset_secs = sign * ((int64_t)h * 3600 + m * 60);
	return OK;
}

static enum verdict parse_time(const char *s, size_t n, int64_t *micros, struct why *w)
{
	int64_t secs, nanos;
	size_t used;

	if (parse_time_at(s, n, &secs, &nanos, &used, w) != OK)
		return w->v;
	if (used != n)
		return bad(w, INVALID, "unexpected text after the time");
	if (nanos % 1000 != 0)
		return bad(w, RANGE, "nonzero digits below a microsecond");
	*micros = secs * 1000000 + nanos / 1000;
	return OK;
}

static enum verdict parse_timestamp(const char *s, size_t n, bool tz, bool ns,
                                    const struct st_cast_opts *o, int64_t *out, struct why *w)
{
	int64_t days, secs, nanos, off = 0, v;
	size_t used;

	if (parse_date_at(s, n, &days, w) != OK)
		return w->v == INVALID ? bad(w, INVALID, "expected YYYY-MM-DDTHH:MM:SS[.fraction]")
		                       : w->v;
	if (n == 10)
		return bad(w, INVALID, "expected a time after the date");
	if (s[10] != 'T' && s[10] != 't' && s[10] != ' ')
		return bad(w, INVALID, "expected T or a space between the date and the time");
	if (parse_time_at(s + 11, n - 11, &secs, &nanos, &used, w) != OK)
		return w->v;
	used += 11;
	if (used < n) {
		char c = s[used];

		if (c != 'Z' && c != 'z' && c != '+' && c != '-')
			return bad(w, INVALID, "unexpected text after the time");
		if (!tz)
			return bad(w, INVALID, "a zone is not allowed (use timestamptz)");
		if (parse_zone(s + used, n - used, &off, w) != OK)
			return w->v;
	} else if (tz && !(o != NULL && o->tz_assume_utc)) {
		return bad(w, INVALID, "a zone (Z or +HH:MM) is required");
	}
	if (!ns && nanos % 1000 != 0)
		return bad(w, RANGE, "nonzero digits below a microsecond");
	secs += days * 86400 - off;
	if (secs < 0 && nanos > 0) {
		/* Borrow a second so that the product cannot overflow at the
		 * bottom of the range before the positive fraction is added. */
		secs++;
		nanos -= 1000000000;
	}
	if (ns) {
		if (__builtin_mul_overflow(secs, (int64_t)1000000000, &v) ||
		    __builtin_add_overflow(v, nanos, &v))
			return bad(w, RANGE, "outside the nanosecond range (years 1677..2262)");
	} else {
		v = secs * 1000000 + nanos / 1000; /* years 1..9999 fit easily */
	}
	*out = v;
	return OK;
}

/* ---- bytes ---------------------------------------------------------- */

static uint8_t *scratch_take(struct st_cast_scratch *sc, size_t n)
{
	uint8_t *p;

	if (sc == NULL || sc->p == NULL || n > sc->cap - sc->used)
		return NULL;
	p = sc->p + sc->used;
	sc->used += n;
	return p;
}

static int no_scratch(size_t need, struct fl_err *err)
{
	return fl_err_set(err, FL_ERR_INTERNAL, "cast: scratch too small for %zu bytes", need);
}

static enum verdict parse_uuid(const char *s, size_t n, uint8_t out[16], struct why *w)
{
	size_t k = 0;

	if (n != 36)
		return bad(w, INVALID, "expected 8-4-4-4-12 hex digits");
	for (size_t i = 0; i < 36;) {
		int a, b;

		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return bad(w, INVALID, "expected 8-4-4-4-12 hex digits");
			i++;
			continue;
		}
		a = hex_val(s[i]);
		b = hex_val(s[i + 1]);
		if (a < 0 || b < 0)
			return bad(w, INVALID, "expected 8-4-4-4-12 hex digits");
		out[k++] = (uint8_t)(a << 4 | b);
		i += 2;
	}
	return OK;
}

/* Hex, optionally after \x; *len = decoded bytes (checked before writing). */
static enum verdict hex_decode(const char *s, size_t n, uint8_t *out, size_t *len, struct why *w)
{
	if (n >= 2 && s[0] == '\\' && (s[1] == 'x' || s[1] == 'X')) {
		s += 2;
		n -= 2;
	}
	if (n % 2 != 0)
		return bad(w, INVALID, "expected an even number of hex digits");
	for (size_t i = 0; i < n; i += 2) {
		int a = hex_val(s[i]), b = hex_val(s[i + 1]);

		if (a < 0 || b < 0)
			return bad(w, INVALID, "expected hex digits");
		if (out != NULL)
			out[i / 2] = (uint8_t)(a << 4 | b);
	}
	*len = n / 2;
	return OK;
}

static int b64_val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Standard base64, padding optional, unused bits must be zero. */
static enum verdict b64_decode(const char *s, size_t n, uint8_t *out, size_t *len, struct why *w)
{
	size_t o = 0, i, pad = 0;
	uint32_t acc = 0;
	int bits = 0;

	if (n % 4 == 0 && n >= 4) {
		if (s[n - 1] == '=')
			pad++;
		if (s[n - 2] == '=')
			pad++;
		n -= pad;
	}
	if (n % 4 == 1 || (pad > 0 && n % 4 != 4 - pad))
		return bad(w, INVALID, "expected base64");
	for (i = 0; i < n; i++) {
		int v = b64_val(s[i]);

		if (v < 0)
			return bad(w, INVALID, "expected base64");
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (out != NULL)
				out[o] = (uint8_t)(acc >> bits);
			o++;
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0)
		return bad(w, INVALID, "base64 with nonzero padding bits");
	*len = o;
	return OK;
}

/* Decodes into scratch after a dry run that sizes and validates. */
static int bytes_value(const struct st_type *t, const char *s, size_t n, bool b64,
                       struct st_cast_scratch *sc, struct st_value *out, struct why *w,
                       struct fl_err *err)
{
	size_t len = 0;
	uint8_t *p;
	enum verdict v;

	v = b64 ? b64_decode(s, n, NULL, &len, w) : hex_decode(s, n, NULL, &len, w);
	if (v != OK)
		return 1;
	if (t->id == ST_TYPE_FIXED && len != t->length) {
		bad(w, RANGE, "wrong number of bytes for the fixed length");
		return 1;
	}
	p = scratch_take(sc, len);
	if (p == NULL && len > 0)
		return no_scratch(len, err);
	if (len > 0)
		(void)(b64 ? b64_decode(s, n, p, &len, w) : hex_decode(s, n, p, &len, w));
	out->null = false;
	out->v.bin.p = p != NULL ? p : (const uint8_t *)"";
	out->v.bin.len = len;
	return 0;
}

/* ---- the text entry point ---------------------------------------------- */

/* Casts; 0 done, 1 refused (w set), -1 hard error (err set). */
/* *out = v (not null), the member at the type's own width over a zeroed
 * union: copying the whole struct reads back bytes that were just stored at
 * another width, which the CPU cannot forward from its store buffer (a
 * stall per value that showed in the ingest profile). */
static void put_value(const struct st_type *t, const struct st_value *v, struct st_value *out)
{
	out->null = false;
	memset(&out->v, 0, sizeof(out->v));
	switch (t->id) {
	case ST_TYPE_BOOLEAN: out->v.b = v->v.b; break;
	case ST_TYPE_INT:
	case ST_TYPE_DATE: out->v.i = v->v.i; break;
	case ST_TYPE_FLOAT: out->v.f = v->v.f; break;
	case ST_TYPE_DOUBLE: out->v.d = v->v.d; break;
	case ST_TYPE_DECIMAL: memcpy(out->v.dec, v->v.dec, sizeof(out->v.dec)); break;
	case ST_TYPE_STRING:
	case ST_TYPE_BINARY:
	case ST_TYPE_FIXED:
	case ST_TYPE_UUID:
		out->v.bin.p = v->v.bin.p;
		out->v.bin.len = v->v.bin.len;
		break;
	default: out->v.l = v->v.l; break; /* long, time, timestamps */
	}
}

static int cast_text(const struct st_type *t, const char *s, size_t n, const struct st_cast_opts *o,
                     bool b64, struct st_cast_scratch *sc, struct st_value *out, struct why *w,
                     struct fl_err *err)
{
	struct st_value v = {0};
	int64_t l;
	uint8_t *p;

	switch (t->id) {
	case ST_TYPE_BOOLEAN:
		if (parse_bool(s, n, &v.v.b, w) != OK)
			return 1;
		break;
	case ST_TYPE_INT:
		if (parse_int(s, n, INT32_MIN, INT32_MAX, &l, w) != OK)
			return 1;
		v.v.i = (int32_t)l;
		break;
	case ST_TYPE_LONG:
		if (parse_int(s, n, INT64_MIN, INT64_MAX, &v.v.l, w) != OK)
			return 1;
		break;
	case ST_TYPE_FLOAT: {
		double d;

		if (parse_double(s, n, true, &d, &v.v.f, w) != OK)
			return 1;
		break;
	}
	case ST_TYPE_DOUBLE: {
		float f;

		if (parse_double(s, n, false, &v.v.d, &f, w) != OK)
			return 1;
		break;
	}
	case ST_TYPE_DECIMAL:
		if (parse_decimal(s, n, t->precision, t->scale, v.v.dec, w) != OK)
			return 1;
		break;
	case ST_TYPE_DATE:
		if (parse_date_at(s, n, &l, w) != OK)
			return 1;
		if (n != 10) {
			bad(w, INVALID, "expected YYYY-MM-DD");
			return 1;
		}
		v.v.i = (int32_t)l;
		break;
	case ST_TYPE_TIME:
		if (parse_time(s, n, &v.v.l, w) != OK)
			return 1;
		break;
	case ST_TYPE_TIMESTAMP:
	case ST_TYPE_TIMESTAMPTZ:
	case ST_TYPE_TIMESTAMP_NS:
	case ST_TYPE_TIMESTAMPTZ_NS:
		if (parse_timestamp(
		            s, n, t->id == ST_TYPE_TIMESTAMPTZ || t->id == ST_TYPE_TIMESTAMPTZ_NS,
		            t->id == ST_TYPE_TIMESTAMP_NS || t->id == ST_TYPE_TIMESTAMPTZ_NS, o,
		            &v.v.l, w) != OK)
			return 1;
		break;
	case ST_TYPE_STRING:
		if (!(o != NULL && o->utf8_checked) && !fl_utf8_valid(s, n)) {
			bad(w, INVALID, "not valid UTF-8");
			return 1;
		}
		v.v.bin.p = (const uint8_t *)(n > 0 ? s : "");
		v.v.bin.len = n;
		break;
	case ST_TYPE_UUID: {
		uint8_t u[16];

		if (parse_uuid(s, n, u, w) != OK)
			return 1;
		p = scratch_take(sc, 16);
		if (p == NULL)
			return no_scratch(16, err);
		memcpy(p, u, 16);
		v.v.bin.p = p;
		v.v.bin.len = 16;
		break;
	}
	case ST_TYPE_FIXED:
	case ST_TYPE_BINARY: {
		int rc = bytes_value(t, s, n, b64, sc, &v, w, err);

		if (rc != 0)
			return rc;
		break;
	}
	default:
		return fl_err_set(err, FL_ERR_UNSUPPORTED, "cast: unsupported type id %d",
		                  (int)t->id);
	}
	put_value(t, &v, out);
	return 0;
}

int st_cast_text(const struct st_type *t, const char *s, size_t n, const struct st_cast_opts *o,
                 struct st_cast_scratch *scratch, struct st_value *out, struct fl_err *err)
{
	struct why w = {OK, NULL};
	int rc = cast_text(t, s, n, o, false, scratch, out, &w, err);

	if (rc == 1)
		return fail_text(t, s, n, &w, err);
	return rc;
}

/* ---- JSON ------------------------------------------------------------- */

/* The shortest %g text that reads back as d (at most 17 digits). */
static void shortest_double(double d, char *buf, size_t cap)
{
	if (d == floor(d) && fabs(d) < 1e17) {
		snprintf(buf, cap, "%.0f", d); /* 1000, not 1e+03 */
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, cap, "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			return;
	}
}

static int fail_json(const struct st_type *t, const json_t *v, const struct why *w,
                     struct fl_err *err)
{
	char shown[300];

	switch (json_typeof(v)) {
	case JSON_STRING: return fail_text(t, json_string_value(v), json_string_length(v), w, err);
	case JSON_INTEGER:
		snprintf(shown, sizeof(shown), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		break;
	case JSON_REAL:
		/* Shown as the number it is, and as a non-integer: 1.0, not 1. */
		shortest_double(json_real_value(v), shown, sizeof(shown));
		if (strpbrk(shown, ".en") == NULL)
			snprintf(shown + strlen(shown), sizeof(shown) - strlen(shown), ".0");
		break;
	case JSON_TRUE: snprintf(shown, sizeof(shown), "true"); break;
	case JSON_FALSE: snprintf(shown, sizeof(shown), "false"); break;
	case JSON_OBJECT: snprintf(shown, sizeof(shown), "{...}"); break;
	case JSON_ARRAY: snprintf(shown, sizeof(shown), "[...]"); break;
	case JSON_NULL: snprintf(shown, sizeof(shown), "null"); break;
	}
	return fail_msg(t, shown, false, w, err);
}

static const char *want_for(const struct st_type *t)
{
	switch (t->id) {
	case ST_TYPE_BOOLEAN: return "expected a JSON boolean";
	case ST_TYPE_INT:
	case ST_TYPE_LONG: return "expected a JSON integer";
	case ST_TYPE_FLOAT:
	case ST_TYPE_DOUBLE: return "expected a JSON number";
	case ST_TYPE_DECIMAL: return "expected a JSON number or string";
	default: return "expected a JSON string";
	}
}

int st_cast_json(const struct st_type *t, const json_t *v, const struct st_cast_opts *o,
                 struct st_cast_scratch *scratch, struct st_value *out, struct fl_err *err)
{
	struct why w = {OK, NULL};
	struct st_value r = {0};
	char buf[64];
	int rc;

	if (v == NULL || json_is_null(v)) {
		r.null = true;
		*out = r;
		return 0;
	}
	switch (t->id) {
	case ST_TYPE_BOOLEAN:
		if (!json_is_boolean(v))
			goto wrong;
		r.v.b = json_is_true(v);
		break;
	case ST_TYPE_INT:
	case ST_TYPE_LONG: {
		json_int_t i;

		/* With json_reals_are_ints (a line the NDJSON reader read with every
		 * number as a real), an exact integer a double holds exactly
		 * (|v| <= 2^53) is taken; otherwise reals are refused. */
		if (o != NULL && o->json_reals_are_ints && json_is_real(v) &&
		    json_real_value(v) == floor(json_real_value(v)) &&
		    fabs(json_real_value(v)) <= 9007199254740992.0 &&
		    (json_real_value(v) != 0 || !signbit(json_real_value(v))))
			i = (json_int_t)json_real_value(v);
		else if (json_is_integer(v))
			i = json_integer_value(v);
		else
			goto wrong;
		if (t->id == ST_TYPE_INT && (i < INT32_MIN || i > INT32_MAX)) {
			bad(&w, RANGE, "out of range");
			return fail_json(t, v, &w, err);
		}
		if (t->id == ST_TYPE_INT)
			r.v.i = (int32_t)i;
		else
			r.v.l = (int64_t)i;
		break;
	}
	case ST_TYPE_FLOAT:
	case ST_TYPE_DOUBLE: {
		double d;

		if (json_is_string(v)) {
			if (!float_special(json_string_value(v), json_string_length(v), &d))
				goto wrong;
		} else if (json_is_integer(v)) {
			d = (double)json_integer_value(v);
		} else if (json_is_real(v)) {
			d = json_real_value(v);
		} else {
			goto wrong;
		}
		if (t->id == ST_TYPE_FLOAT) {
			if (isfinite(d) && fabs(d) > FLT_MAX) {
				bad(&w, RANGE, "out of range");
				return fail_json(t, v, &w, err);
			}
			r.v.f = (float)d;
		} else {
			r.v.d = d;
		}
		break;
	}
	case ST_TYPE_DECIMAL:
		if (json_is_string(v))
			break; /* text rules below */
		if (json_is_integer(v))
			snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		else if (json_is_real(v))
			shortest_double(json_real_value(v), buf, sizeof(buf));
		else
			goto wrong;
		if (parse_decimal(buf, strlen(buf), t->precision, t->scale, r.v.dec, &w) != OK)
			return fail_json(t, v, &w, err);
		r.null = false;
		*out = r;
		return 0;
	case ST_TYPE_STRING:
		/* A string column takes numbers and booleans as their JSON text:
		 * inference widens mixed JSON kinds to string, and the values must
		 * then fit the column it inferred. */
		if (json_is_integer(v) || json_is_real(v) || json_is_boolean(v)) {
			uint8_t *p;
			size_t len;

			if (json_is_integer(v))
				snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT,
				         json_integer_value(v));
			else if (json_is_real(v))
				shortest_double(json_real_value(v), buf, sizeof(buf));
			else
				snprintf(buf, sizeof(buf), "%s",
				         json_is_true(v) ? "true" : "false");
			len = strlen(buf);
			p = scratch ? scratch_take(scratch, len) : NULL;
			if (p == NULL)
				return no_scratch(len, err);
			memcpy(p, buf, len);
			r.v.bin.p = p;
			r.v.bin.len = len;
			r.null = false;
			*out = r;
			return 0;
		}
		if (!json_is_string(v))
			goto wrong;
		break;
	default:
		if (!json_is_string(v))
			goto wrong;
		break;
	}
	if (json_is_string(v) && t->id != ST_TYPE_FLOAT && t->id != ST_TYPE_DOUBLE) {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		bool b64 = !(n >= 2 && s[0] == '\\' && (s[1] == 'x' || s[1] == 'X'));

		rc = cast_text(t, s, n, o, b64, scratch, &r, &w, err);
		if (rc == 1)
			return fail_json(t, v, &w, err);
		if (rc != 0)
			return rc;
	}
	r.null = false;
	*out = r;
	return 0;
wrong:
	bad(&w, INVALID, want_for(t));
	return fail_json(t, v, &w, err);
}
