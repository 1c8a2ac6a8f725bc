/* types.h - Iceberg primitive types, typed values, their order, and the
 * single-value binary serialization (Iceberg spec, Appendix D) used for
 * column bounds and partition-summary bounds.
 *
 * Only primitive types: struct, list and map never carry bounds, and the
 * writers in storage/ handle flat schemas.  All functions are pure and
 * thread-safe. */
#ifndef ST_TYPES_H
#define ST_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "err.h"

enum st_type_id {
	ST_TYPE_BOOLEAN,
	ST_TYPE_INT,
	ST_TYPE_LONG,
	ST_TYPE_FLOAT,
	ST_TYPE_DOUBLE,
	ST_TYPE_DECIMAL, /* precision 1..38, scale 0..precision */
	ST_TYPE_DATE, /* days since 1970-01-01 */
	ST_TYPE_TIME, /* microseconds since midnight */
	ST_TYPE_TIMESTAMP, /* microseconds since the epoch, no zone */
	ST_TYPE_TIMESTAMPTZ, /* microseconds since the epoch, UTC */
	ST_TYPE_STRING, /* UTF-8 */
	ST_TYPE_UUID, /* 16 bytes, big-endian (RFC 4122 byte order) */
	ST_TYPE_FIXED, /* length bytes */
	ST_TYPE_BINARY,
	ST_TYPE_TIMESTAMP_NS, /* v3: nanoseconds since the epoch, no zone */
	ST_TYPE_TIMESTAMPTZ_NS, /* v3: nanoseconds since the epoch, UTC */
};

struct st_type {
	enum st_type_id id;
	int precision; /* decimal only */
	int scale; /* decimal only */
	uint32_t length; /* fixed only */
};

/* A value of some st_type.  Which member is set follows the type:
 *   boolean: b;  int, date: i;  long, time, timestamp(tz)(_ns): l;
 *   float: f;  double: d;  decimal: dec (the unscaled value, 16-byte
 *   big-endian two's complement, whatever the precision);
 *   string, binary, fixed, uuid: bin (borrowed; not NUL-terminated). */
struct st_value {
	bool null;
	union {
		bool b;
		int32_t i;
		int64_t l;
		float f;
		double d;
		uint8_t dec[16];
		struct {
			const uint8_t *p;
			size_t len;
		} bin;
	} v;
};

/* Parses an Iceberg type string ("long", "decimal(10, 2)", "fixed[16]",
 * "timestamptz", ...).  FL_ERR_BAD_REQUEST names the text on failure. */
int st_type_parse(const char *s, struct st_type *out, struct fl_err *err) FL_MUST_CHECK;

/* Writes the type's canonical Iceberg name into out (always NUL-terminated). */
void st_type_format(const struct st_type *t, char *out, size_t cap);

/* True for the float and double types, whose NaNs are counted, never bounds. */
bool st_type_is_floating(const struct st_type *t);

/* The minimum number of bytes that holds every unscaled value of a decimal
 * of this precision (1..38) in two's complement: Parquet FIXED_LEN_BYTE_ARRAY
 * length and Avro fixed size. */
int st_decimal_bytes(int precision);

/* Fills v->dec from a 64-bit unscaled value (sign-extended). */
void st_value_set_decimal(struct st_value *v, int64_t unscaled);

/* Compares two non-null, non-NaN values of type t in Iceberg order: signed
 * for numbers and decimals, -0.0 before +0.0, unsigned byte order for
 * string (= code point order), binary, fixed and uuid.  Returns <0, 0, >0. */
int st_value_compare(const struct st_type *t, const struct st_value *a, const struct st_value *b);

/* Appends the single-value serialization of a non-null v (Appendix D):
 * little-endian for numbers, raw bytes for string/binary/fixed, uuid as its
 * 16 bytes, decimal as the minimal big-endian two's complement.  -1 when
 * out of memory. */
int st_value_serialize(const struct st_type *t, const struct st_value *v,
                       struct st_buf *out) FL_MUST_CHECK;

#endif
