/* cast.h - turning feed values (CSV text, JSON values) into typed Iceberg
 * values, with exact and documented rules; nothing is rounded or guessed.
 *
 * Text rules (st_cast_text; no surrounding spaces anywhere):
 *   boolean      true / false / 1 / 0, case-insensitive
 *   int, long    [+-]digits, range-checked; no point, no exponent
 *   float, double  [+-](digits[.digits] | .digits)[e[+-]digits], NaN,
 *                Infinity, Inf (optionally signed), case-insensitive; a value
 *                beyond the type's range is refused (underflow rounds to 0)
 *   decimal(P,S) [+-]digits[.digits][e[+-]digits], parsed exactly (never
 *                through binary floating point): nonzero digits beyond S
 *                fractional places are refused, never rounded (trailing
 *                zeros are fine: 1.50 fits decimal(3,1)); more than P-S
 *                integer digits are refused; an exponent is fine when the
 *                result is exact
 *   date         YYYY-MM-DD, years 0001..9999, proleptic Gregorian
 *   time         HH:MM:SS[.f{1,9}], 00:00:00 .. 23:59:59.999999
 *   timestamp    YYYY-MM-DD(T|t| )HH:MM:SS[.f{1,9}]; a zone suffix is refused
 *   timestamptz  the same followed by Z, z, +HH:MM, -HH:MM, +HHMM or -HHMM,
 *                converted to UTC; without a zone only if tz_assume_utc
 *     (time and the microsecond timestamps refuse nonzero 7th-9th fractional
 *     digits rather than truncate them; the _ns types keep all nine)
 *   uuid         8-4-4-4-12 hex digits, either case
 *   binary, fixed[L]  hex digits (either case, an even count), optionally
 *                prefixed with \x as PostgreSQL writes bytea; fixed needs
 *                exactly L bytes
 *   string       any well-formed UTF-8, borrowed from the input
 *
 * JSON rules (st_cast_json): null is a null of any type; boolean needs
 * true/false; int/long need a JSON integer (1.0 is refused); float/double
 * take any JSON number, or the strings "NaN"/"Infinity"/"-Infinity"
 * (JSON has no literals for them); decimal takes a JSON string (exact, text
 * rules) or a number (an integer exactly; a non-integer through the
 * shortest decimal form of the double jansson parsed it to, so decimals
 * with more than 15 significant digits should be sent as strings);
 * binary/fixed take a string in base64 (RFC 4648 section 4, padding
 * optional) or \x-prefixed hex; every other type takes a string with the
 * text rules.
 *
 * Failures are FL_ERR_BAD_REQUEST with a message naming the value (cut to
 * 64 bytes, non-printable bytes escaped) and the type, e.g.
 *   value "12.345" does not fit decimal(5, 2): too many fractional digits
 * The functions allocate nothing, are pure and thread-safe. */
#ifndef ST_FEED_CAST_H
#define ST_FEED_CAST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "iceberg/types.h"

struct st_cast_opts {
	bool tz_assume_utc; /* a timestamptz without a zone is UTC (default: refused) */
	bool json_reals_are_ints; /* int/long take exact integral reals (|v| <= 2^53) */
	bool utf8_checked; /* the text is known to be valid UTF-8 (the CSV reader checked it) */
};

/* Caller-owned room for decoded bytes (binary, fixed, uuid), handed out
 * front to back: a value points into p until the caller sets used back to
 * 0, so one scratch of (record bytes + 16 * columns) holds a whole row.
 * Strings are never copied: they point into the input (s, or the JSON
 * string). */
struct st_cast_scratch {
	uint8_t *p;
	size_t cap;
	size_t used;
};

/* Casts the n bytes at s (not NUL-terminated) to type t into *out.  o may be
 * NULL (defaults); scratch may be NULL for types that need none.  Never
 * produces a null: mapping empty fields to null is the caller's choice.
 * FL_ERR_BAD_REQUEST as above; FL_ERR_INTERNAL when scratch is missing or
 * full.  *out untouched on failure. */
int st_cast_text(const struct st_type *t, const char *s, size_t n, const struct st_cast_opts *o,
                 struct st_cast_scratch *scratch, struct st_value *out,
                 struct fl_err *err) FL_MUST_CHECK;

/* Casts the JSON value v (NULL, like JSON null, gives a null) to type t.
 * Strings in *out are borrowed from v.  Same errors as st_cast_text. */
int st_cast_json(const struct st_type *t, const json_t *v, const struct st_cast_opts *o,
                 struct st_cast_scratch *scratch, struct st_value *out,
                 struct fl_err *err) FL_MUST_CHECK;

#endif
